"""The counts of issue 49, for the working tree or any git revision: ``python tools/audit.py [--rev REV]
[--json OUT] [--mypy]`` prints a table (``--rev A --rev B`` puts revisions side by side, ``.`` is the
working tree) and can write the counts and their findings as JSON.

The library is ``probegen/``, ``diagnostics/`` and ``commands/`` (they install as ``probegen``,
``probegen.diagnostics`` and ``probegen.commands``). Every count is defined here, once, so that a
revision and the next are measured alike:

- ``kind_files.<kind>``: library files outside the kind's own folder whose code names the kind: an
  identifier (a name, attribute, argument, function, class or imported module) or a string literal
  (docstrings and comments aside) contains one of the kind's names, case-insensitively and not right after
  a lower-case letter, so ``twice`` is not WiC (CoDA21: ``coda21``; WordNetQA: ``wordnetqa``; word in
  context: ``wordincontext``, ``wic``, ``wsd``).
- ``kind_dispatch``: dict displays with a dataset-kind string among their keys, and tuples, lists and sets
  of two or more dataset-kind strings (kind lists such as ``KINDS = ("coda21", "wordnetqa")``), outside
  ``probegen/tasks/``; ``dataset_probes``: ``hasattr(x, ...)`` or a three-argument ``getattr`` on a
  dataset (a name or attribute ``data``, ``dataset``, ``ds`` or ending in ``_data``/``_dataset``).
- ``runtime_cycles``: an import hook (``builtins.__import__`` and ``importlib.import_module`` wrapped)
  records, while every library module is imported in a fresh interpreter, each import of a module that
  is still being initialised by another (the importer reaches back into a half-run module): the pairs
  (importer, half-run module). ``runtime_scc``: the cycles (strongly connected components) of the
  graph of all imports the hook saw.
- ``static_cycles``: cycles of the source import graph, every import counted, lazy ones too
  (tests/test_import_cycles.py's graph); ``up_imports``: edges of that graph that point up the layers.
  The layers, top to bottom (tests/test_layering.py's rules): the CLI (``probegen.commands``,
  ``probegen.__main__`` and the package facade ``probegen/__init__.py``), the run layer
  (``probegen.run``, where it exists), ``probegen.diagnostics``, the rest of ``probegen``.
- ``<request>_stay`` / ``<request>_climb``: the eval and the bias request of tests/test_notebook_api.py
  (glove-50d on the WordNetQA release sample) run by the CLI under a profile hook; the distinct pairs
  (caller's module, callee's module) of library modules, split into calls that stay in their layer or go
  down and calls that climb (a library function calling back into diagnostics, say: the data flowing up).
- ``private_imports``: lines (file, line) with ``from m import _x`` or ``m._x`` on an imported library
  module, where ``_x`` (one leading underscore) belongs to another module, or an import of a private
  module (``_paths``) from outside its package.
- ``resamplers``: functions that draw indices or weights (``integers``, ``choice``, ``randint``,
  ``multinomial``) in a loop or comprehension or with a ``size`` (a matrix of replicates) and speak of a
  bootstrap (``boot`` or ``resampl`` in a name or string they use);
  ``cluster_variances``: functions that speak of clusters and apply a small-sample factor ``c / (c - 1)``.
- ``method_fallbacks``: library files outside ``probegen/methods/`` with a string literal equal to a
  built-in method's name (score, zeroshot, generate, letter, trained) used as a value: not a dict key, a
  subscript, a comparison's side, the key of a mapping's ``get``/``pop``/``setdefault`` or a docstring
  (``methods.get("trained")``, the registry asked by name, counts).
- ``any_datasets``: parameters with a dataset name (as ``dataset_probes``, plus ``datasets``) annotated
  ``Any`` (``Any | None`` and ``Sequence[Any]`` too) or not annotated at all.
- ``mutable_state``: module-level names bound to a dict, list or set (display, comprehension or call) that
  the module mutates (item assignment, ``del``, augmented assignment, a mutating method), plus names
  declared ``global``.
- ``library_lines``: lines of the library's .py files; ``duplicate_pairs``: the pairs ``duplicates --most
  200 --seconds 120`` counts over the whole tree; ``mypy_<part>`` (with ``--mypy``, slow): ``mypy --strict``
  errors in probegen/ (the rest), diagnostics/ and commands/, run on the installed layout.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_import_cycles import cycles, import_graph  # noqa: E402  (the graph tests/ checks, one definition)

FOLDERS = {"probegen": "probegen", "diagnostics": "probegen.diagnostics", "commands": "probegen.commands"}
KINDS = {"coda21": ("coda21",), "wordnetqa": ("wordnetqa",), "wordincontext": ("wordincontext", "wic", "wsd")}
KIND_FOLDER = {"coda21": "probegen/coda21/", "wordnetqa": "probegen/wordnetqa/",
               "wordincontext": "probegen/wordincontext/"}
#: a kind's name, not preceded by a lower-case letter: ``WiCDataset``, ``make_wic`` and ``CoDA21`` count, ``twice`` not
KIND_NAME = {k: re.compile("|".join(rf"(?<![a-z])(?i:{n})" for n in names)) for k, names in KINDS.items()}
DATASET_KINDS = frozenset({"coda21", "wordnetqa", "wordincontext", "wic", "wsd"})
METHOD_NAMES = frozenset({"score", "zeroshot", "generate", "letter", "trained"})
DATASET_NAME = re.compile(r"^(data|dataset|ds)$|_data$|_dataset$")
LAYERS = (("cli", ("probegen.commands", "probegen.__main__")), ("run", ("probegen.run",)),
          ("diagnostics", ("probegen.diagnostics",)), ("library", ("probegen",)))
DATA = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"
#: the requests whose calls are traced: the notebook API's examples (tests/test_notebook_api.py), run by the CLI
REQUESTS = {"eval": ["eval", "--model", "glove-50d", "--dataset", str(DATA / "hyponymy-train-sample.jsonl"),
                     "--sample", "12", "--bootstrap", "300"],
            "bias": ["bias", "--model", "glove-50d", "--dataset", str(DATA / "definitions-train-sample.jsonl"),
                     "--limit", "10", "--bootstrap", "100", "--no-controls"]}
MUTATORS = frozenset({"append", "extend", "insert", "update", "add", "setdefault", "pop", "popitem", "clear", "remove",
                      "discard", "sort", "reverse", "__setitem__"})


@functools.lru_cache(maxsize=None)
def parse(text: str) -> ast.Module:
    """``ast.parse(text)``, once per text: every counter walks the same trees."""
    return ast.parse(text)


# ---- the files ----------------------------------------------------------------------------------------
def library_files(root: Path) -> dict[str, str]:
    """``{path relative to root: source}`` of every library .py file."""
    return {f.relative_to(root).as_posix(): f.read_text(encoding="utf-8")
            for folder in FOLDERS for f in sorted((root / folder).rglob("*.py"))}


def module_of(rel: str) -> str:
    """The dotted name a library file installs as (``diagnostics/x.py`` -> ``probegen.diagnostics.x``)."""
    parts = Path(rel).with_suffix("").parts
    return ".".join([FOLDERS[parts[0]], *(p for p in parts[1:] if p != "__init__")])


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of ``tree``'s module, classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _strings(tree: ast.AST) -> Iterator[ast.Constant]:
    """The string constants of ``tree`` that are not docstrings."""
    docs = _docstrings(tree)
    return (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)


def _identifiers(tree: ast.AST) -> Iterator[str]:
    """Every identifier ``tree`` writes: names, attributes, arguments, definitions, imported modules and aliases."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.arg):
            yield n.arg
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield n.name
        elif isinstance(n, ast.ImportFrom):
            yield n.module or ""
            yield from (a.asname or a.name for a in n.names)
        elif isinstance(n, ast.Import):
            yield from (a.asname or a.name for a in n.names)


