"""Issue 46 (part A): an item is what it says it is, and a foreign file is checked like a run.

On the real WordNetQA release rows: the release's hyponymy and hypernymy test files both number
their different questions ``hypernymy_0..`` (tests/data/release/README.md), so each is rebuilt here
from the 40-row release samples (shared/data) with those ids, and GloVe is run on both.

- respondents join on content, not ids: a foreign log of the hypernymy run given with the hyponymy
  run, ``items --common`` over the two, ``subset`` with the other set's items folder, ``compare --run``;
- a correctness outside 0/1 (or a format's documented partial-credit range) is one line naming the
  file and line, in every reader; a run's items.jsonl with an id twice, a run given twice: one line;
- malformed imports that were tracebacks are one line each;
- a results.json naming its rows outside its folder is refused before anything is read;
- an lm-eval file is one respondent per model (``--lm-eval-metric``), and files of one probegen
  export given alone are on one dataset.

Every test here failed on 45bb2c6 (exit 0 with wrong numbers, a traceback, or an option it lacked).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run
from exchange_runs import foreign_eee

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample"
TIME = "2026-01-01T00-00-00.000000"


def _release_test_file(probe: str, folder: Path) -> Path:
    """The 40 release-sample rows of ``probe`` as the release's test files number them: hypernymy_N."""
    rows = [json.loads(x) for x in (RELEASE / f"{probe}-train-sample.jsonl").read_text().splitlines()]
    out = folder / f"{probe}-test.jsonl"
    out.write_text("".join(json.dumps({**r, "id": f"hypernymy_{i}"}) + "\n" for i, r in enumerate(rows)))
    return out


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, Path]:
    """hyponymy-test.jsonl and hypernymy-test.jsonl (same ids, different questions) and GloVe runs on each."""
    d = tmp_path_factory.mktemp("release46")
    out: dict[str, Path] = {}
    for probe in ("hyponymy", "hypernymy"):
        out[probe] = _release_test_file(probe, d)
        out[f"run-{probe}"] = d / f"run-{probe}"
        code, _, err = run("eval", "--model", "glove-50d", "--dataset", out[probe], "--out", out[f"run-{probe}"])
        assert code == 0, err
    return out


