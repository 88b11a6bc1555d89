"""The data flows one way: commands (``cli.py``, ``commands/``) -> the run layer (``probegen/run/``) ->
the library (tasks, methods, scorers) -> the analyses (``diagnostics``). The library never imports
``diagnostics``, the CLI or click, except its run layer, which hands the analyses plain data; only the
CLI imports click; ``diagnostics`` never imports the run layer or the CLI."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# the repository's folders and the names they install as (pyproject.toml's package-dir)
LAYERS = {"probegen.commands": "commands", "probegen.diagnostics": "diagnostics", "probegen.commands.cli": "cli",
          "probegen.run": "run"}
RUN = ROOT / "probegen" / "run"  # the run layer: builds and runs requests, calls the analyses


def _module_name(path: Path) -> str:
    """The dotted name ``path`` installs as (``diagnostics/x.py`` -> ``probegen.diagnostics.x``)."""
    try:
        parts = list(path.resolve().relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return path.stem
    if parts[0] in ("commands", "diagnostics", "templates"):
        parts = ["probegen", *parts]
    return ".".join(p for p in parts if p != "__init__")


def _layer(name: str) -> str:
    """The layer an absolute module name belongs to: ``probegen.diagnostics.x`` -> ``diagnostics``,
    ``probegen.commands.cli`` -> ``cli``, ``click.testing`` -> ``click``."""
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if name == prefix or name.startswith(prefix + "."):
            return LAYERS[prefix]
    return name.split(".")[0]


def _imported_modules(path: Path, text: str | None = None) -> set[str]:
    """The layers of every module ``path`` imports, relative imports resolved against the name the file
    installs as (so ``from ..diagnostics import x`` inside probegen counts as a diagnostics import);
    ``text`` stands for the file's content when given."""
    out = set()
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if text is None else text)):
        if isinstance(node, ast.Import):
            out |= {_layer(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                if node.level - 1 > len(package) or not package:
                    continue  # relative to a package the file is not in (a scratch test file)
                base = ".".join([*package[: len(package) - (node.level - 1)], *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
            out |= {_layer(n) for n in names if n}
    return out


def _package(name: str) -> list[Path]:
    return sorted((ROOT / name).rglob("*.py"))


def _offenders(files: list[Path], forbidden: set[str], root: Path = ROOT) -> dict[str, list[str]]:
    found = {str(f.relative_to(root)): sorted(_imported_modules(f) & forbidden) for f in files}
    return {k: v for k, v in found.items() if v}


def _code_files() -> list[Path]:
    """Every module of the program: the CLI, its commands, the library and the diagnostics."""
    return [ROOT / "cli.py", *_package("commands"), *_package("probegen"), *_package("diagnostics")]


def _is_cli(path: Path) -> bool:
    return path == ROOT / "cli.py" or (ROOT / "commands") in path.parents


# the package's facade: `probegen.score` / `probegen.bias` forward to probegen.run.api (lazily)
FACADE = ROOT / "probegen" / "__init__.py"


def test_library_never_imports_diagnostics_or_cli():
    # __main__ is the `python -m probegen` / `torchrun -m probegen` entry point: it runs the CLI
    files = [f for f in _package("probegen") if f.name != "__main__.py" and f != FACADE]
    assert len(files) > 50 and any(RUN in f.parents for f in files)  # the walk really finds the library
    offenders = _offenders([f for f in files if RUN not in f.parents], {"diagnostics", "cli", "commands", "click"})
    offenders |= _offenders([f for f in files if RUN in f.parents], {"cli", "commands", "click"})
    assert not offenders, f"library modules import diagnostics/cli/commands/click: {offenders}"


def test_diagnostics_never_imports_the_cli_or_click():
    files = _package("diagnostics")
    assert len(files) > 10
    offenders = _offenders(files, {"cli", "commands", "click", "run"})
    assert not offenders, f"diagnostics modules import cli/commands/click or the run layer: {offenders}"


def test_only_the_cli_imports_click():
    files = _code_files()
    assert sum(_is_cli(f) for f in files) > 5  # cli.py and the commands are in the walk
    offenders = _offenders([f for f in files if not _is_cli(f)], {"click"})
    assert not offenders, f"modules outside cli.py and commands/ import click: {offenders}"
    assert "click" in _imported_modules(ROOT / "commands" / "cli.py")


def test_only_the_cli_and_diagnostics_import_diagnostics():
    files = [f for f in _code_files() if not _is_cli(f) and (ROOT / "diagnostics") not in f.parents and RUN not in f.parents]
    offenders = _offenders(files, {"diagnostics"})
    assert not offenders, f"modules outside cli.py, commands/, probegen/run/ and diagnostics/ import diagnostics: {offenders}"


def test_the_check_sees_a_diagnostics_import(tmp_path):
    bad = tmp_path / "m.py"
    for text in ("def f():\n    from probegen.diagnostics import baselines\n", "import probegen.diagnostics.report as r\n",
                 "from probegen import diagnostics\n"):
        bad.write_text(text)
        assert "diagnostics" in _imported_modules(bad), text
    # a library module reaching diagnostics by a relative import is seen too
    assert "diagnostics" in _imported_modules_text("probegen/scoring_x.py", "from .diagnostics import report\n")
    assert "cli" in _imported_modules_text("probegen/tasks/x.py", "from ..commands.cli import main\n")
    assert "diagnostics" not in _imported_modules_text("probegen/tasks/x.py", "from ..tasks import base\n")
    # an analysis reaching up into the run layer is seen, absolute or relative
    assert "run" in _imported_modules_text("diagnostics/x.py", "def f():\n    from probegen.run.run_bias import Loaded\n")
    assert "run" in _imported_modules_text("diagnostics/x.py", "from ..run import api\n")
    assert "diagnostics" in _imported_modules_text("probegen/run/x.py", "from ..diagnostics import report\n")


def _imported_modules_text(rel: str, text: str) -> set[str]:
    """_imported_modules of ``text`` as if it were the repository's file ``rel`` (written nowhere)."""
    return _imported_modules(ROOT / rel, text)


def test_the_check_sees_a_click_import(tmp_path):
    for text in ("import click\n", "def f():\n    import click.testing as t\n", "from click.core import ParameterSource\n",
                 "import os, click\n"):
        bad = tmp_path / "m.py"
        bad.write_text(text)
        assert "click" in _imported_modules(bad), text
        assert _offenders([bad], {"click", "diagnostics"}, root=tmp_path) == {"m.py": ["click"]}, text
    bad.write_text("from .click import x\nimport clickhouse\n")  # a relative module and another package are not click
    assert "click" not in _imported_modules(bad)


# ---- dataset kinds are compared in the task registry only (issue 17) ----------------------------------
# Kind strings: dataset kinds, word-in-context item shapes and study view formats. (Probe-spec shapes
# are the spec schema's own section names, checked by probegen.spec.schema; "alignment" is also a decision.)
KIND_STRINGS = frozenset({"coda21", "wordnetqa", "wic", "wsd", "wordincontext", "pair", "choice", "label", "align", "mc"})
# (file, literal) pairs where the literal names something else than a kind
NOT_KINDS = {
    ("probegen/wordincontext/wic.py", "wic"): "the WiC paper's pruning rule (--prune wic)",
    ("probegen/wordnetqa/render.py", "choice"): "the choice-only rendering mode (an ablation condition)",
    ("probegen/coda21/task.py", "label"): "the label ablation (computed, not scored)",
    ("probegen/wordnetqa/task.py", "label"): "the label ablation (computed, not scored)",
    ("probegen/wordincontext/task.py", "wordincontext"): "the kind's own manifest kind, read in its own task",
}
# modules whose kind comparisons other issue-17 work removes: delete an entry once its module has none
PENDING: dict[str, str] = {}


def _literals(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_literals(e) for e in node.elts)) if node.elts else set()
    return set()


def kind_comparisons(path: Path) -> list[tuple[int, str]]:
    """(line, kind literal) of every ``==``/``!=``/``in``/``not in`` comparison or ``match`` case
    against a kind string in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        found: set[str] = set()
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            for side in (node.left, *node.comparators):
                found |= _literals(side) & KIND_STRINGS
        elif isinstance(node, ast.Match):
            for case in node.cases:
                for p in ast.walk(case.pattern):
                    if isinstance(p, ast.MatchValue):
                        found |= _literals(p.value) & KIND_STRINGS
        out += [(node.lineno, k) for k in sorted(found)]
    return sorted(out)


def test_no_kind_string_is_compared_outside_the_task_registry():
    files = [*(ROOT / "probegen").rglob("*.py"), *(ROOT / "diagnostics").rglob("*.py"), ROOT / "cli.py",
             *(ROOT / "commands").rglob("*.py")]
    files = sorted(f for f in files if (ROOT / "probegen" / "tasks") not in f.parents)
    assert len(files) > 60
    found = []
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        if rel in PENDING:
            continue
        found += [f"{rel}:{line}: {kind!r}" for line, kind in kind_comparisons(f) if (rel, kind) not in NOT_KINDS]
    assert not found, "kind strings compared outside probegen/tasks (ask the registry):\n" + "\n".join(found)


def test_the_check_sees_kind_comparisons(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text(
        "def f(kind, t, rule):\n"
        "    if kind == 'coda21':\n        return 1\n"
        "    if t.task in ('pair', 'choice'):\n        return 2\n"
        "    if 'label' != t.task:\n        return 3\n"
        "    match kind:\n        case 'wsd':\n            return 4\n"
        "    return {'wic': 5}.get(kind, rule == 'alignment')\n"  # a dict key and another word are no comparison
    )
    assert kind_comparisons(bad) == [(2, "coda21"), (4, "choice"), (4, "pair"), (6, "label"), (8, "wsd")]


# ---- one score-to-decision rule, no dummy units (issue 27) ---------------------------------------------
def _dummy_unit_decisions(path: Path, text: str | None = None) -> list[int]:
    """Lines where ``decide`` gets a unit built in place (``decide(Unit.choice(...), m)``) or a name bound
    to a Unit built in the same function, only to break ties: such scores belong to no unit, and
    :func:`probegen.core.decide_scores` takes them with their own tie-breaking generator."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        built = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_unit_call(node.value):
                built |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "decide" and node.args:
                first = node.args[0]
                if (isinstance(first, ast.Call) and _is_unit_call(first)) or (isinstance(first, ast.Name) and first.id in built):
                    out.append(node.lineno)
    return sorted(set(out))


def _is_unit_call(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "Unit") or (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                                                           and f.value.id == "Unit")


def test_no_unit_is_built_only_to_break_ties():
    found = {str(f.relative_to(ROOT)): lines for f in _code_files() if (lines := _dummy_unit_decisions(f))}
    assert not found, f"decide() given a unit built only for its tie rule (use probegen.core.decide_scores): {found}"


def test_the_check_sees_a_dummy_unit(tmp_path):
    f = tmp_path / "m.py"
    assert _dummy_unit_decisions(f, "def f(s):\n    return decide(Unit.choice('x', 'x', ['a', 'b']), s)\n") == [2]
    assert _dummy_unit_decisions(f, "def f(s):\n    u = Unit('x', ('q',), (('a',),), 'argmax')\n    return decide(u, s, 0)\n") == [3]
    assert _dummy_unit_decisions(f, "def f(units, mats):\n    return [decide(u, m) for u, m in zip(units, mats)]\n") == []


def _scorer_probes(path: Path, text: str | None = None) -> list[int]:
    """Lines that ask a scorer what it is by duck typing (``hasattr(scorer, ...)``, ``getattr(scorer, "x", None)``)
    instead of the protocol (:class:`probegen.core.UnitScorer`, ``isinstance`` of a capability class)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr") and node.args:
            target = node.args[0]
            name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
            if "scorer" in name.lower() and (node.func.id == "hasattr" or len(node.args) == 3):
                out.append(node.lineno)
    return out


def test_scorers_are_asked_through_the_protocol_not_by_duck_typing():
    files = [f for f in _code_files() if f.name != "core.py" or f.parent.name != "probegen"]
    found = {str(f.relative_to(ROOT)): lines for f in files if (lines := _scorer_probes(f))}
    assert not found, f"hasattr/getattr on a scorer (use the UnitScorer protocol or a capability class): {found}"


def test_the_check_sees_duck_typing(tmp_path):
    f = tmp_path / "m.py"
    assert _scorer_probes(f, "def f(scorer):\n    return hasattr(scorer, 'exchanges')\n") == [2]
    assert _scorer_probes(f, "def f(self):\n    return getattr(self.scorer, 'name', '')\n") == [2]
    assert _scorer_probes(f, "def f(scorer):\n    return getattr(scorer, 'name')\n") == []


def test_the_facade_reaches_only_the_notebook_api():
    """probegen/__init__.py may import the run layer only for score/bias, lazily (`import probegen` stays light)."""
    tree = ast.parse(FACADE.read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(isinstance(n, ast.ImportFrom) and n.module in ("__future__", "typing", "version") for n in top), ast.dump(top[0])
    lazy = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n not in top}
    assert lazy == {"run.api"}, lazy


# ---- one runner per command, made by the entry point (issue 27 §2) ------------------------------------------
# where a Runner may be made: the commands and the notebook API (probegen.score/bias forward to it)
RUNNER_MAKERS = {ROOT / "cli.py", RUN / "api.py", FACADE}


def _runner_made(path: Path, text: str | None = None) -> list[int]:
    """Lines that make a runner: ``Runner(...)`` (also as ``x.Runner(...)``) or ``Runner.ensure(...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    lines = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "Runner" or (name == "ensure" and isinstance(f, ast.Attribute)
                                and isinstance(f.value, (ast.Name, ast.Attribute))
                                and (getattr(f.value, "id", None) or getattr(f.value, "attr", None)) == "Runner"):
            lines.add(node.lineno)
    return sorted(lines)


def test_only_the_entry_points_make_a_runner():
    """The library takes the command's runner (process group, caches, device, dtype) as an argument: no
    library function makes a default one, so one command has one runner."""
    found = {str(f.relative_to(ROOT)): lines for f in _code_files()
             if f not in RUNNER_MAKERS and not _is_cli(f) and (lines := _runner_made(f))}
    assert not found, f"a Runner made in the library (take a `runner` argument instead): {found}"


def test_the_check_sees_a_runner_made(tmp_path):
    f = tmp_path / "m.py"
    assert _runner_made(f, "from probegen.runner import Runner\n\ndef f(runner=None):\n"
                           "    runner = Runner.ensure(runner)\n") == [4]
    assert _runner_made(f, "from probegen import runner as r\nx = r.Runner(log=print)\n") == [2]
    assert _runner_made(f, "def f(runner):\n    return runner.load_scorer('m')\n") == []


def _runner_defaults_to_none(path: Path, text: str | None = None) -> list[int]:
    """Lines of functions whose ``runner`` parameter defaults to ``None`` (issue 38 §3: a function that takes
    the command's runner needs it; one that defaulted to None passed None on to a build that loads models)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
            if any(arg.arg == "runner" and isinstance(d, ast.Constant) and d.value is None for arg, d in pairs):
                lines.append(node.lineno)
    return lines


def test_no_library_function_defaults_its_runner_to_none():
    found = {str(f.relative_to(ROOT)): lines for f in _code_files() if (lines := _runner_defaults_to_none(f))}
    assert not found, f"a `runner=None` default in the library (make it required): {found}"


def test_the_check_sees_a_runner_default(tmp_path):
    f = tmp_path / "m.py"
    assert _runner_defaults_to_none(f, "def f(x, runner=None):\n    pass\n") == [1]
    assert _runner_defaults_to_none(f, "def f(x, *, log=print, runner: 'Runner | None' = None):\n    pass\n") == [1]
    assert _runner_defaults_to_none(f, "def f(x, runner, y=None):\n    pass\n") == []


# ---- no module passed as an argument (issue 27 §3) ------------------------------------------------------
def _module_lookups(path: Path, text: str | None = None) -> list[int]:
    """Lines that look a module object up by name (``sys.modules[...]``, ``sys.modules.get(...)``): the way a
    module hands itself to another as an argument, so that the callee picks names from it. Pass the callables
    (a record of them) instead."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr == "modules"
                   and isinstance(node.value, ast.Name) and node.value.id == "sys"})


def test_no_module_is_looked_up_to_be_passed_around():
    found = {str(f.relative_to(ROOT)): lines for f in _code_files() if (lines := _module_lookups(f))}
    assert not found, f"sys.modules in the library (pass plain callables, not a module): {found}"


def test_the_check_sees_a_module_lookup(tmp_path):
    f = tmp_path / "m.py"
    assert _module_lookups(f, "import sys\n\ndef f(task):\n    return task.pick(sys.modules[__name__])\n") == [4]
    assert _module_lookups(f, "import sys\nm = sys.modules.get('x')\n") == [2]
    assert _module_lookups(f, "def f(task, offered):\n    return task.pick(offered)\n") == []


# ---- kinds asked through capabilities, no import cycle at run time (issue 49 §1) -----------------------------
# the counters are tools/audit.py's (tests/test_audit.py plants an example for each)
sys.path.insert(0, str(ROOT / "tools"))
import audit  # noqa: E402

# where a kind may be named in a dict's keys or probed: the registry and capabilities, and each kind's own folder
KIND_HOMES = ("probegen/tasks/", "probegen/coda21/", "probegen/wordnetqa/", "probegen/wordincontext/")


def _outside_kind_homes(check) -> dict[str, list]:
    return {rel: found for rel, text in audit.library_files(ROOT).items()
            if not rel.startswith(KIND_HOMES) and (found := check(text))}


def test_no_dispatch_dict_keyed_on_kinds():
    found = _outside_kind_homes(audit.kind_dispatch)
    assert not found, f"dicts keyed on a kind or lists of kinds outside the kind's folder (ask a capability): {found}"


def test_no_dataset_is_probed_by_hasattr():
    found = _outside_kind_homes(audit.dataset_probes)
    assert not found, f"hasattr/getattr probes on a dataset (ask the kind through a capability): {found}"


def test_no_import_cycle_at_run_time():
    """Every library module imported in a fresh interpreter under an import hook: no module imports one that
    is still being initialised, and the imports seen form no cycle."""
    found = audit.runtime_cycles(ROOT, audit.library_files(ROOT))
    assert "error" not in found and found["edges"] > 300, found  # the hook saw the library's imports
    assert not found["failed"], found["failed"]
    assert not found["partial"] and not found["scc"], f"runtime import cycles: {found['partial']} {found['scc']}"


def test_the_checks_see_kind_dispatch_probes_and_cycles():
    assert audit.kind_dispatch("RUN = {'coda21': a, 'wordnetqa': b}\nKINDS = ['wic', 'wsd']\n") == [1, 2]
    assert audit.dataset_probes("if hasattr(data, 'groups'):\n    pass\n") == [1]
    assert "probegen/forms/split.py" not in KIND_HOMES and "probegen/coda21/spec.py".startswith(KIND_HOMES)
