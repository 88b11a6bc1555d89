"""Issue 49 §5: IRT fitters and import formats are registries with an entry-point group each, as methods are.

The test writes a tiny external package (as tests/test_method_plugin.py does): an IRT fitter ``rasch20``
(group ``probegen.irt_fitters``) and an import format ``answers-csv`` (group ``probegen.import_formats``),
with the ``*.dist-info`` an install leaves, so ``importlib.metadata`` finds both with the directory on
``PYTHONPATH``. ``probegen items`` then reads a real GloVe run beside a CSV of answers in the new format
and fits the new fitter; without the package neither name exists.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from exchange_runs import glove_wnqa_run

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
"""A fitter and an import format for probegen, registered by entry points."""

import csv

from probegen.exchange.ingest import ImportFormat, add_cell, respondent
from probegen.itemstats.irt import fit


def rasch20(y, k):
    """A 1PL stopped after 20 iterations (the registry's path, not a better fit)."""
    return fit(y, k, "1pl", max_iter=20)


def read_answers(path, **settings):
    """One respondent: a CSV of item, correct, chosen, key, k (its first line names the columns)."""
    resp = respondent("csv-model", "answers-csv", "", path, None)
    with open(path, newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.DictReader(fh), 2):
            cell = {"unit": row["item"], "correct": float(row["correct"]), "chosen": row["chosen"],
                    "key": row["key"], "k": int(row["k"])}
            add_cell(resp, row["item"], cell, f"{path} line {i}")
    return [resp]


FORMAT = ImportFormat("answers-csv", lambda p: p.name.endswith(".answers.csv"), read_answers)
'''

ENTRY_POINTS = """[probegen.irt_fitters]
rasch20 = pgextra:rasch20

[probegen.import_formats]
answers-csv = pgextra:FORMAT
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("registries")
    (root / "pgextra.py").write_text(textwrap.dedent(PLUGIN))
    info = root / "probegen_extra-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: probegen-extra\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def probegen(args: list, plugin: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)]), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def run_and_answers(tmp_path_factory) -> tuple[Path, Path]:
    """A real GloVe run on the 40 WordNetQA sample questions, and a CSV respondent on its items who
    answers the other way on every third item."""
    from probegen.itemstats.table import gather

    run = glove_wnqa_run(tmp_path_factory)
    (resp,) = gather([run]).respondents
    path = run.parent / "other.answers.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "correct", "chosen", "key", "k"])
        for i, (item, c) in enumerate(sorted(resp.cells.items())):
            w.writerow([item, 1 - c["correct"] if i % 3 == 0 else c["correct"], c["chosen"], c["key"], c["k"]])
    return run, path


def test_the_plugins_are_not_registered_in_this_process():
    from probegen.exchange.ingest import formats
    from probegen.itemstats.irt import fitters

    assert "rasch20" not in fitters() and list(fitters()) == ["1pl", "2pl", "3pl"]
    assert [f.name for f in formats()] == ["eee", "inspect", "lm-eval"]


def test_items_reads_a_plugin_format_and_fits_a_plugin_fitter(plugin, run_and_answers, tmp_path):
    run, answers = run_and_answers
    r = probegen(["items", "--help"], plugin, tmp_path)
    assert "[1pl|2pl|3pl|rasch20|none]" in r.stdout
    r = probegen(["items", run, answers, "--irt", "rasch20", "--bootstrap", 50, "--out", tmp_path / "items"],
                 plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "items" / "summary.json").read_text())
    assert summary["irt"]["model"] == "rasch20" and summary["respondents"] == 2 and summary["items"] == 40
    with open(tmp_path / "items" / "respondents.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["method"] for r in rows) == ["answers-csv", "score:static"]
    # without the package: the fitter is not a choice (usage error) and the file is no known format (one line)
    r = probegen(["items", run, answers, "--irt", "rasch20", "--out", tmp_path / "x"], tmp_path / "none", tmp_path)
    assert r.returncode == 2 and "'rasch20' is not one of" in r.stderr
    r = probegen(["items", run, answers, "--out", tmp_path / "x"], tmp_path / "none", tmp_path)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "not a run folder" in r.stderr
    assert not (tmp_path / "x").exists()


def test_a_broken_registration_is_one_line(plugin, run_and_answers, tmp_path):
    """A format named like a built-in one: one line naming the entry point, nothing written."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pgbad.py").write_text("from probegen.exchange.ingest import BUILTIN_FORMATS\nFORMAT = BUILTIN_FORMATS[0]\n")
    info = bad / "probegen_bad-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: probegen-bad\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[probegen.import_formats]\neee2 = pgbad:FORMAT\n")
    run, answers = run_and_answers
    r = probegen(["items", run, answers, "--out", tmp_path / "y"], bad, tmp_path)
    (line,) = r.stderr.strip().splitlines()
    assert r.returncode == 1 and line.startswith("probegen: error: import format plugin 'eee2' (pgbad:FORMAT): ")
    assert line.endswith("is not a probegen.exchange.ingest.ImportFormat of a new name"), line
    assert not (tmp_path / "y").exists()