@pytest.fixture(scope="module")
def foreign(sets, tmp_path_factory) -> dict[str, Path]:
    """The hypernymy run exported as an inspect-ai log and as Every Eval Ever, then stripped of
    probegen's fields (as another tool would write them: no dataset named, ids and content only)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    d = tmp_path_factory.mktemp("foreign46")
    log = d / "hyper.eval"
    assert run("export", sets["run-hypernymy"], "--format", "inspect-log", "--out", log)[0] == 0
    eee = d / "eee"
    assert run("export", sets["run-hypernymy"], "--format", "eee", "--out", eee)[0] == 0
    parsed = read_eval_log(str(log))
    parsed.eval.metadata = None
    for s in parsed.samples:
        s.metadata = {}
    write_eval_log(parsed, str(d / "foreign-hyper.eval"))
    return {"log": log, "foreign-log": d / "foreign-hyper.eval", "eee": eee,
            "foreign-eee": foreign_eee(eee, d / "foreign-eee")}


def _items(*args, out: Path) -> tuple[int, str, str]:
    return run("items", *args, "--irt", "none", "--out", out)


def _responses(out: Path) -> list[dict[str, str]]:
    with open(out / "responses.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _copy_run(run_dir: Path, dst: Path, edit=None) -> Path:
    """A copy of a run whose items.jsonl rows ``edit`` changes (list of dicts -> list of dicts); the
    output marker is dropped (a hand-edited run has none), so the run is read, not refused as changed."""
    shutil.copytree(run_dir, dst)
    (dst / ".probegen-output.json").unlink(missing_ok=True)
    if edit is not None:
        rows = [json.loads(x) for x in (dst / "items.jsonl").read_text().splitlines()]
        (dst / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in edit(rows)))
    return dst


# ---- 1. join on identity, not name ---------------------------------------------------------------------
def test_foreign_files_of_another_dataset_with_the_same_ids_are_refused(sets, foreign, tmp_path):
    """45bb2c6: read as answers to the hyponymy items (40 of 40 keys differ), exit 0."""
    for f in (foreign["foreign-log"], foreign["foreign-eee"]):
        code, _, err = _items(sets["run-hyponymy"], f, out=tmp_path / "x")
        line = assert_one_line_error(code, err, str(f), "run-hyponymy", "hypernymy_0", "another dataset")
        assert "options differ" in line
        assert not (tmp_path / "x").exists()
    # on their own dataset they join (the content agrees), and read back as the run
    code, _, err = _items(sets["run-hypernymy"], foreign["foreign-log"], out=tmp_path / "ok")
    assert code == 0, err
    rows = _responses(tmp_path / "ok")
    assert len(rows) == 80 and len({r["dataset"] for r in rows}) == 1


def test_common_keeps_only_the_same_questions(sets, tmp_path):
    """45bb2c6: `items A B --common` reported 40 shared items for 40 different questions."""
    code, _, err = _items(sets["run-hyponymy"], sets["run-hypernymy"], "--common", out=tmp_path / "c")
    assert_one_line_error(code, err, "share no item", "40 ids are in each but name different questions")
    # the same questions under another dataset path are shared: all 40
    moved = _copy_run(sets["run-hyponymy"], tmp_path / "moved")
    res = json.loads((moved / "results.json").read_text())
    res["dataset"]["path"] = str(tmp_path / "elsewhere" / "hyponymy-test.jsonl")
    (moved / "results.json").write_text(json.dumps(res))
    code, out, err = _items(sets["run-hyponymy"], moved, "--common", out=tmp_path / "c2")
    assert code == 0 and "2 respondents x 40 items" in out, err
    # and a set holding some of the same questions shares those alone
    half = _copy_run(sets["run-hypernymy"], tmp_path / "half", edit=lambda rows: rows)
    hypo = {json.loads(x)["id"]: x for x in (sets["run-hyponymy"] / "items.jsonl").read_text().splitlines()}
    mixed = [hypo[f"hypernymy_{i}"] if i < 10 else x
             for i, x in enumerate((half / "items.jsonl").read_text().splitlines())]
    (half / "items.jsonl").write_text("\n".join(mixed) + "\n")
    code, out, err = _items(sets["run-hyponymy"], half, "--common", out=tmp_path / "c3")
    assert code == 0 and "2 respondents x 10 items" in out, err


def test_subset_refuses_another_sets_items_folder(sets, foreign, tmp_path):
    """45bb2c6: `subset` on the hyponymy set with the hypernymy items folder kept 5 of 40, exit 0."""
    items = tmp_path / "items-hyper"
    code, _, err = run("items", sets["run-hypernymy"], foreign["log"], "--irt", "1pl", "--out", items)
    assert code == 0, err
    code, _, err = run("subset", sets["hyponymy"], "--items", items, "--size", 5, "--out", tmp_path / "s")
    assert_one_line_error(code, err, "hypernymy_0", str(sets["hyponymy"]), "another dataset")
    assert not (tmp_path / "s").exists()
    code, _, err = run("subset", sets["hypernymy"], "--items", items, "--size", 5, "--out", tmp_path / "s2")
    assert code == 0, err


def test_compare_run_refuses_a_file_of_another_set(sets, foreign, tmp_path):
    """`compare --run`: a foreign file whose ids are the set's but whose questions are not."""
    code, _, err = run("compare", sets["hyponymy"], sets["hyponymy"], "--run", foreign["foreign-eee"],
                       "--out", tmp_path / "cmp")
    assert_one_line_error(code, err, str(foreign["foreign-eee"]), "hypernymy_0", "another dataset")


# ---- 2. correctness is 0 or 1 (or a documented partial-credit range) ---------------------------------
def _eee_rows(folder: Path) -> tuple[Path, Path, list[dict]]:
    (agg,) = [p for p in folder.rglob("*.json") if not p.name.startswith(".")]
    samples = agg.with_name(f"{agg.stem}_samples.jsonl")
    return agg, samples, [json.loads(x) for x in samples.read_text().splitlines()]


