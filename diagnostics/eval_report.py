"""CIs on every accuracy ``probegen eval`` reports, its position and calibration blocks and ``report.md``;
the same blocks per condition for ``probegen bias`` (issue 28 §2-5).

Every CI is a 95% percentile cluster bootstrap over the unit ``bias`` resamples. An eval's results.json gains
``accuracy_ci`` (and ``strict_cluster_accuracy_ci``) beside every accuracy, ``per_order_ci``/``majority_ci`` in
``generation``, ``bootstrap``, ``position``, ``calibration``, ``plots.reliability`` and ``report``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from probegen.errors import ProbegenError

from .bias import bootstrap_accuracy
from .calibration import calibration_block, plot_reliability
from .position import cluster_of, position_block
from .tables import accuracy_rows, fmt


def check_debias_share(share: float | None, method: str | None, permutations: Any = None) -> None:
    """``--debias-share`` needs a method that shows options in an order, asked under two orders at least.

    >>> check_debias_share(None, "score"); check_debias_share(0.1, "letter", "rotations")
    >>> check_debias_share(0.1, "score")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --debias-share applies to --method letter and --method generate (options shown in
    an order); the cloze method shows none, so it has no position prior to remove (its position statistics are
    reported without it)
    >>> check_debias_share(0.1, "generate", 1)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --debias-share needs at least two option orders per unit: add --permutations N
    (N >= 2) or --permutations rotations
    """
    if share is None:
        return
    from probegen import methods

    if method is None or not methods.get(method).ordered:
        raise ProbegenError("--debias-share applies to --method letter and --method generate (options shown in an "
                            "order); the cloze method shows none, so it has no position prior to remove (its position "
                            "statistics are reported without it)")
    if permutations is not None and str(permutations) != "rotations" and int(permutations) < 2:
        raise ProbegenError("--debias-share needs at least two option orders per unit: add --permutations N (N >= 2) "
                            "or --permutations rotations")
    if not 0.0 < share < 1.0:
        raise ProbegenError(f"--debias-share is a share of the clusters, between 0 and 1 exclusive (got {share})")


# ---- accuracy CIs ----------------------------------------------------------------------------------
def _ci(values: Sequence[float], clusters: Sequence[str], n_boot: int, seed: int) -> list[float] | None:
    if not len(values):
        return None
    ci: list[float] = bootstrap_accuracy(np.asarray(values, dtype=np.float64), list(clusters), n_boot=n_boot,
                                         seed=seed)["ci"]
    return ci


def _mc_cis(m: dict[str, Any], rs: list[dict[str, Any]], n_boot: int, seed: int) -> None:
    """accuracy_ci and strict_cluster_accuracy_ci of one multiple-choice metrics dict over ``rs``."""
    m["accuracy_ci"] = _ci([float(bool(r["correct"])) for r in rs], [cluster_of(r) for r in rs], n_boot, seed)
    if "strict_cluster_accuracy" in m:
        strict: dict[str, list[Any]] = {}
        for r in rs:
            s = strict.setdefault(r["cluster"], [True, cluster_of(r)])
            s[0] = s[0] and bool(r["correct"])
        m["strict_cluster_accuracy_ci"] = _ci([float(v[0]) for v in strict.values()], [v[1] for v in strict.values()],
                                              n_boot, seed)


def _shown(r: dict[str, Any], key: str) -> str:
    """A record's value of ``key`` as the breakdown names it (no distractor hops: "-")."""
    return "-" if r.get(key) is None and key == "distractor_hops" else str(r.get(key))


def _cells(tree: dict[str, Any], rs: list[dict[str, Any]], keys: Sequence[str], n_boot: int, seed: int) -> None:
    """accuracy_ci in every {accuracy, n} cell of a nested breakdown keyed by the records' ``keys``."""
    def walk(node: dict[str, Any], sub: list[dict[str, Any]], depth: int) -> None:
        if "accuracy" in node and depth == len(keys):
            node["accuracy_ci"] = _ci([float(bool(r["correct"])) for r in sub], [cluster_of(r) for r in sub], n_boot,
                                      seed)
            return
        key = keys[depth]
        for name, child in node.items():
            if isinstance(child, dict):
                walk(child, [r for r in sub if _shown(r, key) == name], depth + 1)

    walk(tree, rs, 0)


