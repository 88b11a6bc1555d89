"""``probegen items --bank`` and ``probegen eval --adaptive`` end to end on the WordNetQA release sample
with glove-50d (calibrated on glove's eval and bias conditions), and every bad input: one line,
nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run

from probegen.paths import shared_data_candidates

SAMPLE = next((p / "wordnetqa-release-sample" for p in shared_data_candidates()
               if (p / "wordnetqa-release-sample").is_dir()), None)
pytestmark = pytest.mark.skipif(SAMPLE is None, reason="the WordNetQA release sample is not on this machine")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> dict[str, Path]:
    """glove-50d's eval and bias runs on the definitions sample (5 respondents), their items and bank."""
    tmp = tmp_path_factory.mktemp("adaptive")
    data = SAMPLE / "definitions-train-sample.jsonl"
    assert run("eval", "--model", "glove-50d", "--dataset", data, "--out", tmp / "full", "--bootstrap", 50)[0] == 0
    assert run("bias", "--model", "glove-50d", "--dataset", data, "--no-controls", "--bootstrap", 50,
               "--out", tmp / "bias")[0] == 0
    code, out, err = run("items", tmp / "full", tmp / "bias", "--out", tmp / "items", "--bank", tmp / "bank.json",
                         "--bootstrap", 50)
    assert code == 0, err
    return {"tmp": tmp, "data": data, "bank": tmp / "bank.json", "full": tmp / "full"}


def test_the_bank_keeps_parameters_fingerprints_strata_and_provenance(calibrated):
    bank = json.loads(calibrated["bank"].read_text(encoding="utf-8"))
    assert bank["format"] == "probegen-item-bank" and bank["irt"]["model"] == "2pl"
    assert bank["irt"]["respondents"] == 5 and bank["created"] and bank["dataset"]["kind"] == "wordnetqa"
    assert len(bank["dataset"]["fingerprint"]) == 64 and len(bank["items"]) == 40
    it = bank["items"][0]
    assert {"a", "b", "c", "k", "record", "fingerprint", "strata", "cluster"} <= set(it)
    assert set(it["strata"]) == {"pos", "probe", "hops", "distractor_type"}


