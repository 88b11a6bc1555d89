"""`probegen compare --run`: answers made already (probegen runs, Every Eval Ever and inspect-ai
exports) as respondents on a real twin/adversarial WordNetQA pair give the report compare gives when
it scores the same models itself; every bad import is one line, exit 1, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run
from exchange_runs import foreign_eee

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"
MODELS = ("glove-50d", "minilm-l6")


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    """A real adversarial WordNetQA hypernymy set (distractors most confusable for glove-50d) and its twin."""
    from probegen.runner import Runner
    from probegen.wordnetqa.adversarial import AdversarialSettings, build_adversarial
    from probegen.wordnetqa.config import WordNetQAConfig

    d = tmp_path_factory.mktemp("pair")
    adv, twin = build_adversarial(WordNetQAConfig(probes=("hypernymy",), max_concepts=20),
                                  AdversarialSettings("glove-50d"), progress=False, log=lambda m: None,
                                  runner=Runner(log=lambda m: None))
    adv.write(d / "adv")
    twin.write(d / "twin")
    return d / "twin", d / "adv"


@pytest.fixture(scope="module")
def runs(pair) -> dict[tuple[str, str], Path]:
    """`probegen eval` of each model on each set: (model, side) -> run folder."""
    out = {}
    for model in MODELS:
        for side, ds in zip(("twin", "adv"), pair):
            out[model, side] = ds.parent / f"run-{model}-{side}"
            code, _, err = run("eval", "--model", model, "--dataset", ds, "--out", out[model, side])
            assert code == 0, err
    return out


@pytest.fixture(scope="module")
def scored(pair, tmp_path_factory) -> Path:
    """compare scoring both models itself."""
    out = tmp_path_factory.mktemp("scored") / "cmp"
    code, _, err = run("compare", *pair, *[a for m in MODELS for a in ("--model", m)], "--bootstrap", 300,
                       "--out", out)
    assert code == 0, err
    return out


def _results(folder: Path) -> dict:
    res = json.loads((folder / "results.json").read_text())
    res.pop("runs", None)  # where imported answers came from: the one key scoring does not have
    return res


def _report(folder: Path) -> list[str]:
    return [ln for ln in (folder / "report.md").read_text().splitlines() if "answers read from" not in ln]


def test_runs_give_the_report_of_scoring(pair, runs, scored, tmp_path):
    out = tmp_path / "cmp"
    code, stdout, err = run("compare", *pair, *[a for r in runs.values() for a in ("--run", r)], "--bootstrap", 300,
                            "--out", out)
    assert code == 0, err
    want = _results(scored)
    assert [m["model"] for m in want["models"]] == list(MODELS) and want["models"][0]["used_in_construction"]
    assert want["models"][0]["diff"]["value"] < 0  # the reference model drops on its adversarial set
    assert _results(out) == want  # accuracies, CIs, differences, model pairs: every number
    assert _report(out) == _report(scored)
    res = json.loads((out / "results.json").read_text())
    assert res["runs"]["glove-50d"] == {"a": str(runs["glove-50d", "twin"]), "b": str(runs["glove-50d", "adv"])}
    assert "glove-50d" in stdout and "minilm-l6" in stdout

    # one model scored here, the other read: the same rows
    mixed = tmp_path / "mixed"
    code, _, err = run("compare", *pair, "--model", "glove-50d", "--run", runs["minilm-l6", "adv"], "--run",
                       runs["minilm-l6", "twin"], "--bootstrap", 300, "--out", mixed)
    assert code == 0, err
    assert _results(mixed) == want


def test_exported_files_as_respondents(pair, runs, scored, tmp_path):
    """An Every Eval Ever export on the twin and an inspect-ai log on the adversarial set: one respondent."""
    eee, log = tmp_path / "eee-twin", tmp_path / "logs" / "glove-adv.eval"
    assert run("export", runs["glove-50d", "twin"], "--format", "eee", "--out", eee)[0] == 0
    assert run("export", runs["glove-50d", "adv"], "--format", "inspect-log", "--out", log)[0] == 0
    out = tmp_path / "cmp"
    code, _, err = run("compare", *pair, "--run", eee, "--run", log, "--bootstrap", 300, "--out", out)
    assert code == 0, err
    (row,) = _results(out)["models"]
    assert row == _results(scored)["models"][0]


def test_bad_runs_are_one_line(pair, runs, tmp_path):
    out = tmp_path / "cmp"
    twin_run, adv_run = runs["glove-50d", "twin"], runs["glove-50d", "adv"]

    def refused(*inputs: Path, needles: tuple[str, ...]) -> None:
        code, _, err = run("compare", *pair, *[a for r in inputs for a in ("--run", r)], "--out", out)
        assert_one_line_error(code, err, *needles)
        assert not out.exists()

    refused(twin_run, needles=("glove-50d", "has no run on", str(pair[1])))  # one side only
    refused(twin_run, twin_run, adv_run, needles=("is the same run as", "given twice"))  # one run twice
    elsewhere = tmp_path / "elsewhere"
    assert run("eval", "--model", "glove-50d", "--dataset", SAMPLE, "--out", elsewhere)[0] == 0
    refused(twin_run, elsewhere, needles=("neither",))  # a run on neither set
    code, _, err = run("compare", *pair, "--out", out)
    assert_one_line_error(code, err, "--model", "--run")

    eee = tmp_path / "eee"
    assert run("export", adv_run, "--format", "eee", "--out", eee)[0] == 0
    (agg,) = [p for p in eee.rglob("*.json") if not p.name.startswith(".")]
    samples = agg.with_name(f"{agg.stem}_samples.jsonl")
    # mixed datasets: an export naming a dataset that is neither set
    moved = tmp_path / "moved"
    moved.mkdir()
    a = json.loads(agg.read_text())
    a["evaluation_results"][0]["source_data"]["additional_details"]["probegen_dataset"] = str(SAMPLE)
    (moved / agg.name).write_text(json.dumps(a))
    (moved / samples.name).write_bytes(samples.read_bytes())
    refused(twin_run, moved / samples.name, needles=("neither",))
    # wrong schema
    bad = tmp_path / "bad"
    bad.mkdir()
    rows = samples.read_text().splitlines()
    first = json.loads(rows[0])
    del first["evaluation"]
    (bad / agg.name).write_bytes(agg.read_bytes())
    (bad / samples.name).write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n")
    refused(twin_run, bad / samples.name, needles=("not Every Eval Ever",))
    # truncated
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / agg.name).write_bytes(agg.read_bytes())
    (cut / samples.name).write_text("\n".join(rows[:-2]) + "\n")
    refused(twin_run, cut / samples.name, needles=("truncated",))
    # a file that names no dataset: twin and adversarial items share ids, so it cannot be placed
    foreign = foreign_eee(eee, tmp_path / "foreign")
    refused(twin_run, foreign, needles=("items of both",))
    # unknown ids
    first_id = json.loads(rows[0])["sample_id"]
    unknown = foreign_eee(eee, tmp_path / "unknown", {first_id: "no-such-item"})
    refused(twin_run, unknown, needles=("1 of", "item ids are not items of"))


def test_coda21_run_gives_the_report_of_scoring(clean_hard_nouns, tmp_path_factory, tmp_path):
    """CoDA21: a group's score is the mean of its rows (the paper's metric), read from the run's rows.
    One set on both sides (as `compare SET SET`): one run answers both."""
    from exchange_runs import glove_coda_run

    coda_run = glove_coda_run(clean_hard_nouns, tmp_path_factory, 6)
    ds = json.loads((coda_run / "results.json").read_text())["dataset"]["path"]
    scored, read = tmp_path / "scored", tmp_path / "read"
    assert run("compare", ds, ds, "--model", "glove-50d", "--bootstrap", 200, "--out", scored)[0] == 0
    code, _, err = run("compare", ds, ds, "--run", coda_run, "--bootstrap", 200, "--out", read)
    assert code == 0, err
    assert _results(read) == _results(scored)
    (row,) = _results(read)["models"]
    assert row["n_units"] == 6 and 0 < row["a"]["accuracy"] < 1
