"""A run's per-item results out: Every Eval Ever (checked with the package's own schemas) and an
inspect-ai eval log (read back with inspect-ai itself); the CLI's one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from exchange_runs import glove_coda_run, glove_wnqa_run

from probegen.commands.cli import cli
from probegen.exchange.eee import eee_validator
from probegen.exchange.export import run_samples

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def wnqa_run(tmp_path_factory) -> Path:
    """A real `probegen eval` run: GloVe on the 40 WordNetQA release-sample definition questions."""
    return glove_wnqa_run(tmp_path_factory)


@pytest.fixture(scope="module")
def coda_run(clean_hard_nouns, tmp_path_factory) -> Path:
    """A real CoDA21 run (5 clean-hard noun groups)."""
    return glove_coda_run(clean_hard_nouns, tmp_path_factory, 5)


def _eee_files(folder: Path) -> tuple[dict, list[dict]]:
    (agg,) = [p for p in folder.rglob("*.json") if not p.name.startswith(".")]
    samples = agg.with_name(f"{agg.stem}_samples.jsonl")
    return json.loads(agg.read_text()), [json.loads(x) for x in samples.read_text().splitlines()]


@pytest.mark.parametrize("which", ["wnqa_run", "coda_run"])
def test_eee_export_is_valid_every_eval_ever(which, request, tmp_path):
    run = request.getfixturevalue(which)
    out = tmp_path / "eee"
    r = _invoke("export", str(run), "--format", "eee", "--out", str(out))
    assert r.exit_code == 0, r.output
    agg, rows = _eee_files(out)
    # the package's own JSON schemas (every-eval-ever 0.3.0), every line and the aggregate
    assert not list(eee_validator("eval").iter_errors(agg))
    for row in rows:
        assert not list(eee_validator("instance_level_eval").iter_errors(row))
    # the layout the EEE datastore wants: data/<benchmark>/<developer>/<model>/<uuid>.json + _samples.jsonl
    rel = agg["detailed_evaluation_results"]["file_path"]
    assert (out / rel).is_file() and agg["detailed_evaluation_results"]["total_rows"] == len(rows)
    # every item, answer and score of the run
    _, _, samples = run_samples(run)
    assert [r["sample_id"] for r in rows] == [s["item"] for s in samples]
    assert [r["evaluation"]["score"] for r in rows] == [s["cell"]["correct"] for s in samples]
    assert [r["answer_attribution"][0]["extracted_value"] for r in rows] == [s["answer"] for s in samples]
    res = json.loads((run / "results.json").read_text())
    acc = res["metrics"]["accuracy"] if which == "wnqa_run" else res["metrics"]["all"]["accuracy"]
    assert agg["evaluation_results"][0]["score_details"]["score"] == acc
    if which == "coda_run":
        assert all("#" in r["sample_id"] for r in rows)
    # deterministic: the same run gives byte-identical files
    again = tmp_path / "eee2"
    _invoke("export", str(run), "--format", "eee", "--out", str(again))
    for p in out.rglob("*"):
        if p.is_file() and not p.name.startswith("."):
            assert p.read_bytes() == (again / p.relative_to(out)).read_bytes()


def test_eee_validator_rejects_a_broken_sample(wnqa_run, tmp_path):
    """The schema check can fail: a sample without its evaluation is not Every Eval Ever."""
    out = tmp_path / "eee"
    _invoke("export", str(wnqa_run), "--format", "eee", "--out", str(out))
    _, rows = _eee_files(out)
    del rows[0]["evaluation"]
    assert list(eee_validator("instance_level_eval").iter_errors(rows[0]))


def test_inspect_log_reads_back_equal(wnqa_run, tmp_path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    out = tmp_path / "logs" / "glove.eval"
    r = _invoke("export", str(wnqa_run), "--format", "inspect-log", "--out", str(out))
    assert r.exit_code == 0, r.output
    log = read_eval_log(str(out))
    _, _, samples = run_samples(wnqa_run)
    by_id = {str(s.id): s for s in log.samples or []}
    assert sorted(by_id) == sorted(s["item"] for s in samples)
    for s in samples:
        got = by_id[s["item"]]
        assert got.scores["probegen"].value == s["cell"]["correct"]
        assert got.scores["probegen"].answer == s["answer"] == got.output.completion
        assert got.target == s["target"] and got.choices == s["choices"]
    res = json.loads((wnqa_run / "results.json").read_text())
    assert log.results.scores[0].metrics["accuracy"].value == res["metrics"]["accuracy"]
    assert log.status == "success" and log.eval.model == "glove-50d"
    # what `inspect view` lists: the log folder's logs
    assert [Path(i.name.removeprefix("file://")) for i in list_eval_logs(str(out.parent))] == [out]
    # byte-identical when written again (the zip's dates are the run's)
    again = tmp_path / "again.eval"
    _invoke("export", str(wnqa_run), "--format", "inspect-log", "--out", str(again))
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--format", "eee"], "is not one"),                 # a dataset with a run format
    (["--format", "inspect-log"], "is not one"),
])
def test_dataset_with_a_run_format_is_one_line(args, message, tmp_path):
    out = tmp_path / "x.eval"
    r = CliRunner().invoke(cli, ["export", str(SAMPLE), *args, "--out", str(out)])
    assert r.exit_code == 1 and message in r.output and len(r.output.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    ([], "is a run, not a dataset"),
    (["--format", "lm-eval"], "is a run, not a dataset"),
    (["--format", "eee", "--seed", "3"], "apply to datasets"),
    (["--format", "inspect-log"], "a .eval or .json file"),    # --out x.txt
])
def test_run_with_a_dataset_format_is_one_line(args, message, wnqa_run, tmp_path):
    out = tmp_path / ("x.txt" if args == ["--format", "inspect-log"] else "x")
    r = CliRunner().invoke(cli, ["export", str(wnqa_run), *args, "--out", str(out)])
    assert r.exit_code == 1 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not out.exists()


# ---- issue 46 §5: every export reads itself back before it is renamed into place -----------------
@pytest.fixture(scope="module")
def nul_run(tmp_path_factory) -> Path:
    """glove-50d on the 40 release definition questions, one of whose ids holds a NUL byte."""
    tmp = tmp_path_factory.mktemp("nul")
    rows = [json.loads(x) for x in SAMPLE.read_text().splitlines() if x.strip()]
    rows[0]["id"] += "\x00x"
    data = tmp / "nul.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = _invoke("eval", "--model", "glove-50d", "--dataset", str(data), "--out", str(tmp / "run"))
    assert r.exit_code == 0, r.output
    return tmp / "run"


def test_an_id_a_log_cannot_carry_is_refused_and_others_carry_it(nul_run, tmp_path):
    """A NUL byte in an item id: the .eval log wrote "40 samples" and inspect-ai read 39 back. Now the
    .eval export is one line and writes nothing; the .json log and Every Eval Ever carry the id, and
    inspect-ai's reader gives all 40 samples back with their scores."""
    from inspect_ai.log import read_eval_log

    _, _, samples = run_samples(nul_run)
    assert len(samples) == 40 and any("\x00" in s["item"] for s in samples)
    out = tmp_path / "logs" / "nul.eval"
    r = CliRunner().invoke(cli, ["export", str(nul_run), "--format", "inspect-log", "--out", str(out)])
    assert r.exit_code == 1 and "NUL byte" in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not out.exists()
    js = tmp_path / "logs" / "nul.json"
    r = _invoke("export", str(nul_run), "--format", "inspect-log", "--out", str(js))
    assert r.exit_code == 0, r.output
    back = {str(s.id): s.scores["probegen"].value for s in read_eval_log(str(js)).samples}
    assert back == {s["item"]: s["cell"]["correct"] for s in samples}
    r = _invoke("export", str(nul_run), "--format", "eee", "--out", str(tmp_path / "eee"))
    assert r.exit_code == 0, r.output
    _, rows = _eee_files(tmp_path / "eee")
    assert [x["sample_id"] for x in rows] == [s["item"] for s in samples]


