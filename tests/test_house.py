"""The house rules, checked on the source: imports go one way, modules and functions stay small.

Folders are roles (docs/architecture.md): page -> qa -> answers -> chat -> engine -> shared modules, and
server -> engine; server and qa never import each other; nothing imports the tests; Chainlit is imported
only by the page (backend/page) and app.py, its hooks; test files share helpers through the harness
modules, not through each other. The size rules hold for the product; the benchmark harness
(backend/bench) is exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from backend.settings import PROJECT_ROOT

SOURCES = sorted([*PROJECT_ROOT.glob("backend/**/*.py"), PROJECT_ROOT / "app.py"])
# What each role may not import (a prefix of the imported module's name).
FORBIDDEN = {
    # Imports go one way: page -> qa -> answers -> chat -> engine -> shared; server -> engine -> shared.
    # server and qa never import each other (the CLI, an entry point, hands the launcher its preflight).
    "backend.engine": (
        "backend.page",
        "backend.qa",
        "backend.answers",
        "backend.chat",
        "backend.server",
        "backend.bench",
    ),
    "backend.server": ("backend.page", "backend.chat", "backend.qa", "backend.answers", "backend.bench"),
    "backend.chat": ("backend.page", "backend.qa", "backend.answers", "backend.server", "backend.bench"),
    "backend.answers": ("backend.page", "backend.qa", "backend.server", "backend.bench"),
    "backend.qa": ("backend.page", "backend.server", "backend.bench"),
    "backend.page": ("backend.server", "backend.bench"),
}
SHARED = (
    "backend.settings",
    "backend.errors",
    "backend.records",
    "backend.model_info",
    "backend.server_status",
    "backend.readiness",
)
CHAINLIT_USERS = ("app", "backend.page")  # app.py's hooks and the page: the only importers of chainlit
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 40


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


@pytest.mark.parametrize("path", SOURCES, ids=module_name)
def test_imports_go_one_way(path: Path) -> None:
    name, used = module_name(path), imports(path)
    assert not {m for m in used if m == "tests" or m.startswith("tests.")}, "the product imports the tests"
    for role, banned in FORBIDDEN.items():
        if name.startswith(role + "."):
            wrong = sorted(m for m in used if any(m == b or m.startswith(b + ".") for b in banned))
            assert not wrong, f"{name} ({role}) imports {wrong}"
    if name in SHARED:
        wrong = sorted(m for m in used if m.startswith("backend.") and not m.startswith(SHARED))
        assert not wrong, f"{name} is shared by every role and must import only the other shared modules: {wrong}"


@pytest.mark.parametrize("path", SOURCES, ids=module_name)
def test_only_the_page_imports_chainlit(path: Path) -> None:
    name = module_name(path)
    if name in CHAINLIT_USERS or name.startswith("backend.page."):
        return
    wrong = sorted(m for m in imports(path) if m == "chainlit" or m.startswith("chainlit."))
    assert not wrong, f"{name} imports {wrong}: Chainlit belongs in backend/page (or app.py's hooks)"


@pytest.mark.parametrize("path", [p for p in SOURCES if "bench" not in p.parts], ids=module_name)
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text()
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{path.name} is over {MAX_MODULE_LINES} lines: split it"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_tests_share_helpers_through_the_harness_not_through_each_other() -> None:
    """A helper two test files need lives in a harness module (tests/ui_harness.py, tests/harness_cli.py),
    never in a test_*.py file that another imports."""
    wrong = {
        path.name: found
        for path in sorted((PROJECT_ROOT / "tests").glob("*.py"))
        if (found := sorted(m for m in imports(path) if m.startswith("tests.test_")))
    }
    assert not wrong, f"test files importing other test files: {wrong}"
