"""A throwaway PostgreSQL server for the history tests: started by the tests, stopped and removed after.

Debian's postgresql package (scripts/setup.sh --dev installs it) gives initdb and pg_ctl under
/usr/lib/postgresql/<version>/bin. The server runs in a temporary folder, on a free port of 127.0.0.1,
with trust authentication and no fsync (nothing in it outlives the tests). PostgreSQL refuses to run
as root: as root the server runs as the package's `postgres` user. Without the binaries, the tests
that need the server are skipped and say how to get them.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from backend.server.processes import free_port

MISSING = (
    "PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql; "
    "scripts/setup.sh --dev installs it)"
)


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    initdb = found[-1] if found else shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _runs_as() -> pwd.struct_passwd | None:
    """None: as ourselves. As root: the `postgres` user, which PostgreSQL runs as."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root, and there is no `postgres` user to run PostgreSQL as")


def _pg(user: pwd.struct_passwd | None, *argv: object) -> None:
    def drop() -> None:
        if user is not None:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

    out = subprocess.run(
        [str(a) for a in argv],
        preexec_fn=drop,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        cwd="/",
    )
    assert out.returncode == 0, f"{argv[0]} failed: {out.stdout}{out.stderr}"


class Server:
    """One throwaway server: `url` of its `postgres` database as user `rchat`; stop() and start() again."""

    def __init__(self, bin_dir: Path, user: pwd.struct_passwd | None, folder: Path) -> None:
        self.bin_dir, self.user, self.folder, self.port = bin_dir, user, folder, free_port()
        self.url = f"postgresql://rchat@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        _pg(
            self.user,
            self.bin_dir / "pg_ctl",
            "-D",
            self.folder / "data",
            "-l",
            self.folder / "server.log",
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        _pg(self.user, self.bin_dir / "pg_ctl", "-D", self.folder / "data", "-m", "immediate", "-w", "stop")


@contextmanager
def throwaway_server() -> Iterator[Server]:
    """A running server in a temporary folder, removed afterwards."""
    bin_dir = pg_bin()
    if bin_dir is None:
        pytest.skip(MISSING)
    user = _runs_as()
    folder = Path(tempfile.mkdtemp(prefix="rchat-pg-"))
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
    server = Server(bin_dir, user, folder)
    _pg(
        user,
        bin_dir / "initdb",
        "-D",
        folder / "data",
        "-A",
        "trust",
        "-U",
        "rchat",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def new_database(server_url: str) -> str:
    """An empty database of its own on the server, for one test; its URL."""
    import asyncpg

    name = f"t_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        db = await asyncpg.connect(server_url)
        try:
            await db.execute(f'CREATE DATABASE "{name}"')
        finally:
            await db.close()

    asyncio.run(create())
    return server_url.rsplit("/", 1)[0] + f"/{name}"