def _eee_with(src: Path, dst: Path, rows: list[dict]) -> Path:
    """An EEE pair of ``src``'s aggregate and ``rows`` (its checksum recomputed: a valid pair)."""
    import hashlib

    agg, samples, _ = _eee_rows(src)
    dst.mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (dst / samples.name).write_text(text)
    a = json.loads(agg.read_text())
    a["detailed_evaluation_results"]["checksum"] = hashlib.sha256(text.encode()).hexdigest()
    (dst / agg.name).write_text(json.dumps(a))
    return dst / samples.name


@pytest.mark.parametrize("value", ["NaN", "Infinity", "9", "-1", "0.5", '"1"'])
def test_eee_probegen_cell_correct_out_of_range(sets, foreign, tmp_path, value):
    """45bb2c6: NaN, Infinity or 9 in probegen_cell.correct gave exit 0 (accuracy 1.025, "nan" in responses.csv)."""
    _, _, rows = _eee_rows(foreign["eee"])
    cell = json.loads(rows[3]["metadata"]["probegen_cell"])
    rows[3]["metadata"]["probegen_cell"] = json.dumps(cell).replace(f'"correct": {cell["correct"]}',
                                                                    f'"correct": {value}')
    assert value in rows[3]["metadata"]["probegen_cell"]
    bad = _eee_with(foreign["eee"], tmp_path / "bad", rows)
    code, _, err = _items(sets["run-hypernymy"], bad, out=tmp_path / "x")
    line = assert_one_line_error(code, err, str(bad))
    assert f"{bad} line 4:" in line or f"{bad}:4:" in line, line  # the file and its line
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("score", [42, -1, 1.5])
def test_eee_evaluation_score_out_of_range(sets, foreign, tmp_path, score):
    """A foreign EEE file's evaluation.score outside [0, 1] (45bb2c6: accepted)."""
    _, _, rows = _eee_rows(foreign["foreign-eee"].parent)
    rows[0]["evaluation"]["score"] = score
    bad = _eee_with(foreign["foreign-eee"].parent, tmp_path / "bad", rows)
    code, _, err = _items(sets["run-hypernymy"], bad, out=tmp_path / "x")
    assert_one_line_error(code, err, f"{bad} line 1", "evaluation.score")


def _inspect_with(src: Path, dst: Path, edit) -> Path:
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(src))
    edit(log.samples)
    write_eval_log(log, str(dst))
    return dst


@pytest.mark.parametrize("value", [7, -0.5, "maybe", {"a": 1}, [1]])
def test_inspect_scores_outside_the_documented_values(sets, foreign, tmp_path, value):
    """45bb2c6: 7 accepted; "maybe" and {"a": 1} read as 0.0 (value_to_float's fallback)."""
    edited = []

    def edit(samples):
        samples[2].scores["probegen"].value = value
        edited.append(samples[2].id)

    bad = _inspect_with(foreign["foreign-log"], tmp_path / "bad.eval", edit)
    code, _, err = _items(sets["run-hypernymy"], bad, out=tmp_path / "x")
    assert_one_line_error(code, err, str(bad), f"sample {edited[0]}", "score")


def test_inspect_partial_credit_is_in_range(sets, foreign, tmp_path):
    """inspect's P is 0.5, its documented partial credit: accepted, and counted as wrong in the IRT matrix."""
    edited = []

    def edit(samples):
        samples[0].scores["probegen"].value = "P"
        edited.append(samples[0].id)

    log = _inspect_with(foreign["foreign-log"], tmp_path / "p.eval", edit)
    code, _, err = _items(sets["run-hypernymy"], log, out=tmp_path / "ok")
    assert code == 0, err
    got = {r["correct"] for r in _responses(tmp_path / "ok") if r["item"] == edited[0] and "inspect" in r["method"]}
    assert got == {"0.5"}


