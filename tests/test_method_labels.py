"""Issue 35: runs side by side carry their true method and settings.

A ``--method letter`` eval run used to show in ``probegen view`` as "generate" (its results hold a
``generation`` block) and a letter bias run as "score" (the viewer never looked at the scorer's
method); the eval run's results.json recorded ``length_norm: "none (cosine scores)"`` and the bias
run's the query pattern, likelihood settings that do not apply to a chat model asked for its option
labels. Real runs of the bundled SmolLM2 (two items of the WordNetQA release sample), made once for
the module.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"
#: a likelihood scorer's settings: none may be recorded or shown as if it applied to an asked model
LIKELIHOOD = ("length_norm", "reduction", "pattern")


@pytest.fixture(scope="module")
def letter_runs(tmp_path_factory) -> dict[str, Path]:
    """An eval and a bias run of SmolLM2 with ``--method letter`` (CPU, float32, one thread)."""
    if not RELEASE.is_file():
        pytest.skip(f"{RELEASE} is not there (../shared/data)")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("letter-runs")
    common = ["--model", "smollm2-135m", "--method", "letter", "--device", "cpu", "--dtype", "float32",
              "--dataset", RELEASE, "--limit", 2, "--bootstrap", 50]
    try:
        out = {"eval": root / "eval", "bias": root / "bias"}
        code, _, err = run("eval", *common, "--out", out["eval"])
        assert code == 0, err
        code, _, err = run("bias", *common, "--no-controls", "--out", out["bias"])
        assert code == 0, err
    finally:
        torch.set_num_threads(threads)
    return out


def results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def test_letter_results_record_the_method_not_likelihood_settings(letter_runs):
    ev = results(letter_runs["eval"])
    assert ev["scorer"]["method"] == "letter" and ev["eval"]["method"] == "letter"
    for k in ("length_norm", "reduction"):
        assert ev["eval"][k] is None, (k, ev["eval"])
    assert ev["metrics"]["length_norm"] is None  # not "none (cosine scores)": nothing was a cosine
    assert "cosine" not in json.dumps(ev)
    bias = results(letter_runs["bias"])
    assert bias["scorer"]["method"] == "letter" and bias["eval"]["method"] == "letter"
    assert bias["eval"]["pattern"] is None and bias["eval"]["reduction"] is None and bias["config"]["pattern"] is None


def test_view_shows_letter_runs_as_letter_with_their_own_settings(letter_runs):
    from probegen.view.load import load_runs

    model = load_runs([letter_runs["eval"], letter_runs["bias"]])
    ev, bias = model["runs"]
    assert (ev["command"], ev["method"]) == ("eval", "letter")
    assert (bias["command"], bias["method"]) == ("bias", "letter")
    for r in (ev, bias):
        assert "(letter)" in r["label"] and r["scorer"] == "letter"
        assert not set(LIKELIHOOD) & set(r["settings"]), r["settings"]
        assert r["settings"].get("permutations") == 1
    # the queries are rebuilt as the model was asked (the generative prompts): shown, no note
    assert not ev["notes"] or all("queries" not in n for n in ev["notes"])
    items = [it for it in model["items"] if it["run"] == 0]
    assert len(items) == 2 and all(it["conds"]["full"].get("q") for it in items)
    assert all(set(it["conds"]) == {"full", "context", "word", "choice"} for it in model["items"] if it["run"] == 1)


def test_view_of_older_letter_runs_reads_their_method_too(letter_runs, tmp_path):
    """Runs written before the method was recorded in the eval block (and with the likelihood
    settings filled in): still letter, and those settings are not shown."""
    from probegen.view.load import load_runs

    old = tmp_path / "old"
    shutil.copytree(letter_runs["eval"], old)
    (old / ".probegen-output.json").unlink()
    res = results(old)
    res["eval"] = {**{k: v for k, v in res["eval"].items() if k != "method"}, "length_norm": "none (cosine scores)"}
    (old / "results.json").write_text(json.dumps(res), encoding="utf-8")
    [r] = load_runs([old])["runs"]
    assert r["method"] == "letter" and "length_norm" not in r["settings"]


def test_view_page_of_both_and_an_incomplete_copy(letter_runs, tmp_path):
    page = tmp_path / "page.html"
    code, stdout, err = run("view", letter_runs["eval"], letter_runs["bias"], "--out", page)
    assert code == 0, err
    assert stdout.strip() == str(page) and '"method":"letter"' in page.read_text(encoding="utf-8")
    # the eval run with its rows file emptied (and no marker to catch the edit): the run is incomplete
    cut = tmp_path / "cut"
    shutil.copytree(letter_runs["eval"], cut)
    (cut / ".probegen-output.json").unlink()
    (cut / "items.jsonl").write_text("", encoding="utf-8")
    code, _, err = run("view", cut, "--out", tmp_path / "cut.html")
    assert_one_line_error(code, err, str(cut / "items.jsonl"), "holds 0 row(s)", "counts 2", "incomplete")
    # a bias run with one condition's rows cut short
    cutb = tmp_path / "cutb"
    shutil.copytree(letter_runs["bias"], cutb)
    (cutb / ".probegen-output.json").unlink()
    name = results(cutb)["datasets"][0]["name"]
    word = cutb / name / "word.jsonl"
    word.write_text(word.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    code, _, err = run("view", cutb, "--out", tmp_path / "cutb.html")
    assert_one_line_error(code, err, str(word), "holds 1 row(s)", "counts 2")