# ---- kinds --------------------------------------------------------------------------------------------
def kind_files(files: dict[str, str]) -> dict[str, list[str]]:
    """Per kind, the library files outside its folder that name it (see the module doc)."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for rel, text in files.items():
        if not any(n in text.lower() for names in KINDS.values() for n in names):
            continue
        tree = parse(text)
        words = " ".join([*(str(s.value) for s in _strings(tree)), *_identifiers(tree)])
        for kind, name in KIND_NAME.items():
            if not rel.startswith(KIND_FOLDER[kind]) and name.search(words):
                out[kind].append(rel)
    return out


def _kind_literals(node: ast.AST | None) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in DATASET_KINDS:
        return {node.value}
    return set()


def kind_dispatch(text: str) -> list[int]:
    """Lines of dict displays keyed by a dataset kind, and of tuples/lists/sets of two or more kind strings."""
    out: list[int] = []
    if not any(k in text for k in DATASET_KINDS):
        return out
    for n in ast.walk(parse(text)):
        if isinstance(n, ast.Dict) and any(_kind_literals(k) for k in n.keys):
            out.append(n.lineno)
        elif isinstance(n, (ast.Tuple, ast.List, ast.Set)) and sum(bool(_kind_literals(e)) for e in n.elts) >= 2:
            out.append(n.lineno)
    return sorted(out)


def _target_name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def dataset_probes(text: str) -> list[int]:
    """Lines of ``hasattr(<dataset>, ...)`` and ``getattr(<dataset>, ..., default)``."""
    out: list[int] = []
    if "hasattr" not in text and "getattr" not in text:
        return out
    for n in ast.walk(parse(text)):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args
                and (n.func.id == "hasattr" or (n.func.id == "getattr" and len(n.args) == 3))
                and DATASET_NAME.search(_target_name(n.args[0]))):
            out.append(n.lineno)
    return out


# ---- imports ------------------------------------------------------------------------------------------
def layer(module: str) -> int:
    """The layer's rank of a library module, 0 at the top (see LAYERS); the package facade is an entry point."""
    if module == "probegen":
        return 0
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return len(LAYERS)