@pytest.mark.parametrize("value", [5, -1, 0.5, "1", None])
def test_run_items_correct_out_of_range(sets, tmp_path, value):
    """A run's own items.jsonl with correct 5, -1 or 0.5 (45bb2c6: accepted; accuracy off the IRT matrix)."""
    def edit(rows):
        rows[6]["correct"] = value
        return rows

    bad = _copy_run(sets["run-hyponymy"], tmp_path / "bad", edit)
    code, _, err = _items(bad, out=tmp_path / "x")
    assert_one_line_error(code, err, f"{bad / 'items.jsonl'} line 7", "correct")


# ---- 3. duplicates --------------------------------------------------------------------------------------
def test_duplicate_item_ids_in_a_run(sets, tmp_path):
    """45bb2c6: the second row silently overwrote the first in `items` (and `forms`, `compare --run`)."""
    bad = _copy_run(sets["run-hyponymy"], tmp_path / "dup", lambda rows: rows + [{**rows[4], "correct": 1.0 - rows[4]["correct"]}])
    code, _, err = _items(bad, out=tmp_path / "x")
    assert_one_line_error(code, err, f"{bad / 'items.jsonl'} line 41", "hypernymy_4", "twice")
    code, _, err = run("compare", sets["hyponymy"], sets["hyponymy"], "--run", bad, "--out", tmp_path / "cmp")
    assert_one_line_error(code, err, "line 41", "twice")


def test_the_same_run_twice_is_refused(sets, tmp_path):
    """45bb2c6: the same run given twice (or a copy of it) counted as two respondents."""
    code, _, err = _items(sets["run-hyponymy"], sets["run-hyponymy"], out=tmp_path / "x")
    assert_one_line_error(code, err, "is the same run as", "given twice")
    copy = _copy_run(sets["run-hyponymy"], tmp_path / "copy")
    code, _, err = _items(sets["run-hyponymy"], copy, out=tmp_path / "x")
    assert_one_line_error(code, err, str(copy), "is the same run as")


# ---- 6. malformed imports: one line, not a traceback -----------------------------------------------------
def test_malformed_probegen_cells_are_one_line(sets, foreign, tmp_path):
    """45bb2c6: JSONDecodeError (not JSON), RecursionError (nested too deep), ArrowTypeError (unit a list)."""
    _, _, rows = _eee_rows(foreign["eee"])
    for name, text, needle in (("notjson", "{unit: 1", "not valid JSON"),
                               ("deep", "[" * 5000 + "]" * 5000, "nested too deep"),
                               ("list", json.dumps({**json.loads(rows[0]["metadata"]["probegen_cell"]),
                                                    "unit": ["a"]}), "unit is a list")):
        bad = [dict(r) for r in rows]
        bad[0] = {**bad[0], "metadata": {**bad[0]["metadata"], "probegen_cell": text}}
        path = _eee_with(foreign["eee"], tmp_path / name, bad)
        code, _, err = _items(sets["run-hypernymy"], path, out=tmp_path / "x")
        assert_one_line_error(code, err, str(path), needle)

    edited = []

    def unit_list(samples):
        samples[0].metadata["probegen_cell"]["unit"] = ["a", "b"]
        edited.append(samples[0].id)

    log = _inspect_with(foreign["log"], tmp_path / "unit.eval", unit_list)
    code, _, err = _items(sets["run-hypernymy"], log, out=tmp_path / "x")
    assert_one_line_error(code, err, str(log), f"sample {edited[0]}", "unit is a list")


def test_subset_with_a_broken_summary_is_one_line(sets, foreign, tmp_path):
    items = tmp_path / "items"
    assert run("items", sets["run-hypernymy"], foreign["log"], "--irt", "1pl", "--out", items)[0] == 0
    (items / "summary.json").write_text('{"irt": {"model": ')
    code, _, err = run("subset", sets["hypernymy"], "--items", items, "--size", 5, "--out", tmp_path / "s")
    assert_one_line_error(code, err, "summary.json", "not valid JSON")


