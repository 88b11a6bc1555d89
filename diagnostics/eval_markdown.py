"""``report.md`` of an eval run, and the position and calibration sections of a bias report."""

from __future__ import annotations

from typing import Any

from .tables import accuracy_rows, fmt, generation_section
from .tables import md_table as _table

POSITION_METHOD = """\
Position bias: per shown position (A, B, ...), the *gold rate* is the share of rows whose gold is
shown there, the *selection rate* the share answered there, and *recall* the accuracy of the rows
whose gold is shown there. A method without position bias selects each position as often as the
gold sits there and has equal recalls; *RStd* is the standard deviation of the recalls over
positions (Zheng et al. 2023). *Consistency*: share of rows answered with the same option under
every order. *CircularEval*: share of rows right under every cyclic rotation of the options (only
with `--permutations rotations`). *PriDe*: the prior over positions is estimated on a seeded share
of the clusters (`--debias-share`) from their permuted answers, divided out of the other clusters'
distributions, and accuracy is compared before and after on exactly those held-out rows. The cloze
method shows no order: its statistics on the dataset's stored order are the control (selection
should follow the gold rate). Calibration: confidence is the probability of the predicted option;
ECE uses equal-mass bins; Brier is the multi-class score (0 best, 1 - 1/n for a uniform guess).
All intervals are 95% percentile bootstrap CIs over clusters."""


def position_section(p: dict[str, Any] | None, level: str = "##", title: str = "Position bias") -> list[str]:
    """A position block as Markdown (a heading, the per-position table, the summary numbers, PriDe).

    >>> print("\\n".join(position_section({"method": "cloze", "value": None, "reason": "why"})))
    ## Position bias
    <BLANKLINE>
    Not measured: why.
    <BLANKLINE>
    """
    if not p:
        return []
    lines = [f"{level} {title}", ""]
    if "positions" not in p:
        return lines + [f"Not measured: {p.get('reason')}.", ""]
    lines += [f"Method {p['method']}; {p['order_source']}; {p['rows']} rows in {p['clusters']} clusters, {p['orders']} "
              "order(s).", ""]
    rows = [[q["position"], str(q["n"]), fmt(q["gold_rate"]), fmt(q["selection_rate"]),
             fmt(q["recall"])] for q in p["positions"]]
    lines += _table(["position", "observations", "gold rate", "selection rate", "recall"], rows) + [""]
    for name, key in (("RStd (std of recalls)", "rstd"), ("consistency", "consistency"),
                      ("CircularEval strict accuracy", "circular")):
        v = p[key]
        lines.append(f"- {name}: {fmt(v)}" + (f" ({v['reason']})" if v.get("value") is None
                                              and v.get("reason") else ""))
    pr = p.get("pride") or {}
    if "before" in pr:
        prior = "; ".join(f"{n} options: " + ", ".join(f"{x:.3f}" for x in v) for n, v in pr["prior"].items())
        lines.append(f"- PriDe (share {pr['share']}, seed {pr['seed']}): prior estimated on "
                     f"{pr['estimation']['clusters']} clusters ({pr['estimation']['rows']} rows): {prior or 'none'}; "
                     f"on the {pr['heldout']['rows']} held-out rows ({pr['heldout']['clusters']} clusters) accuracy "
                     f"with every order averaged {fmt(pr['before'])} before, {fmt(pr['after'])} after (change "
                     f"{fmt(pr['gain'])}); with order 0 alone (PriDe's test-time setting) "
                     f"{fmt(pr['first_order']['before'])} before, {fmt(pr['first_order']['after'])} after (change "
                     f"{fmt(pr['first_order']['gain'])})")
    elif pr:
        lines.append(f"- PriDe: not computed ({pr.get('reason')})")
    return lines + [""]


