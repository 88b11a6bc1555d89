"""`probegen forms` with other harnesses' per-item results as respondents: Every Eval Ever and
inspect-ai exports of runs on the forms give the runs' own report, a file that names no dataset joins
the form holding its items, real lm-eval ``--log_samples`` of a probegen lm-eval export of each form
are placed by the export's manifest; every malformed import is one line, exit 1, nothing written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run
from exchange_runs import foreign_eee, run_lm_eval

from probegen.forms.split import make_forms

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"


@pytest.fixture(scope="module")
def forms(clean_hard_nouns, tmp_path_factory) -> list[Path]:
    """Two forms of the real clean-hard noun CoDA21 set."""
    tmp = tmp_path_factory.mktemp("forms")
    names = ["coda-form1", "coda-form2"]
    for ds, name in zip(make_forms(clean_hard_nouns, "coda21", 2, 0, names, log=lambda m: None), names):
        ds.write(tmp / name)
    return [tmp / n for n in names]


@pytest.fixture(scope="module")
def runs(forms) -> list[Path]:
    """glove-50d on each form."""
    out = []
    for form in forms:
        out.append(form.parent / f"glove-{form.name}")
        code, _, err = run("eval", "--model", "glove-50d", "--dataset", form, "--out", out[-1])
        assert code == 0, err
    return out


@pytest.fixture(scope="module")
def exports(runs) -> list[Path]:
    """The run on form 1 as Every Eval Ever, the run on form 2 as an inspect-ai log."""
    eee, log = runs[0].parent / "eee-form1", runs[0].parent / "logs" / "glove-form2.eval"
    assert run("export", runs[0], "--format", "eee", "--out", eee)[0] == 0
    assert run("export", runs[1], "--format", "inspect-log", "--out", log)[0] == 0
    return [eee, log]


def _csv(folder: Path, name: str) -> list[str]:
    return (folder / name).read_text().splitlines()


def test_exports_give_the_runs_report(runs, exports, tmp_path):
    want, got = tmp_path / "runs", tmp_path / "exports"
    assert run("forms", *runs, "--bootstrap", 200, "--out", want)[0] == 0
    code, stdout, err = run("forms", *exports, "--bootstrap", 200, "--out", got)
    assert code == 0, err
    assert "1 respondents x 2 forms" in stdout
    for name in ("forms.csv", "equivalence.csv", "difficulty.csv", "report.md"):
        assert _csv(got, name) == _csv(want, name), name


def test_files_naming_no_dataset_join_their_form(runs, exports, tmp_path):
    """EEE files stripped of probegen's fields, one per form: one respondent placed on each form by its item ids."""
    foreign = [foreign_eee(exports[0], tmp_path / "f1")]
    assert run("export", runs[1], "--format", "eee", "--out", tmp_path / "eee2")[0] == 0
    foreign.append(foreign_eee(tmp_path / "eee2", tmp_path / "f2"))
    out = tmp_path / "eq"
    code, stdout, err = run("forms", *runs, *foreign, "--bootstrap", 200, "--out", out)
    assert code == 0, err
    assert "2 respondents x 2 forms" in stdout
    rows = [r.split(",") for r in _csv(out, "forms.csv")[1:]]
    by = {(r[0], r[1]): r[3:] for r in rows}  # respondent, form -> items, units, accuracy, CI
    imported = [k for k in by if k[0].startswith("glove-50d|eee:")]
    assert len(imported) == 2
    for who, form in imported:
        run_row = next(v for (w, f), v in by.items() if f == form and not w.startswith("glove-50d|eee:"))
        assert by[who, form] == run_row  # the same answers: the same items, clusters, accuracy and CI


