"""Chat page processes behind HAProxy (RCHAT_PAGE_WORKERS): the plan and the config, then the real thing.

The launcher runs here for real, with real Chainlit pages and Debian's HAProxy, against the fake
OpenAI server (external mode), so no vLLM is needed: one browser stays on one page process, new ones
spread, a killed page comes back while the other serves, and Ctrl-C leaves no process and no port.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time

import httpx
import psutil
import pytest

from backend.server import balancer, page_pool, processes
from backend.server.balancer import COOKIE, Balancer, haproxy_argv, haproxy_config
from backend.server.page_pool import GPU_PAGE_WORKERS, PagePool, page_workers, plan
from backend.server.supervision import Hooks
from backend.settings import PAGE_REPLICA_ENV, page_replica
from tests.conftest import make_settings
from tests.harness_cli import BalancedService

HAPROXY = balancer.find_haproxy()
needs_haproxy = pytest.mark.skipif(HAPROXY is None, reason="HAProxy is not installed (apt-get install haproxy)")
HOOKS = Hooks(say=print, spawned=lambda _pid: None, reaped=lambda _pid: None, changed=lambda _sup: None)


# --- the plan, the pages' command lines and HAProxy's config, without starting anything ---


def test_one_page_on_a_cpu_host_four_on_a_gpu_host_unless_set(tmp_path) -> None:
    assert page_workers(make_settings(tmp_path), "cpu") == 1
    assert page_workers(make_settings(tmp_path), "cuda") == GPU_PAGE_WORKERS == 4
    assert page_workers(make_settings(tmp_path, page_workers=1), "cuda") == 1
    assert page_workers(make_settings(tmp_path, page_workers=3), "cpu") == 3
    assert make_settings(tmp_path, page_workers="").page_workers is None  # empty in .env: the host's default


def test_one_page_is_todays_page_and_nothing_else(tmp_path) -> None:
    s = make_settings(tmp_path, ui_host="0.0.0.0")
    pool = PagePool(s, plan(s, "cpu"), env={"X": "1"}, hooks=HOOKS)
    assert pool.balancer is None and len(pool.pages) == 1 and pool.front() is pool.pages[0]
    page = pool.pages[0].child
    assert (page.host, page.port, page.name) == ("0.0.0.0", s.ui_port, "the chat page")
    assert page.argv[-4:] == ["--host", "0.0.0.0", "--port", str(s.ui_port)]
    assert PAGE_REPLICA_ENV not in page.env and page.log_path == tmp_path / f"ui-{s.ui_port}.log"
    assert pool.describe() == f"chat page: 1 process on :{s.ui_port}"


def test_several_pages_listen_inside_and_know_their_place(tmp_path) -> None:
    s = make_settings(tmp_path, page_workers=3, ui_host="0.0.0.0")
    layout = plan(s, "cpu", haproxy="/usr/sbin/haproxy")
    assert layout.count == 3 and len(set(layout.ports)) == 3
    assert not {s.ui_port, s.vllm_port} & set(layout.ports)
    pool = PagePool(s, layout, env={"X": "1"}, hooks=HOOKS)
    pages = [sup.child for sup in pool.pages]
    assert [p.env[PAGE_REPLICA_ENV] for p in pages] == ["1/3", "2/3", "3/3"]
    assert [p.name for p in pages] == ["chat page 1 of 3", "chat page 2 of 3", "chat page 3 of 3"]
    assert all(p.host == "127.0.0.1" and p.env["X"] == "1" for p in pages)  # only HAProxy faces the network
    assert [p.port for p in pages] == layout.ports
    front = pool.front().child
    assert isinstance(front, Balancer) and (front.host, front.port) == ("0.0.0.0", s.ui_port)
    assert pool.describe().startswith(f"chat page: 3 processes behind HAProxy on :{s.ui_port}")


def test_without_haproxy_one_page_runs_and_the_start_says_what_to_install(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(page_pool, "find_haproxy", lambda: None)
    s = make_settings(tmp_path, page_workers=2)
    layout = plan(s, "cpu")
    assert layout.ports == [s.ui_port] and layout.haproxy is None
    line = PagePool(s, layout, env={}, hooks=HOOKS).describe()
    assert "2 chat page processes need HAProxy" in line and "apt-get install haproxy" in line
    assert "\n" not in line


def test_haproxy_config_keeps_a_browser_on_one_page(tmp_path) -> None:
    text = haproxy_config(host="0.0.0.0", port=7860, pages=[40001, 40002])
    assert "bind 0.0.0.0:7860" in text and f"monitor-uri {balancer.HEALTH_PATH}" in text
    assert f"cookie {COOKIE} insert indirect nocache" in text and "balance leastconn" in text
    assert "option redispatch" in text and "timeout tunnel" in text
    assert "server p1 127.0.0.1:40001 cookie p1 check" in text
    assert "server p2 127.0.0.1:40002 cookie p2 check" in text
    assert haproxy_argv("/usr/sbin/haproxy", tmp_path / "h.cfg") == [
        "/usr/sbin/haproxy",
        "-f",
        str(tmp_path / "h.cfg"),
        "-db",
    ]


@needs_haproxy
def test_haproxy_itself_accepts_the_config(tmp_path) -> None:
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(haproxy_config(host="127.0.0.1", port=7860, pages=[40001, 40002, 40003, 40004]))
    done = subprocess.run([HAPROXY, "-c", "-f", str(cfg)], check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_page_knows_its_place_from_the_launchers_variable(monkeypatch) -> None:
    monkeypatch.delenv(PAGE_REPLICA_ENV, raising=False)
    assert page_replica() is None
    monkeypatch.setenv(PAGE_REPLICA_ENV, "2/4")
    assert page_replica() == (2, 4)
    from backend.page.live_strip import deployment

    assert deployment() == "page 2 of 4"
    monkeypatch.setenv(PAGE_REPLICA_ENV, "nonsense")
    assert page_replica() is None and deployment() is None


# --- the real launcher, two real pages and HAProxy, on the fake OpenAI server ---


def page_cookie(response: httpx.Response) -> str | None:
    """The page HAProxy named in a Set-Cookie (p1, p2), or None when it set none (the cookie stood)."""
    found = re.search(rf"{COOKIE}=(p\d+)", response.headers.get("set-cookie", ""))
    return found.group(1) if found else None


def established(port: int) -> int:
    """Open connections to a page's port (HAProxy's, on behalf of browsers)."""
    return sum(
        1
        for c in psutil.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


async def two_browsers(url: str) -> tuple[list[str], list[str]]:
    """Two sessions over the balancer at once: the page each landed on, and their answers."""
    from backend.bench.chainlit_client import ChainlitSession

    async with ChainlitSession(url) as one, ChainlitSession(url) as two:
        pages = [re.search(rf"{COOKIE}=(p\d)", s.cookie).group(1) for s in (one, two)]
        answers = await asyncio.gather(one.ask("THINK", timeout=60), two.ask("FIELD", timeout=60))
        return pages, ["\n".join(a.texts.values()) for a in answers]


@needs_haproxy
@pytest.mark.timeout(900)
def test_two_pages_behind_haproxy_share_browsers_survive_a_kill_and_stop_clean(tmp_path, fake_server_url) -> None:
    with BalancedService(tmp_path, fake_server_url) as service:
        service.wait_for("chat ready at")
        ports = service.internal_ports()
        assert f"chat page: 2 processes behind HAProxy on :{service.ui_port}" in service.output
        assert all(httpx.get(f"http://127.0.0.1:{p}/").status_code == 200 for p in ports)  # both pages serve

        # New browsers spread over both pages; the websocket of each reaches the page its cookie names.
        seen = {page_cookie(httpx.get(service.url + "/")) for _ in range(4)}
        assert seen == {"p1", "p2"}
        pages, answers = asyncio.run(two_browsers(service.url))
        assert sorted(pages) == ["p1", "p2"], pages
        assert "9.8" in answers[0] and "9.8 is bigger." in answers[1]

        # One browser with its cookie stays where it is: HAProxy never sets another.
        with httpx.Client(base_url=service.url, cookies={COOKIE: "p2"}) as browser:
            assert all(browser.get("/").status_code == 200 and page_cookie(browser.get("/")) is None for _ in range(5))

        # Page 1 killed -9: page 2 serves on (page 1's browsers too), page 1 comes back on its port.
        first, second = service.page_pid(1), service.page_pid(2)
        os.killpg(first, signal.SIGKILL)
        psutil.Process(first).wait(timeout=10)  # reaped by the launcher: its port refuses connections
        with httpx.Client(base_url=service.url, cookies={COOKIE: "p1"}) as browser:
            moved = browser.get("/")
            assert moved.status_code == 200 and page_cookie(moved) == "p2"  # redispatched, with a new cookie
        assert all(httpx.get(service.url + "/").status_code == 200 for _ in range(6))
        service.wait_for("chat page 1 of 2 exited with code -9; restarting in 1 s", timeout=30)
        service.wait_for("chat page 1 of 2 is healthy again", timeout=300)
        assert service.page_pid(1) not in (None, first) and service.page_pid(2) == second
        assert httpx.get(f"http://127.0.0.1:{ports[0]}/").status_code == 200
        with httpx.Client(base_url=service.url, cookies={COOKIE: "p1"}) as browser:  # once HAProxy saw it (2 s checks)
            deadline = time.monotonic() + 15
            while page_cookie(browser.get("/")) is not None:
                assert time.monotonic() < deadline, "HAProxy never sent page 1's browsers back to it"
                time.sleep(0.5)

        # Ctrl-C: the launcher stops HAProxy and both pages; no process is left and every port is free.
        spawned = psutil.Process(service.proc.pid).children(recursive=True)
        assert len([p for p in spawned if "haproxy" in p.name()]) == 1
        os.kill(service.proc.pid, signal.SIGINT)
        assert service.proc.wait(timeout=90) == 128 + signal.SIGINT
        left = [p for p in spawned if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not left, [p.cmdline()[:4] for p in left]
        assert all(processes.port_is_free("127.0.0.1", p) for p in [service.ui_port, *ports])
        assert "all stopped" in service.output and "Traceback" not in service.output


@needs_haproxy
@pytest.mark.browser
@pytest.mark.timeout(600)
def test_a_browser_asks_through_the_balancer_and_stays_on_its_page(tmp_path, fake_server_url) -> None:
    from tests.ui_harness import answers, browser_page, send

    with BalancedService(tmp_path, fake_server_url) as service:
        service.wait_for("chat ready at")
        ports = service.internal_ports()
        with browser_page(service.url, screenshot=tmp_path / "balanced.png") as page:
            cookies = {c["name"]: c["value"] for c in page.context.cookies()}
            mine = ports[int(cookies[COOKIE].removeprefix("p")) - 1]
            assert page.evaluate("window.transports") == ["websocket"]  # straight to the websocket
            send(page, "FIELD")
            deadline = time.monotonic() + 60
            while "9.8 is bigger." not in "".join(answers(page)):
                assert time.monotonic() < deadline, answers(page)
                time.sleep(0.25)
            assert established(mine) >= 1  # the page's websocket, through HAProxy, on the page its cookie names
            # The strip names the page process (live_strip.deployment(), tested above); the fake server has
            # no /metrics, so the push is played here as the page process sends it.
            page.evaluate("""window.postMessage({kind: "rchat-live", page: "page 2 of 2", strip: {model: "m",
                running: 1, waiting: 0, tokens_per_second: null, kv_cache_percent: null}}, "*")""")
            page.wait_for_selector("#rchat-live-page:has-text('page 2 of 2')", timeout=5_000)
            page.reload()
            page.wait_for_selector("#chat-input", timeout=30_000)
            assert {c["name"]: c["value"] for c in page.context.cookies()}[COOKIE] == cookies[COOKIE]
