"""Calibration of every method that yields a confidence (issue 28 §3): ECE, Brier, reliability.

A row's distribution over its options (:func:`diagnostics.position.option_matrix`): cloze, the softmax over
its candidates' scores as the run reduced them; letter, the label distribution averaged over orders;
generate, the vote shares over orders. The confidence is the probability of the *predicted* option (the
run's own decision, e.g. the CoDA21 alignment).

``ece``: expected calibration error over :func:`n_bins` equal-mass bins; ``brier``: the multi-class Brier
score (0 perfect, 2 worst, a uniform guess 1 - 1/n); ``reliability``: per bin, mean confidence, accuracy
and rows. CIs: 95% percentile bootstrap over whole clusters, the bins re-cut in every replicate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from probegen.stats.bootstrap import cluster_index, cluster_weights, per_cluster, percentile_ci, ratio_ci

from .position import ALPHA, Row, cluster_of, method_of, option_matrix, rows_of

MAX_BINS = 10
MIN_PER_BIN = 10


def n_bins(n_rows: int) -> int:
    """Equal-mass bins for ``n_rows`` rows: 10, fewer so that each bin holds at least 10 rows.

    >>> n_bins(1000), n_bins(45), n_bins(3)
    (10, 4, 1)
    """
    return max(1, min(MAX_BINS, n_rows // MIN_PER_BIN))


def weighted_ece(conf: np.ndarray, correct: np.ndarray, weights: np.ndarray, bins: int) -> np.ndarray:
    """ECE with equal-mass bins under row ``weights`` (replicates x rows): rows sorted by confidence, a row
    of weight w covers the mass [cum - w, cum) and falls in the bin holding its middle.

    >>> conf, right = np.array([0.9, 0.8, 0.6, 0.3]), np.array([1.0, 0.0, 1.0, 0.0])
    >>> round(float(weighted_ece(conf, right, np.ones((1, 4)), 2)[0]), 6)   # 0.5 x |0.5 - 0.45| + 0.5 x |0.5 - 0.85|
    0.2
    """
    order = np.argsort(conf, kind="stable")
    c, y = conf[order], correct[order]
    w = np.atleast_2d(weights)[:, order]
    total = w.sum(axis=1, keepdims=True)
    mid = (np.cumsum(w, axis=1) - w / 2) / total
    b = np.minimum((mid * bins).astype(int), bins - 1)
    out = np.zeros(w.shape[0])
    for k in range(bins):
        m = w * (b == k)
        mass = m.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.abs((m @ y) - (m @ c))
        out += np.where(mass > 0, gap, 0.0)
    return np.asarray(out / total[:, 0])


def reliability(conf: np.ndarray, correct: np.ndarray, bins: int) -> list[dict[str, Any]]:
    """Per equal-mass bin: mean confidence, accuracy and rows.

    >>> reliability(np.array([0.9, 0.8, 0.6, 0.3]), np.array([1.0, 0.0, 1.0, 0.0]), 2)
    [{'confidence': 0.45, 'accuracy': 0.5, 'rows': 2}, {'confidence': 0.85, 'accuracy': 0.5, 'rows': 2}]
    """
    order = np.argsort(conf, kind="stable")
    out = []
    for part in np.array_split(order, bins):
        if len(part):
            out.append({"confidence": round(float(conf[part].mean()), 6),
                        "accuracy": round(float(correct[part].mean()), 6), "rows": int(len(part))})
    return out


def brier_rows(dists: Sequence[np.ndarray], gold: Sequence[int]) -> np.ndarray:
    """Per row, sum_j (p_j - [j = gold])^2.

    >>> brier_rows([np.array([0.5, 0.5]), np.array([1.0, 0.0])], [0, 0]).tolist()
    [0.5, 0.0]
    """
    out = []
    for p, g in zip(dists, gold):
        y = np.zeros(len(p))
        y[g] = 1.0
        out.append(float(((np.asarray(p) - y) ** 2).sum()))
    return np.array(out)


def calibrate(rows: Sequence[Row], n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """ECE and Brier score of ``rows`` with cluster-bootstrap CIs, and the reliability table.

    >>> rows = [Row(f"u{i}", f"c{i}", 0, np.array([[0, 1]]), np.array([[p, 1 - p]]), np.array([0]), 0)
    ...         for i, p in enumerate([0.9, 0.8, 0.7, 0.6])]
    >>> c = calibrate(rows, n_boot=50)
    >>> c["bins"], round(c["ece"]["value"], 3), round(c["brier"]["value"], 3), c["accuracy"]
    (1, 0.25, 0.15, 1.0)
    """
    dists = [option_matrix(r) for r in rows]
    conf = np.array([d[r.pred] for d, r in zip(dists, rows)])
    right = np.array([float(r.pred == r.gold) for r in rows])
    bins = n_bins(len(rows))
    idx, names = cluster_index(r.cluster for r in rows)
    w = cluster_weights(len(names), n_boot, seed)
    row_w = w[:, idx]
    ece = float(weighted_ece(conf, right, np.ones((1, len(rows))), bins)[0])
    ones = per_cluster(np.ones(len(rows)), idx, len(names))
    return {"rows": len(rows), "clusters": len(names), "bins": bins, "accuracy": float(right.mean()),
            "mean_confidence": float(conf.mean()),
            "ece": {"value": ece, "ci": percentile_ci(weighted_ece(conf, right, row_w, bins), ALPHA)},
            "brier": ratio_ci(per_cluster(brier_rows(dists, [r.gold for r in rows]), idx, len(names)), ones, w),
            "reliability": reliability(conf, right, bins)}


def calibration_block(records: Sequence[dict[str, Any]], n_boot: int = 1000, seed: int = 0, scores: str = "",
                      cluster: Callable[[dict[str, Any]], str] = cluster_of) -> dict[str, Any]:
    """The ``calibration`` block of one condition's records: :func:`calibrate` over all rows and per hop
    count and distractor type; ``scores``: how the run reduced its scores (said beside the cloze source)."""
    method = method_of(records)
    rows, why = rows_of(records, cluster)
    if why or not rows:
        return {"method": method, "value": None, "reason": why or "no rows"}
    from probegen import methods

    shown = methods.recorded(method, "generate")  # method_of: a method's name, or the cloze method's title
    source = shown.confidence + (f" ({scores})" if scores and not shown.ordered else "")
    out = {"method": method, "confidence": source, **calibrate(rows, n_boot, seed)}
    for key, name in (("hops", "by_hops"), ("distractor_type", "by_distractor_type")):
        values = sorted({str(r.fields[key]) for r in rows if r.fields.get(key) is not None})
        if values and any(key in r.fields for r in rows):
            out[name] = {v: calibrate([r for r in rows if str(r.fields.get(key)) == v], n_boot, seed) for v in values}
    return out


def plot_reliability(blocks: dict[str, dict[str, Any]], out: Path, title: str = "") -> Path:
    """One reliability diagram: per named calibration block, accuracy against mean confidence per bin.

    >>> import tempfile
    >>> b = {"full": {"reliability": [{"confidence": 0.4, "accuracy": 0.3, "rows": 5}], "ece": {"value": 0.1}}}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(plot_reliability(b, Path(d) / "r.png").read_bytes()[:4])
    b'\\x89PNG'
    """
    from .plots import pyplot, save_png

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 5.0))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect calibration")
    for i, (name, b) in enumerate(blocks.items()):
        rel = b.get("reliability") or []
        if not rel:
            continue
        x, y = [p["confidence"] for p in rel], [p["accuracy"] for p in rel]
        ece = (b.get("ece") or {}).get("value")
        ax.plot(x, y, marker="o", color=f"C{i % 10}", label=f"{name} (ECE {ece:.3f})" if ece is not None else name)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("mean confidence (probability of the predicted option)")
    ax.set_ylabel("accuracy")
    ax.set_title(title or "Reliability diagram (equal-mass bins)")
    ax.legend(loc="upper left", fontsize=8)
    return save_png(fig, out)
