"""Holm's correction (statsmodels), the TOST of a difference with a given standard error (statsmodels'
``ttost_ind`` takes iid raw samples only) and Welch-Satterthwaite degrees of freedom."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def holm(p: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as ``p``), rounded to 12 decimals.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    from statsmodels.stats.multitest import multipletests

    if not len(p):
        return []
    return [round(float(q), 12) for q in multipletests(np.asarray(p, dtype=np.float64), method="holm")[1]]


@dataclass
class Tost:
    """A two one-sided test of ``|diff| < margin``."""

    diff: float
    se: float
    df: int
    ci90: tuple[float, float]  # the 1 - 2 alpha interval of the difference (inside +/- margin: equivalent)
    p_lower: float  # H0: diff <= -margin
    p_upper: float  # H0: diff >= +margin
    margin: float
    alpha: float
    margin_met: float  # the smallest margin this test would call equivalent (NaN for a degenerate test)
    degenerate: bool = False  # no standard error: the test says nothing (never equivalent)

    @property
    def p(self) -> float:
        return max(self.p_lower, self.p_upper)

    @property
    def equivalent(self) -> bool:
        return not self.degenerate and self.p < self.alpha


def tost(diff: float, se: float, df: int, margin: float, alpha: float) -> Tost:
    """The TOST of a difference ``diff`` with standard error ``se`` on ``df`` degrees of freedom. A zero SE
    (every item answered alike on both forms) is degenerate: NaN p-values, never equivalent.

    >>> t = tost(0.01, 0.01, 100, 0.03, 0.05)
    >>> t.equivalent, round(t.margin_met, 3)
    (True, 0.027)
    >>> t = tost(0.0, 0.0, 100, 0.03, 0.05)
    >>> t.degenerate, t.equivalent
    (True, False)
    """
    from scipy import stats

    df = max(int(df), 1)
    tcrit = float(stats.t.ppf(1 - alpha, df))
    if not se > 0:
        nan = float("nan")
        return Tost(diff, 0.0, df, (nan, nan), nan, nan, margin, alpha, nan, degenerate=True)
    p_lo = float(stats.t.sf((diff + margin) / se, df))
    p_hi = float(stats.t.cdf((diff - margin) / se, df))
    return Tost(diff, se, df, (diff - tcrit * se, diff + tcrit * se), p_lo, p_hi, margin, alpha,
                abs(diff) + tcrit * se)


def satterthwaite_df(variances: Sequence[float], dfs: Sequence[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variance components, each estimated on its
    own degrees of freedom (``inf``: known).

    >>> satterthwaite_df([0.5, 0.5], [9, 9]), satterthwaite_df([0.2, 0.1], [4, float("inf")])
    (18.0, 9.0)
    """
    v, d = np.asarray(variances, dtype=np.float64), np.asarray(dfs, dtype=np.float64)
    return float(v.sum() ** 2 / np.sum(v**2 / d))
