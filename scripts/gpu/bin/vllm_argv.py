"""Print the project's own vLLM command (backend/engine/vllm_command.py build_argv/build_env) for the GPU, shell-quoted,
with VPY as its python: `eval "$(python vllm_argv.py)"` sets VARGV (array) and exports the launch env.
RCHAT_* from the environment apply (RCHAT_API_SERVER_COUNT, RCHAT_MODEL, RCHAT_VLLM_PORT ...)."""

import os
import shlex
import sys

sys.path.insert(0, os.environ["REPO"])
from backend.engine.vllm_command import build_argv, build_env
from backend.settings import load_settings

s = load_settings()
argv = build_argv(s, device="cuda", eager=False)
argv[0] = os.environ.get("VPY", "python3")
env = build_env(s, api_key=s.api_key.get_secret_value())
print("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()))
print("VARGV=(" + " ".join(shlex.quote(a) for a in argv) + ")")
