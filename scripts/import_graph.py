"""Prints the import graph between the roles of backend/ as a Mermaid diagram (docs/architecture.md).

.venv/bin/python scripts/import_graph.py
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLES = ("server", "engine", "chat", "answers", "page", "qa", "bench")
ENTRY = {"app": "app.py", "backend.__main__": "CLI", "backend.cli": "CLI"}


def role(module: str) -> str:
    if module in ENTRY:
        return ENTRY[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROLES else "shared"


def edges() -> collections.Counter:
    found: collections.Counter = collections.Counter()
    for path in [*ROOT.glob("backend/**/*.py"), ROOT / "app.py"]:
        here = role(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("backend."):
                there = role(node.module)
                if there != here:
                    found[(here, there)] += 1
    return found


if __name__ == "__main__":
    print("```mermaid\ngraph TD")
    for (a, b), n in sorted(edges().items()):
        print(f'    {a.replace(".", "_")}["{a}"] -->|{n}| {b}')
    print("```")
