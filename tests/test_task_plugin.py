"""A third-party task, registered through the ``probegen.tasks`` entry-point group (issue 17).

The test writes a tiny external package in its own directory: a ``synonym-pairs`` kind (which
lemma is a synonym of the word? real WordNet 3.0 synsets, their definitions and lemmas), its
``pyproject.toml`` with the entry point, and the ``*.dist-info`` an install of it leaves, so
``importlib.metadata`` finds the entry point with the directory on ``PYTHONPATH`` (the venv is
not touched). ``probegen eval`` and ``probegen bias`` then run on a dataset of that kind in a
subprocess, with no edit to probegen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kindplugin import write_dataset, write_dist_info

ROOT = Path(__file__).resolve().parents[1]
KIND = "synonym-pairs"

TASK_MODULE = '''
"""synonym-pairs: is this lemma a synonym of the word? A probegen task plugin."""

import json
from pathlib import Path
from types import SimpleNamespace

from probegen.core import Unit
from probegen.errors import DatasetError
from probegen.tasks import Task

QUERIES = {"full": "{definition} ({word})", "context": "{definition}", "word": "{word}"}


class SynonymPairs(Task):
    name = "synonym-pairs"
    title = "synonym pairs"
    unit_name = "word"
    conditions = tuple(QUERIES)

    def claims(self, path):
        return path.is_dir() and (path / "pairs.jsonl").is_file()

    def load(self, path, ablations=False):
        p = Path(path)
        items = [json.loads(line) for line in (p / "pairs.jsonl").read_text().splitlines() if line.strip()]
        if not items:
            raise DatasetError(f"{p} has no pairs")
        return SimpleNamespace(items=items, manifest=json.loads((p / "manifest.json").read_text()))

    def units(self, data, condition, settings, style="pattern"):
        return [Unit.choice(it["id"], QUERIES[condition].format(**it), it["choices"], it["gold"]) for it in data.items]
'''

def write_plugin(root: Path, target: str = "synpairs_task:SynonymPairs") -> Path:
    """The package directory, with the dist-info an install would write (its entry point names ``target``)."""
    (root / "synpairs_task").mkdir(parents=True)
    (root / "synpairs_task" / "__init__.py").write_text(textwrap.dedent(TASK_MODULE))
    return write_dist_info(root, "probegen-synonym-pairs", "probegen.tasks", {KIND: target})


def probegen(args: list, plugin: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)]), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def plugin_and_data(graph, tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin")
    return write_plugin(root / "synonym-pairs"), write_dataset(graph, root / "data", kind=KIND)


def test_the_plugin_is_not_registered_in_this_process():
    from probegen import tasks

    assert KIND not in [t.name for t in tasks.all_tasks()]


def test_eval_on_a_plugin_kind(plugin_and_data, tmp_path):
    plugin, data = plugin_and_data
    r = probegen(["eval", "--model", "glove-50d", "--dataset", data, "--out", tmp_path / "run"], plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["dataset"]["kind"] == KIND and res["scorer"]["kind"] == "static"
    m = res["metrics"]
    assert m["units"] == 40 and m["random"] == pytest.approx(0.25) and 0.0 <= m["accuracy"] <= 1.0
    rows = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and all(len(r["scores"][0]) == 4 for r in rows)
    assert "accuracy" in r.stdout and f"{m['accuracy']:.3f}" in r.stdout
    # an option no task of the run takes is one line, before any model is loaded
    r = probegen(["eval", "--model", "glove-50d", "--dataset", data, "--pattern", "is", "--out", tmp_path / "o"], plugin, tmp_path)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        f"probegen: error: --pattern applies to CoDA21 datasets only; {data} is a synonym pairs dataset"]


def test_bias_on_a_plugin_kind(plugin_and_data, tmp_path):
    plugin, data = plugin_and_data
    r = probegen(["bias", "--model", "glove-50d", "--dataset", data, "--bootstrap", "50", "--out", tmp_path / "b"], plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    (entry,) = res["datasets"]
    assert entry["kind"] == KIND and entry["ablation_order"] == ["full", "context", "word", "label"]
    acc = {k: v["accuracy"] for k, v in entry["all"]["ablations"].items()}
    assert set(acc) == {"full", "context", "word", "label"} and acc["label"] == pytest.approx(0.25)
    assert set(entry["all"]["ratios"]) == {"bias_c", "bias_w"}
    assert sorted(p.name for p in (tmp_path / "b" / "data").iterdir()) == ["ablations.jsonl", "context.jsonl", "full.jsonl",
                                                                            "reliability.png", "word.jsonl"]
    assert "## data" in (tmp_path / "b" / "report.md").read_text()


def test_a_broken_plugin_is_one_line_naming_its_entry_point(plugin_and_data, tmp_path):
    _, data = plugin_and_data
    broken = write_plugin(tmp_path / "broken", target="no_such_module_xyz:Task")
    r = probegen(["stats", data], broken, tmp_path)
    assert r.returncode == 1, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("probegen: error: task plugin 'synonym-pairs' (no_such_module_xyz:Task)") and "cannot be loaded" in line


def test_a_plugin_that_exits_on_import_is_one_line_not_a_silent_exit_0(plugin_and_data, tmp_path):
    """An installed plugin whose module calls sys.exit(0) on import ended `probegen eval` with exit
    0, printing and writing nothing."""
    _, data = plugin_and_data
    root = write_plugin(tmp_path / "exiting", target="exiting_task:Task")
    (root / "exiting_task.py").write_text("import sys\nsys.exit(0)\n")
    r = probegen(["eval", "--model", "glove-50d", "--dataset", data, "--out", tmp_path / "run"], root, tmp_path)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    (line,) = r.stderr.strip().splitlines()
    assert line == ("probegen: error: task plugin 'synonym-pairs' (exiting_task:Task) from entry-point group "
                    "probegen.tasks cannot be loaded: it called sys.exit(0) while being imported")
    assert not (tmp_path / "run").exists()


def test_limit_on_a_plugin_kind_without_records_is_one_line_before_any_work(plugin_and_data, tmp_path):
    """--limit/--sample passed the option check for every kind and then failed at run time on a
    dataset without ``records`` (issue 27): a kind that names none gets one line at option-check time."""
    plugin, data = plugin_and_data
    for cmd, opt in (("eval", "--limit"), ("bias", "--sample")):
        r = probegen([cmd, "--model", "no-such-model-xyz", "--dataset", data, opt, "5", "--out", tmp_path / cmd], plugin, tmp_path)
        assert r.returncode == 1, (r.stdout, r.stderr)
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith(f"probegen: error: {opt} cannot cut {data} is a synonym pairs dataset: its kind names no records")
        assert "does not implement Subsettable" in line and not (tmp_path / cmd).exists()


def test_limit_and_sample_on_a_plugin_kind_that_names_its_records(plugin_and_data, tmp_path):
    _, data = plugin_and_data
    root = write_plugin(tmp_path / "with-records")
    module = root / "synpairs_task" / "__init__.py"
    text = module.read_text().replace("from probegen.tasks import Task\n", "from probegen.tasks import Subsettable\n")
    text = text.replace("class SynonymPairs(Task):\n", "class SynonymPairs(Subsettable):\n")
    module.write_text(text.replace('    unit_name = "word"\n', '    unit_name = "word"\n    records_attribute = "items"\n'))
    r = probegen(["eval", "--model", "glove-50d", "--dataset", data, "--limit", "5", "--out", tmp_path / "run"], root, tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    first = [json.loads(line)["id"] for line in (data / "pairs.jsonl").read_text().splitlines()[:5]]
    assert [row["id"] for row in rows] == first  # --limit: the first five, in file order
    r = probegen(["bias", "--model", "glove-50d", "--dataset", data, "--sample", "10", "--bootstrap", "50", "--out", tmp_path / "b"],
                 root, tmp_path)
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads((tmp_path / "b" / "results.json").read_text())["datasets"]
    assert len((tmp_path / "b" / "data" / "full.jsonl").read_text().splitlines()) == 10 and entry["kind"] == KIND


CAPABILITY_COMMANDS = [
    ("export", ["export", "{data}", "--out", "{out}/release.json"], "exported", "Exportable"),
    ("export lm-eval", ["export", "{data}", "--format", "lm-eval", "--out", "{out}/lm-eval"], "exported", "Exportable"),
    ("study make", ["study", "make", "{data}", "--n", "5", "--annotators", "1", "--overlap", "0", "--out", "{out}/study"],
     "made into a study", "Studyable"),
    ("filter", ["filter", "{data}", "--artefacts", "--budget", "5", "--out", "{out}/filtered"], "filtered", "Filterable"),
]


@pytest.mark.parametrize("name,args,verb,capability", CAPABILITY_COMMANDS, ids=[c[0] for c in CAPABILITY_COMMANDS])
def test_a_command_the_kind_cannot_serve_is_one_line_before_any_work(plugin_and_data, tmp_path, name, args, verb,
                                                                      capability):
    """The plugin kind implements only the minimum (claims, load, units): a command that needs a
    capability it lacks says so in one line at option-check time (issue 27 §3), with no traceback
    and nothing written, instead of failing inside the run."""
    plugin, data = plugin_and_data
    out = tmp_path / "out"
    out.mkdir()
    r = probegen([a.format(data=data, out=out) for a in args], plugin, tmp_path)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [
        f"probegen: error: {data}: datasets of kind '{KIND}' cannot be {verb} (the kind does not implement {capability})"]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert list(out.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
