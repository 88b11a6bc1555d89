"""Other harnesses' per-item results in, as respondents of `probegen items`: round trips through
Every Eval Ever and inspect-ai give the run's own item table; a real lm-eval ``--log_samples`` run
on a probegen lm-eval export matches every item; every malformed import is one line, exit 1, and
nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from exchange_runs import foreign_eee, glove_coda_run, glove_wnqa_run, run_lm_eval

from probegen.commands.cli import cli

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def wnqa_run(tmp_path_factory) -> Path:
    """A real `probegen eval` run: GloVe on the 40 WordNetQA release-sample definition questions."""
    return glove_wnqa_run(tmp_path_factory)


@pytest.fixture(scope="module")
def exports(wnqa_run, tmp_path_factory) -> dict[str, Path]:
    """The run exported as Every Eval Ever and as inspect-ai logs (.eval and .json)."""
    d = tmp_path_factory.mktemp("exports")
    out = {"eee": d / "eee", "eval": d / "logs" / "glove.eval", "json": d / "json" / "glove.json"}
    for fmt, path in (("eee", out["eee"]), ("inspect-log", out["eval"]), ("inspect-log", out["json"])):
        r = _invoke("export", str(wnqa_run), "--format", fmt, "--out", str(path))
        assert r.exit_code == 0, r.output
    return out


def _table(*inputs: Path, out: Path, extra: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """`probegen items` over ``inputs`` (and ``extra`` options): its long table, the source column
    (which file) left out."""
    r = _invoke("items", *map(str, inputs), "--irt", "none", *extra, "--out", str(out))
    assert r.exit_code == 0, r.output
    with open(out / "responses.csv", newline="") as fh:
        return [{k: v for k, v in row.items() if k != "source"} for row in csv.DictReader(fh)]


def _eee_pair(folder: Path) -> tuple[Path, Path]:
    (agg,) = [p for p in folder.rglob("*.json") if not p.name.startswith(".")]
    return agg, agg.with_name(f"{agg.stem}_samples.jsonl")


@pytest.mark.parametrize("fmt", ["eee", "eval", "json"])
def test_round_trip_gives_the_runs_item_table(fmt, wnqa_run, exports, tmp_path):
    want = _table(wnqa_run, out=tmp_path / "run")
    got = _table(exports[fmt], out=tmp_path / "imported")
    assert len(want) == 40 and got == want


def test_run_and_its_export_are_two_respondents_on_one_dataset(wnqa_run, exports, tmp_path):
    rows = _table(wnqa_run, exports["eee"], out=tmp_path / "both")
    assert len({r["respondent"] for r in rows}) == 2 and len({r["dataset"] for r in rows}) == 1


def test_foreign_eee_maps_to_the_runs_items(wnqa_run, exports, tmp_path):
    """Without probegen's fields, the samples join the run's dataset by item id; answers and keys by text."""
    foreign = foreign_eee(exports["eee"], tmp_path / "foreign")
    rows = _table(wnqa_run, foreign, out=tmp_path / "t")
    run_rows = [r for r in rows if r["method"] != "eee:probegen"]
    imp = {r["item"]: r for r in rows if r["method"] == "eee:probegen"}
    assert len(imp) == 40 and len({r["dataset"] for r in rows}) == 1
    for r in run_rows:
        assert (imp[r["item"]]["correct"], imp[r["item"]]["chosen"], imp[r["item"]]["key"]) == \
            (r["correct"], r["chosen"], r["key"])


def _refused(*inputs: Path, tmp_path: Path, message: str) -> None:
    out = tmp_path / "out"
    r = _invoke("items", *map(str, inputs), "--irt", "none", "--out", str(out))
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and message in lines[0], r.output
    assert "Traceback" not in r.output and not out.exists()


def _copy_eee(src: Path, dst: Path) -> tuple[Path, Path]:
    agg, samples = _eee_pair(src)
    dst.mkdir()
    (dst / agg.name).write_bytes(agg.read_bytes())
    (dst / samples.name).write_bytes(samples.read_bytes())
    return dst / agg.name, dst / samples.name


def test_malformed_eee_wrong_schema(wnqa_run, exports, tmp_path):
    _, samples = _copy_eee(exports["eee"], tmp_path / "bad")
    rows = samples.read_text().splitlines()
    first = json.loads(rows[0])
    del first["evaluation"]
    samples.write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n")
    _refused(wnqa_run, samples, tmp_path=tmp_path, message="line 1: not Every Eval Ever")


def test_malformed_eee_truncated(wnqa_run, exports, tmp_path):
    _, samples = _copy_eee(exports["eee"], tmp_path / "cut")
    samples.write_text("\n".join(samples.read_text().splitlines()[:-3]) + "\n")  # whole lines lost
    _refused(wnqa_run, samples, tmp_path=tmp_path, message="37 samples, its aggregate says 40 (truncated?)")
    data = samples.read_bytes()
    samples.write_bytes(data[: len(data) // 2])  # cut inside a line
    _refused(wnqa_run, samples, tmp_path=tmp_path, message=str(samples))


def test_malformed_eee_mixed_evaluations(wnqa_run, exports, tmp_path):
    _, samples = _copy_eee(exports["eee"], tmp_path / "mixed")
    rows = [json.loads(x) for x in samples.read_text().splitlines()]
    rows[5]["evaluation_id"] = "another/run/1"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _refused(wnqa_run, samples, tmp_path=tmp_path, message="mixed evaluations")


def test_unknown_ids_are_one_line(wnqa_run, exports, tmp_path):
    foreign = foreign_eee(exports["eee"], tmp_path / "foreign", {"1857-def-0": "no-such-item"})
    _refused(wnqa_run, foreign, tmp_path=tmp_path, message="1 of 40 item ids are not items of")


def test_malformed_inspect_logs(wnqa_run, exports, tmp_path):
    cut = tmp_path / "cut.eval"
    data = exports["eval"].read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    _refused(wnqa_run, cut, tmp_path=tmp_path, message="not a readable inspect-ai eval log")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    _refused(wnqa_run, other, tmp_path=tmp_path, message="not a readable inspect-ai eval log")


def test_mixed_datasets_are_one_line(wnqa_run, exports, tmp_path):
    """A probegen export names its dataset: an export of another dataset does not join silently."""
    agg, samples = _copy_eee(exports["eee"], tmp_path / "elsewhere")
    a = json.loads(agg.read_text())
    a["evaluation_results"][0]["source_data"]["additional_details"]["probegen_dataset"] = "/elsewhere/other.jsonl"
    agg.write_text(json.dumps(a))
    _refused(wnqa_run, samples, tmp_path=tmp_path, message="different datasets")


# ---- a real lm-evaluation-harness run, samples written as its CLI writes them ---------------------
@pytest.fixture(scope="module")
def coda_run(clean_hard_nouns, tmp_path_factory) -> Path:
    """A real CoDA21 run (3 clean-hard noun groups)."""
    return glove_coda_run(clean_hard_nouns, tmp_path_factory, 3)


@pytest.mark.real
def test_lm_eval_log_samples_import_every_item_matched(wnqa_run, coda_run, tmp_path):
    from probegen.exporters import export

    lm, lm_coda = tmp_path / "lm-task", tmp_path / "lm-coda"
    export(SAMPLE, "lm-eval", lm)
    coda_ds = json.loads((coda_run / "results.json").read_text())["dataset"]["path"]
    export(coda_ds, "lm-eval", lm_coda)
    run_lm_eval([lm, lm_coda], tmp_path / "lm-out", tmp_path)
    (samples,) = (tmp_path / "lm-out").rglob("samples_probegen_definitions*.jsonl")
    (coda_samples,) = (tmp_path / "lm-out").rglob("samples_probegen_coda*.jsonl")

    # CoDA21: a context doc <group>/<i> is the run's item <group>#<i>, labelled by the columns' synsets
    rows = _table(coda_run, coda_samples, out=tmp_path / "tc")
    run = {r["item"]: r for r in rows if r["model"] == "glove-50d"}
    got = [r for r in rows if r["method"] == "lm-eval:acc"]
    assert len(got) == 6 and all("#" in r["item"] for r in got)
    for r in got:
        assert (r["key"], r["unit"], r["k"]) == (run[r["item"]]["key"], run[r["item"]]["unit"], run[r["item"]]["k"])
        assert r["chosen"] in {x["key"] for x in run.values() if x["unit"] == r["unit"]}

    rows = _table(wnqa_run, samples, out=tmp_path / "t", extra=("--lm-eval-metric", "both"))
    run = {r["item"]: r for r in rows if r["model"] == "glove-50d"}
    for metric in ("lm-eval:acc", "lm-eval:acc_norm"):
        got = [r for r in rows if r["method"] == metric]
        assert len(got) == 6  # every logged doc, matched to a probegen item of the run's dataset
        for r in got:
            assert r["dataset"] == run[r["item"]]["dataset"] and r["key"] == run[r["item"]]["key"]
            assert r["unit"] == run[r["item"]]["unit"] and r["k"] == "5"
    assert "smollm2" in next(r["model"] for r in rows if r["method"] == "lm-eval:acc").lower()

    # malformed lm-eval samples, each derived from the real file: one line, exit 1, nothing written
    lines = [json.loads(x) for x in samples.read_text().splitlines()]
    cases = {
        "no-id": ([{**s, "doc": {k: v for k, v in s["doc"].items() if k != "id"}} for s in lines],
                  "not a probegen lm-eval export"),
        "unknown": ([{**s, "doc": {**s["doc"], "id": "x" + s["doc"]["id"]}} if i == 2 else s
                     for i, s in enumerate(lines)], "1 of 6 item ids are not items of"),
        "twice": (lines + lines[:1], "appears twice"),
        "schema": ([{"doc_id": 0}], "not an lm-eval --log_samples record"),
    }
    for name, (bad, message) in cases.items():
        path = tmp_path / f"samples_{name}_2026-01-01T00-00-00.000000.jsonl"
        path.write_text("".join(json.dumps(s) + "\n" for s in bad))
        _refused(wnqa_run, path, tmp_path=tmp_path, message=message)
    cut = tmp_path / "samples_cut_2026-01-01T00-00-00.000000.jsonl"
    cut.write_bytes(samples.read_bytes()[:-40])
    _refused(wnqa_run, cut, tmp_path=tmp_path, message=f"{cut}")
