"""Serve the chat page (app.py) as `chainlit run --headless` does, without nest_asyncio.

Importing `chainlit.cli` calls `nest_asyncio.apply()`, which swaps asyncio's C tasks and futures for
the pure-Python ones and patches every loop iteration, a cost the page process pays on every await
(the profile: docs/benchmark.md, "The third round"). This runner does what `run_chainlit` does for
`run --headless` (load the app, the JWT secret, the welcome page, uvicorn on the plain asyncio loop)
without importing `chainlit.cli`.

What re-entrance gave and we do without: Chainlit's `ChatProfile.config_overrides` (its
`session.get_config` runs `set_chat_profiles` re-entrantly; without re-entrance it falls back to the
global config, which is what our one profile without overrides means anyway) and `cl.run_sync` called
on the event loop's own thread, which the app does not do.

    python -m backend.page.serve --host 127.0.0.1 --port 7860
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from pathlib import Path

from backend.settings import PROJECT_ROOT, page_replica

APP = PROJECT_ROOT / "app.py"


def serve(*, host: str, port: int, target: str = str(APP)) -> None:
    """What chainlit.cli.run_chainlit does for `run --headless`, minus nest_asyncio."""
    import chainlit.config
    import uvicorn
    from chainlit.auth import ensure_jwt_secret
    from chainlit.config import config, load_module
    from chainlit.markdown import init_markdown

    # Chainlit removes its whole files folder (session files: the chat exports) when a process stops;
    # shared by every page process of this checkout, it would take the others' files with it.
    chainlit.config.FILES_DIRECTORY = files_folder(port)

    config.run.host, config.run.port, config.run.headless = host, port, True
    if page_replica() is not None and not config.project.transports:
        # Behind the balancer (backend/server/balancer.py), Chainlit's `[project] transports` setting
        # (window.transports, for its socket.io client) opens the websocket at once instead of long
        # polling first: each polling request must reach the process that holds the session, which
        # HAProxy's cookie ensures, but one websocket is one connection to one process even without it.
        config.project.transports = ["websocket"]
    import chainlit.server
    from chainlit.server import app

    chainlit.server.FILES_DIRECTORY = chainlit.config.FILES_DIRECTORY  # what its shutdown removes
    config.run.module_name = target
    load_module(target)
    ensure_jwt_secret()
    init_markdown(config.root)
    # session.get_config's re-entrant call fails without nest_asyncio and falls back (see above);
    # Python would then report its coroutine as never awaited once per browser session.
    warnings.filterwarnings("ignore", message="coroutine .*chat_profiles.* was never awaited")
    # Chainlit's own settings for uvicorn, less per-message deflate: it costs the page CPU on every
    # streamed update and helps only on slow links.
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="error", ws_per_message_deflate=False)).run()


def files_folder(port: int) -> Path:
    """This page process's own folder for session files: one per port, so one per running process."""
    from chainlit.config import APP_ROOT

    folder = Path(APP_ROOT) / ".files" / f"page-{port}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m backend.page.serve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("target", nargs="?", default=str(APP), help="the Chainlit app (default: app.py)")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stdout,  # as chainlit.cli sets it up
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
    )
    serve(host=args.host, port=args.port, target=args.target)


if __name__ == "__main__":
    main()
