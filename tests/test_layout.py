"""The package's layout: modules import downward only, with no circle of any kind."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "assistant"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every assistant module a file imports: at the top, in functions, under TYPE_CHECKING."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found |= {n for n in names if n in known} or ({node.module} if node.module in known else set())
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
    return found


def test_no_module_imports_one_that_imports_it() -> None:
    files = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, set(files)) - {name} for name, path in files.items()}

    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for dep in graph.get(node, ()):
                if dep == start:
                    return path + [start]
                if dep not in path:
                    stack.append((dep, path + [dep]))
        return None

    cycles = [c for name in graph if (c := cycle_from(name))]
    assert cycles == [], cycles[0]
