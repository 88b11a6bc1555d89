"""A quick look at a big set (``--limit`` / ``--sample`` on ``eval`` and ``bias``), rows skipped as
invalid reported (``--on-invalid``), and what the model saw (``bias``'s ``ablations.jsonl``).

Real data only: a WordNetQA definitions set and a clean-hard CoDA21 noun set made with
``probegen make`` from WordNet 3.0 / SemCor, scored with the bundled ``glove-50d``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run

from probegen import tasks
from probegen.run import run_bias


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, Path]:
    """Two small real sets, made as a user makes them."""
    root = tmp_path_factory.mktemp("subsets")
    out = {"wqa": root / "wqa", "coda": root / "coda"}
    code, _, err = run("make", "wordnetqa", "--probe", "definitions", "--limit", "12", "--out", out["wqa"])
    assert code == 0, err
    code, _, err = run("make", "coda21", "--pos", "noun", "--context-scorer", "first", "--out", out["coda"])
    assert code == 0, err
    return out


# ---- the sampling helper -------------------------------------------------------------------------
def test_sample_is_deterministic_per_seed_and_keeps_whole_concepts(sets):
    task = tasks.get("wordnetqa")
    data = task.load(sets["wqa"])
    by_concept: dict[str, list[str]] = {}
    for it in data.items:
        by_concept.setdefault(it.synset, []).append(it.id)
    assert len(by_concept) == 12 and len(data.items) > 12  # several items per concept: the test can tell
    draws = {}
    for seed in range(6):
        a, info = task.subset(data, "sample", 4, seed, whole="cluster")
        b, _ = task.subset(data, "sample", 4, seed, whole="cluster")
        assert [it.id for it in a.items] == [it.id for it in b.items]  # same seed, same sample
        concepts = {it.synset for it in a.items}
        assert len(concepts) == 4 and info["taken"] == 4 and info["of"] == 12 and info["unit"] == "concept"
        # whole concepts: every item of a chosen concept, none of the others, in file order
        assert [it.id for it in a.items] == [it.id for it in data.items if it.synset in concepts]
        assert info["items"] == len(a.items)
        draws[seed] = frozenset(concepts)
    assert len(set(draws.values())) > 1  # the seed matters


def test_limit_takes_the_first_units_in_file_order(sets):
    task = tasks.get("coda21")
    data = task.load(sets["coda"])
    cut, info = task.subset(data, "limit", 7)
    assert [g.id for g in cut.groups] == [g.id for g in data.groups[:7]]
    assert info == {"how": "limit", "n": 7, "unit": "group", "of": len(data.groups), "taken": 7, "items": 7, "all": False}
    whole, info = task.subset(data, "limit", 10_000)
    assert whole is data and info["all"] is True


# ---- eval --------------------------------------------------------------------------------------------
def test_eval_sample_and_limit(sets, tmp_path):
    ids = []
    for seed, name in ((3, "a"), (3, "b"), (4, "c")):
        code, out, err = run("eval", "--model", "glove-50d", "--dataset", sets["wqa"], "--sample", 10, "--seed", seed,
                             "--out", tmp_path / name)
        assert code == 0, err
        assert "a seeded sample (seed %d) of 10 of the 45 items" % seed in out
        res = json.loads((tmp_path / name / "results.json").read_text())
        assert res["subset"] == {"how": "sample", "n": 10, "unit": "item", "of": 45, "taken": 10, "items": 10, "seed": seed,
                                 "all": False}
        ids.append([r["id"] for r in _jsonl(tmp_path / name / "items.jsonl")])
    assert ids[0] == ids[1] and ids[0] != ids[2] and len(ids[0]) == 10
    all_ids = [r["id"] for r in _jsonl(sets["wqa"] / "items.jsonl")]
    assert ids[0] == [i for i in all_ids if i in set(ids[0])]  # kept in file order
    code, out, err = run("eval", "--model", "glove-50d", "--dataset", sets["coda"], "--limit", 6, "--out", tmp_path / "l")
    assert code == 0, err
    first = [g["id"] for g in _jsonl(sets["coda"] / "groups.jsonl")][:6]
    assert [g["id"] for g in _jsonl(tmp_path / "l" / "groups.jsonl")] == first
    assert "the first 6 of the" in out
    code, out, err = run("eval", "--model", "glove-50d", "--dataset", sets["wqa"], "--limit", 1000, "--out", tmp_path / "all")
    assert code == 0, err
    assert "--limit 1000 asks for more than the 45 items there are: all of them are used" in out
    assert len(_jsonl(tmp_path / "all" / "items.jsonl")) == 45


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_limit_with_sample_is_one_error_line(sets, tmp_path, command):
    code, _, err = run(command, "--model", "glove-50d", "--dataset", sets["wqa"], "--limit", 3, "--sample", 3,
                       "--out", tmp_path / "x")
    assert_one_line_error(code, err, "--limit and --sample cannot be used together")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_on_invalid_skip_on_coda21_is_one_error_line(sets, tmp_path, command):
    code, _, err = run(command, "--model", "glove-50d", "--dataset", sets["coda"], "--on-invalid", "skip", "--out", tmp_path / "x")
    assert_one_line_error(code, err, "--on-invalid applies to multiple-choice (WordNetQA) datasets only", str(sets["coda"]))
    assert not (tmp_path / "x").exists()
    # the value that asks for nothing is no error for any kind
    code, _, err = run(command, "--model", "glove-50d", "--dataset", sets["coda"], "--on-invalid", "error", "--limit", 3,
                       "--bootstrap" if command == "bias" else "--seed", 50 if command == "bias" else 0, "--out", tmp_path / "y")
    assert code == 0, err


# ---- rows skipped as invalid -----------------------------------------------------------------------
INVALID = {"policy": "skip", "rows": 48, "kept": 45,
           "skipped": {"answer is not one of the choices": {"count": 2, "ids": ["row-7", "row-19"]},
                       "fewer than two choices": {"count": 1, "ids": ["row-30"]}}}


@pytest.fixture(scope="module")
def with_invalid(sets, tmp_path_factory) -> Path:
    """The WordNetQA set as a loader that skipped rows leaves it: its manifest holds the ``invalid`` block."""
    task = tasks.get("wordnetqa")
    data = task.load(sets["wqa"])
    data.manifest["invalid"] = INVALID
    return task.write(data, tmp_path_factory.mktemp("invalid") / "wqa-skipped")


def test_skipped_rows_reach_eval_results_and_summary(with_invalid, tmp_path):
    code, out, err = run("eval", "--model", "glove-50d", "--dataset", with_invalid, "--out", tmp_path / "e")
    assert code == 0, err
    assert json.loads((tmp_path / "e" / "results.json").read_text())["invalid"] == INVALID
    assert "the figures cover the 45 kept rows only (3 skipped)" in out
    assert "answer is not one of the choices: 2 (row-7, row-19)" in out and "fewer than two choices: 1 (row-30)" in out


def test_skipped_rows_reach_bias_results_and_report(with_invalid, tmp_path):
    code, out, err = run("bias", "--model", "glove-50d", "--dataset", with_invalid, "--bootstrap", 50, "--out", tmp_path / "b")
    assert code == 0, err
    entry = json.loads((tmp_path / "b" / "results.json").read_text())["datasets"][0]
    assert entry["invalid"] == INVALID
    report = (tmp_path / "b" / "report.md").read_text()
    assert "the figures cover the 45 kept rows only (3 skipped)" in report
    assert "answer is not one of the choices: 2 (row-7, row-19)" in report and "fewer than two choices: 1 (row-30)" in report
    assert "(3 skipped)" in out  # the terminal summary says it too


def test_on_invalid_skip_reaches_the_multiple_choice_loader(tmp_path):
    """``--on-invalid skip`` on the real release sample with one row broken (its answerKey names no
    choice): the loader skips it, and results.json, the summary and report.md say so, with its id
    (needs the multiple-choice task's loader to take ``on_invalid``)."""
    import inspect

    task = tasks.get("wordnetqa")
    if "on_invalid" not in inspect.signature(task.load).parameters:
        pytest.skip("the multiple-choice task's loader does not take on_invalid yet")
    src = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / "hypernymy-train-sample.jsonl"
    rows = [json.loads(ln) for ln in src.read_text().splitlines()]
    rows[2]["answerKey"] = "9"
    bad = tmp_path / "hypernymy-train.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", bad, "--out", tmp_path / "x")
    assert code != 0 and "hypernymy-train.jsonl:3" in err  # the default: an error naming file and line
    code, out, err = run("eval", "--model", "glove-50d", "--dataset", bad, "--on-invalid", "skip", "--out", tmp_path / "e")
    assert code == 0, err
    inv = json.loads((tmp_path / "e" / "results.json").read_text())["invalid"]
    assert inv["rows"] == 40 and inv["kept"] == 39 and sum(v["count"] for v in inv["skipped"].values()) == 1
    assert "the figures cover the 39 kept rows only (1 skipped)" in out and rows[2]["id"] in out
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", bad, "--on-invalid", "skip", "--bootstrap", 50,
                       "--out", tmp_path / "b")
    assert code == 0, err
    assert json.loads((tmp_path / "b" / "results.json").read_text())["datasets"][0]["invalid"] == inv
    report = (tmp_path / "b" / "report.md").read_text()
    assert "the figures cover the 39 kept rows only (1 skipped)" in report and rows[2]["id"] in report


