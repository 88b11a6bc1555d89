"""Code shape: no function over 60 lines in the library or the diagnostics (click option decorators
aside: the count starts at ``def``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60


def long_functions(path: Path) -> list[str]:
    """``name (N lines)`` for every function or method in ``path`` longer than MAX_LINES."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_LINES:
                out.append(f"{node.name} ({n} lines)")
    return out


def test_no_function_over_60_lines():
    files = sorted([*(ROOT / "probegen").rglob("*.py"), *(ROOT / "diagnostics").rglob("*.py")])
    assert len(files) > 60  # the walk really finds the code
    found = {str(f.relative_to(ROOT)): long_functions(f) for f in files}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"functions over {MAX_LINES} lines: {found}"


def test_the_check_sees_a_long_function(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("@decorator(\n    1)\ndef f():\n" + "    x = 1\n" * MAX_LINES)
    assert long_functions(f) == [f"f ({MAX_LINES + 1} lines)"]
    f.write_text("def f():\n" + "    x = 1\n" * (MAX_LINES - 1))
    assert long_functions(f) == []