def source_graph(files: dict[str, str]) -> nx.DiGraph:
    """The library's source import graph (tests/test_import_cycles.py's: every import, TYPE_CHECKING aside)."""
    return import_graph({module_of(rel) + ("." if rel.endswith("__init__.py") else ""): text
                         for rel, text in files.items()})


def up_imports(g: nx.DiGraph) -> list[str]:
    """``a -> b`` for every edge of ``g`` from a lower layer to a higher one."""
    return sorted(f"{a} -> {b}" for a, b in g.edges if layer(b) < layer(a))


def _resolve(rel: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom in library file ``rel`` names."""
    if node.level == 0:
        return node.module or ""
    here = module_of(rel).split(".")
    package = here if rel.endswith("__init__.py") else here[:-1]
    return ".".join([*package[: len(package) - (node.level - 1)], *([node.module] if node.module else [])])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(rel: str, text: str) -> list[str]:
    """``line: name`` of every reach into another module's private names (see the module doc)."""
    here = module_of(rel)
    package = here if rel.endswith("__init__.py") else here.rpartition(".")[0]
    out, aliases = [], {}
    tree = parse(text)
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            base = _resolve(rel, n)
            if not base.startswith("probegen"):
                continue
            parts = base.split(".")
            for i, p in enumerate(parts):  # a private module reached from outside its package
                owner = ".".join(parts[:i])
                if _private(p) and package != owner and not package.startswith(owner + "."):
                    out.append(f"{n.lineno}: {base}")
            for a in n.names:
                if _private(a.name) and f"{base}.{a.name}".rpartition(".")[0] != package:
                    out.append(f"{n.lineno}: {base}.{a.name}")
                aliases[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(n, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in n.names if a.name.startswith("probegen")})
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)):
            continue
        if n.value.id in aliases and _private(n.attr):
            out.append(f"{n.lineno}: {aliases[n.value.id]}.{n.attr}")
    return sorted(set(out), key=lambda s: int(s.split(":")[0]))


