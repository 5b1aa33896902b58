"""Helpers for tests of the real page: start the real Chainlit app, drive it with real Chromium."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

from backend.bench.browser_check import ARGS as CHROMIUM_ARGS
from backend.bench.browser_check import CHROMIUM
from backend.bench.ui_process import chainlit_app  # noqa: F401 - re-exported for the tests
from backend.settings import PROJECT_ROOT

SHOTS = PROJECT_ROOT / ".cache" / "screenshots"
USER, PASSWORD = "alice", "correct horse battery"  # the QA user the login tests add (harness_cli.add_user)


def shot(name: str) -> Path:
    """Where a test's screenshot goes (looked at after a run: what the user saw)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"


def wait_for(predicate, timeout: float = 60, every: float = 0.25):
    """The predicate's first true value within `timeout` seconds, polled as a person would look again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


@contextmanager
def browser_page(url: str, *, screenshot: Path | None = None, wait_s: float = 30):
    """A real Chromium page opened on url (Debian's chromium; Playwright downloads nothing)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url, timeout=wait_s * 1000)
        page.wait_for_selector("#chat-input", timeout=wait_s * 1000)
        # The socket is up once the starters arrive, or a notice said on arrival (the server down, say),
        # which takes their place: Chainlit shows starters only in an empty chat.
        page.wait_for_selector("#starters, [data-step-type]", timeout=wait_s * 1000)
        try:
            yield page
        finally:
            if screenshot:
                page.screenshot(path=str(screenshot), full_page=True)
            browser.close()


@contextmanager
def chromium(downloads: Path):
    """A real Chromium page on nothing yet, for tests that log in or download (into `downloads`)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, downloads_path=str(downloads)
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
            page.set_default_timeout(90_000)  # a loaded shared machine can take over 30 s to render the login
            yield page
        finally:
            browser.close()


def log_in(page, url: str, password: str = PASSWORD) -> None:
    page.goto(url)
    page.fill("#email", USER)
    page.fill("#password", password)
    page.locator('button[type="submit"]').click()


def set_verdict(page, button, comment: str = "") -> None:
    """Click Right or Wrong under an answer, with an optional comment, as a QA user does."""
    button.click()
    if comment:
        page.get_by_placeholder("Why is it right or wrong?").fill(comment)
    page.locator("#submit-feedback").click()


def download_of(page, link, tries: int = 3) -> Path:
    """Click the export link as a user would, again if no download starts or it is cancelled: on a
    loaded machine a click can land while Chainlit re-renders the message, and start nothing or a
    download the re-render cancels (seen with the suite on both cores); a user clicks again."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in range(1, tries + 1):
        try:
            with page.expect_download(timeout=30_000) as download:
                link.click()
            return Path(download.value.path())
        except PlaywrightError as err:  # a TimeoutError is one too
            if attempt == tries or not ("Timeout" in type(err).__name__ or "canceled" in str(err)):
                raise
    raise AssertionError("unreachable")


def send(page, text: str, tries: int = 3) -> None:
    """Type text and press send, as a user would: if the page re-renders the composer under the typing
    (Chainlit moves a new chat to /thread/<id> a moment after its first message, which can land after
    the next message is typed on a loaded machine), type it again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

    for attempt in Retrying(
        stop=stop_after_attempt(tries), retry=retry_if_exception_type(PlaywrightTimeout), reraise=True
    ):
        with attempt:
            page.fill("#chat-input", text)
            page.locator("#chat-submit:not([disabled])").click(timeout=20_000)


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


def running_requests(server) -> float:
    """Requests the real vLLM is decoding now (its /metrics), to see that a Stop reached it."""
    import re

    import httpx

    text = httpx.get(server.url_for("metrics"), headers={"Authorization": f"Bearer {server.api_key}"}).text
    return sum(float(m) for m in re.findall(r"^vllm:num_requests_running\{[^}]*\} ([0-9.]+)", text, re.M))
