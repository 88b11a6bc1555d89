"""Position bias, PriDe, calibration and the CIs on eval accuracies (issue 28 §2-5).

Pure functions against hand-computed values; PriDe's estimation set kept apart from its held-out
rows (a planted bias that only the held-out rows carry must not reach the prior); cluster-bootstrap
CIs that hold their point estimates and resample whole clusters; end to end, ``probegen eval`` with
real models (glove-50d, minilm-l6) on real data (the WordNetQA release sample, a CoDA21 file) writes
the CIs, report.md and the reliability diagram, and ``--debias-share`` is an error where it does
not apply. The generate path is checked on its recorded real SmolLM2 run and on synthetic records
in the shape the letter and generative methods write.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_checks import assert_one_line_error, run

from probegen.diagnostics import position as P
from probegen.diagnostics.calibration import brier_rows, calibrate, n_bins, reliability, weighted_ece
from probegen.diagnostics.eval_report import accuracy_cis, analyse_eval, check_debias_share
from probegen.errors import ProbegenError

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"
CODA21_FILE = ROOT / "tests" / "data" / "coda21_three_groups.json"
VIEW_GENERATE = ROOT / "tests" / "data" / "view" / "smollm2-generate-4p"


def _row(gold, chosen, perms=None, cluster=None, unit=None, probs=None, n=3):
    perms = np.array(perms if perms is not None else [list(range(n))])
    chosen = np.atleast_1d(np.array(chosen))
    if probs is None:
        probs = np.zeros(perms.shape)
        for o, perm in enumerate(perms):
            probs[o, int(np.flatnonzero(perm == chosen[o])[0])] = 1.0
    uid = unit or f"u{gold}{chosen.tolist()}{id(perms)}"
    return P.Row(uid, cluster or uid, gold, perms, np.asarray(probs, dtype=float), chosen, int(chosen[0]))


def _rotations(n):
    return [np.roll(np.arange(n), -k).tolist() for k in range(n)]


# ---- position statistics, by hand ------------------------------------------------------------------
def test_selection_rate_recall_and_rstd_by_hand():
    rows = [_row(0, 0, cluster="a"), _row(1, 0, cluster="b"), _row(2, 2, cluster="c")]
    s = P.position_stats(rows, n_boot=50)
    assert [p["position"] for p in s["positions"]] == ["A", "B", "C"]
    assert [p["selection_rate"]["value"] for p in s["positions"]] == pytest.approx([2 / 3, 0.0, 1 / 3])
    assert [p["gold_rate"]["value"] for p in s["positions"]] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    assert [p["recall"]["value"] for p in s["positions"]] == pytest.approx([1.0, 0.0, 1.0])
    assert s["rstd"]["value"] == pytest.approx(np.std([1.0, 0.0, 1.0]))  # population std, as PriDe's RStd
    assert s["consistency"]["value"] is None and s["circular"]["value"] is None


def test_positions_follow_the_shown_order_not_the_option_index():
    # gold option 0 is shown at position C in the one order; the model answers C: recall of C is 1
    r = _row(0, 0, perms=[[1, 2, 0]])
    s = P.position_stats([r], n_boot=20)
    assert [p["selection_rate"]["value"] for p in s["positions"]] == [0.0, 0.0, 1.0]
    assert [p["recall"]["value"] for p in s["positions"]] == [None, None, 1.0]


def test_consistency_and_circular_eval_by_hand():
    rot = _rotations(3)
    always_right = _row(1, [1, 1, 1], perms=rot, cluster="a")
    once_wrong = _row(1, [1, 2, 1], perms=rot, cluster="b")
    always_a = _row(0, [0, 1, 2], perms=rot, cluster="c")  # answers position A whatever it shows
    s = P.position_stats([always_right, once_wrong, always_a], n_boot=50)
    assert s["orders"] == 3
    assert s["consistency"]["value"] == pytest.approx(1 / 3)
    assert s["circular"]["value"] == pytest.approx(1 / 3)
    # at A: "always A" 3 times; option 1 is shown at A by the second rotation only, which the first row takes
    # (the second row takes option 2 there, shown at B)
    assert s["positions"][0]["selection_rate"]["value"] == pytest.approx((1 + 0 + 3) / 9)
    # two seeded orders are not every rotation: CircularEval is not computed, and says why
    two = _row(0, [0, 0], perms=[[0, 1, 2], [2, 0, 1]])
    c = P.position_stats([two], n_boot=20)["circular"]
    assert c["value"] is None and "rotation" in c["reason"]


def test_cloze_records_are_the_stored_order_control():
    recs = [{"id": "i1", "synset": "a.n.01", "gold": 0, "pred": 0, "scores": [2.0, 0.0, 0.0]},
            {"id": "i2", "synset": "b.n.01", "gold": 2, "pred": 0, "scores": [1.0, 0.0, 0.5]}]
    block = P.position_block(recs, n_boot=30)
    assert block["method"] == "cloze" and block["orders"] == 1 and "stored option order" in block["order_source"]
    assert [p["gold_rate"]["value"] for p in block["positions"]] == [0.5, 0.0, 0.5]
    assert block["pride"]["value"] is None and "no option order" in block["pride"]["reason"]


def test_coda21_group_rows_use_their_cluster_and_the_alignment():
    rec = {"id": "g1", "k": 2, "pos": "n", "gold": [1, 0], "pred": [1, 0], "scores": [[0.0, 1.0], [1.0, 0.0]], "correct": 1.0}
    rows, why = P.rows_of([rec])
    assert why is None and [r.cluster for r in rows] == ["g1", "g1"] and [r.gold for r in rows] == [1, 0]


def test_generate_records_without_orders_say_why():
    recs = [json.loads(line) for line in (VIEW_GENERATE / "items.jsonl").read_text().splitlines()]
    block = P.position_block(recs, n_boot=20)
    assert block["value"] is None and "orders" in block["reason"]


# ---- cluster bootstrap ------------------------------------------------------------------------------
def _biased_rows(n_clusters=60, rows_per=3, seed=0, bias=0.0, n=4, orders=None, cluster_prefix="c"):
    """Synthetic letter-method rows: each order's distribution over positions = a prior (``bias``
    towards A) times a true preference for the gold (option space), rotations by default."""
    rng = np.random.default_rng(seed)
    out = []
    orders = orders or _rotations(n)
    prior = np.full(n, 1.0)
    prior[0] += bias
    for c in range(n_clusters):
        for j in range(rows_per):
            gold = int(rng.integers(n))
            pref = rng.dirichlet(np.ones(n)) + np.eye(n)[gold] * rng.uniform(0.0, 1.2)
            perms = np.array(orders)
            probs = np.array([prior * pref[perm] for perm in perms])
            probs /= probs.sum(axis=1, keepdims=True)
            chosen = np.array([perm[int(np.argmax(p))] for perm, p in zip(perms, probs)])
            uid = f"{cluster_prefix}{c}/{j}"
            out.append(P.Row(uid, f"{cluster_prefix}{c}", gold, perms, probs, chosen, int(chosen[0])))
    return out


def test_every_ci_holds_its_point_estimate():
    rows = _biased_rows(bias=1.0)
    s = P.position_stats(rows, n_boot=300)
    stats = [p[k] for p in s["positions"] for k in ("selection_rate", "gold_rate", "recall")]
    stats += [s["consistency"], s["circular"]]
    cal = calibrate(rows, n_boot=300)
    stats += [cal["ece"], cal["brier"]]
    for st in stats:
        lo, hi = st["ci"]
        assert lo <= st["value"] <= hi, st


def test_bootstrap_resamples_whole_clusters():
    # every row in one cluster: each replicate draws that cluster, so every interval is a point
    rows = _biased_rows(n_clusters=1, rows_per=30, orders=[[0, 1, 2, 3]])
    s = P.position_stats(rows, n_boot=100)
    for p in s["positions"]:
        assert p["selection_rate"]["ci"][0] == pytest.approx(p["selection_rate"]["ci"][1])
    # the same rows as 30 clusters of one: the intervals open up
    split = [P.Row(r.unit, r.unit, r.gold, r.perms, r.probs, r.chosen, r.pred) for r in rows]
    s2 = P.position_stats(split, n_boot=100)
    assert any(p["selection_rate"]["ci"][1] - p["selection_rate"]["ci"][0] > 0.05 for p in s2["positions"])


# ---- PriDe --------------------------------------------------------------------------------------------
def test_pride_removes_a_prior_every_row_shares():
    rows = _biased_rows(n_clusters=80, bias=4.0, seed=1)
    res = P.pride(rows, share=0.25, seed=0, n_boot=200)
    prior = np.array(res["prior"]["4"])
    assert prior[0] > 0.5 and prior.argmax() == 0  # the planted preference for A is found
    # one order at test time (the paper's setting): removing the prior helps
    assert res["first_order"]["after"]["value"] > res["first_order"]["before"]["value"] + 0.05
    # every rotation averaged already cancels most of it: no loss from debiasing either way
    assert res["after"]["value"] >= res["before"]["value"] - 0.02
    assert res["estimation"]["clusters"] == 20 and res["heldout"]["clusters"] == 60


def test_pride_prior_never_sees_the_held_out_rows():
    """The held-out clusters carry a strong planted bias towards A that the estimation clusters lack.
    A prior estimated on the estimation rows alone is flat, so debiasing leaves every held-out
    decision as it was; a prior that leaked the held-out rows would point at A and change them."""
    est, held = P.split_clusters([f"c{i}" for i in range(40)], 0.1, 0)
    flat = _biased_rows(n_clusters=40, bias=0.0, seed=2)
    skewed = _biased_rows(n_clusters=40, bias=6.0, seed=2)
    rows = [r for r in flat if r.cluster in est] + [r for r in skewed if r.cluster in held]
    seen = []

    def spy(rs, floor):
        seen.extend(r.cluster for r in rs)
        return P.estimate_prior(rs, floor)

    res = P.pride(rows, share=0.1, seed=0, n_boot=100, estimator=spy)
    assert set(seen) == est and not set(seen) & held
    prior = np.array(res["prior"]["4"])
    assert np.allclose(prior, 0.25, atol=0.02), prior
    for block in (res, res["first_order"]):
        assert block["after"]["value"] == pytest.approx(block["before"]["value"])
    assert res["heldout"]["rows"] == sum(r.cluster in held for r in rows)
    # what a leak would do: the prior of every row points at A and changes the held-out accuracy
    leaked = P.estimate_prior(rows)[4]
    assert leaked[0] > 0.4
    bad = P.pride(rows, share=0.1, seed=0, n_boot=100, estimator=lambda rs, floor: P.estimate_prior(rows, floor))
    assert bad["first_order"]["after"]["value"] != pytest.approx(bad["first_order"]["before"]["value"])


def test_pride_needs_two_orders_and_two_clusters():
    one_order = _biased_rows(n_clusters=5, orders=[[0, 1, 2, 3]])
    assert "two option orders" in P.pride(one_order)["reason"]
    assert "two clusters" in P.pride(_biased_rows(n_clusters=1))["reason"]


def test_row_log_prior_matches_the_paper_on_rotations():
    # PriDe: with every cyclic rotation, log prior(d) = mean over orders of log P_observed(d) + C
    rows = _biased_rows(n_clusters=1, rows_per=1, bias=2.0, seed=5)
    r = rows[0]
    mine = P.row_log_prior(r.perms, r.probs)
    paper = np.log(r.probs).mean(axis=0)
    assert np.allclose(mine - mine.mean(), paper - paper.mean())


# ---- calibration, by hand ------------------------------------------------------------------------------
def test_ece_with_equal_mass_bins_by_hand():
    conf = np.array([0.95, 0.9, 0.7, 0.65, 0.4, 0.3])
    right = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    # 3 bins of 2 rows: {0.3, 0.4}: acc 0.5 conf 0.35; {0.65, 0.7}: 0.5 / 0.675; {0.9, 0.95}: 1 / 0.925
    want = (abs(0.5 - 0.35) + abs(0.5 - 0.675) + abs(1.0 - 0.925)) / 3
    assert weighted_ece(conf, right, np.ones((1, 6)), 3)[0] == pytest.approx(want)
    assert [b["rows"] for b in reliability(conf, right, 3)] == [2, 2, 2]
    # weights: a row drawn twice counts twice (what a bootstrap replicate does)
    w = np.array([[2.0, 0.0, 1.0, 1.0, 1.0, 1.0]])
    dup = weighted_ece(np.array([0.95, 0.95, 0.7, 0.65, 0.4, 0.3]), np.array([1.0, 1, 0, 1, 0, 1]), np.ones((1, 6)), 3)
    assert weighted_ece(conf, right, w, 3)[0] == pytest.approx(dup[0])
    assert n_bins(6) == 1 and n_bins(250) == 10 and n_bins(35) == 3


def test_brier_by_hand():
    assert brier_rows([np.array([0.7, 0.2, 0.1])], [0])[0] == pytest.approx(0.09 + 0.04 + 0.01)
    assert brier_rows([np.full(4, 0.25)], [2])[0] == pytest.approx(1 - 1 / 4)


def test_calibration_confidence_is_the_predicted_options_probability():
    rows = [_row(0, 0, probs=[[0.6, 0.3, 0.1]], cluster="a"), _row(1, 0, probs=[[0.5, 0.4, 0.1]], cluster="b")]
    c = calibrate(rows, n_boot=20)
    assert c["mean_confidence"] == pytest.approx(0.55) and c["accuracy"] == 0.5
    assert c["ece"]["value"] == pytest.approx(abs(0.5 - 0.55))  # one bin
    assert c["brier"]["value"] == pytest.approx(((0.16 + 0.09 + 0.01) + (0.25 + 0.36 + 0.01)) / 2)
    # a decision that is not the row's argmax (a CoDA21 alignment): confidence is the probability of what was decided
    aligned = _row(1, 0, probs=[[0.6, 0.3, 0.1]])
    aligned.pred = 1
    assert calibrate([aligned], n_boot=10)["mean_confidence"] == pytest.approx(0.3)


def test_generate_confidence_is_the_majority_vote_share():
    rot = _rotations(3)
    r = _row(2, [2, 2, 0], perms=rot)
    r.pred = 2
    c = calibrate([r], n_boot=10)
    assert c["mean_confidence"] == pytest.approx(2 / 3)


# ---- eval CIs -------------------------------------------------------------------------------------------
def test_accuracy_cis_resample_concepts():
    rows = [{"id": f"i{i}", "synset": f"s{i // 4}", "cluster": f"p:s{i // 4}", "correct": float(i % 4 != 0), "probe": "p",
             "choices": list("abcde"), "split": "train", "hops": 1, "distractor_type": "random", "distractor_hops": None} for i in range(40)]
    m = {"accuracy": 0.75, "strict_cluster_accuracy": 0.0, "by_probe": {"p": {"accuracy": 0.75, "strict_cluster_accuracy": 0.0}},
         "by_hops_distractor": {"p": {"1": {"random": {"accuracy": 0.75, "n": 40}}}}}
    accuracy_cis(m, rows, n_boot=200, seed=0)
    # every concept has 3 of 4 right: resampling concepts cannot move the accuracy at all
    assert m["accuracy_ci"] == pytest.approx([0.75, 0.75])
    assert m["strict_cluster_accuracy_ci"] == [0.0, 0.0]
    assert m["by_hops_distractor"]["p"]["1"]["random"]["accuracy_ci"] == pytest.approx([0.75, 0.75])


def test_debias_share_applies_to_ordered_methods_only():
    check_debias_share(0.2, "generate", 3)
    check_debias_share(0.2, "letter", "rotations")
    for method, perms in (("score", None), ("zeroshot", 1), ("trained", 1), ("generate", 1)):
        with pytest.raises(ProbegenError):
            check_debias_share(0.2, method, perms)


# ---- end to end -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["glove-50d", "minilm-l6"])
def test_eval_writes_cis_report_and_reliability(model, tmp_path):
    out = tmp_path / "run"
    code, text, err = run("eval", "--model", model, "--dataset", RELEASE / "hypernymy-train-sample.jsonl",
                          "--bootstrap", "200", "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    m = res["metrics"]
    lo, hi = m["accuracy_ci"]
    assert lo <= m["accuracy"] <= hi and hi > lo
    assert res["bootstrap"] == {"n": 200, "seed": 0, "alpha": 0.05, "unit": res["bootstrap"]["unit"]}
    assert res["bootstrap"]["unit"].startswith("concept")
    for cells in m["by_hops_distractor"]["hypernymy"].values():
        for cell in cells.values():
            assert cell["accuracy_ci"][0] <= cell["accuracy"] <= cell["accuracy_ci"][1]
    pos = res["position"]
    assert pos["method"] == "cloze" and pos["rows"] == 40 and len(pos["positions"]) == 5
    assert sum(p["selection_rate"]["value"] for p in pos["positions"]) == pytest.approx(1.0)
    cal = res["calibration"]["full"]
    assert cal["rows"] == 40 and cal["bins"] == 4 and set(cal["by_hops"]) == {"1", "2", "3", "4", "5"}
    assert cal["ece"]["ci"][0] <= cal["ece"]["value"] <= cal["ece"]["ci"][1]
    assert (out / "reliability.png").read_bytes()[:4] == b"\x89PNG" and res["plots"]["reliability"] == "reliability.png"
    report = (out / "report.md").read_text()
    assert f"| all | accuracy | {m['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] |" in report
    assert "## Position bias" in report and "## Calibration" in report and "![reliability diagram](reliability.png)" in report
    assert f"accuracy {m['accuracy']:.3f} [{lo:.3f}, {hi:.3f}]" in text and "ECE" in text and "RStd" in text


def test_eval_coda21_cis_per_pos_and_group_rows(tmp_path):
    out = tmp_path / "run"
    code, text, err = run("eval", "--model", "glove-50d", "--dataset", CODA21_FILE, "--bootstrap", "100", "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    groups = [json.loads(line) for line in (out / "groups.jsonl").read_text().splitlines()]
    assert res["bootstrap"]["unit"] == "group"
    a = res["metrics"]["all"]
    assert a["accuracy_ci"][0] <= a["accuracy"] <= a["accuracy_ci"][1]
    assert res["position"]["rows"] == sum(g["k"] for g in groups) and res["position"]["clusters"] == len(groups)
    assert res["calibration"]["context"]["rows"] == sum(g["k"] for g in groups)
    assert (out / "report.md").is_file() and (out / "reliability.png").is_file()


def test_analyse_eval_on_synthetic_generate_records(tmp_path):
    """Records in the shape the generative and letter methods write (orders, probs, answers)."""
    rows = _biased_rows(n_clusters=30, bias=3.0, seed=3)
    recs = []
    for r in rows:
        answers = [[int(c)] for c in r.chosen]
        votes = np.bincount(r.chosen, minlength=4)
        pred = int(np.argmax(votes))
        recs.append({"id": r.unit, "synset": r.cluster, "cluster": "p:" + r.cluster, "probe": "p", "split": "train", "hops": 1,
                     "distractor_type": "random", "distractor_hops": None, "gold": [r.gold], "pred": [pred],
                     "correct": float(pred == r.gold), "choices": list("abcd"),
                     "generation": {"method": "generate", "answers": answers, "status": ["valid"] * 4, "random_rows": [[]] * 4,
                                    "orders": r.perms.tolist(), "probs": [[p.tolist()] for p in np.eye(4)[[
                                        int(np.flatnonzero(perm == c)[0]) for perm, c in zip(r.perms, r.chosen)]]]}})
    from probegen.generate.metrics import summarize

    results = {"model": "m", "dataset": {"path": "d", "kind": "wordnetqa"}, "scorer": {"kind": "generative", "method": "generate"},
               "eval": {"mode": "full"}, "metrics": {"accuracy": float(np.mean([r["correct"] for r in recs])),
                                                       "strict_cluster_accuracy": 0.0}, "generation": summarize(recs)}
    lines = analyse_eval(results, recs, tmp_path, n_boot=100, seed=0, share=0.2)
    pos = results["position"]
    assert pos["method"] == "generate" and pos["orders"] == 4
    assert pos["circular"]["value"] is not None and pos["consistency"]["value"] is not None
    assert pos["positions"][0]["selection_rate"]["value"] > 0.4  # the planted preference for A
    assert pos["pride"]["estimation"]["clusters"] == 6 and pos["pride"]["after"]["value"] is not None
    assert len(results["generation"]["per_order_ci"]) == 4
    assert any(ln.startswith("PriDe") for ln in lines) and any("CircularEval" in ln for ln in lines)
    assert "PriDe (share 0.2" in (tmp_path / "report.md").read_text()


def test_debias_share_errors_on_the_command_line(tmp_path):
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", RELEASE / "hypernymy-train-sample.jsonl",
                       "--debias-share", "0.1", "--out", tmp_path / "x")
    assert_one_line_error(code, err, "--debias-share", "cloze")
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", RELEASE / "hypernymy-train-sample.jsonl",
                       "--debias-share", "0.1", "--out", tmp_path / "y")
    assert_one_line_error(code, err, "--debias-share")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    # a word-in-context eval trains a probe: --bootstrap does not apply to it
    code, _, err = run("eval", "--model", "minilm-l6", "--dataset", ROOT / "tests" / "data" / "wic_semcor_24.jsonl",
                       "--bootstrap", "50", "--out", tmp_path / "z")
    assert_one_line_error(code, err, "--bootstrap")


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_debias_share_on_wic_is_one_line_before_any_model_loads(tmp_path, command):
    """WiC asks yes/no: no option order, so no position prior; the option is refused at the option check."""
    code, _, err = run(command, "--model", "smollm2-135m", "--method", "letter", "--permutations", "2",
                       "--debias-share", "0.1", "--dataset", ROOT / "tests" / "data" / "wic_semcor_24.jsonl",
                       "--out", tmp_path / "w")
    assert_one_line_error(code, err, "--debias-share applies to", "WiC dataset")
    assert not (tmp_path / "w").exists()


@pytest.mark.real
def test_eval_letter_rotations_on_smollm2(tmp_path):
    """The letter method's records (label probabilities per rotation) read by the position and
    calibration blocks: a real SmolLM2 run on three release items under every rotation."""
    out = tmp_path / "letter"
    code, text, err = run("eval", "--model", "smollm2-135m", "--method", "letter", "--permutations", "rotations",
                          "--dataset", RELEASE / "hypernymy-train-sample.jsonl", "--limit", "3", "--device", "cpu",
                          "--debias-share", "0.5", "--bootstrap", "100", "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    pos = res["position"]
    assert pos["method"] == "letter" and pos["orders"] == 5 and pos["rows"] == 3
    # CircularEval by hand from the records: right under all five rotations
    strict = [all(int(np.asarray(o)[int(np.argmax(p[0]))]) == it["gold"][0]
                  for o, p in zip(it["generation"]["orders"], it["generation"]["probs"])) for it in items]
    assert pos["circular"]["value"] == pytest.approx(np.mean(strict))
    # selection per shown position by hand: where each order's label distribution peaks
    peaks = [int(np.argmax(p[0])) for it in items for p in it["generation"]["probs"]]
    assert [q["selection_rate"]["value"] for q in pos["positions"]] == pytest.approx(
        [peaks.count(k) / len(peaks) for k in range(5)])
    pr = pos["pride"]
    assert pr["estimation"]["clusters"] == 2 and pr["heldout"]["rows"] == 1 and len(pr["prior"]["5"]) == 5
    cal = res["calibration"]["full"]
    dist = [np.mean([np.asarray(p[0])[np.argsort(o)] for o, p in zip(it["generation"]["orders"], it["generation"]["probs"])], axis=0)
            for it in items]
    assert cal["mean_confidence"] == pytest.approx(np.mean([d[it["pred"][0]] for d, it in zip(dist, items)]), abs=1e-9)
    assert "CircularEval" in text and "PriDe" in text and (out / "reliability.png").is_file()


def test_bias_reports_position_and_calibration_per_condition(tmp_path):
    out = tmp_path / "b"
    code, text, err = run("bias", "--model", "glove-50d", "--dataset", RELEASE / "definitions-train-sample.jsonl", "--limit", "20",
                          "--bootstrap", "100", "--no-controls", "--out", out)
    assert code == 0, err
    entry = json.loads((out / "results.json").read_text())["datasets"][0]
    conditions = {"full", "context", "word", "choice"}
    assert set(entry["position"]) == conditions and set(entry["calibration"]) == conditions
    for mode in conditions:
        rows = [json.loads(line) for line in (out / entry["name"] / f"{mode}.jsonl").read_text().splitlines()]
        assert entry["calibration"][mode]["rows"] == len(rows) == entry["position"][mode]["rows"]
        right = np.mean([r["pred"] == r["gold"] for r in rows])
        assert entry["calibration"][mode]["accuracy"] == pytest.approx(right)
        assert entry["calibration"][mode]["accuracy"] == pytest.approx(entry["all"]["ablations"][mode]["accuracy"])
    assert entry["files"]["reliability"] == f"{entry['name']}/reliability.png" and (out / entry["files"]["reliability"]).is_file()
    report = (out / "report.md").read_text()
    assert "### Position bias: word" in report and "### Calibration" in report
    assert "position RStd: full" in text and "calibration ECE: full" in text