# ---- statistics written again ---------------------------------------------------------------------------
def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    return (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _draws(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr in ("integers", "choice", "randint", "multinomial")


def _loops(fn: ast.AST) -> Iterator[ast.AST]:
    return (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While, ast.ListComp, ast.SetComp, ast.DictComp,
                                                      ast.GeneratorExp)))


def resamplers(text: str) -> list[str]:
    """``line name`` of every hand-written bootstrap resampler (see the module doc)."""
    out: list[str] = []
    if "boot" not in text.lower() and "resampl" not in text.lower():
        return out  # the words the definition asks for are not in the file
    for fn in _functions(parse(text)):
        words = " ".join([*_identifiers(fn), *(str(s.value) for s in _strings(fn))]).lower()
        if "boot" not in words and "resampl" not in words:
            continue
        in_loop = {id(c) for lp in _loops(fn) for c in ast.walk(lp) if isinstance(c, ast.Call)}
        for c in _own_nodes(fn):
            if isinstance(c, ast.Call) and _draws(c) and (id(c) in in_loop or any(
                    k.arg == "size" for k in c.keywords)):
                out.append(f"{fn.lineno} {fn.name}")
                break
    return out


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of function ``fn``, those of the functions defined inside it aside."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack += ast.iter_child_nodes(node)


