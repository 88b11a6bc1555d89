"""probegen.stats against published and library values: Holm against the textbook example, the TOST
and Welch-Satterthwaite against statsmodels and scipy, the cluster-robust variance against
statsmodels' item-level fit, the bootstrap against scipy.stats.bootstrap on the same draws and
against a planted mean in simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from probegen.itemstats.classical import kr20, kr20_ci
from probegen.stats.bootstrap import cluster_ci, cluster_index, cluster_weights, per_cluster, percentile_ci, ratio_ci
from probegen.stats.significance import holm, satterthwaite_df, tost
from probegen.stats.variance import ratio_variance


def test_holm_textbook_example():
    """Holm (1979) as Wikipedia's "Holm-Bonferroni method" works it: p 0.01, 0.04, 0.03, 0.005 at
    alpha 0.05 rejects the first and the fourth only; adjusted p (R's p.adjust "holm") 0.03, 0.06,
    0.06, 0.02."""
    adj = holm([0.01, 0.04, 0.03, 0.005])
    assert adj == [0.03, 0.06, 0.06, 0.02]
    assert [a < 0.05 for a in adj] == [True, False, False, True]
    assert holm([]) == []


def test_holm_is_the_step_down_maximum_and_ignores_order():
    rng = np.random.default_rng(0)
    p = np.round(rng.random(12) ** 3, 3)  # ties included
    order = np.argsort(p, kind="stable")
    want = np.empty(12)
    want[order] = np.minimum(1, np.maximum.accumulate((12 - np.arange(12)) * p[order]))
    assert holm(list(p)) == pytest.approx(want, abs=1e-12)
    perm = rng.permutation(12)
    assert [holm(list(p))[i] for i in perm] == holm(list(p[perm]))


def test_tost_gives_statsmodels_ttost_ind_on_iid_samples():
    """With every item its own cluster the CR1 standard error is the iid one, and with equal sizes the
    df n_a + n_b - 2 and the SE are those of the pooled t test: statsmodels' ttost_ind p-values."""
    from statsmodels.stats.weightstats import ttost_ind

    rng = np.random.default_rng(1)
    a, b = rng.normal(0.50, 0.2, 40), rng.normal(0.52, 0.2, 40)
    (ma, va), (mb, vb) = (ratio_variance(x, np.ones(len(x))) for x in (a, b))
    t = tost(ma - mb, float(np.sqrt(va + vb)), 2 * 40 - 2, 0.1, 0.05)
    p, lower, upper = ttost_ind(a, b, -0.1, 0.1, usevar="pooled")
    assert t.p == pytest.approx(p, rel=1e-9)
    assert (t.p_lower, t.p_upper) == pytest.approx((lower[1], upper[1]), rel=1e-9)
    assert t.df == lower[2] and t.equivalent == (p < 0.05)


def test_satterthwaite_df_is_welchs_two_sample_df():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 12), rng.normal(0, 3, 30)
    want = sps.ttest_ind(a, b, equal_var=False).df
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    assert satterthwaite_df([va, vb], [len(a) - 1, len(b) - 1]) == pytest.approx(want, rel=1e-12)
    assert satterthwaite_df([va, vb], [len(a) - 1, float("inf")]) > len(a) - 1  # a known part adds df


def test_ratio_variance_is_statsmodels_cluster_robust_se_on_the_items():
    """Clusters of unequal size (known): the variance from cluster sums equals the squared SE of an
    OLS fit of the items on a constant with cov_type="cluster" (CR1), and the hand formula."""
    from statsmodels.regression.linear_model import OLS

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, 25)
    groups = np.repeat(np.arange(25), sizes)
    y = (rng.random(len(groups)) < rng.beta(3, 2, 25)[groups]).astype(float)
    fit = OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    idx, names = cluster_index(groups)
    s, n = per_cluster(y, idx, 25), np.bincount(idx).astype(float)
    mean, var = ratio_variance(s, n)
    assert mean == pytest.approx(y.mean()) and var == pytest.approx(fit.bse[0] ** 2, rel=1e-10)
    assert var == pytest.approx(25 / 24 * ((s - mean * n) ** 2).sum() / n.sum() ** 2, rel=1e-10)
    assert np.isnan(ratio_variance(s[:1], n[:1])[1]) and ratio_variance(n, n) == (1.0, 0.0)


