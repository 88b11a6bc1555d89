"""The cluster bootstrap: whole clusters (CoDA21 groups, WordNetQA concepts, respondents) drawn with
replacement, one seeded draw per replicate shared by every statistic of that replicate.

A replicate is a row of multiplicities (how often each cluster was drawn), so a statistic that is
a ratio of sums over clusters is two matrix products, and every statistic of one replicate sees the
same resample (paired intervals: an ablation and its gap, two models on shared units). The draw is
``Generator.multinomial(n, 1/n)``; ``scipy.stats.bootstrap`` draws indices instead
(``integers(0, n, (B, n))``) and evaluates the statistic on resampled data, so it would give every
seeded interval in results.json other numbers and cannot share one draw across a run's statistics.
Its percentile interval is the one :func:`percentile_ci` computes (``tests/test_stats.py`` compares
the two).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

ALPHA = 0.05


def cluster_weights(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """Replicates x clusters multiplicities: ``n_clusters`` clusters drawn with replacement per replicate.

    >>> w = cluster_weights(3, 4, 0)
    >>> w.shape, w.sum(axis=1).tolist()
    ((4, 3), [3.0, 3.0, 3.0, 3.0])
    """
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot).astype(np.float64)


def percentile_ci(reps: np.ndarray, alpha: float = ALPHA) -> list[float] | None:
    """The ``1 - alpha`` percentile interval of the finite replicates; None if none is finite.

    >>> percentile_ci(np.arange(101.0)), percentile_ci(np.array([np.nan]))
    ([2.5, 97.5], None)
    """
    reps = np.asarray(reps)
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return None
    lo, hi = np.percentile(reps, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return [float(lo), float(hi)]


def cluster_sums(values: np.ndarray, clusters: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster, in first-seen order: the sum of ``values`` (rows x ...) and the number of rows.

    >>> s, n = cluster_sums(np.array([1.0, 0.0, 1.0]), ["a", "a", "b"])
    >>> s.tolist(), n.tolist()
    ([1.0, 1.0], [2.0, 1.0])
    """
    order: dict[Any, int] = {}
    idx = np.array([order.setdefault(c, len(order)) for c in clusters], dtype=int)
    values = np.asarray(values, dtype=np.float64)
    sums = np.zeros((len(order),) + values.shape[1:])
    np.add.at(sums, idx, values)
    return sums, np.bincount(idx, minlength=len(order)).astype(np.float64)


def ratio_ci(num: np.ndarray, den: np.ndarray, w: np.ndarray, alpha: float = ALPHA) -> Any:
    """{value, ci} of sum(num) / sum(den) over clusters (per column when 2-D), the CI from weights ``w``
    (:func:`cluster_weights`).

    >>> r = ratio_ci(np.array([1.0, 0.0, 1.0]), np.ones(3), cluster_weights(3, 200, 0))
    >>> round(r["value"], 3), r["ci"][0] <= r["value"] <= r["ci"][1]
    (0.667, True)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        point = num.sum(axis=0) / den.sum(axis=0)
        reps = (w @ num) / (w @ den)
    if np.ndim(point) == 0:
        return {"value": None if not np.isfinite(point) else float(point), "ci": percentile_ci(reps, alpha)}
    return [{"value": None if not np.isfinite(p) else float(p), "ci": percentile_ci(reps[:, j], alpha)}
            for j, p in enumerate(point)]


def cluster_ci(values: np.ndarray, clusters: Sequence[Any] | None, n_boot: int, seed: int,
               alpha: float = ALPHA) -> list[float] | None:
    """Percentile CI of the mean of per-row ``values``, resampling whole ``clusters`` (each row its own
    cluster if None).

    >>> lo, hi = cluster_ci(np.array([1, 1, 0, 0, 1, 0.] * 5), [i // 2 for i in range(30)], 500, 0)
    >>> 0.2 < lo < 0.5 < hi < 0.8
    True
    """
    sums, counts = cluster_sums(values, range(len(values)) if clusters is None else clusters)
    w = cluster_weights(len(counts), n_boot, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        return percentile_ci((w @ sums) / (w @ counts), alpha)