def _small_sample_factor(node: ast.AST) -> bool:
    """``c / (c - 1)`` or ``c / max(c - 1, 1)``."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.left, ast.Name)):
        return False
    right = node.right
    if isinstance(right, ast.Call) and _target_name(right.func) == "max" and right.args:
        right = right.args[0]
    return (isinstance(right, ast.BinOp) and isinstance(right.op, ast.Sub) and isinstance(right.left, ast.Name)
            and right.left.id == node.left.id and isinstance(right.right, ast.Constant) and right.right.value == 1)


def cluster_variances(text: str) -> list[str]:
    """``line name`` of every function that speaks of clusters and applies the small-sample factor."""
    out: list[str] = []
    if "cluster" not in text.lower():
        return out
    for fn in _functions(parse(text)):
        doc = ast.get_docstring(fn) or ""
        if ("cluster" in fn.name.lower() or "cluster" in doc.lower()) and any(map(_small_sample_factor, ast.walk(fn))):
            out.append(f"{fn.lineno} {fn.name}")
    return out


# ---- methods, types, state ----------------------------------------------------------------------------
def method_fallbacks(text: str) -> list[int]:
    """Lines of built-in method names used as values (see the module doc)."""
    tree = parse(text)
    skip = _docstrings(tree)
    for n in ast.walk(tree):
        if isinstance(n, ast.Dict):
            skip |= {id(k) for k in n.keys if k is not None}
        elif isinstance(n, ast.Subscript):
            skip |= {id(c) for c in ast.walk(n.slice)}
        elif isinstance(n, ast.Compare):
            skip |= {id(c) for c in (n.left, *n.comparators)}
        elif isinstance(n, ast.Call) and _target_name(n.func) in ("get", "pop", "setdefault") and n.args \
                and not (isinstance(n.func, ast.Attribute) and _target_name(n.func.value) == "methods"):
            skip.add(id(n.args[0]))  # a mapping's key; ``methods.get("trained")`` is the registry asked by name
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in METHOD_NAMES
                   and id(n) not in skip})


def _is_any(node: ast.AST | None) -> bool:
    if node is None:
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    if _target_name(node) == "Any":
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_any(node.left) and (_is_any(node.right) or getattr(node.right, "value", 0) is None)
    return isinstance(node, ast.Subscript) and _target_name(node.value) in ("Sequence", "list", "Iterable") \
        and _is_any(node.slice)


def any_datasets(text: str) -> list[str]:
    """``line name`` of every dataset parameter typed ``Any`` or not at all (``self``/``cls`` have no dataset names)."""
    out = []
    for fn in _functions(parse(text)):
        a = fn.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
            if (DATASET_NAME.search(arg.arg) or arg.arg == "datasets") and _is_any(arg.annotation):
                out.append(f"{fn.lineno} {fn.name}({arg.arg})")
    return out


def _container(value: ast.AST | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _target_name(value.func) in (
        "dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque")


def mutable_state(text: str) -> list[str]:
    """Module-level containers the module mutates, and ``global`` names (see the module doc)."""
    tree = parse(text)
    names = set()
    for top in tree.body:
        targets = top.targets if isinstance(top, ast.Assign) else [top.target] if isinstance(top, ast.AnnAssign) else []
        if _container(getattr(top, "value", None)):
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    mutated, declared = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Global):
            declared |= set(n.names)
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete)):
            for t in (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]):
                base = t.value if isinstance(t, ast.Subscript) else t if isinstance(n, ast.AugAssign) else None
                if isinstance(base, ast.Name):
                    mutated.add(base.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MUTATORS \
                and isinstance(n.func.value, ast.Name):
            mutated.add(n.func.value.id)
    return sorted((names & mutated) | {f"global {g}" for g in declared})


# ---- the runtime import hook --------------------------------------------------------------------------
def installed_layout(root: Path, into: Path) -> Path:
    """``into`` holding ``probegen/`` as it installs from checkout ``root``: links to the entries of
    ``probegen/`` and to ``commands/``, ``diagnostics/`` and ``templates/`` under their installed names, and
    the metadata of ``root``'s entry points (found before the installed ones when ``into`` leads sys.path)."""
    pkg = into / "probegen"
    pkg.mkdir(parents=True)
    for entry in (root / "probegen").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for folder in ("commands", "diagnostics", "templates"):
        (pkg / folder).symlink_to(root / folder)
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    meta = into / f"probegen-{project['version']}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: probegen\nVersion: {project['version']}\n")
    (meta / "entry_points.txt").write_text("".join(
        f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items()))
    return into


