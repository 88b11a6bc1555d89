"""Classical item analysis (works with a handful of respondents): p-values, item-rest (point-biserial)
correlations over the answered cells, distractor tables (a wrong option the stronger half picks more
marks a possibly mis-keyed item) and KR-20 with a percentile bootstrap CI over respondents.
"""

from __future__ import annotations

from typing import Any, Sequence, cast

import numpy as np

from ..stats.bootstrap import cluster_weights, percentile_ci


def rest_scores(y: np.ndarray) -> np.ndarray:
    """rest[j, i]: respondent j's accuracy on the items other than i they answered (NaN if none)."""
    m = ~np.isnan(y)
    tot = np.nansum(y, axis=1, keepdims=True)
    n = m.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return cast(np.ndarray, np.where(m, (tot - np.nan_to_num(y)) / (n - 1), tot / n))


def masked_corr(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Per column, the Pearson correlation of ``x`` and ``z`` where both are present (NaN: constant, < 3 rows).

    >>> masked_corr(np.array([[1.0], [0.0], [1.0], [np.nan]]), np.array([[0.9], [0.1], [0.8], [0.5]])).round(3)
    array([0.993])
    """
    m = ~np.isnan(x) & ~np.isnan(z)
    n = m.sum(axis=0)
    xs, zs = np.where(m, x, 0.0), np.where(m, z, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, mz = xs.sum(0) / n, zs.sum(0) / n
        dx, dz = np.where(m, x - mx, 0.0), np.where(m, z - mz, 0.0)
        r = (dx * dz).sum(0) / np.sqrt((dx ** 2).sum(0) * (dz ** 2).sum(0))
    r[(n < 3) | ~np.isfinite(r)] = np.nan
    return cast(np.ndarray, r)


def item_table(y: np.ndarray) -> dict[str, np.ndarray]:
    """Per item: ``n`` (respondents who answered), ``p`` (p-value), ``item_rest`` (point-biserial)."""
    n = (~np.isnan(y)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.nansum(y, axis=0) / n
    return {"n": n, "p": p, "item_rest": masked_corr(y, rest_scores(y))}


#: an item-rest correlation this many standard errors below 0 flags the item (``negative item-rest``)
REST_Z = 2.0


def rest_flags(item_rest: np.ndarray, n: np.ndarray, z: float = REST_Z) -> list[list[str]]:
    """Per item ``negative item-rest`` where r * sqrt(n - 3) < -z (Fisher's z): possibly mis-keyed, which a
    3PL can read as guessing (a mis-keyed easy item sits on the floor 1/k).

    >>> rest_flags(np.array([-0.5, -0.5, 0.4, np.nan]), np.array([40, 10, 40, 2]))
    [['negative item-rest'], [], [], []]
    """
    zs = np.nan_to_num(item_rest, nan=0.0) * np.sqrt(np.clip(n - 3, 0, None))
    return [["negative item-rest"] if v < -z else [] for v in zs]


def kr20(y: np.ndarray) -> float | None:
    """KR-20 of a complete 0/1 matrix (respondents x items); None when undefined.

    >>> round(kr20(np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float)), 3)
    0.75
    """
    j, k = y.shape
    if j < 2 or k < 2:
        return None
    var = y.sum(axis=1).var(ddof=1)
    if var <= 0:
        return None
    p = y.mean(axis=0)
    pq = (p * (1 - p)).sum() * j / (j - 1)  # the unbiased item variances, as the total's
    return float(k / (k - 1) * (1 - pq / var))


def kr20_ci(y: np.ndarray, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> dict[str, Any]:
    """KR-20 with a percentile bootstrap CI over respondents; missing cells filled with the item's p-value
    (``imputed`` counts them); a replicate without a KR-20 is left out."""
    m = np.isnan(y)
    with np.errstate(invalid="ignore"):
        p = np.nanmean(np.where(m.all(axis=0), 0.0, y), axis=0) if y.size else np.zeros(y.shape[1])
    filled = np.where(m, p[None, :], y)
    value = kr20(filled)
    out: dict[str, Any] = {"kr20": value, "ci": None, "items": int(y.shape[1]), "respondents": int(y.shape[0]),
                           "imputed": int(m.sum())}
    if value is None:
        return out
    (j, k), w = filled.shape, cluster_weights(len(filled), n_boot, seed)  # replicates x respondents
    tot, p = filled.sum(axis=1), (w @ filled) / j  # kr20 of each resample, from its multiplicities
    var = (w * (tot[None, :] - (w @ tot)[:, None] / j) ** 2).sum(axis=1) / (j - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = k / (k - 1) * (1 - (p * (1 - p)).sum(axis=1) * j / (j - 1) / np.where(var > 1e-12, var, np.nan))
    out["ci"] = percentile_ci(reps, alpha)
    return out


def _share(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0


def distractors(y: np.ndarray, chosen: Sequence[Sequence[Any]], keys: Sequence[Sequence[Any]],
                items: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (item, wrong option picked): picks, share of the stronger and weaker half who picked
    it, and ``suspect`` when the stronger half picks it more (possibly mis-keyed)."""
    rest = rest_scores(y)
    out = []
    for i, item in enumerate(items):
        who = [j for j in range(len(chosen)) if not np.isnan(y[j, i])]
        if len(who) < 2:
            continue
        r = np.array([rest[j, i] for j in who])
        med = np.nanmedian(r)
        strong = [j for j, v in zip(who, r) if v > med]
        weak = [j for j, v in zip(who, r) if v <= med]
        picked = {str(chosen[j][i]) for j in who if chosen[j][i] is not None and chosen[j][i] != keys[j][i]}
        for opt in sorted(picked):
            hi, lo = (_share([str(chosen[j][i]) == opt for j in grp]) for grp in (strong, weak))
            out.append({"item": item, "option": opt, "picks": sum(str(chosen[j][i]) == opt for j in who),
                        "strong_share": hi, "weak_share": lo, "suspect": bool(strong and weak and hi > lo)})
    return out
