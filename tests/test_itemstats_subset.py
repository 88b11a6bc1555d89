"""probegen subset: compact forms of a dataset from a `probegen items` folder (random, anchor,
information), written as a dataset of the same kind whose manifest names its parent, method and seed;
the full-accuracy predictor and its leave-respondents-out validation; bad inputs one line, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from threadpoolctl import threadpool_limits

from probegen import tasks
from probegen.commands.cli import cli
from probegen.io import write_json, write_jsonl
from probegen.itemstats.irt import fit, simulate
from probegen.itemstats.subset import predict, validate

DATA = Path(__file__).parent / "data"
MC = DATA / "wordnetqa_release_four_probes.jsonl"  # 12 real questions, 5 options each
CODA = DATA / "coda21_three_groups.json"  # 3 real groups of 5 rows


def _runs(tmp: Path, dataset: Path, n_resp: int = 8, seed: int = 0) -> list[Path]:
    """Eval-run folders of simulated respondents on ``dataset``'s real records (2PL answers)."""
    task = tasks.detect(dataset)
    records = task.records(task.load(dataset))
    groups = hasattr(records[0], "items")
    units = [(r.id, len(r.items) if groups else 1) for r in records]
    rng = np.random.default_rng(seed)
    theta = np.linspace(-1.5, 1.5, n_resp)
    b = rng.normal(size=sum(n for _, n in units))
    runs = []
    for j, t in enumerate(theta):
        right = rng.random(len(b)) < 1 / (1 + np.exp(-(t - b)))
        recs, at = [], 0
        for rid, n in units:
            ok = right[at: at + n]
            at += n
            gold = list(range(n)) if groups else [0]
            pred = [g if o else (g + 1) % max(n, 2) for g, o in zip(gold, ok)]
            rec = {"id": rid, "gold": gold, "pred": pred, "correct": float(np.mean(ok))}
            rec.update({"rows": [f"r{i}" for i in range(n)], "k": n} if groups else {"scores": [[0.0] * 5]})
            recs.append(rec)
        root = tmp / f"run{j}"
        root.mkdir()
        write_jsonl(root / ("groups.jsonl" if groups else "items.jsonl"), recs)
        write_json(root / "results.json", {"model": f"m{j}", "scorer": {"kind": "static"}, "eval": {},
                                           "dataset": {"path": str(dataset), "kind": task.name}})
        runs.append(root)
    return runs


@pytest.fixture(scope="module")
def mc_items(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mc")
    runs = _runs(tmp, MC)
    with threadpool_limits(1):
        r = CliRunner().invoke(cli, ["items", *map(str, runs), "--out", str(tmp / "items"), "--bootstrap", "20"])
    assert r.exit_code == 0, r.output
    return tmp / "items"


@pytest.mark.parametrize("method", ["random", "anchor", "information"])
def test_subset_writes_a_dataset_of_the_same_kind(mc_items, tmp_path, method):
    out = tmp_path / "compact"
    with threadpool_limits(1):
        r = CliRunner().invoke(cli, ["subset", str(MC), "--items", str(mc_items), "--size", "4", "--method", method,
                                     "--seed", "3", "--out", str(out)])
    assert r.exit_code == 0, r.output
    task = tasks.detect(out)
    assert task.name == "wordnetqa" and len(task.records(task.load(out))) == 4
    manifest = json.loads((out / "manifest.json").read_text())
    cf = manifest["compact_form"]
    assert (cf["parent"], cf["method"], cf["seed"], cf["size"], cf["of"]) == (str(MC), method, 3, 4, 12)
    pred = json.loads((out / "predictor.json").read_text())
    assert pred["subset_items"] == 4 and len(pred["b"]) == 12
    v = pred["validation"]
    assert v["folds"] == 5 and 0 <= v["mae"] <= 1 and 0 <= v["random_mae"] <= 1


def test_subset_of_groups_keeps_whole_groups(tmp_path):
    runs = _runs(tmp_path, CODA, n_resp=6)
    with threadpool_limits(1):
        assert CliRunner().invoke(cli, ["items", *map(str, runs), "--out", str(tmp_path / "it"), "--irt", "1pl",
                                        "--bootstrap", "20"]).exit_code == 0
        r = CliRunner().invoke(cli, ["subset", str(CODA), "--items", str(tmp_path / "it"), "--size", "2",
                                     "--method", "information", "--out", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    task = tasks.detect(tmp_path / "c")
    kept = task.records(task.load(tmp_path / "c"))
    assert len(kept) == 2 and all(len(g.items) == 5 for g in kept)


def test_bad_subsets_are_one_line_and_write_nothing(mc_items, tmp_path):
    out = tmp_path / "o"
    (tmp_path / "empty").mkdir()
    for args, needle in ((["--size", "13"], "larger than the set"),
                         (["--size", "2", "--items", str(tmp_path / "empty")], "not a `probegen items` folder")):
        full = ["subset", str(MC), "--items", str(mc_items), "--out", str(out), *args]
        r = CliRunner().invoke(cli, full)
        assert r.exit_code == 1 and r.output.count("\n") == 1 and needle in r.output, r.output
        assert not out.exists()
    r = CliRunner().invoke(cli, ["subset", str(CODA), "--items", str(mc_items), "--size", "1", "--out", str(out)])
    assert r.exit_code == 1 and "holds no item" in r.output and not out.exists(), r.output


def test_predictor_and_validation_beat_chance_on_simulated_data():
    s = simulate(40, 200, "2pl", missing=0.0, seed=5)
    rec = np.arange(200)
    with threadpool_limits(1):
        f = fit(s["y"][:30], s["k"], "2pl")
        shown = np.zeros(200, bool)
        shown[::5] = True
        errs = []
        for j in range(30, 40):
            mean, lo, hi = predict(f, s["y"][j], shown)
            truth = s["y"][j].mean()
            errs.append(abs(mean - truth))
            assert lo <= mean <= hi
        assert np.mean(errs) < 0.06
        v = validate(s["y"], s["k"], rec, 200, "information", 40, "2pl", folds=4, random_draws=3)
    assert v["mae"] < 0.06 and v["kendall_tau"] > 0.6 and v["random_mae"] < 0.1