class ImportRecorder:
    """While installed: every import a module of ``prefix`` makes (``edges``) and every import of a module
    that is still being initialised (``partial``: the importer reaches back into a half-run module)."""

    def __init__(self, prefix: str = "probegen") -> None:
        self.prefix = prefix
        self.edges: set[tuple[str, str]] = set()
        self.partial: set[tuple[str, str]] = set()
        self._import = builtins.__import__
        self._import_module = importlib.import_module

    def _record(self, importer: str, targets: list[str], before: set[str]) -> None:
        """Edges from ``importer`` to ``targets``; ``before``: those of them half-run when the import began."""
        if not importer.startswith(self.prefix):
            return
        for t in targets:
            if t.startswith(self.prefix) and t != importer:
                self.edges.add((importer, t))
                if t in before:
                    self.partial.add((importer, t))

    @staticmethod
    def _half_run(names: list[str]) -> set[str]:
        return {n for n in names if getattr(getattr(sys.modules.get(n), "__spec__", None), "_initializing", False)}

    def _hook(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        g = globals or {}
        base = importlib.util.resolve_name("." * level + name, g.get("__package__") or "") if level else name
        subs = [f"{base}.{f}" for f in fromlist or () if f != "*"]
        before = self._half_run([base, *subs])
        module = self._import(name, globals, locals, fromlist, level)
        # `from pkg import mod` imports the module; `from pkg import name`, `import pkg.mod`: what pkg's name says;
        # `from pkg import mod` while pkg is still initialising reaches back into pkg too (the spec <-> tasks)
        names = [s for s in subs if s in sys.modules]
        whole = len(names) < len(subs) or not subs or base in before
        self._record(g.get("__name__", ""), [*names, base] if whole else names, before)
        return module

    def _hook_module(self, name: str, package: str | None = None) -> Any:
        target = importlib.util.resolve_name(name, package) if name.startswith(".") else name
        frame = sys._getframe(1)
        while frame and not frame.f_globals.get("__name__", "").startswith(self.prefix):
            frame = frame.f_back  # type: ignore[assignment]  # the first library frame: the module that asked
        before = self._half_run([target])
        module = self._import_module(name, package)
        self._record(frame.f_globals["__name__"] if frame else "", [target], before)
        return module

    def __enter__(self) -> ImportRecorder:
        builtins.__import__ = self._hook
        importlib.import_module = self._hook_module
        import importlib.metadata as md
        md.import_module = self._hook_module  # type: ignore[attr-defined]  # entry points load through it
        return self

    def __exit__(self, *exc: object) -> None:
        builtins.__import__ = self._import
        importlib.import_module = self._import_module
        import importlib.metadata as md
        md.import_module = self._import_module  # type: ignore[attr-defined]


def runtime_imports(modules: list[str], prefix: str = "probegen") -> dict[str, Any]:
    """Import ``modules`` under an :class:`ImportRecorder`: the half-run imports, the cycles of the graph of
    the imports seen, and the modules that failed to import."""
    failed = []
    with ImportRecorder(prefix) as rec:
        for m in modules:
            try:
                importlib.import_module(m)
            except Exception as e:  # noqa: BLE001 - a module that cannot import is reported, not fatal
                failed.append(f"{m}: {type(e).__name__}: {e}"[:200])
    g = nx.DiGraph(sorted(rec.edges))
    return {"partial": sorted(f"{a} -> {b}" for a, b in rec.partial),
            "scc": [sorted(c) for c in cycles(g)], "failed": failed, "edges": len(rec.edges)}


class CallRecorder:
    """While installed (a profile hook): the distinct (caller's module, callee's module) pairs of the calls
    between modules of ``prefix``."""

    def __init__(self, prefix: str = "probegen") -> None:
        self.prefix = prefix
        self.pairs: set[tuple[str, str]] = set()

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_back is not None:
            callee, caller = frame.f_globals.get("__name__", ""), frame.f_back.f_globals.get("__name__", "")
            if callee != caller and callee.startswith(self.prefix) and caller.startswith(self.prefix):
                self.pairs.add((caller, callee))

    def __enter__(self) -> CallRecorder:
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)

    def split(self) -> dict[str, Any]:
        """``{"stay": calls that stay in their layer or go down, "climb": ["a -> b", ...]}``."""
        climb = sorted(f"{a} -> {b}" for a, b in self.pairs if layer(b) < layer(a))
        return {"stay": len(self.pairs) - len(climb), "climb": climb}


def call_flow(argv: list[str]) -> dict[str, Any]:
    """:meth:`CallRecorder.split` of the CLI run with ``argv``."""
    from probegen.commands.cli import main as cli_main

    sys.argv = ["probegen", *argv]
    with CallRecorder() as rec:
        try:
            cli_main()
        except SystemExit as e:
            if e.code not in (0, None):
                raise
    return rec.split()