# ---- what the model saw ------------------------------------------------------------------------------
def test_ablations_jsonl_holds_exactly_the_scored_units(sets, tmp_path, monkeypatch):
    import probegen.core as core

    scored: list[list] = []
    real = core.score_units

    def spy(units, scorer, progress=False):
        scored.append(list(units))
        return real(units, scorer, progress=progress)

    monkeypatch.setattr(core, "score_units", spy)  # core.evaluate_units: every kind's one path
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", sets["wqa"], "--dataset", sets["coda"], "--sample", 4,
                       "--bootstrap", 50, "--out", tmp_path / "b")
    assert code == 0, err
    assert len(scored) == 2  # one request table per dataset
    from probegen.run.evaluation import load_model_scorer
    from probegen.runner import Runner

    style = load_model_scorer("glove-50d", None, "sum", None, Runner(log=lambda m: None)).query_style
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    report = (tmp_path / "b" / "report.md").read_text()
    for (name, path), units, entry in zip(sets.items(), scored, res["datasets"]):
        lines = _jsonl(tmp_path / "b" / name / "ablations.jsonl")
        assert [run_bias.line_unit(ln) for ln in lines] == units  # exactly the scored units, in scoring order
        task = tasks.detect(path)
        conditions = [a for a in task.ablations if a != "label"]
        assert [ln["condition"] for ln in lines] == [c for c in conditions for _ in range(len(lines) // len(conditions))]
        # and what the task builds for the sampled data, condition by condition
        data, _ = task.subset(task.load(path), "sample", 4, 0, whole="cluster")
        settings = run_bias.settings_of(run_bias.BiasConfig())
        built = [u for c in conditions for u in task.units(data, c, settings, style)]
        assert [run_bias.line_unit(ln) for ln in lines] == built
        assert {ln["id"] for ln in lines} == {r["id"] for r in _jsonl(tmp_path / "b" / name / "full.jsonl")}
        assert entry["files"]["units"] == f"{name}/ablations.jsonl" and f"`{name}/ablations.jsonl`" in report
        assert entry["subset"]["how"] == "sample" and entry["subset"]["taken"] == 4
    # the bias subset keeps whole concepts: every item of the 4 concepts scored
    mc_items = _jsonl(sets["wqa"] / "items.jsonl")
    full = [r["id"] for r in _jsonl(tmp_path / "b" / "wqa" / "full.jsonl")]
    concepts = {r["synset"] for r in mc_items if r["id"] in set(full)}
    assert len(concepts) == 4 and full == [r["id"] for r in mc_items if r["synset"] in concepts]


def test_help_shows_the_new_options_with_examples():
    for command in ("eval", "bias"):
        code, out, _ = run(command, "--help")
        assert code == 0
        for opt in ("--limit", "--sample", "--on-invalid"):
            assert opt in out
        assert "--sample 20" in out and "--limit" in out.split("Examples:")[1] and "--on-invalid skip" in out


def test_word_in_context_subsets_keep_whole_lemmas(tmp_path):
    """WiC pairs are split by lemma: a subset takes whole lemmas, in eval and bias (trained probe)."""
    wic = tmp_path / "wic"
    code, _, err = run("make", "wic", "--max-pairs", "120", "--out", wic)
    assert code == 0, err
    task = tasks.detect(wic)
    data = task.load(wic)
    cut, info = task.subset(data, "sample", 8, seed=3, whole="cluster")
    lemmas = {it.lemma for it in cut.items}
    assert info["unit"] == "lemma" and info["taken"] == len(lemmas) and abs(len(lemmas) - 8) <= 2  # per split, rounded
    assert {it.split for it in cut.items} == {it.split for it in data.items}  # every split keeps lemmas: train and test remain
    assert [it.id for it in cut.items] == [it.id for it in data.items if it.lemma in lemmas]  # whole lemmas, file order
    code, out, err = run("eval", "--model", "minilm-l6", "--dataset", wic, "--sample", "8", "--seed", "3", "--out", tmp_path / "e")
    assert code == 0, err
    res = json.loads((tmp_path / "e" / "results.json").read_text())
    assert res["config"]["subset"] == ["sample", 8] and res["n_train"] + res["n_test"] <= len(cut.items)
    assert f"{len(lemmas)} of the" in err and "lemmas" in err
    code, _, err = run("bias", "--model", "minilm-l6", "--dataset", wic, "--limit", "10", "--seeds", "1", "--bootstrap", "50",
                       "--out", tmp_path / "b")
    assert code == 0, err
    assert "the first 10 of the" in err
