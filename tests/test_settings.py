"""Settings: bad values stop start-up with one line naming the key, the value and what is allowed."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from backend.server.processes import free_ports, port_is_free
from backend.settings import PROJECT_ROOT, SettingsError, load_settings


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("vllm_port", "abc", "RCHAT_VLLM_PORT='abc'"),
        ("ui_port", "70000", "less than or equal to 65535"),
        ("gpu_memory_utilization", "1.5", "RCHAT_GPU_MEMORY_UTILIZATION='1.5'"),
        ("quantization", "q9000", "must be one of awq"),
        ("enforce_eager", "maybe", "RCHAT_ENFORCE_EAGER='maybe'"),
        ("base_url", "ftp://x", "must start with http://"),
        ("device", "tpu", "'auto', 'cpu' or 'cuda'"),
        ("max_model_len", "-5", "RCHAT_MAX_MODEL_LEN"),
        ("first_token_timeout", "0", "greater than 0"),
    ],
)
def test_bad_value_is_refused_with_key_value_and_rule(key: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(_env_file=None, **{key: value})
    message = str(err.value)
    assert "\n" not in message
    assert expected in message
    assert f"RCHAT_{key.upper()}" in message


def test_defaults_are_the_embedded_model_on_loopback() -> None:
    s = load_settings(_env_file=None)
    assert s.uses_embedded_model and s.resolved_model.endswith("smollm2-135m-instruct")
    assert (s.vllm_host, s.vllm_port, s.ui_port) == ("127.0.0.1", 8000, 7860)
    assert not s.external


def test_env_file_values_are_read_and_validated(tmp_path) -> None:
    env = tmp_path / ".env"
    env.write_text("RCHAT_VLLM_PORT=8123\nRCHAT_SERVED_MODEL_NAME=booth\n")
    s = load_settings(_env_file=env)
    assert (s.vllm_port, s.resolved_served_name) == (8123, "booth")
    env.write_text("RCHAT_MAX_NUM_SEQS=lots\n")
    with pytest.raises(SettingsError, match="RCHAT_MAX_NUM_SEQS='lots'"):
        load_settings(_env_file=env)


def test_same_port_for_ui_and_vllm_is_refused() -> None:
    with pytest.raises(SettingsError, match="pick two ports"):
        load_settings(_env_file=None, vllm_port=7860, ui_port=7860)


def test_free_ports_are_different_and_free_so_test_settings_never_get_one_port_twice() -> None:
    # Two free_port() calls in a row once gave the same port (the kernel reused the one just released),
    # and a test's settings were refused for it; free_ports holds every socket while it picks.
    for _ in range(20):
        ports = free_ports(8)
        assert len(set(ports)) == 8
        assert all(port_is_free("127.0.0.1", port) for port in ports)


def test_external_mode_strips_v1_suffix() -> None:
    s = load_settings(_env_file=None, base_url="http://gpu-box:8000/v1/")
    assert s.external and s.server_url == "http://gpu-box:8000"


def test_command_line_reports_a_bad_env_value_in_one_line() -> None:
    env = {"PATH": "/usr/bin:/bin", "RCHAT_VLLM_PORT": "abc"}
    proc = subprocess.run(
        [sys.executable, "-m", "backend", "check"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "RCHAT_VLLM_PORT='abc'" in proc.stderr


def test_every_setting_is_documented_in_env_example() -> None:
    from backend.settings import Settings

    example = (PROJECT_ROOT / ".env.example").read_text()
    missing = [name for name in Settings.model_fields if f"RCHAT_{name.upper()}=" not in example]
    assert not missing, f"not in .env.example: {missing}"


MEASURED = re.compile(r"\b20\d\d-\d\d-\d\d\b|tok/s|\b\d+(\.\d+)?x\b|\d+ ?%")  # a date, a rate, a ratio, a share


def test_every_description_states_a_rule_in_under_200_characters_without_dates_or_figures() -> None:
    # The figures that chose a default live in the docs (docs/benchmark.md, ...); a description points there.
    from backend.settings import Settings

    for name, field in Settings.model_fields.items():
        text = field.description or ""
        assert 0 < len(text) < 200, f"RCHAT_{name.upper()}: {len(text)} characters"
        assert not MEASURED.search(text), f"RCHAT_{name.upper()}: {MEASURED.search(text)}"


def _bad_value(annotation: object) -> str | None:
    text = str(annotation)
    if "bool" in text:
        return "maybe"
    if "int" in text or "float" in text:
        return "lots"
    if "Literal" in text:
        return "bogus"
    return None  # free text (names, paths, prompts): no value is wrong in itself


def test_every_typed_key_with_a_wrong_value_gives_one_line_naming_it() -> None:
    from backend.settings import Settings

    checked = 0
    for name, field in Settings.model_fields.items():
        bad = _bad_value(field.annotation)
        if bad is None:
            continue
        with pytest.raises(SettingsError) as err:
            load_settings(_env_file=None, **{name: bad})
        message = str(err.value)
        assert "\n" not in message and f"RCHAT_{name.upper()}='{bad}'" in message, message
        checked += 1
    assert checked >= 25


def test_a_settings_file_that_is_not_utf8_gives_one_line(tmp_path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_bytes(b"RCHAT_UI_PORT=7\xff\xfe1\n")
    with pytest.raises(SettingsError) as err:
        load_settings(_env_file=env_file)
    assert "not UTF-8" in str(err.value) and str(env_file) in str(err.value) and "\n" not in str(err.value)


def test_users_that_are_not_json_give_one_line(monkeypatch) -> None:
    monkeypatch.setenv("RCHAT_USERS", "alice:secret")
    with pytest.raises(SettingsError) as err:
        load_settings(_env_file=None)
    assert "RCHAT_USERS" in str(err.value) and "JSON" in str(err.value) and "secret" not in str(err.value)
