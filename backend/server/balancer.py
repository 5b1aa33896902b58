"""HAProxy in front of several chat page processes: its config, its command line, and it as a supervised child.

Why a balancer that keeps each browser on one process: Chainlit keeps a browser's session in the memory
of the process it connected to (the socket.io session, which a reconnect looks up again, and the files a
session serves, an export download say), so one browser's websocket, its HTTP calls (login, thread list,
export, replay) and its reconnects must all reach one process, while new browsers spread over all of them.

Why HAProxy (Debian's 2.6): it does exactly that with one line, `cookie RCHAT_PAGE insert indirect
nocache` (the first response, the page itself, names its process in a cookie that every later request
carries; `indirect` keeps the cookie from the pages, `nocache` keeps shared caches from storing it); it
proxies websockets natively (an Upgrade switches the connection to a tunnel), checks each page's health
itself and sends the browsers of a page that is down to another one (`option redispatch`, with a new
cookie). Open-source nginx has no cookie stickiness (ip_hash puts every browser behind one NAT, and a
whole load test on loopback, on one process) and no active health checks. `haproxy -db` stays in the
foreground, so it is one more supervised child that Ctrl-C stops with the others.

New browsers: leastconn, because the connections that matter are websockets that stay open for the whole
visit; among equally loaded pages it goes round robin.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from backend.readiness import Awaited, process_gone
from backend.server import processes
from backend.server.child_process import LoggedChild
from backend.settings import PROJECT_ROOT

HEALTH_PATH = "/rchat-balancer-health"  # answered by HAProxy itself (monitor-uri): it is up
COOKIE = "RCHAT_PAGE"  # names the page process a browser stays on (p1, p2, ...)
INSTALL_HINT = "sudo apt-get install haproxy"
STOP_GRACE = 5.0
# Long enough for a websocket left open all day, and for a long answer streaming over it.
TUNNEL_TIMEOUT = "24h"


def find_haproxy() -> str | None:
    """HAProxy's path: on PATH, or where Debian puts it (/usr/sbin is not on every user's PATH)."""
    found = shutil.which("haproxy")
    if found:
        return found
    return "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").is_file() else None


def haproxy_config(*, host: str, port: int, pages: list[int], page_host: str = "127.0.0.1") -> str:
    """The whole haproxy.cfg: one frontend on host:port, one backend of the page processes."""
    servers = "\n".join(
        f"    server p{i} {page_host}:{p} cookie p{i} check inter 2s fall 2 rise 1"
        for i, p in enumerate(pages, start=1)
    )
    return f"""# Written by the launcher (backend/server/balancer.py) at each start; edits are lost.
global
    hard-stop-after 10s

defaults
    mode http
    option redispatch
    retries 2
    timeout connect 5s
    timeout client 5m
    timeout server 5m
    timeout tunnel {TUNNEL_TIMEOUT}
    timeout client-fin 30s
    timeout http-request 30s

frontend chat
    bind {host}:{port}
    monitor-uri {HEALTH_PATH}
    default_backend pages

backend pages
    balance leastconn
    cookie {COOKIE} insert indirect nocache httponly
    # A page killed mid-request: a GET (the page, a websocket's opening) goes to another page; other
    # methods are not sent twice.
    retry-on conn-failure empty-response
    http-request disable-l7-retry unless METH_GET
    option httpchk GET /health
    http-check expect status 200
{servers}
"""


def haproxy_argv(executable: str, config: Path) -> list[str]:
    return [executable, "-f", str(config), "-db"]  # -db: in the foreground, as our child


class Balancer(LoggedChild):
    """HAProxy as a supervised child (see supervision.Child); ready once HEALTH_PATH answers 200."""

    name = "the balancer (HAProxy)"
    label, port_user = "HAProxy", "HAProxy for the chat page"

    def __init__(
        self, *, executable: str, host: str, port: int, pages: list[int], log_dir: Path, startup_timeout: float
    ) -> None:
        self.executable, self.host, self.port, self.pages = executable, host, port, pages
        self.config_path = log_dir / f"haproxy-{port}.cfg"
        self.log_path = log_dir / f"haproxy-{port}.log"
        self.startup_timeout = startup_timeout

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host == "0.0.0.0" else self.host
        return f"http://{shown}:{self.port}"

    def start(self) -> None:
        if self._begin():
            self.config_path.write_text(haproxy_config(host=self.host, port=self.port, pages=self.pages))
        self.proc = processes.spawn_group(
            haproxy_argv(self.executable, self.config_path),
            env={"PATH": "/usr/bin:/bin"},
            log_path=self.log_path,
            cwd=PROJECT_ROOT,
        )

    def awaited(self) -> Awaited:
        assert self.proc is not None, "start() first"
        return Awaited(self.url + HEALTH_PATH, self.startup_timeout, gone=process_gone(self.proc))

    def _failure_extra(self) -> str:
        return f"\nIts config: {self.config_path}"