def test_bootstrap_interval_is_scipys_on_the_same_draws():
    """scipy.stats.bootstrap draws indices integers(0, n, (B, n)) from the generator it is given;
    those draws as multiplicities give ratio_ci the same replicates and the same percentile interval."""
    x = np.random.default_rng(3).random(37)
    res = sps.bootstrap((x,), np.mean, n_resamples=999, method="percentile", rng=np.random.default_rng(5),
                        vectorized=True)
    idx = np.random.default_rng(5).integers(0, len(x), (999, len(x)))
    w = np.stack([np.bincount(r, minlength=len(x)) for r in idx]).astype(float)
    assert ratio_ci(x, np.ones(len(x)), w)["ci"] == pytest.approx(list(res.confidence_interval), rel=1e-12)
    assert percentile_ci(np.array([np.nan, np.inf])) is None


def _coverage(clustered: bool, sims: int = 600) -> float:
    """Share of 95% intervals covering the planted mean 0.6: 30 clusters of 1-8 items, each cluster's
    success rate drawn from Beta(3, 2) (mean 0.6), so items of one cluster are correlated."""
    rng = np.random.default_rng(2024)
    hit = 0
    for r in range(sims):
        sizes = rng.integers(1, 9, 30)
        rate = rng.beta(3, 2, 30)
        y = np.concatenate([rng.random(s) < p for s, p in zip(sizes, rate)]).astype(float)
        ci = cluster_ci(y, np.repeat(np.arange(30), sizes) if clustered else None, 400, r)
        assert ci is not None
        hit += ci[0] <= 0.6 <= ci[1]
    return hit / sims


def test_cluster_bootstrap_covers_a_planted_mean_at_its_nominal_rate():
    """Measured 0.930 here (558 of 600 datasets) and 0.937 over 1,000 datasets with 500 replicates: the
    percentile interval runs a little short of 95% with 30 clusters. With another seed the bound
    [0.90, 0.98] over 600 datasets fails by chance with probability 2e-4 if the true coverage is 0.937
    (binomial tail P(X < 540 | 600, 0.937)), 2e-3 if it is 0.93. Resampling items instead of clusters
    covers 0.827 (measured, 300 datasets; 0.861 over 1,000) and fails it: see below."""
    assert 0.90 <= _coverage(True) <= 0.98


def test_resampling_items_of_clustered_data_would_fail_the_coverage_bound():
    assert _coverage(False, 300) < 0.90


def test_cluster_weights_draw_whole_clusters_with_replacement():
    w = cluster_weights(5, 4000, 7)
    assert w.shape == (4000, 5) and (w.sum(axis=1) == 5).all()
    assert w.mean(axis=0) == pytest.approx(np.ones(5), abs=0.05)  # each cluster drawn once on average
    assert (cluster_weights(5, 10, 7) == w[:10]).all()  # seeded: the same draws


def test_kr20_ci_replicates_are_kr20_of_the_resampled_respondents():
    """The KR-20 interval reads each replicate from its multiplicities: the same as KR-20 of the
    resampled matrix. On responses shuffled within each item (no common trait) the interval sits near 0."""
    rng = np.random.default_rng(0)
    y = (rng.normal(size=(50, 1)) + rng.normal(size=(50, 20)) > 0).astype(float)
    w = cluster_weights(50, 300, 4)
    reps = [kr20(y[np.repeat(np.arange(50), row.astype(int))]) for row in w]
    assert kr20_ci(y, 300, 4)["ci"] == pytest.approx(percentile_ci(np.array(reps, dtype=float)), rel=1e-9)
    shuffled = np.column_stack([rng.permutation(col) for col in y.T])
    lo, hi = kr20_ci(shuffled, 300, 4)["ci"]
    assert lo < 0.1 and hi < 0.5 and kr20_ci(y, 300, 4)["ci"][0] > 0.7