def test_malformed_imports_are_one_line(runs, exports, forms, tmp_path):
    out = tmp_path / "eq"

    def refused(*inputs: Path, needles: tuple[str, ...]) -> None:
        code, _, err = run("forms", *inputs, "--out", out)
        assert_one_line_error(code, err, *needles)
        assert not out.exists()

    (agg,) = [p for p in exports[0].rglob("*.json") if not p.name.startswith(".")]
    samples = agg.with_name(f"{agg.stem}_samples.jsonl")
    rows = samples.read_text().splitlines()

    def copy(name: str, lines: list[str], aggregate: dict | None = None) -> Path:
        d = tmp_path / name
        d.mkdir()
        (d / agg.name).write_text(json.dumps(aggregate)) if aggregate else (d / agg.name).write_bytes(agg.read_bytes())
        (d / samples.name).write_text("\n".join(lines) + "\n")
        return d / samples.name

    first = json.loads(rows[0])
    del first["evaluation"]
    refused(copy("schema", [json.dumps(first), *rows[1:]]), runs[1], needles=("line 1: not Every Eval Ever",))
    refused(copy("cut", rows[:-2]), runs[1], needles=("truncated",))
    a = json.loads(agg.read_text())
    a["evaluation_results"][0]["source_data"]["additional_details"]["probegen_dataset"] = str(SAMPLE)
    refused(copy("mixed", rows, a), runs[1], needles=("needs runs on forms",))  # an export of another dataset
    unknown = foreign_eee(exports[0], tmp_path / "unknown", {json.loads(rows[0])["sample_id"]: "no-such#0"})
    refused(*runs, unknown, needles=("1 of", "item ids are not items of"))
    alone = foreign_eee(exports[0], tmp_path / "alone")
    refused(alone, exports[1], needles=("of 345 item ids are not items of", "coda-form2"))  # not on a given form
    # another file naming no dataset (the same answers written with other spacing: not a byte copy,
    # which is refused as the same run given twice)
    alone2 = foreign_eee(exports[0], tmp_path / "alone2")
    text = "".join(json.dumps(json.loads(x), separators=(",", ":")) + "\n" for x in alone2.read_text().splitlines())
    alone2.write_text(text)
    (agg2,) = [p for p in alone2.parent.glob("*.json")]
    a2 = json.loads(agg2.read_text())
    a2["detailed_evaluation_results"]["checksum"] = hashlib.sha256(text.encode()).hexdigest()
    agg2.write_text(json.dumps(a2))
    refused(alone, alone2, needles=("does not name its dataset",))
    refused(alone, foreign_eee(exports[0], tmp_path / "alone3"), needles=("is the same run as",))


