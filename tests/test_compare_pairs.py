"""Issue 36 §5 in ``probegen compare``: every pair of models on each set, paired cluster-bootstrap CI of
the accuracy difference, exact McNemar p, Holm's correction; in results.json, report.md and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy.stats import binomtest

from probegen.diagnostics.compare import model_pairs, pairs_table, render

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"


def test_model_pairs_three_models_holm_and_clusters():
    # 12 decisions in 4 units of 3; m1 right everywhere, m2 right on the first 4, m3 on none
    rows = {m: [(f"u{i // 3}", f"i{i}", float(f(i))) for i in range(12)]
            for m, f in (("m1", lambda i: 1), ("m2", lambda i: i < 4), ("m3", lambda i: 0))}
    pairs = model_pairs(rows, n_boot=300, seed=1)
    assert [(p["a"], p["b"]) for p in pairs] == [("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    by = {(p["a"], p["b"]): p for p in pairs}
    assert by["m1", "m3"]["diff"] == 1.0 and by["m1", "m3"]["a_only"] == 12 and by["m1", "m3"]["b_only"] == 0
    assert by["m1", "m3"]["p_mcnemar"] == pytest.approx(binomtest(12, 12, 0.5).pvalue)
    assert by["m1", "m2"]["diff"] == pytest.approx(8 / 12)
    # Holm: the smallest p times 3, then monotone
    ps = sorted(p["p_mcnemar"] for p in pairs)
    assert min(p["p_holm"] for p in pairs) == pytest.approx(min(1.0, 3 * ps[0]))
    assert all(p["p_holm"] >= p["p_mcnemar"] for p in pairs)
    # whole units resampled: m1 - m2 is 1/3 in u1, 1 in u2 and u3, 0 in u0 -> the CI stays within [0, 1]
    assert 0.0 <= by["m1", "m2"]["ci_lo"] < by["m1", "m2"]["diff"] < by["m1", "m2"]["ci_hi"] <= 1.0
    assert model_pairs({"m1": rows["m1"]}) == []


def test_render_has_the_pairs_section_only_with_pairs():
    res = {"a": {"label": "twin", "path": "t", "chance": 0.2}, "b": {"label": "adv", "path": "a", "chance": 0.2},
           "kind": "wordnetqa", "resampling_unit": "concept", "models": []}
    assert "paired on each set" not in render(res, "c.png") and pairs_table(res) == ""
    res["pairs"] = {"a": model_pairs({"m1": [("u", "i", 1.0)], "m2": [("u", "i", 0.0)]}, n_boot=20), "b": []}
    text = render(res, "c.png")
    assert "## Models paired on each set" in text and "McNemar p" in text and "Holm p" in text


@pytest.mark.skipif(not SAMPLE.is_file(), reason="the WordNetQA release sample is not here")
def test_compare_cli_pairs_two_models_on_the_same_items(tmp_path):
    from probegen.commands.cli import cli

    out = tmp_path / "cmp"
    r = CliRunner().invoke(cli, ["compare", str(SAMPLE), str(SAMPLE), "--model", "glove-50d", "--model", "minilm-l6",
                                 "--bootstrap", "200", "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    acc = {m["model"]: m["a"]["accuracy"] for m in res["models"]}
    for side in ("a", "b"):
        (p,) = res["pairs"][side]
        assert (p["a"], p["b"], p["items"]) == ("glove-50d", "minilm-l6", 40)
        # WordNetQA: one decision per item, so the difference of the pair is the difference of the accuracies
        assert p["diff"] == pytest.approx(acc["glove-50d"] - acc["minilm-l6"])
        assert p["ci_lo"] <= p["diff"] <= p["ci_hi"]
        assert p["p_mcnemar"] == pytest.approx(binomtest(p["a_only"], p["a_only"] + p["b_only"], 0.5).pvalue)
        assert p["p_holm"] == pytest.approx(p["p_mcnemar"])  # one pair per set: Holm changes nothing
    report = (out / "report.md").read_text()
    assert "## Models paired on each set" in report and "glove-50d        minilm-l6" in report
    assert "McNemar p" in r.output
