"""A page process's files (the chat exports) outlive the other page processes of the same checkout.

Chainlit removes its whole session-files folder when a process stops. Two page processes of one
checkout (the page pool behind HAProxy, a page restarted by the launcher, two instances) used to share
that folder, so a page stopping elsewhere turned an export link on this page into a cancelled download.
The fake server of tests/fake_openai_server.py answers (its scripted keyed answer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import free_ports
from tests.harness_cli import KEYED, add_user
from tests.ui_harness import PASSWORD, USER, chainlit_app, chromium, download_of, log_in, send, wait_for

pytestmark = [pytest.mark.browser]


def test_an_export_still_downloads_after_another_page_process_stops(tmp_path: Path, fake_server_url: str) -> None:
    add_user(tmp_path / "data", USER, PASSWORD)
    env = {"RCHAT_BASE_URL": fake_server_url, "RCHAT_DATA_DIR": str(tmp_path / "data")}
    mine, other = free_ports(2)
    with chainlit_app(ui_port=mine, log_dir=tmp_path, env=env) as url, chromium(tmp_path) as page:
        with chainlit_app(ui_port=other, log_dir=tmp_path, env=env):
            log_in(page, url)
            page.wait_for_selector("#chat-input", timeout=60_000)
            send(page, KEYED)
            wait_for(lambda: page.get_by_text("finish:").count() == 1, timeout=60)
            page.get_by_role("button", name="Export chat").click()
            link = page.locator("a.inline-file[download$='.jsonl']")
            link.wait_for(timeout=30_000)
        # The other page process has stopped, as Chainlit stops: its files folder is gone, not ours.
        exported = [json.loads(line) for line in download_of(page, link, tries=1).read_text().splitlines()]
        assert [r["question"] for r in exported] == [KEYED]
