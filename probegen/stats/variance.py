"""The cluster-robust variance of a mean over clusters of unequal size, from statsmodels: cluster means
on a constant by weighted least squares (weights: sizes), ``cov_type="cluster"``, one cluster per row;
the factor G/(G-1) (N-1)/(N-K) is CR1's G/(G-1) there (N = G, K = 1)."""

from __future__ import annotations

import numpy as np


def ratio_variance(sums: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """(sum(sums) / sum(counts), its cluster-robust CR1 variance), one cluster per entry; the variance
    is NaN with fewer than 2 clusters and 0 when every cluster's mean is the mean.

    >>> m, v = ratio_variance(np.array([2.0, 0.0, 1.0]), np.array([2.0, 2.0, 2.0]))
    >>> round(m, 3), round(v ** 0.5, 3)
    (0.5, 0.289)
    """
    from statsmodels.regression.linear_model import WLS

    sums, counts = np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    mean = float(sums.sum() / counts.sum())
    if len(sums) < 2:
        return mean, float("nan")
    if not (sums - mean * counts).any():  # every cluster at the mean: exactly 0, where the fit leaves rounding
        return mean, 0.0
    fit = WLS(sums / counts, np.ones(len(sums)), weights=counts).fit(
        cov_type="cluster", cov_kwds={"groups": np.arange(len(sums))})
    return mean, float(fit.bse[0] ** 2)
