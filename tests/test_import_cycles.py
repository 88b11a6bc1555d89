"""No import cycles in the library: every import counts, the lazy ones inside functions too.

A cycle through a function-level import runs, but it ties two modules into one unit that cannot be
understood, tested or replaced alone. The graph is built from the source (AST), with every module
named as it installs (``diagnostics/x.py`` is ``probegen.diagnostics.x``); imports under
``if TYPE_CHECKING:`` are annotations only and do not count. The strongly connected components of
more than one module are the cycles (networkx).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"probegen": "probegen", "diagnostics": "probegen.diagnostics", "commands": "probegen.commands"}

# Cycles that other work removes: an entry is deleted when its cycle is gone (issue 27 §3 removed the task
# registry's); the test fails if a cycle grows or another one appears.
PENDING: set[frozenset[str]] = set()


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name a source file installs as."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join([FOLDERS.get(parts[0], parts[0]), *(p for p in parts[1:] if p != "__init__")])


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack += [c for c in ast.iter_child_nodes(node) if not _type_checking(c)]


def import_graph(files: dict[str, str]) -> nx.DiGraph:
    """module -> the library modules it imports, from ``{module name: (path, source)}``-like input:
    ``files`` maps a module name to its source text (a package's name to its ``__init__``'s, marked
    by a trailing ``"."`` in the key)."""
    names = {k.rstrip("."): k.endswith(".") for k in files}
    g = nx.DiGraph()
    for key, text in files.items():
        mod, is_pkg = key.rstrip("."), key.endswith(".")
        g.add_node(mod)
        package = mod.split(".") if is_pkg else mod.split(".")[:-1]
        for node in _imports(ast.parse(text)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or "" if node.level == 0 else \
                    ".".join([*package[: len(package) - (node.level - 1)], *([node.module] if node.module else [])])
                # `from pkg import mod` imports the module; `from pkg import name` what pkg's __init__ defines
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names]
            for t in targets:
                while t and t not in names:  # the deepest library module the name is in
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    g.add_edge(mod, t)
    return g


def cycles(g: nx.DiGraph) -> list[frozenset[str]]:
    """The import cycles: strongly connected components of more than one module."""
    return sorted((frozenset(c) for c in nx.strongly_connected_components(g) if len(c) > 1), key=sorted)


def library_sources() -> dict[str, str]:
    out = {}
    for folder in FOLDERS:
        for f in sorted((ROOT / folder).rglob("*.py")):
            out[module_name(f) + ("." if f.name == "__init__.py" else "")] = f.read_text(encoding="utf-8")
    return out


def test_no_import_cycle_in_the_library():
    sources = library_sources()
    assert len(sources) > 100  # the walk finds the library, its diagnostics and commands
    found = cycles(import_graph(sources))
    new = [sorted(c) for c in found if c not in PENDING]
    assert not new, "import cycles (every import counts, lazy ones too; TYPE_CHECKING blocks do not):\n" + \
        "\n".join(" <-> ".join(c) for c in new)
    gone = [sorted(c) for c in PENDING if c not in found]
    assert not gone, f"a pending cycle is gone or changed: delete or update its PENDING entry: {gone}"


def test_the_check_sees_lazy_and_relative_cycles_but_not_type_checking():
    lazy = {"p.": "", "p.a": "def f():\n    from .b import g\n", "p.b": "from p.a import f\n"}
    assert cycles(import_graph(lazy)) == [frozenset({"p.a", "p.b"})]
    typed = {"p.": "", "p.a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import g\n",
             "p.b": "from p.a import f\n"}
    assert cycles(import_graph(typed)) == []
    through_pkg = {"p.": "from .a import x\n", "p.a": "from p import y\n"}  # y: a name p's __init__ defines
    assert cycles(import_graph(through_pkg)) == [frozenset({"p", "p.a"})]
    sibling = {"p.": "from .a import x\n", "p.a": "from p import b\n", "p.b": ""}  # b: a module, not p's __init__
    assert cycles(import_graph(sibling)) == []
