"""Helpers for tests of the real page: start the real Chainlit app, drive it with real Chromium."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from backend import processes
from backend.settings import PROJECT_ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextmanager
def chainlit_app(*, ui_port: int, log_dir: Path, env: dict[str, str]) -> Iterator[str]:
    """Run app.py under Chainlit with the given RCHAT_* variables; yield its URL; stop it after."""
    full_env = {**os.environ, "RCHAT_UI_PORT": str(ui_port), "RCHAT_LOG_DIR": str(log_dir), **env}
    log = log_dir / f"ui-test-{ui_port}.log"
    argv = [sys.executable, "-m", "chainlit", "run", str(PROJECT_ROOT / "app.py"), "--headless",
            "--host", "127.0.0.1", "--port", str(ui_port)]
    proc = processes.spawn_group(argv, env=full_env, log_path=log, cwd=PROJECT_ROOT)
    url = f"http://127.0.0.1:{ui_port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"chainlit exited:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"chainlit never answered:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        yield url
    finally:
        processes.stop_group(proc, grace=5)


@contextmanager
def browser_page(url: str, *, screenshot: Path | None = None):
    """A real Chromium page opened on url (Debian's chromium; Playwright downloads nothing)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)
        page.wait_for_selector("#chat-input", timeout=30_000)
        page.wait_for_selector("#starters", timeout=30_000)  # starters arrive once the socket is up
        try:
            yield page
        finally:
            if screenshot:
                page.screenshot(path=str(screenshot), full_page=True)
            browser.close()


def send(page, text: str) -> None:
    page.fill("#chat-input", text)
    page.locator("#chat-submit:not([disabled])").click(timeout=30_000)


def _assistant_texts(page) -> list[str]:
    return [t.strip() for t in page.locator('[data-step-type="assistant_message"]').all_inner_texts()]


def _is_notice(text: str) -> bool:
    # Ours start with the notice mark; Chainlit posts its own line when Stop is pressed.
    return text.startswith("ℹ") or text == "Task manually stopped."


def answers(page) -> list[str]:
    """Texts of the model's answers on the page, in order (notices left out)."""
    return [t for t in _assistant_texts(page) if not _is_notice(t)]


def notices(page) -> str:
    """All notices on the page (backend state, refused input), joined."""
    return "\n".join(t for t in _assistant_texts(page) if _is_notice(t))