# ---- 7. a run's files are its own --------------------------------------------------------------------------
def test_rows_outside_the_run_folder_are_refused(sets, tmp_path):
    """45bb2c6: a results.json naming files.rows outside its folder was read (a valid records file
    elsewhere gave exit 0; /etc/passwd was opened)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(sets["run-hyponymy"] / "items.jsonl", elsewhere / "rows.jsonl")
    for target in (str(elsewhere / "rows.jsonl"), "../elsewhere/rows.jsonl", "/etc/passwd"):
        bad = tmp_path / "bad"
        shutil.rmtree(bad, ignore_errors=True)
        _copy_run(sets["run-hyponymy"], bad)
        res = json.loads((bad / "results.json").read_text())
        res["files"] = {**(res.get("files") or {}), "rows": target}
        (bad / "results.json").write_text(json.dumps(res))
        code, _, err = _items(bad, out=tmp_path / "x")
        assert_one_line_error(code, err, "files.rows", "outside the run folder")


# ---- 8. lm-eval files as respondents ----------------------------------------------------------------------
def _lm_eval_files(dataset: Path, folder: Path, models: list[str], edit=None) -> list[Path]:
    """lm-eval --log_samples files of a probegen lm-eval export of ``dataset``, one per model, laid
    out as lm-eval's CLI writes them (``<out>/<model>/samples_<task>_<time>.jsonl`` beside
    ``results_<time>.json`` naming the export's docs), with log-likelihoods drawn per model."""
    import numpy as np

    from probegen.exporters import export

    exp = folder / "lm-export"
    if not exp.exists():
        export(dataset, "lm-eval", exp)
    docs = [json.loads(x) for x in (exp / "docs.jsonl").read_text().splitlines()]
    task = json.loads((exp / "manifest.json").read_text())["task"]
    out = []
    for n, model in enumerate(models):
        rng = np.random.default_rng(n)
        d = folder / "lm-out" / model
        d.mkdir(parents=True)
        (d / f"results_{TIME}.json").write_text(json.dumps(
            {"model_name": model, "configs": {task: {"dataset_kwargs": {"data_files": {"test": str(exp / "docs.jsonl")}}}}}))
        recs = []
        for i, doc in enumerate(docs):
            lls = (-rng.gamma(2.0, 5.0, len(doc["choices"]))).round(4).tolist()
            norm = [ll / len(c) for ll, c in zip(lls, doc["choices"])]
            recs.append({"doc_id": i, "doc": doc, "target": doc["gold"], "filtered_resps": [[str(x), "False"] for x in lls],
                         "acc": float(int(np.argmax(lls)) == doc["gold"]), "acc_norm": float(int(np.argmax(norm)) == doc["gold"])})
        if edit is not None:
            recs = edit(recs)
        path = d / f"samples_{task}_{TIME}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        out.append(path)
    return out


def test_lm_eval_one_respondent_per_model(sets, tmp_path):
    """45bb2c6: each lm-eval file was two respondents (acc, acc_norm) that answer almost alike."""
    (f,) = _lm_eval_files(sets["hyponymy"], tmp_path, ["org/model-a"])
    counts = {}
    for metric in ("acc", "acc_norm", "both"):
        out = tmp_path / f"items-{metric}"
        code, _, err = run("items", sets["run-hyponymy"], f, "--irt", "none", "--lm-eval-metric", metric, "--out", out)
        assert code == 0, err
        counts[metric] = sorted({r["method"] for r in _responses(out) if r["method"].startswith("lm-eval")})
    assert counts == {"acc": ["lm-eval:acc"], "acc_norm": ["lm-eval:acc_norm"], "both": ["lm-eval:acc", "lm-eval:acc_norm"]}
    code, out, err = _items(sets["run-hyponymy"], f, out=tmp_path / "default")
    assert code == 0 and "2 respondents x 40 items" in out, err


