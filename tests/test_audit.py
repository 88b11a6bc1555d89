"""tools/audit.py, the counts of issue 49: each counter finds what is planted in a small example and
passes over its look-alikes, and the cheap counts run on this tree."""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import audit  # noqa: E402


def test_kind_names_outside_the_kind_folder():
    files = {"probegen/forms/x.py": "from ..coda21 import items\n",
             "probegen/coda21/y.py": "KIND = 'coda21'\n",  # inside its own folder
             "diagnostics/z.py": '"""CoDA21 and WiC in a docstring only."""\n# wordnetqa in a comment\nx = 1\n',
             "commands/w.py": "def f(wic_pairs):\n    return 'WordNetQA'\n"}
    assert audit.kind_files(files) == {"coda21": ["probegen/forms/x.py"], "wordnetqa": ["commands/w.py"],
                                       "wordincontext": ["commands/w.py"]}


def test_kind_dispatch_and_dataset_probes():
    text = ("SPLIT = {'coda21': f, 'wordnetqa': g}\nKINDS = ('coda21', 'wordnetqa')\nOTHER = {'score': 1}\n"
            "ONE = ('coda21', 'x')\n")
    assert audit.kind_dispatch(text) == [1, 2]
    probes = ("hasattr(data, 'groups')\ngetattr(self.dataset, 'units', None)\nhasattr(scorer, 'x')\n"
              "getattr(data, 'manifest')\nhasattr(train_data, 'x')\n")
    assert audit.dataset_probes(probes) == [1, 2, 5]


def test_a_planted_runtime_cycle_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "plantedpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\nX = 1\n")
    (pkg / "b.py").write_text("from plantedpkg import a\n")  # a is half-run when b asks for it
    (pkg / "c.py").write_text("import importlib\nimportlib.import_module('plantedpkg.d')\n")
    (pkg / "d.py").write_text("def f():\n    from . import c\n")  # lazy: runs only when called
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = audit.runtime_imports(["plantedpkg.a", "plantedpkg.c"], prefix="plantedpkg")
    finally:
        for m in [m for m in sys.modules if m.startswith("plantedpkg")]:
            del sys.modules[m]
    assert found["partial"] == ["plantedpkg.b -> plantedpkg.a"]
    assert found["scc"] == [["plantedpkg.a", "plantedpkg.b"]] and found["failed"] == []
    assert found["edges"] == 3  # a -> b, b -> a, c -> d (by importlib); d's lazy import never ran


def test_layers_and_imports_that_point_up():
    assert audit.layer("probegen.commands.cli") < audit.layer("probegen.run.api") < \
        audit.layer("probegen.diagnostics.bias") < audit.layer("probegen.tasks")
    assert audit.layer("probegen") == audit.layer("probegen.__main__") == 0  # the facade is an entry point
    g = nx.DiGraph([("probegen.tasks", "probegen.diagnostics.bias"), ("probegen.diagnostics.bias", "probegen.io"),
                    ("probegen.run.api", "probegen.diagnostics.bias"), ("probegen.diagnostics.x", "probegen.run.api")])
    assert audit.up_imports(g) == ["probegen.diagnostics.x -> probegen.run.api",
                                   "probegen.tasks -> probegen.diagnostics.bias"]


def test_calls_that_climb_the_layers():
    def module(name: str, code: str, **names: object) -> dict[str, object]:
        ns: dict[str, object] = {"__name__": name, **names}
        exec(code, ns)
        return ns

    analysis = module("probegen.diagnostics.fake", "def report(x):\n    return x + 1\n")
    library = module("probegen.fake", "def run(cb):\n    return cb(1)\n")  # calls back into diagnostics
    run = module("probegen.run.fake", "def go():\n    return run(report)\n", run=library["run"],
                 report=analysis["report"])
    with audit.CallRecorder() as rec:
        run["go"]()  # type: ignore[operator]
    assert rec.split() == {"stay": 1, "climb": ["probegen.fake -> probegen.diagnostics.fake"]}


def test_private_names_of_another_module():
    text = ("from probegen.models import _quiet, load\nfrom . import _helpers\nfrom ..scorers._paths import measure\n"
            "import probegen.io as io\n\ndef f():\n    return io._ACTIVE, io.public, _quiet\n")
    # in probegen/generate/chat.py: its own package's private module is fine, another package's is not
    assert audit.private_imports("probegen/generate/chat.py", text) == [
        "1: probegen.models._quiet", "3: probegen.scorers._paths", "7: probegen.io._ACTIVE"]
    assert audit.private_imports("probegen/x.py", "from .y import __version__\nimport os\nos._exit\n") == []