@pytest.mark.parametrize("fmt, out", [("inspect-log", "log.eval"), ("inspect-log", "log.json"), ("eee", "eee")])
def test_an_export_that_loses_a_sample_writes_nothing(fmt, out, wnqa_run, tmp_path, monkeypatch):
    """The read-back check can fail: a writer that drops the last sample (or changes a score) is caught
    before the rename, one line, nothing written."""
    import inspect_ai.log

    import probegen.exchange.export as export

    if fmt == "inspect-log":
        real = inspect_ai.log.write_eval_log

        def lossy(log, path, *a, **k):
            return real(log.model_copy(update={"samples": log.samples[:-1]}), path, *a, **k)

        monkeypatch.setattr(inspect_ai.log, "write_eval_log", lossy)
    else:
        real_jsonl = export.write_jsonl
        monkeypatch.setattr(export, "write_jsonl", lambda path, rows: real_jsonl(
            path, [*rows[:-1], {**rows[-1], "evaluation": {**rows[-1]["evaluation"], "score": 0.5}}]))
    r = CliRunner().invoke(cli, ["export", str(wnqa_run), "--format", fmt, "--out", str(tmp_path / out)])
    assert r.exit_code == 1 and "read back" in r.output and "nothing was written" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / out).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_dataset_exports_read_themselves_back(tmp_path, monkeypatch):
    """lm-eval, Hugging Face and the WordNetQA release JSONL: a doc lost on the way is one line, nothing written."""
    import probegen.exporters as exporters
    import probegen.io as pio

    for fmt, out in (("lm-eval", "lm"), ("hf", "hf"), ("wordnetqa-json", "x.jsonl")):
        r = CliRunner().invoke(cli, ["export", str(SAMPLE), "--format", fmt, "--out", str(tmp_path / out)])
        assert r.exit_code == 0, r.output
    real = pio.read_jsonl
    monkeypatch.setattr(exporters, "read_jsonl", lambda p: real(p)[:-1])
    monkeypatch.setattr(pio, "read_jsonl", lambda p: real(p)[:-1])
    import pyarrow.parquet as pq

    real_pq = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda p, *a, **k: real_pq(p, *a, **k).slice(1))
    for fmt, out in (("lm-eval", "lm2"), ("hf", "hf2"), ("wordnetqa-json", "y.jsonl")):
        r = CliRunner().invoke(cli, ["export", str(SAMPLE), "--format", fmt, "--out", str(tmp_path / out)])
        assert r.exit_code == 1 and "read back" in r.output and "39 docs of 40" in r.output, (fmt, r.output)
        assert not (tmp_path / out).exists()
