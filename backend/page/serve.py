"""Serve the chat page (app.py) the way `chainlit run --headless` does, minus what slows it down.

`chainlit run` calls `nest_asyncio.apply()`, which swaps asyncio's C tasks and futures for the pure
Python ones and patches every loop iteration, and it serves on the plain asyncio loop with
per-message deflate on every websocket frame. Profiled under 64 sessions (docs/benchmark.md), that
is a large share of the page process's time. Here the page runs on uvloop (with httptools and the
`websockets` sans-I/O protocol, when installed) and compresses frames only if RCHAT_UI_WS_COMPRESSION says so.

What nest_asyncio made possible and we give up: Chainlit's `ChatProfile.config_overrides` (it runs
`set_chat_profiles` re-entrantly in `session.get_config`; without re-entrance it falls back to the
global config, which is what our one profile without overrides gives anyway) and `cl.run_sync` from
the event loop's thread, which the app does not use.

    python -m backend.page.serve --host 127.0.0.1 --port 7860
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import warnings

from backend.settings import PROJECT_ROOT, load_settings

APP = PROJECT_ROOT / "app.py"


def _best(name: str, module: str, fallback: str) -> str:
    return name if importlib.util.find_spec(module) else fallback


def uvicorn_config(app, *, host: str, port: int, compression: bool):
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, log_level="error",
                          loop=_best("uvloop", "uvloop", "asyncio"), http=_best("httptools", "httptools", "h11"),
                          ws=_best("websockets-sansio", "websockets", "wsproto"), ws_per_message_deflate=compression)


def serve(*, host: str, port: int, target: str = str(APP)) -> None:
    """What chainlit.cli.run_chainlit does for `run --headless`, on a faster loop."""
    from chainlit.auth import ensure_jwt_secret
    from chainlit.config import config, load_module
    from chainlit.markdown import init_markdown

    config.run.host, config.run.port, config.run.headless = host, port, True
    from chainlit.server import app

    config.run.module_name = target
    load_module(target)
    ensure_jwt_secret()
    init_markdown(config.root)
    # session.get_config's re-entrant call fails without nest_asyncio and falls back (see above); its
    # coroutine is then never awaited, which Python reports each time: say it once here instead.
    warnings.filterwarnings("ignore", message="coroutine .*set_chat_profiles.* was never awaited")
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host=host, port=port,
                                  compression=load_settings().ui_ws_compression)).run()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m backend.page.serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("target", nargs="?", default=str(APP), help="the Chainlit app (default: app.py)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    serve(host=args.host, port=args.port, target=args.target)


if __name__ == "__main__":
    main()