def _in_layout(root: Path, call: str, *args: str) -> Any:
    """``audit.<call>(*args)`` (JSON arguments) in a fresh interpreter that imports checkout ``root``'s library."""
    with tempfile.TemporaryDirectory() as tmp:
        layout = installed_layout(root, Path(tmp) / "layout")
        code = (f"import json, sys; sys.path[:0] = [{str(layout)!r}, {str(ROOT / 'tools')!r}]; import audit; "
                f"r = audit.{call}(*map(json.loads, sys.argv[1:])); print(); print(json.dumps(r))")
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=tmp,
                           timeout=1800)
    if r.returncode != 0:  # a tree that does not import (work in progress): said, the other counts stand
        return {"error": " | ".join(r.stderr.strip().splitlines()[-2:])[:500]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def runtime_cycles(root: Path, files: dict[str, str]) -> dict[str, Any]:
    """:func:`runtime_imports` of every library module of checkout ``root`` (``files``: its
    :func:`library_files`) in a fresh interpreter; ``{"error": ...}`` when the interpreter fails."""
    modules = sorted(module_of(rel) for rel in files if not rel.endswith("__main__.py"))
    return _in_layout(root, "runtime_imports", json.dumps(modules))  # type: ignore[no-any-return]


# ---- tools run on the tree ----------------------------------------------------------------------------
def duplicate_pairs(root: Path) -> int:
    """The pairs ``duplicates --most 200 --seconds 120`` counts over the tree at ``root``."""
    r = subprocess.run(["duplicates", "--most", "200", "--seconds", "120", "--repo", str(root)],
                       capture_output=True, text=True, timeout=300)
    head = re.match(r"(\d+) pairs", r.stdout)
    return int(head.group(1)) if head else 0


def _ini(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def strict_config(root: Path, into: Path) -> Path:
    """The tree's ``[tool.mypy]`` as a mypy.ini with only its overrides for third-party modules: none on the
    library's own (diagnostics/ relaxed), so ``mypy --strict`` counts every module alike, at any revision."""
    conf = dict(tomllib.loads((root / "pyproject.toml").read_text()).get("tool", {}).get("mypy", {}))
    kept = [o for o in conf.pop("overrides", []) if not _ini(o["module"]).startswith("probegen")]
    lines = ["[mypy]", *(f"{k} = {_ini(v)}" for k, v in conf.items() if k != "files")]
    for o in kept:
        lines += [f"[mypy-{_ini(o['module'])}]", *(f"{k} = {_ini(v)}" for k, v in o.items() if k != "module")]
    into.write_text("\n".join(lines) + "\n")
    return into


def mypy_strict(root: Path) -> dict[str, int]:
    """``mypy --strict`` errors per part of the library, run on the installed layout of ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        layout = installed_layout(root, Path(tmp))
        r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file",
                            str(strict_config(root, Path(tmp) / "mypy.ini")), "--cache-dir",
                            str(Path(tempfile.gettempdir()) / "probegen-audit-mypy"), "probegen"],
                           cwd=layout, capture_output=True, text=True, timeout=3600)
    counts = {"mypy_probegen": 0, "mypy_diagnostics": 0, "mypy_commands": 0}
    for line in r.stdout.splitlines():
        if ": error:" in line:
            part = line.split("/")[1] if line.count("/") > 1 else ""
            counts[f"mypy_{part}" if part in ("diagnostics", "commands") else "mypy_probegen"] += 1
    return counts


# ---- the whole audit ----------------------------------------------------------------------------------
def per_file(files: dict[str, str], check: Callable[[str], list[Any]], skip: str = "") -> dict[str, list[Any]]:
    """``{file: findings}`` of ``check`` over ``files`` (those under ``skip`` left out), files with none dropped."""
    found = {rel: check(text) for rel, text in files.items() if not (skip and rel.startswith(skip))}
    return {rel: f for rel, f in found.items() if f}


def _size(result: dict[str, Any], key: str) -> int | str:
    """How many ``result[key]`` holds; ``error`` when the run that makes it failed (its message is in the findings)."""
    return len(result[key]) if key in result else "error"


def audit(root: Path, *, runtime: bool = True, tools: bool = True, mypy: bool = False) -> dict[str, Any]:
    """Every count of the checkout at ``root`` (``runtime``: the import hook; ``tools``: duplicates;
    ``mypy``: mypy --strict) and the findings behind each: ``{"counts": {...}, "findings": {...}}``."""
    files = library_files(root)
    g = source_graph(files)
    found: dict[str, Any] = {
        "kind_files": kind_files(files),
        "kind_dispatch": per_file(files, kind_dispatch, skip="probegen/tasks/"),
        "dataset_probes": per_file(files, dataset_probes),
        "static_cycles": [sorted(c) for c in cycles(g)],
        "up_imports": up_imports(g),
        "private_imports": {rel: f for rel, text in files.items() if (f := private_imports(rel, text))},
        "resamplers": per_file(files, resamplers),
        "cluster_variances": per_file(files, cluster_variances),
        "method_fallbacks": per_file(files, method_fallbacks, skip="probegen/methods/"),
        "any_datasets": per_file(files, any_datasets),
        "mutable_state": per_file(files, mutable_state),
    }
    counts: dict[str, int | str] = {f"kind_files.{k}": len(v) for k, v in found["kind_files"].items()}
    counts.update({k: sum(map(len, v.values())) if isinstance(v, dict) else len(v)
                   for k, v in found.items() if k != "kind_files"})
    counts["method_fallbacks"] = len(found["method_fallbacks"])  # files, as the issue counts them
    counts["private_imports"] = sum(len({f.split(":")[0] for f in v}) for v in found["private_imports"].values())
    counts["library_lines"] = sum(t.count("\n") for t in files.values())
    if runtime:
        rt = found["runtime"] = runtime_cycles(root, files)
        counts["runtime_cycles"], counts["runtime_scc"] = _size(rt, "partial"), _size(rt, "scc")
        for req, argv in REQUESTS.items():
            with tempfile.TemporaryDirectory() as out:
                flow = found[f"{req}_calls"] = _in_layout(root, "call_flow", json.dumps([*argv, "--out", f"{out}/run"]))
            counts[f"{req}_stay"], counts[f"{req}_climb"] = flow.get("stay", "error"), _size(flow, "climb")
    if tools:
        counts["duplicate_pairs"] = duplicate_pairs(root)
    if mypy:
        counts.update(mypy_strict(root))
    return {"counts": counts, "findings": found}


def checkout(rev: str, into: Path) -> Path:
    """A detached worktree of ``rev`` at ``into`` (removed by :func:`drop_checkout`)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(into), rev], check=True)
    return into