def accuracy_cis(metrics: dict[str, Any], rows: list[dict[str, Any]], n_boot: int, seed: int) -> None:
    """Add ``accuracy_ci`` beside every accuracy of an eval's ``metrics`` (see the module doc)."""
    if rows and "choices" in rows[0] and "cluster" in rows[0]:  # multiple-choice items
        _mc_cis(metrics, rows, n_boot, seed)
        for key, field in (("by_probe", "probe"), ("by_split", "split")):
            for name, m in (metrics.get(key) or {}).items():
                _mc_cis(m, [r for r in rows if str(r.get(field, "all")) == name], n_boot, seed)
        _cells(metrics.get("by_hops_distractor") or {}, rows, ("probe", "hops", "distractor_type"), n_boot, seed)
        _cells(metrics.get("by_distractor_distance") or {}, rows, ("probe", "distractor_type", "distractor_hops"),
               n_boot, seed)
        return
    pos_names = {"noun": "n", "verb": "v"}
    if rows and "pos" in rows[0] and any(k in metrics for k in ("all", "noun", "verb")):  # CoDA21 groups per POS
        for name, m in metrics.items():
            rs = [r for r in rows if name == "all" or r["pos"] == pos_names.get(name)]
            m["accuracy_ci"] = _ci([r["correct"] for r in rs], [cluster_of(r) for r in rs], n_boot, seed)
        return
    if "accuracy" in metrics:  # the generic units
        metrics["accuracy_ci"] = _ci([r["correct"] for r in rows], [cluster_of(r) for r in rows], n_boot, seed)


def generation_cis(block: dict[str, Any] | None, rows: list[dict[str, Any]], n_boot: int, seed: int) -> None:
    """``per_order_ci`` and ``majority_ci`` of a generation block (its records' per-order accuracy)."""
    gen = [r for r in rows if r.get("generation")]
    if not block or not gen:
        return
    clusters = [cluster_of(r) for r in gen]
    per = []
    for p in range(block["orders"]):
        accs = []
        for r in gen:
            gold = np.atleast_1d(np.asarray(r["gold"]))
            ans = np.asarray(r["generation"]["answers"][p])[: len(gold)]
            accs.append(float(np.mean(ans == gold)) if len(gold) else 0.0)
        per.append(_ci(accs, clusters, n_boot, seed))
    block["per_order_ci"] = per
    block["majority_ci"] = _ci([float(r["correct"]) for r in gen], clusters, n_boot, seed)


def scores_note(eval_block: dict[str, Any], scorer_kind: str | None) -> str:
    """How a cloze run's scores were reduced (the calibration block says it).

    >>> scores_note({"reduction": "sum", "length_norm": "none"}, "causal"), scores_note({"reduction": None}, "static")
    ('reduction sum, length-norm none', 'static similarities')
    """
    if eval_block.get("reduction") is None:
        return f"{scorer_kind} similarities"
    return f"reduction {eval_block['reduction']}" + (f", length-norm {eval_block['length_norm']}"
                                                     if "length_norm" in eval_block else "")


def analyse_eval(results: dict[str, Any], rows: list[dict[str, Any]], folder: Path, n_boot: int = 1000, seed: int = 0,
                 share: float | None = None) -> list[str]:
    """Add the CIs, position and calibration blocks to an eval's ``results``, draw the reliability diagram and
    write ``report.md`` into ``folder``; returns the summary lines."""
    from probegen import tasks

    kind = (results.get("dataset") or {}).get("kind")
    unit = tasks.get(kind).resampling_unit if kind else "unit"
    accuracy_cis(results["metrics"], rows, n_boot, seed)
    generation_cis(results.get("generation"), rows, n_boot, seed)
    results["bootstrap"] = {"n": n_boot, "seed": seed, "alpha": 0.05, "unit": unit}
    ev = results.get("eval") or {}
    condition = ev.get("mode") or "full"
    results["position"] = position_block(rows, n_boot, seed, share, ev.get("matching") or "argmax")
    cal = calibration_block(rows, n_boot, seed, scores_note(ev, (results.get("scorer") or {}).get("kind")))
    results["calibration"] = {condition: cal}
    if cal.get("reliability"):
        plot_reliability(results["calibration"], folder / "reliability.png",
                         title=f"Reliability: {results.get('model')}")
        results.setdefault("plots", {})["reliability"] = "reliability.png"
    results["report"] = "report.md"
    from probegen.io import atomic_write

    from .eval_markdown import render_eval_report

    with atomic_write(folder / "report.md") as fh:
        fh.write(render_eval_report(results))
    return summary_lines(results)


