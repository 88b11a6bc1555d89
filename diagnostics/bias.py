"""Context-word bias ratios (Liu, McCarthy & Korhonen) with paired bootstrap intervals.

With M_X the accuracy of ablation X, M_Full of the full input and M_L of the label-only baseline,
Bias_X = (M_X - M_L) / (M_Full - M_L): near 1, part X alone solves what the full input solves; near 0, no
better than the label prior. It is undefined (None) unless the full input beats the prior by more than
noise. Pure: per-unit tables in (a unit is a CoDA21 group or a WordNetQA concept), plain dicts out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probegen.stats.bootstrap import cluster_ci, cluster_weights, percentile_ci

# plain data a kind fills in (probegen.tasks.bias_inputs), importable here
from probegen.tasks.bias_inputs import FULL, LABEL, UnitTable, unit_sums

__all__ = ["FULL", "LABEL", "UnitTable", "bias_ratio", "bootstrap_accuracy", "bootstrap_bias", "fmt_ratio",
           "fmt_scoped", "unit_sums"]


def bias_ratio(m_part: float, m_label: float, m_full: float, min_gap: float = 0.0) -> float | None:
    """(M_part - M_L) / (M_Full - M_L), or None when M_Full does not exceed M_L by more than ``min_gap``.

    >>> round(bias_ratio(0.6, 0.2, 0.8), 3)
    0.667
    >>> bias_ratio(0.9, 0.2, 0.8) > 1   # the rest of the input hurts
    True
    >>> bias_ratio(0.5, 0.2, 0.2) is None   # full input no better than the label prior
    True
    >>> bias_ratio(0.3, 0.20, 0.24, min_gap=0.05) is None   # gap within noise
    True
    """
    gap = m_full - m_label
    if gap <= max(min_gap, 0.0):
        return None
    return (m_part - m_label) / gap


def _means(table: UnitTable, w: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracies of every ablation under unit multiplicities ``w`` (replicates x units)."""
    total = w @ table.weight
    out = {name: (w @ v) / total for name, v in table.correct.items()}
    if table.label_counts is not None:
        # the prior is fitted once on the whole set (like a trained label-only model); replicates
        # measure it on resampled units, so the max over noisy counts does not bias it upward
        majority = int(table.label_counts.sum(axis=0).argmax())
        out[LABEL] = (w @ table.label_counts[:, majority]) / total
    return out


def bootstrap_bias(table: UnitTable, parts: dict[str, str], n_boot: int = 1000, seed: int = 0,
                   alpha: float = 0.05) -> dict[str, Any]:
    """Accuracies, the Full - Label gap and the bias ratios (``parts``: ratio name -> ablation), each with a
    percentile bootstrap CI; every ablation is measured on the same resample of units (paired noise). A ratio
    is None unless the gap's CI lies above 0 and the gap is at least two bootstrap standard errors.

    >>> t = UnitTable(["g1", "g2", "g3", "g4"], np.ones(4),
    ...               {"full": [1, 1, 1, 1], "context": [0.6, 0.6, 0.6, 0.6], "label": [0.2] * 4})
    >>> r = bootstrap_bias(t, {"bias_c": "context"}, n_boot=200)
    >>> round(r["ratios"]["bias_c"]["value"], 3), r["gap"]["defined"]
    (0.5, True)
    """
    if n_boot < 2:
        raise ValueError("n_boot must be at least 2")
    if FULL not in table.correct:
        raise ValueError("a UnitTable needs a 'full' ablation")
    if LABEL not in table.correct and table.label_counts is None:
        raise ValueError("a UnitTable needs a 'label' ablation or label_counts")
    n = len(table.units)
    if n == 0:
        raise ValueError("no units to measure")
    point = {k: float(v[0]) for k, v in _means(table, np.ones((1, n))).items()}
    reps = _means(table, cluster_weights(n, n_boot, seed))

    gap_reps = reps[FULL] - reps[LABEL]
    gap = point[FULL] - point[LABEL]
    se = float(np.std(gap_reps, ddof=1))
    gap_ci = percentile_ci(gap_reps, alpha)
    defined = bool(gap > 0 and gap_ci is not None and gap_ci[0] > 0 and gap >= 2 * se)

    ablations = {k: {"accuracy": point[k], "ci": percentile_ci(reps[k], alpha)} for k in point}
    ratios: dict[str, Any] = {}
    for name, abl in parts.items():
        if abl not in point:
            continue
        if not defined:
            ratios[name] = {"ablation": abl, "value": None, "ci": None}
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(gap_reps > 0, (reps[abl] - reps[LABEL]) / gap_reps, np.nan)
        ratios[name] = {"ablation": abl, "value": bias_ratio(point[abl], point[LABEL], point[FULL]),
                        "ci": percentile_ci(r, alpha)}
    return {
        "n_units": n,
        "n_items": float(table.weight.sum()),
        "ablations": ablations,
        "gap": {"value": gap, "se": se, "ci": gap_ci, "defined": defined},
        "ratios": ratios,
        "bootstrap": {"n": n_boot, "seed": seed, "alpha": alpha},
    }


def bootstrap_accuracy(
    correct: np.ndarray, units: list[str] | None = None, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> dict[str, Any]:
    """Mean of per-item correctness with a bootstrap CI, resampling whole units (clusters) if given.

    >>> r = bootstrap_accuracy(np.array([1, 0, 1, 1]), n_boot=100)
    >>> r["accuracy"], len(r["ci"])
    (0.75, 2)
    """
    correct = np.asarray(correct, dtype=np.float64)
    return {"accuracy": float(correct.mean()), "ci": cluster_ci(correct, units, n_boot, seed, alpha),
            "n_items": int(len(correct)), "n_units": len(correct) if units is None else len(set(units))}


def fmt_ratio(r: dict[str, Any] | None) -> str:
    """A ratio for tables: '0.53 [0.41, 0.66]', 'undefined' or 'n/a' (measures nothing on this set).

    >>> fmt_ratio({"value": None, "ci": None})
    'undefined'
    >>> fmt_ratio({"value": 0.5, "ci": [0.25, 0.75]})
    '0.50 [0.25, 0.75]'
    >>> fmt_ratio({"value": None, "ci": None, "not_applicable": True})
    'n/a'
    """
    if r and r.get("not_applicable"):
        return "n/a"
    if not r or r.get("value") is None:
        return "undefined"
    ci = r.get("ci")
    return f"{r['value']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def fmt_scoped(r: dict[str, Any] | None) -> str:
    """:func:`fmt_ratio`, plus the probe types the ratio leaves out, if any.

    >>> fmt_scoped({"value": 0.5, "ci": None, "excluded": {"synonymy": "why"}})
    '0.50 (without synonymy)'
    """
    out = fmt_ratio(r)
    if r and r.get("excluded") and not r.get("not_applicable"):
        out += f" (without {', '.join(sorted(r['excluded']))})"
    return out