@pytest.mark.real
def test_lm_eval_samples_of_form_exports(forms, runs, tmp_path):
    """A real lm-eval run (smollm2-135m, 4 contexts of each form) on probegen lm-eval exports of the forms:
    its samples are respondents on their forms, named by the exports' manifests."""
    from probegen.exporters import export

    folders = [tmp_path / f"lm-{f.name}" for f in forms]
    for f, d in zip(forms, folders):
        export(f, "lm-eval", d)
    run_lm_eval(folders, tmp_path / "lm-out", tmp_path, limit=4)
    samples = [next((tmp_path / "lm-out").rglob(f"samples_*form{i}_*.jsonl")) for i in (1, 2)]

    out = tmp_path / "eq"
    code, stdout, err = run("forms", *runs, *samples, "--bootstrap", 200, "--out", out)
    assert code == 0, err
    assert "2 respondents x 2 forms" in stdout  # glove-50d, lm-eval (acc: one respondent per model by default)
    rows = [r.split(",") for r in _csv(out, "forms.csv")[1:]]
    lm = [r for r in rows if "|lm-eval:acc|" in r[0] + "|"]
    assert len(lm) == 2
    for r, path in zip(sorted(lm, key=lambda r: r[1]), samples):
        acc = [json.loads(x)["acc"] for x in path.read_text().splitlines()]
        assert r[2].startswith(f"coda-form{r[1]}") and int(r[3]) == len(acc) == 4
        assert float(r[5]) == pytest.approx(sum(acc) / len(acc), abs=1e-6)
    # the lm-eval samples alone: the manifests still name the forms
    alone = tmp_path / "alone"
    assert run("forms", *samples, "--bootstrap", 200, "--out", alone)[0] == 0

    # the same samples in `compare --run`: placed by the export's manifest, not by their ids (which a
    # copy of the form with another manifest shares)
    from probegen.coda21.dataset import load

    copy = tmp_path / "coda-form1-copy"
    ds = load(forms[0])
    ds.manifest = {**ds.manifest, "note": "a copy"}
    ds.write(copy)
    code, _, err = run("compare", forms[0], copy, "--run", samples[0], "--out", tmp_path / "cmp")
    assert_one_line_error(code, err, "lm-eval:acc", "has no run on", str(copy))
    cmp = tmp_path / "cmp"
    code, _, err = run("compare", forms[0], forms[0], "--run", runs[0], "--run", samples[0], "--bootstrap", 50,
                       "--lm-eval-metric", "both", "--out", cmp)
    assert code == 0, err
    rows = json.loads((cmp / "results.json").read_text())["models"]
    assert [r["model"].rpartition("|")[2] for r in rows][::2] == ["glove-50d", "lm-eval:acc_norm"] and len(rows) == 3
    acc = [json.loads(x)["acc"] for x in samples[0].read_text().splitlines()]
    if rows[1]["n_units"] == 1:  # the 4 contexts in one group: its score is their mean
        assert rows[1]["a"]["accuracy"] == pytest.approx(sum(acc) / len(acc))

    # malformed: unknown ids, truncated, a form's samples twice, not lm-eval records (each beside a copy
    # of lm-eval's results file, so the export's manifest still names the form)
    lines = [json.loads(x) for x in samples[0].read_text().splitlines()]
    (results,) = samples[0].parent.glob("results_*.json")

    def bad(name: str, text: bytes) -> Path:
        d = tmp_path / "bad-in" / name
        d.mkdir(parents=True)
        (d / results.name).write_bytes(results.read_bytes())
        (d / samples[0].name).write_bytes(text)
        return d / samples[0].name

    unknown = [{**s, "doc": {**s["doc"], "id": "x" + s["doc"]["id"]}} if i == 1 else s for i, s in enumerate(lines)]
    cases = {bad("unknown", "".join(json.dumps(s) + "\n" for s in unknown).encode()):
             ("1 of 4 item ids are not items of form 1",),
             bad("schema", b'{"doc_id": 0}\n'): ("not an lm-eval --log_samples record",),
             bad("twice", "".join(json.dumps(s) + "\n" for s in lines + lines[:1]).encode()): ("appears twice",)}
    cut = bad("cut", samples[0].read_bytes()[:-40])
    cases[cut] = (str(cut),)
    for path, needles in cases.items():
        code, _, err = run("forms", *runs, path, "--out", tmp_path / "bad")
        assert_one_line_error(code, err, *needles)
    code, _, err = run("forms", *runs, samples[0], samples[0], "--out", tmp_path / "bad")
    assert_one_line_error(code, err, "is the same run as", "given twice")
    assert not (tmp_path / "bad").exists()


def test_a_run_with_an_item_twice_is_one_line(runs, tmp_path):
    """Issue 46: 45bb2c6 let the second row of an item silently overwrite the first."""
    import shutil

    dup = tmp_path / "dup"
    shutil.copytree(runs[0], dup)
    (dup / ".probegen-output.json").unlink()
    rows_file = next(p for p in (dup / "groups.jsonl", dup / "items.jsonl") if p.is_file())
    lines = rows_file.read_text().splitlines()
    rows_file.write_text("\n".join([*lines, lines[0]]) + "\n")
    code, _, err = run("forms", dup, runs[1], "--out", tmp_path / "eq")
    assert_one_line_error(code, err, f"{rows_file} line {len(lines) + 1}", "twice")
    assert not (tmp_path / "eq").exists()


def test_two_bootstrap_replicates_draw(runs, tmp_path):
    """Issue 46: `forms --bootstrap 2` was a matplotlib traceback (a percentile CI of two replicates
    need not hold the estimate: "yerr must not contain negative values")."""
    code, stdout, err = run("forms", *runs, "--bootstrap", 2, "--out", tmp_path / "eq")
    assert code == 0, err
    assert (tmp_path / "eq" / "forms.png").is_file()