# ---- summary lines ---------------------------------------------------------------------------------
def summary_lines(results: dict[str, Any]) -> list[str]:
    """What ``probegen eval`` prints under its table: accuracies with CIs, position, calibration."""
    b = results["bootstrap"]
    top = [(n, m, d) for n, m, d in accuracy_rows(results["metrics"]) if " / " not in n and not n.startswith("by_")]
    named = len({n for n, _, _ in top}) > 1  # CoDA21: per POS and all
    accs = "; ".join(f"{n + ' ' if named else ''}{m.replace('_', ' ')} {fmt(d[m], d.get(m + '_ci'))}"
                     for n, m, d in top)
    lines = [f"{accs} (95% CIs: {b['n']}-replicate cluster bootstrap over {b['unit'].split(':')[0]})"]
    lines += position_lines(results.get("position"))
    for cond, c in (results.get("calibration") or {}).items():
        lines += calibration_lines(cond, c)
    lines.append(f"report: {results.get('report', 'report.md')}")
    return lines


def position_lines(p: dict[str, Any] | None, label: str = "") -> list[str]:
    """The position-bias lines of a summary ([] without a block)."""
    if not p:
        return []
    if p.get("value", 0) is None and "positions" not in p:
        return [f"position bias{label}: not measured ({p.get('reason')})"]
    from probegen import methods

    ordered = methods.recorded(p["method"], "generate").ordered  # a position block names the method or its title
    what = f"{p['method']}, {p['orders']} orders" if ordered else "cloze control, stored order"
    sel = " ".join(f"{q['position']} {fmt(q['selection_rate']['value'], None, 2)}" for q in p["positions"])
    rec = " ".join(f"{q['position']} {fmt(q['recall']['value'], None, 2)}" for q in p["positions"])
    line = f"position bias{label} ({what}): selection rate {sel}; recall {rec}; RStd {fmt(p['rstd'])}"
    if p["consistency"].get("value") is not None:
        line += f"; consistency {fmt(p['consistency'])}"
    if p["circular"].get("value") is not None:
        line += f"; CircularEval {fmt(p['circular'])}"
    lines = [line]
    pr = p.get("pride") or {}
    if "before" in pr:
        lines.append(f"PriDe{label} (prior on {pr['estimation']['clusters']} clusters, {pr['heldout']['rows']} "
                     f"held-out rows): accuracy {fmt(pr['before'])} -> {fmt(pr['after'])} (all orders averaged); "
                     f"{fmt(pr['first_order']['before'])} -> {fmt(pr['first_order']['after'])} (order 0 alone)")
    return lines


def calibration_lines(condition: str, c: dict[str, Any]) -> list[str]:
    """The calibration line of one condition."""
    if c.get("value", 0) is None and "ece" not in c:
        return [f"calibration ({condition}): not measured ({c.get('reason')})"]
    return [f"calibration ({condition}, {c['method']}): ECE {fmt(c['ece'])} ({c['bins']} equal-mass bins), "
            f"Brier {fmt(c['brier'])}, mean confidence {c['mean_confidence']:.3f} vs accuracy {c['accuracy']:.3f}"]


# ---- bias runs -------------------------------------------------------------------------------------
def condition_blocks(records: dict[str, list[dict[str, Any]]], n_boot: int, seed: int, share: float | None,
                     decision: str, scores: str = "") -> dict[str, Any]:
    """``position`` and ``calibration`` of a bias run's dataset entry: one block per scored condition."""
    out: dict[str, Any] = {"position": {}, "calibration": {}}
    for mode, rs in records.items():
        if not rs:
            continue
        out["position"][mode] = position_block(rs, n_boot, seed, share, decision)
        out["calibration"][mode] = calibration_block(rs, n_boot, seed, scores)
    return out


def draw_bias_reliability(entry: dict[str, Any], folder: Path, title: str = "") -> str | None:
    """``<dataset>/reliability.png`` of a bias entry (one line per condition); its name or None."""
    blocks = {m: c for m, c in (entry.get("calibration") or {}).items() if c.get("reliability")}
    if not blocks:
        return None
    plot_reliability(blocks, folder / "reliability.png", title=title)
    return "reliability.png"


def bias_lines(entry: dict[str, Any]) -> list[str]:
    """The bias summary's lines for one dataset: RStd and ECE per condition.

    >>> bias_lines({"position": {"full": {"rstd": {"value": 0.1, "ci": None}, "positions": []}},
    ...             "calibration": {"full": {"ece": {"value": 0.2, "ci": None}}}})
    ['position RStd: full 0.100; calibration ECE: full 0.200']
    """
    pos = ", ".join(f"{m} {fmt(p['rstd'])}" for m, p in (entry.get("position") or {}).items() if "rstd" in p)
    cal = ", ".join(f"{m} {fmt(c['ece'])}" for m, c in (entry.get("calibration") or {}).items() if "ece" in c)
    if not pos and not cal:
        return []
    return [f"position RStd: {pos or '-'}; calibration ECE: {cal or '-'}"]
