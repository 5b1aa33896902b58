"""The runtime check (scripts/check_runtime.py, run by .ci/run) must catch a missing runtime dependency.

.ci/run runs the check as is (a fresh clone's runtime lock starts the page and it answers). Here the
same check runs with greenlet removed from that environment, the way SQLAlchemy 2.1 broke new users
while the test environment (Playwright brings greenlet) stayed green: the check must fail, naming it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from backend.settings import PROJECT_ROOT

pytestmark = pytest.mark.install


def test_the_runtime_check_fails_when_a_runtime_dependency_is_missing() -> None:
    proc = subprocess.run(
        [sys.executable, "scripts/check_runtime.py", "--drop", "greenlet"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "FAILED: start_service.sh exited" in out
    assert "requires that the Python 'greenlet' library is installed" in out
