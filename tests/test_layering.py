"""The data flows one way: the library (``probegen``) never imports ``diagnostics`` or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (absolute imports; relative ones stay inside)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_library_never_imports_diagnostics_or_cli():
    # __main__ is the `python -m probegen` / `torchrun -m probegen` entry point: it runs the CLI
    files = sorted(f for f in (ROOT / "probegen").rglob("*.py") if f.name != "__main__.py")
    assert len(files) > 50  # the walk really finds the library
    offenders = {str(f.relative_to(ROOT)): sorted(_imported_modules(f) & {"diagnostics", "cli"}) for f in files}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"library modules import diagnostics/cli: {offenders}"


def test_the_check_sees_a_diagnostics_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from diagnostics import baselines\n")
    assert "diagnostics" in _imported_modules(bad)