def test_lm_eval_files_of_one_export_alone_are_one_dataset(sets, tmp_path):
    """45bb2c6: N lm-eval files of one export, given alone, were N datasets (--common: no item shared)."""
    files = _lm_eval_files(sets["hyponymy"], tmp_path, [f"org/model-{i}" for i in range(5)])
    code, out, err = _items(*files, out=tmp_path / "alone")
    assert code == 0 and "5 respondents x 40 items" in out, err
    assert len({r["dataset"] for r in _responses(tmp_path / "alone")}) == 1


@pytest.mark.parametrize("case", ["nan", "string", "acc-null", "acc-7", "short-synsets", "positive"])
def test_malformed_lm_eval_records(sets, tmp_path, case):
    """45bb2c6: "nan" log-likelihoods picked option 0; the string "12345" was five log-likelihoods;
    "acc": null was a TypeError; a short choice_synsets an IndexError."""
    def edit(recs):
        r = recs[2]
        if case == "nan":
            r["filtered_resps"][1] = ["nan", "False"]
        elif case == "string":
            r["filtered_resps"] = "12345"
        elif case == "acc-null":
            r["acc"] = None
        elif case == "acc-7":
            r["acc"] = 7
        elif case == "short-synsets":
            r["doc"]["choice_synsets"] = r["doc"]["choices"][:2]
        else:
            r["filtered_resps"][0] = ["3.5", "False"]
        return recs

    (f,) = _lm_eval_files(sets["hyponymy"], tmp_path, ["org/m"], edit)
    code, _, err = _items(sets["run-hyponymy"], f, out=tmp_path / "x")
    assert_one_line_error(code, err, f"{f} line 3")


@pytest.mark.parametrize("case", ["choices-int", "surrogate-id", "deep-results", "dataset-string"])
def test_hand_edited_runs_found_by_fuzzing(sets, tmp_path, case):
    """Found by tests/test_fuzz_respondents.py: an int as choices (TypeError), an id holding a lone
    surrogate (UnicodeEncodeError writing responses.csv), a results.json nested too deep
    (RecursionError), a dataset block that is a string (AttributeError): one line each."""
    bad = _copy_run(sets["run-hyponymy"], tmp_path / "bad")
    items, results = bad / "items.jsonl", bad / "results.json"
    lines = items.read_text().splitlines()
    if case == "choices-int":
        items.write_text("\n".join([json.dumps({**json.loads(lines[0]), "choices": 1}), *lines[1:]]) + "\n")
    elif case == "surrogate-id":
        items.write_text("\n".join([lines[0].replace('"id": "hypernymy_0"', '"id": "\\udcff"'), *lines[1:]]) + "\n")
    elif case == "deep-results":
        results.write_text('{"model": ' + "[" * 5000 + "]" * 5000 + "}")
    else:
        res = json.loads(results.read_text())
        results.write_text(json.dumps({**res, "dataset": "x", "eval": 3}))
    code, _, err = _items(bad, out=tmp_path / "x")
    if case == "choices-int":  # a run without option texts is still a run: its cells read by index
        assert code == 0, err
    elif case == "dataset-string":  # nothing names the dataset: the run is read on its own
        assert code == 0, err
    else:
        assert_one_line_error(code, err, str(bad))


def test_one_path_with_two_fingerprints_is_two_datasets(sets, tmp_path):
    """Runs naming one dataset path whose fingerprints (dataset.manifest_sha256) differ answered two
    datasets (the file was rebuilt between them): not one dataset (45bb2c6 joined them by path)."""
    rebuilt = _copy_run(sets["run-hyponymy"], tmp_path / "rebuilt")
    res = json.loads((rebuilt / "results.json").read_text())
    res["dataset"]["manifest_sha256"] = "0" * 64
    (rebuilt / "results.json").write_text(json.dumps(res))
    code, _, err = _items(sets["run-hyponymy"], rebuilt, out=tmp_path / "x")
    assert_one_line_error(code, err, "2 different datasets", "manifest sha256 000000000000")
    code, out, err = _items(sets["run-hyponymy"], rebuilt, "--common", out=tmp_path / "c")  # the same questions
    assert code == 0 and "2 respondents x 40 items" in out, err