def test_resamplers_and_cluster_variances():
    text = (
        "def boots(n, n_boot, rng):\n    return rng.multinomial(n, [1 / n] * n, size=n_boot)\n\n"
        "def kr20_ci(x, n_boot, rng):\n    return [f(x[rng.integers(0, 9, 9)]) for _ in range(n_boot)]\n\n"
        "def distractors(words, rng):\n    return [rng.choice(words) for _ in range(3)]\n\n"  # no bootstrap
        "def one(rng, n_boot):\n    return rng.integers(0, 9)\n")  # one draw, no matrix, no loop
    assert audit.resamplers(text) == ["1 boots", "4 kr20_ci"]
    var = ('def cluster_mean(s, c):\n    return c / max(c - 1, 1) * (s ** 2).sum()\n\n'
           'def form_accuracy(c, w, n):\n    """Cluster-robust variance."""\n    return n / (n - 1) * (c ** 2).sum()\n\n'
           'def mean(x, n):\n    return n / (n - 1) * x\n')  # the factor, no clusters
    assert audit.cluster_variances(var) == ["1 cluster_mean", "4 form_accuracy"]


def test_method_name_fallbacks():
    text = ('"""score: a docstring."""\nm = "generate" if x else f"score:{k}"\nrow["score"]\n{"trained": 1}\n'
            'x == "letter"\nd.get("zeroshot")\nmethods.get("trained")\nstyle = "letter"\n')
    assert audit.method_fallbacks(text) == [2, 7, 8]  # methods.get(...): the registry asked by name


def test_any_datasets_and_module_state():
    text = ("def f(data: Any, dataset: Dataset, ds=None, x: Any = 1, datasets: 'Sequence[Any]' = (),\n"
            "      my_data: Any | None = None):\n    pass\n")
    assert audit.any_datasets(text) == ["1 f(data)", "1 f(ds)", "1 f(datasets)", "1 f(my_data)"]
    state = ("_MEMO = {}\n_NAMES: list[str] = []\n_CONST = {'a': 1}\n_SEEN = set()\n\n"
             "def f(k):\n    global _N\n    _MEMO[k] = 1\n    _NAMES.append(k)\n    return _CONST[k]\n")
    assert audit.mutable_state(state) == ["_MEMO", "_NAMES", "global _N"]


def test_a_planted_tree_is_counted(tmp_path):
    for rel, text in {"probegen/__init__.py": "", "probegen/tasks/__init__.py": "from ..spec import s\n",
                      "probegen/spec/__init__.py": "def f():\n    from ..tasks import t\n",
                      "probegen/forms/split.py": "KINDS = ('coda21', 'wordnetqa')\n",
                      "diagnostics/__init__.py": "", "diagnostics/x.py": "from probegen.run import api\n",
                      "probegen/run/__init__.py": "", "probegen/run/api.py": "x = 1\ny = 2\n",
                      "commands/__init__.py": "", "notes/y.py": "a\nb\nc\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = audit.audit(tmp_path, runtime=False, tools=False)
    counts = result["counts"]
    assert counts["library_lines"] == 7  # notes/ is not the library
    assert counts["kind_files.coda21"] == counts["kind_files.wordnetqa"] == 1 and counts["kind_dispatch"] == 1
    assert result["findings"]["static_cycles"] == [["probegen.spec", "probegen.tasks"]]
    assert result["findings"]["up_imports"] == ["probegen.diagnostics.x -> probegen.run.api"]
    assert "library_lines" in audit.table({"a": result, "b": {"counts": {}}})


def test_the_cheap_counts_run_on_this_tree():
    counts = audit.audit(ROOT, runtime=False, tools=False)["counts"]
    assert counts["library_lines"] > 20_000 and counts["resamplers"] >= 1  # the statistics module's bootstrap
    assert {"kind_files.coda21", "kind_dispatch", "dataset_probes", "private_imports", "cluster_variances",
            "method_fallbacks", "any_datasets", "mutable_state", "static_cycles", "up_imports"} <= set(counts)


@pytest.mark.parametrize("argv", [["--rev"], ["--bogus"]])
def test_bad_arguments_exit_non_zero(argv, capsys):
    with pytest.raises(SystemExit) as e:
        audit.main(argv)
    assert e.value.code == 2