def drop_checkout(path: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=True)


def audit_rev(rev: str, **options: bool) -> dict[str, Any]:
    """:func:`audit` of a git revision (``.``: the working tree)."""
    if rev == ".":
        return audit(ROOT, **options)
    with tempfile.TemporaryDirectory() as tmp:
        tree = checkout(rev, Path(tmp) / "tree")
        try:
            return audit(tree, **options)
        finally:
            drop_checkout(tree)


def table(results: dict[str, dict[str, Any]]) -> str:
    """The counts side by side, one row a count, one column a revision."""
    revs = list(results)
    keys = list(dict.fromkeys(k for r in results.values() for k in r["counts"]))
    width = max(map(len, keys))
    lines = [f"{'count':<{width}}  " + "  ".join(f"{r:>10}" for r in revs)]
    for k in keys:
        lines.append(f"{k:<{width}}  " + "  ".join(f"{results[r]['counts'].get(k, '-'):>10}" for r in revs))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rev", action="append", help="a git revision to measure (again for more; '.': the working tree)")
    p.add_argument("--json", type=Path, help="write the counts and findings here")
    p.add_argument("--mypy", action="store_true", help="also count mypy --strict errors (slow)")
    p.add_argument("--no-runtime", action="store_true", help="skip the import-hook run")
    p.add_argument("--no-duplicates", action="store_true", help="skip the duplicates count")
    a = p.parse_args(argv)
    options = {"runtime": not a.no_runtime, "tools": not a.no_duplicates, "mypy": a.mypy}
    results = {rev: audit_rev(rev, **options) for rev in a.rev or ["."]}
    print(table(results))
    if a.json:
        a.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
