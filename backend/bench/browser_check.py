"""A low-concurrency check in real Chromium: when does answer text appear on the page itself?

A MutationObserver in the page stamps `performance.now()` each time the last answer's text grows,
so the times are those a person would see, rendering included. Needs playwright and Debian's chromium.
"""

from __future__ import annotations

from backend.bench.stats import StreamRecord
from backend.bench.ui_load import TOKENS_IN_STATS

CHROMIUM = "/usr/bin/chromium"
# Without the network-related flags Chromium's own connections are refused, many at a time, here.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OBSERVER = """() => {
  window.__growth = [];
  let last = 0;
  new MutationObserver(() => {
    const answers = document.querySelectorAll('[data-step-type="assistant_message"]');
    const text = answers.length ? answers[answers.length - 1].innerText : '';
    if (text.length > last) { window.__growth.push(performance.now()); last = text.length; }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def run_browser(url: str, prompt: str, *, repeat: int) -> list[StreamRecord]:
    """One tab, `repeat` questions in turn, each in a new chat."""
    from playwright.sync_api import sync_playwright

    records = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page()
        for _ in range(repeat):
            page.goto(url)
            page.wait_for_selector("#starters", timeout=30_000)
            page.evaluate(OBSERVER)
            page.fill("#chat-input", prompt)
            sent = page.evaluate("() => performance.now()")
            page.locator("#chat-submit:not([disabled])").click()
            page.wait_for_function(
                "() => [...document.querySelectorAll('[data-step-type=\"assistant_message\"]')]"
                ".some(e => e.innerText.includes('finish:'))",
                timeout=300_000,
            )
            growth = page.evaluate("() => window.__growth")
            final = page.locator('[data-step-type="assistant_message"]').last.inner_text()
            match = TOKENS_IN_STATS.search(final)
            # The last growth is the stats line being written, not a token: leave it out.
            records.append(
                StreamRecord(
                    sent_at=sent / 1000,
                    arrivals=[t / 1000 for t in growth[:-1]],
                    tokens=int(match.group(1)) if match else 0,
                )
            )
        browser.close()
    return records
