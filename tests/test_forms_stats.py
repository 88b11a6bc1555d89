"""The equivalence statistic of `probegen forms`, validated on simulated clustered data.

Forms are simulated as clusters (a CoDA21 group, a WordNetQA concept) of items: each cluster has its
own success probability p_c drawn uniformly from [lo, hi], and its items are Bernoulli(p_c), so the
items of a cluster are correlated as real groups are. Every check uses a fixed seed and a bound
about 4 binomial standard deviations wide, so a correct implementation fails it with probability
under 1e-4 per seed; each bound is one a broken statistic misses (no clustering, a one-sided test,
a wrong interval)."""

from __future__ import annotations

import numpy as np

from probegen.forms.report import cluster_mean, tost

REPS = 1000


def _form(rng: np.random.Generator, n_units: int, size: int, lo: float, hi: float) -> tuple[np.ndarray, list[str]]:
    p = rng.uniform(lo, hi, n_units)
    y = (rng.random((n_units, size)) < p[:, None]).astype(float).ravel()
    return y, [str(u) for u in np.repeat(np.arange(n_units), size)]


def _rate(seed: int, a: tuple[float, float], b: tuple[float, float], margin: float, n_units: int = 400,
          size: int = 7) -> tuple[float, np.ndarray, np.ndarray]:
    """(share of replicates that conclude equivalence, estimated differences, their 90% intervals)."""
    rng = np.random.default_rng(seed)
    eq, diffs, cis = 0, [], []
    for _ in range(REPS):
        ya, ua = _form(rng, n_units, size, *a)
        yb, ub = _form(rng, n_units, size, *b)
        t = tost(ya, ua, yb, ub, margin=margin)
        eq += t.equivalent
        diffs.append(t.diff)
        cis.append(t.ci90)
    return eq / REPS, np.array(diffs), np.array(cis)


def test_size_at_the_margin_is_nominal():
    """True difference exactly at the margin (-0.05): TOST concludes equivalence in about alpha = 5%
    of replicates (binomial SD 0.7 points: bound 2..8%); clusters of 10 with a wide spread make an
    iid standard error too small (about 0.6 of the true one), which would push the rate to about 20%."""
    rate, diffs, _ = _rate(1, (0.1, 0.9), (0.15, 0.95), margin=0.05, size=10)
    assert 0.02 <= rate <= 0.08, rate
    assert abs(diffs.mean() + 0.05) < 0.003


def test_equivalence_when_forms_share_one_population():
    """Both forms from one item population: at +/- 0.05 with 400 clusters of 7 (SE of the difference
    about 0.015) the power is about 0.90, so at least 80% of replicates conclude equivalence."""
    rate, diffs, _ = _rate(2, (0.3, 0.7), (0.3, 0.7), margin=0.05)
    assert rate >= 0.80, rate
    assert abs(diffs.mean()) < 0.003


def test_planted_shift_is_rejected_and_recovered():
    """Form b 0.1 easier: no replicate concludes equivalence at +/- 0.03, the mean estimate is
    -0.1, and the 90% intervals cover -0.1 in 86..94% of replicates (binomial SD 0.95 points)."""
    rate, diffs, cis = _rate(3, (0.3, 0.7), (0.4, 0.8), margin=0.03)
    assert rate == 0.0
    assert abs(diffs.mean() + 0.1) < 0.003
    cover = np.mean((cis[:, 0] <= -0.1) & (-0.1 <= cis[:, 1]))
    assert 0.86 <= cover <= 0.94, cover
    # the other direction (form a easier): a test of one side only would call these equivalent
    rate, diffs, _ = _rate(5, (0.4, 0.8), (0.3, 0.7), margin=0.03)
    assert rate == 0.0
    assert abs(diffs.mean() - 0.1) < 0.003


def test_cluster_se_matches_the_spread_of_cluster_means():
    """The cluster-robust SE equals the SD of the form mean over replicates within 10% (an iid SE
    would be about 40% too small with these clusters)."""
    rng = np.random.default_rng(4)
    means, ses = [], []
    for _ in range(REPS):
        y, u = _form(rng, 200, 10, 0.1, 0.9)
        m, se, c = cluster_mean(y, u)
        means.append(m)
        ses.append(se)
        assert c == 200
    assert abs(np.mean(ses) / np.std(means) - 1) < 0.1
