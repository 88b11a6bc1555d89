"""The cluster bootstrap: whole clusters drawn with replacement, one seeded draw per replicate shared by
every statistic (paired intervals), as rows of multiplicities. Percentile intervals as
``scipy.stats.bootstrap``'s, whose own draws would change every seeded interval already written."""

from __future__ import annotations

from typing import Any, Iterable, cast

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


def cluster_index(keys: Iterable[Any]) -> tuple[np.ndarray, list[Any]]:
    """(each row's cluster index, the cluster keys in first-seen order).

    >>> idx, names = cluster_index(["b", "b", "a"])
    >>> idx.tolist(), names
    ([0, 0, 1], ['b', 'a'])
    """
    order: dict[Any, int] = {}
    idx = np.array([order.setdefault(k, len(order)) for k in keys], dtype=int)
    return idx, list(order)


def per_cluster(values: np.ndarray, idx: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per-row values (rows x ...) summed per cluster (clusters x ...)."""
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros((n_clusters,) + values.shape[1:])
    np.add.at(out, idx, values)
    return out


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


def cluster_ci(values: np.ndarray, clusters: Iterable[Any] | None, n_boot: int, seed: int,
               alpha: float = ALPHA) -> list[float] | None:
    """Percentile CI of the mean of per-row ``values`` resampling whole ``clusters`` (None: every row
    its own).

    >>> lo, hi = cluster_ci(np.array([1, 1, 0, 0, 1, 0.] * 5), [i // 2 for i in range(30)], 500, 0)
    >>> 0.2 < lo < 0.5 < hi < 0.8
    True
    """
    idx, names = cluster_index(range(len(values)) if clusters is None else clusters)
    sums, counts = per_cluster(values, idx, len(names)), per_cluster(np.ones(len(idx)), idx, len(names))
    return cast("list[float] | None", ratio_ci(sums, counts, cluster_weights(len(names), n_boot, seed), alpha)["ci"])
