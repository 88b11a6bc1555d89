"""probegen items: the response table over runs and studies, classical item analysis, paired tests,
and every bad input one line with nothing written. Runs are written by hand in the format
``probegen eval`` / ``bias`` / ``study`` write (fast: no model is loaded)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from probegen.commands.cli import cli
from probegen.errors import ProbegenError
from probegen.io import file_hashes, write_json, write_jsonl
from probegen.itemstats.classical import distractors, item_table, kr20, kr20_ci
from probegen.itemstats.paired import all_pairs, mcnemar_exact, paired_diff
from probegen.itemstats.table import gather
from probegen.stats.significance import holm

CHOICES = ["w", "x", "y", "z"]


def mc_run(root: Path, model: str, answers: list[int], dataset: str = "ds/a.jsonl", gold: int = 0,
           ids: list[str] | None = None) -> Path:
    """An eval run folder of a 4-way multiple-choice set: item i answered ``answers[i]`` (gold ``gold``)."""
    root.mkdir(parents=True)
    ids = ids or [f"q{i}" for i in range(len(answers))]
    recs = [{"id": i, "gold": [gold], "pred": [p], "correct": float(p == gold), "choices": CHOICES,
             "scores": [[0.0] * 4], "cluster": f"c{n // 2}"} for n, (i, p) in enumerate(zip(ids, answers))]
    write_jsonl(root / "items.jsonl", recs)
    write_json(root / "results.json", {"model": model, "scorer": {"kind": "static"},
                                       "dataset": {"path": dataset, "kind": "wordnetqa"}, "eval": {"mode": "full"}})
    return root


def group_run(root: Path, model: str, preds: list[list[int]]) -> Path:
    """An eval run of alignment groups (3 rows each, gold the identity)."""
    root.mkdir(parents=True)
    recs = [{"id": f"g{n}", "rows": ["r0", "r1", "r2"], "columns": ["r0", "r1", "r2"], "gold": [0, 1, 2], "pred": p,
             "k": 3, "correct": float(np.mean([a == b for a, b in zip(p, [0, 1, 2])]))} for n, p in enumerate(preds)]
    write_jsonl(root / "groups.jsonl", recs)
    write_json(root / "results.json", {"model": model, "scorer": {"kind": "static"},
                                       "dataset": {"path": "ds/g.json", "kind": "coda21"}, "eval": {"mode": "context"}})
    return root


def study(root: Path, answers: dict[str, dict[str, int]]) -> Path:
    """A study folder (manifest, items, assignment, gold, answers) whose participants answered ``answers``."""
    root.mkdir(parents=True)
    uids = sorted({u for a in answers.values() for u in a})
    gold = [{"uid": u, "kind": "mc", "dataset_id": f"q{int(u[1:])}", "unit": u, "gold": 0, "n": 4} for u in uids]
    write_jsonl(root / "gold.jsonl", gold)
    write_jsonl(root / "items.jsonl", [{"uid": u, "condition": "full", "view": {}} for u in uids])
    write_json(root / "assignment.json", {"annotators": {a: {"condition": "full", "items": sorted(v), "shared": []}
                                                         for a, v in answers.items()}})
    (root / "answers").mkdir()
    for a, v in answers.items():
        write_jsonl(root / "answers" / f"{a}.jsonl", [{"item": u, "answer": x} for u, x in v.items()])
    write_json(root / "manifest.json", {"kind": "study", "conditions": ["full"],
                                        "dataset": {"path": "ds/a.jsonl", "kind": "wordnetqa"},
                                        "files": file_hashes(root, ["gold.jsonl", "items.jsonl", "assignment.json"])})
    return root


def test_table_of_eval_runs_and_a_study(tmp_path):
    a = mc_run(tmp_path / "a", "m1", [0, 0, 1, 2])
    b = mc_run(tmp_path / "b", "m2", [0, 3, 0, 0])
    s = study(tmp_path / "s", {"p1": {"q0": 0, "q1": 0}, "p2": {"q0": 1, "q3": 0}})
    t = gather([a, b, s])
    y, names, items, k = t.matrix()
    assert names[:2] == ["m1|score:static|mode=full", "m2|score:static|mode=full"]
    assert names[2:] == ["human:p1", "human:p2"]
    assert items == ["q0", "q1", "q2", "q3"] and list(k) == [4, 4, 4, 4]
    np.testing.assert_array_equal(y[0], [1, 1, 0, 0])
    np.testing.assert_array_equal(y[3], [0, np.nan, np.nan, 1])  # missing cells stay missing
    chosen, keys = t.chosen()
    assert chosen[0][2] == "x" and keys[0][2] == "w"  # options named by their text
    from probegen.itemstats.analyse import item_rows

    rows = {r["item"]: r for r in item_rows(t, None)[0]}
    assert (rows["q0"]["p_human"], rows["q0"]["p_models"]) == (0.5, 1.0)  # human and model difficulty side by side


def test_bias_conditions_are_respondents(tmp_path):
    root = tmp_path / "bias"
    (root / "ds").mkdir(parents=True)
    for cond, preds in (("full", [0, 0, 1]), ("word", [1, 1, 1])):
        write_jsonl(root / "ds" / f"{cond}.jsonl", [{"id": f"q{i}", "gold": [0], "pred": [p], "correct": float(p == 0)}
                                                    for i, p in enumerate(preds)])
    write_json(root / "results.json", {"model": "m", "scorer": {"kind": "static"}, "eval": {}, "datasets": [
        {"name": "ds", "path": "ds/a.jsonl", "files": {"full": "ds/full.jsonl", "word": "ds/word.jsonl",
                                                       "units": "ds/ablations.jsonl", "reliability": "ds/r.png"}}]})
    t = gather([root, mc_run(tmp_path / "a", "m1", [0, 1, 0])])
    y, names, _, _ = t.matrix()
    assert names == ["m|bias:static|condition=full", "m|bias:static|condition=word", "m1|score:static|mode=full"]
    np.testing.assert_array_equal(y[:2], [[1, 1, 0], [0, 0, 0]])


def test_group_rows_are_items(tmp_path):
    t = gather([group_run(tmp_path / "a", "m1", [[0, 1, 2], [1, 0, 2]]), group_run(tmp_path / "b", "m2", [[0, 2, 1], [0, 1, 2]])])
    y, _, items, k = t.matrix()
    assert items == ["g0#0", "g0#1", "g0#2", "g1#0", "g1#1", "g1#2"] and set(k) == {3}
    np.testing.assert_array_equal(y, [[1, 1, 1, 0, 0, 1], [1, 0, 0, 1, 1, 1]])


def test_cli_writes_csv_and_parquet_loadable_in_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    runs = [mc_run(tmp_path / f"r{j}", f"m{j}", [int(i < j) for i in range(8)]) for j in range(5)]
    res = CliRunner().invoke(cli, ["items", *map(str, runs), "--out", str(tmp_path / "o"), "--pairs",
                                   "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    df = pd.read_parquet(tmp_path / "o" / "responses.parquet")
    assert len(df) == 40 and set(df.columns) >= {"respondent", "item", "correct", "chosen"}
    assert len(pd.read_csv(tmp_path / "o" / "responses.csv")) == 40
    items = list(csv.DictReader(open(tmp_path / "o" / "items.csv")))
    assert len(items) == 8 and "b" in items[0]
    assert len(list(csv.DictReader(open(tmp_path / "o" / "pairs.csv")))) == 10
    assert (tmp_path / "o" / "item_map.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "o" / "item_fit.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["respondents"] == 5 and summary["kr20"]["kr20"] is not None


def _fails(args: list[str], out: Path, needle: str) -> None:
    res = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert res.exit_code == 1, res.output
    line = res.output.strip()
    assert "\n" not in line and line.startswith("probegen: error:") and needle in line, line
    assert not out.exists()


def test_bad_inputs_are_one_line_and_write_nothing(tmp_path):
    a = mc_run(tmp_path / "a", "m1", [0, 1, 0])
    other = mc_run(tmp_path / "b", "m2", [0, 1, 1, 0], dataset="ds/other.jsonl", ids=["q1", "q2", "q9", "q8"])
    (tmp_path / "bare").mkdir()
    write_json(tmp_path / "bare" / "results.json", {"model": "m", "dataset": {"path": "ds/a.jsonl"}})
    one = study(tmp_path / "s1", {"p1": {"q0": 0}})
    out = tmp_path / "o"
    _fails(["items", str(a), str(other)], out, "different datasets")
    _fails(["items", str(a), str(tmp_path / "bare")], out, "no per-row records")
    _fails(["items", str(a), str(one)], out, "1 participant")
    _fails(["items", str(tmp_path / "nope")], out, "does not exist")
    res = CliRunner().invoke(cli, ["items", str(a), str(other), "--common", "--out", str(out), "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert {r["item"] for r in csv.DictReader(open(out / "items.csv"))} == {"q1", "q2"}


def test_classical_statistics():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=60)
    y = (theta[:, None] + rng.normal(size=(60, 30)) > 0).astype(float)
    y[:, 0] = 1 - y[:, 0]  # mis-keyed: the strong get it wrong
    y[rng.random(y.shape) < 0.1] = np.nan
    t = item_table(y)
    assert t["item_rest"][0] < -0.3 and np.nanmedian(t["item_rest"][1:]) > 0.3
    assert kr20(np.nan_to_num(y[:, 1:])) > 0.8
    ci = kr20_ci(y, n_boot=200)
    assert ci["ci"][0] <= ci["kr20"] <= ci["ci"][1]
    chosen = [["A" if y[j, i] == 1 else "B" for i in range(30)] for j in range(60)]
    keys = [["A"] * 30 for _ in range(60)]
    d = {r["item"]: r for r in distractors(y, chosen, keys, [f"i{i}" for i in range(30)])}
    assert d["i0"]["option"] == "B" and d["i0"]["suspect"]  # the strong half picks the "distractor" more
    assert sum(r["suspect"] for r in d.values()) <= 3


def test_paired_and_holm():
    x = np.array([1] * 30 + [0] * 10, float)
    z = np.array([1] * 15 + [0] * 25, float)
    r = paired_diff(x, z, n_boot=500)
    assert r["diff"] == pytest.approx(15 / 40) and r["ci_lo"] > 0 and r["p_mcnemar"] < 1e-3
    assert mcnemar_exact(x, x)[2] == 1.0
    assert holm([0.2, 0.01, 0.04]) == [0.2, 0.03, 0.08]
    y = np.vstack([x, z, z])
    rows = all_pairs(y, ["a", "b", "c"], n_boot=100)
    assert [(p["a"], p["b"], p["significant"]) for p in rows] == [("a", "b", True), ("a", "c", True), ("b", "c", False)]


def test_gather_needs_runs():
    with pytest.raises(ProbegenError):
        gather([])


def test_a_run_asked_under_several_option_orders_is_its_own_variant(tmp_path):
    """A letter/generate run with --permutations: its cells are majority answers, and the respondent's
    variant says so (the same model and method under one order is another respondent)."""
    import json

    one, rot = mc_run(tmp_path / "one", "m", [0, 1, 0, 2]), mc_run(tmp_path / "rot", "m", [0, 0, 0, 2])
    for run, orders in ((one, 1), (rot, 4)):
        res = json.loads((run / "results.json").read_text())
        res["eval"]["method"], res["generation"] = "letter", {"method": "letter", "orders": orders}
        write_json(run / "results.json", res)
    variants = {r.source: r.variant for r in gather([one, rot]).respondents}
    assert variants == {str(one): "mode=full", str(rot): "mode=full;orders=4 (majority)"}