def calibration_section(blocks: dict[str, dict[str, Any]] | None, level: str = "##",
                        plot: str | None = None) -> list[str]:
    """The calibration table: one row per condition, then per hop count and distractor type.

    >>> c = {"rows": 4, "bins": 1, "accuracy": 1.0, "mean_confidence": 0.75, "ece": {"value": 0.25, "ci": None},
    ...      "brier": {"value": 0.15, "ci": None}, "confidence": "softmax"}
    >>> calibration_section({"full": c})[4]
    '| full | 4 | 1 | 1.000 | 0.750 | 0.250 | 0.150 | softmax |'
    """
    if not blocks:
        return []
    rows = []
    for cond, c in blocks.items():
        if "ece" not in c:
            rows.append([cond, "-", "-", "-", "-", "-", "-", f"not measured: {c.get('reason')}"])
            continue
        rows.append(_cal_row(cond, c) + [c["confidence"]])
        for key, name in (("by_hops", "hops"), ("by_distractor_type", "distractor")):
            rows += [_cal_row(f"{cond}, {name} {v}", sub) + [""] for v, sub in (c.get(key) or {}).items()]
    lines = [f"{level} Calibration", ""]
    lines += _table(["condition", "rows", "bins", "accuracy", "mean confidence", "ECE [95% CI]", "Brier [95% CI]",
                     "confidence"], rows)
    if plot:
        lines += ["", f"![reliability diagram]({plot})"]
    return lines + [""]


def _cal_row(name: str, c: dict[str, Any]) -> list[str]:
    return [name, str(c["rows"]), str(c["bins"]), f"{c['accuracy']:.3f}", f"{c['mean_confidence']:.3f}", fmt(c["ece"]),
            fmt(c["brier"])]


def render_eval_report(results: dict[str, Any]) -> str:
    """Markdown for an eval run: accuracies with CIs, position bias, calibration, generated answers.

    >>> md = render_eval_report({"model": "m", "dataset": {"path": "d", "kind": "wordnetqa"},
    ...     "scorer": {"kind": "static"}, "metrics": {"accuracy": 0.5, "accuracy_ci": [0.4, 0.6]},
    ...     "bootstrap": {"n": 10, "seed": 0, "unit": "concept"}})
    >>> "| all | accuracy | 0.500 [0.400, 0.600] |" in md
    True
    """
    b = results.get("bootstrap") or {}
    scorer = results.get("scorer") or {}
    lines = [f"# Evaluation: {results.get('model')} on `{(results.get('dataset') or {}).get('path')}`", "",
             f"Dataset kind {(results.get('dataset') or {}).get('kind')}; scorer {scorer.get('kind')}"
             + (f", method {scorer['method']}" if scorer.get("method") else "") + f". 95% CIs: {b.get('n')}-replicate "
             f"percentile bootstrap resampling {b.get('unit')} (seed {b.get('seed')}).", "", "## Accuracy", ""]
    rows = [[n, m.replace("_", " "), fmt(d[m], d.get(m + "_ci")),
             str(d.get("n", d.get("n_items", d.get("groups", d.get("units", "")))))]
            for n, m, d in accuracy_rows(results["metrics"])]
    lines += _table(["subset", "measure", "value [95% CI]", "n"], rows) + [""]
    plots = results.get("plots") or {}
    if plots.get("hops_heatmap"):
        lines += [f"![accuracy by hops and distractor type]({plots['hops_heatmap']})", ""]
    lines += position_section(results.get("position"))
    lines += calibration_section(results.get("calibration"), plot=plots.get("reliability"))
    gen = results.get("generation")
    if gen:
        lines += generation_section({(results.get("eval") or {}).get("mode") or "full": gen})
    lines += ["## Method", "", POSITION_METHOD, ""]
    return "\n".join(lines)


def bias_sections(d: dict[str, Any]) -> list[str]:
    """The position and calibration sections of one bias dataset (per condition); [] without them."""
    pos, cal = d.get("position") or {}, d.get("calibration") or {}
    if not pos and not cal:
        return []
    lines: list[str] = []
    for mode, p in pos.items():
        lines += position_section(p, "###", f"Position bias: {mode}")
    plot = (d.get("files") or {}).get("reliability")
    return lines + calibration_section(cal, "###", plot=plot)