def test_an_adaptive_run_is_a_run(calibrated):
    tmp = calibrated["tmp"]
    out = tmp / "adaptive"
    code, stdout, err = run("eval", "--model", "glove-50d", "--dataset", calibrated["data"], "--adaptive",
                            calibrated["bank"], "--budget", 20, "--batch-items", 5, "--bootstrap", 50, "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    block = res["adaptive"]
    assert block["items_given"] == 20 and len(block["steps"]) == 4 and block["stopped"] == "budget of 20 items"
    assert block["pairs_given"] == 100 and block["pairs_full"] == 200 and block["dataset_records"] == 40
    assert all({"theta", "se", "theta_before", "se_before", "information", "record_ids"} <= set(s)
               for s in block["steps"])
    p = block["predicted_accuracy"]
    assert p["lo"] <= p["accuracy"] <= p["hi"] and block["ability"]["lo"] < block["ability"]["hi"]
    full = json.loads((calibrated["full"] / "results.json").read_text(encoding="utf-8"))["metrics"]["accuracy"]
    assert abs(p["accuracy"] - full) < 0.15  # glove is one of the bank's respondents
    rows = [json.loads(x) for x in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 20 and all("step" in r["adaptive"] for r in rows)
    assert res["metrics"]["n_items"] == 20  # the kind's own metrics of the items given
    assert "## Adaptive test" in (out / "report.md").read_text(encoding="utf-8")
    assert "predicted full-set accuracy" in stdout
    # read back as a partial respondent by probegen items (and so by compare --run and the exports)
    code, _, err = run("items", calibrated["full"], out, "--out", tmp / "items-partial", "--bootstrap", 50)
    assert code == 0, err
    people = (tmp / "items-partial" / "respondents.csv").read_text(encoding="utf-8").splitlines()
    assert sorted(line.split(",")[5] for line in people[1:]) == ["20", "40"]
    # and through an export (Every Eval Ever): the items given, as a partial respondent too
    assert run("export", out, "--format", "eee", "--out", tmp / "eee")[0] == 0
    code, _, err = run("items", calibrated["full"], tmp / "eee", "--out", tmp / "items-eee", "--bootstrap", 50)
    people = (tmp / "items-eee" / "respondents.csv").read_text(encoding="utf-8").splitlines()
    assert code == 0 and sorted(line.split(",")[5] for line in people[1:]) == ["20", "40"], err
    # the view says what was given and why
    code, _, err = run("view", out, "--out", tmp / "view.html")
    html = (tmp / "view.html").read_text(encoding="utf-8")
    assert code == 0 and "step 1: ability 0.00 (SE 1.000)" in html and "adaptive information" in html


def test_the_notebook_call_takes_the_same_options(calibrated):
    import probegen

    r = probegen.score("glove-50d", calibrated["data"], out=calibrated["tmp"] / "nb", adaptive=calibrated["bank"],
                       target_se=0.6, batch_items=4, n_boot=50)
    block = r.results["adaptive"]
    assert block["ability"]["se"] <= 0.6 and block["stopped"].startswith("SE")
    assert len(r.rows) == block["records_given"]


def _tampered(calibrated, name: str, edit) -> Path:
    bank = json.loads(calibrated["bank"].read_text(encoding="utf-8"))
    edit(bank)
    path = calibrated["tmp"] / name
    path.write_text(json.dumps(bank), encoding="utf-8")
    return path


def _changed_dataset(calibrated) -> Path:
    """The definitions sample with one choice's text changed (same ids, other content)."""
    lines = calibrated["data"].read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[3])
    row["question"]["choices"][0]["text"] += " (edited)"
    path = calibrated["tmp"] / "definitions-train-sample.jsonl"
    path.write_text("\n".join([*lines[:3], json.dumps(row), *lines[4:]]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("case, needles", [
    ("other dataset", ("fitted on another dataset", "not in")),
    ("same ids, other content", ("fitted on another dataset", "other content")),
    ("no IRT parameters", ("no IRT parameters",)),
    ("no IRT model", ("no IRT model",)),
    ("budget beyond the bank", ("--budget must be from 1 to the bank's 40 items",)),
    ("no stopping rule", ("stopping rule",)),
    ("not a bank", ("not a probegen item bank",)),
    ("budget without a bank", ("--budget applies to adaptive tests only",)),
    ("limit with a bank", ("--limit cannot be used with --adaptive",)),
])
def test_bad_inputs_are_one_line_and_write_nothing(calibrated, case, needles):
    tmp, data, bank = calibrated["tmp"], calibrated["data"], calibrated["bank"]
    args: list = ["--budget", 10]
    if case == "other dataset":
        data = SAMPLE / "hypernymy-train-sample.jsonl"
    elif case == "same ids, other content":
        data = _changed_dataset(calibrated)
    elif case == "no IRT parameters":
        bank = _tampered(calibrated, "no-a.json", lambda b: b["items"][5].pop("a"))
    elif case == "no IRT model":
        bank = _tampered(calibrated, "no-irt.json", lambda b: b.pop("irt"))
    elif case == "budget beyond the bank":
        args = ["--budget", 41]
    elif case == "no stopping rule":
        args = []
    elif case == "not a bank":
        bank = calibrated["tmp"] / "items" / "summary.json"
    elif case == "budget without a bank":
        bank = None
    elif case == "limit with a bank":
        args += ["--limit", 5]
    out = tmp / f"bad-{case.replace(' ', '-')}"
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", data, *(["--adaptive", bank] if bank else []),
                       *args, "--out", out)
    assert_one_line_error(code, err, *needles)
    assert not out.exists()


@pytest.mark.parametrize("flag, value, why", [("--budget", "0", "at least 1"), ("--target-se", "0", "above 0"),
                                              ("--target-se", "nan", "finite")])
def test_bad_values_are_refused_before_any_work(calibrated, flag, value, why):
    """A budget of 0 and a target SE of 0 or NaN: the option table's rule (click's usage error on the
    command line, exit 2 as for every option of eval; the same message raised by the notebook call)."""
    import probegen
    from probegen.errors import ProbegenError

    out = calibrated["tmp"] / "bad-value"
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", calibrated["data"], "--adaptive",
                       calibrated["bank"], flag, value, "--out", out)
    assert code == 2 and why in err and "Traceback" not in err
    field = flag[2:].replace("-", "_")
    with pytest.raises(ProbegenError, match=why):
        probegen.score("glove-50d", calibrated["data"], out=out, adaptive=calibrated["bank"],
                       **{field: float(value) if field == "target_se" else int(value)})
    assert not out.exists()


def test_items_bank_without_irt_writes_nothing(calibrated):
    tmp = calibrated["tmp"]
    code, _, err = run("items", calibrated["full"], tmp / "bias", "--irt", "none", "--out", tmp / "x-items",
                       "--bank", tmp / "x-bank.json")
    assert_one_line_error(code, err, "--bank needs an IRT fit")
    assert not (tmp / "x-items").exists() and not (tmp / "x-bank.json").exists()


def test_an_asking_method_goes_through_the_same_path(calibrated):
    """--method letter (SmolLM2 asked each question, read as its next-token label probabilities): the
    adaptive batches go through the method's scorer, and the run keeps its generation block."""
    out = calibrated["tmp"] / "letter"
    code, _, err = run("eval", "--model", "smollm2-135m", "--method", "letter", "--dataset", calibrated["data"],
                       "--adaptive", calibrated["bank"], "--budget", 4, "--batch-items", 2, "--bootstrap", 50,
                       "--device", "cpu", "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert res["eval"]["method"] == "letter" and res["adaptive"]["items_given"] == 4
    assert len(res["adaptive"]["steps"]) == 2 and res["metrics"]["n_items"] == 4
    rows = [json.loads(x) for x in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all("generation" in r and "adaptive" in r for r in rows)
