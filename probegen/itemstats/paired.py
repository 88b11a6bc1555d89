"""Paired comparisons of respondents on the items both answered: the accuracy difference with a paired
cluster-bootstrap CI, an exact McNemar test, and every pair with Holm's correction.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Sequence

import numpy as np

from ..stats.bootstrap import cluster_ci
from ..stats.significance import holm

PAIR_COLUMNS = ("a", "b", "items", "acc_a", "acc_b", "diff", "ci_lo", "ci_hi", "a_only", "b_only", "p_mcnemar",
                "p_holm", "significant")


def mcnemar_exact(x: np.ndarray, z: np.ndarray) -> tuple[int, int, float]:
    """(x right and z wrong, z right and x wrong, two-sided exact p).

    >>> mcnemar_exact(np.array([1, 1, 1, 1, 1, 1, 0]), np.array([0, 0, 0, 0, 0, 0, 0]))
    (6, 0, 0.03125)
    """
    from scipy.stats import binomtest

    b, c = int(((x == 1) & (z == 0)).sum()), int(((x == 0) & (z == 1)).sum())
    return b, c, (float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0)


def paired_diff(x: np.ndarray, z: np.ndarray, clusters: Sequence[Any] | None = None, n_boot: int = 2000,
                seed: int = 0, alpha: float = 0.05) -> dict[str, Any]:
    """Accuracy difference (x - z) on paired items with a percentile cluster-bootstrap CI and McNemar."""
    x, z = np.asarray(x, float), np.asarray(z, float)
    ci = cluster_ci(x - z, clusters, n_boot, seed, alpha) or [float("nan")] * 2  # None: never, items > 0
    b, c, p = mcnemar_exact(x, z)
    return {"items": len(x), "acc_a": float(x.mean()), "acc_b": float(z.mean()), "diff": float((x - z).mean()),
            "ci_lo": ci[0], "ci_hi": ci[1], "a_only": b, "b_only": c, "p_mcnemar": p}


def all_pairs(y: np.ndarray, names: Sequence[str], units: Sequence[Any] | None = None, n_boot: int = 2000,
              seed: int = 0, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Every pair of respondents (rows of ``y``) on the items both answered, Holm-corrected."""
    rows = []
    for i, j in combinations(range(len(names)), 2):
        both = ~np.isnan(y[i]) & ~np.isnan(y[j])
        if not both.any():
            continue
        cl = None if units is None else [u for u, keep in zip(units, both) if keep]
        rows.append({"a": names[i], "b": names[j], **paired_diff(y[i, both], y[j, both], cl, n_boot, seed, alpha)})
    for r, adj in zip(rows, holm([r["p_mcnemar"] for r in rows])):
        r["p_holm"] = adj
        r["significant"] = adj < alpha
    return rows
