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


def test_zero_se_tost_is_degenerate_not_equivalent(tmp_path):
    """Issue 46: two forms a respondent gets all right have no spread; the TOST said "equivalent at
    +/-0.000". Now it is degenerate: never equivalent, left out of the margin every test meets, marked
    in equivalence.csv and the report, and the JSON holds no NaN."""
    import json

    from probegen.forms.report import FormRun, analyse, write

    units = [str(i // 2) for i in range(20)]
    t = tost(np.ones(20), units, np.ones(20), units)
    assert t.degenerate and not t.equivalent and np.isnan(t.margin_met)
    rng = np.random.default_rng(0)
    frs = [FormRun("a|score|", f, f"form{f}", [f"i{f}-{i}" for i in range(20)], np.ones(20), units, [2] * 20)
           for f in (1, 2)]
    frs += [FormRun("b|score|", f, f"form{f}", [f"i{f}-{i}" for i in range(20)], (rng.random(20) < 0.5) * 1.0,
                    units, [2] * 20) for f in (1, 2)]
    res = analyse(frs, {"family": "x", "siblings": ["form1", "form2"]}, n_boot=50, irt_model=None)
    deg = [e for e in res["equivalence"] if e["degenerate"]]
    assert [e["respondent"] for e in deg] == ["a|score|"] and not deg[0]["equivalent"]
    s = res["summary"]
    assert s["degenerate_tests"] == 1 and s["margin_met"] > 0  # the other tests' margin, not 0.000
    write(res, tmp_path / "out", [])
    text = (tmp_path / "out" / "report.md").read_text()
    assert "degenerate (SE 0)" in text and "+/- 0.000" not in text

    def refuse(token: str) -> None:
        raise ValueError(token)

    json.loads((tmp_path / "out" / "summary.json").read_text(), parse_constant=refuse)
    row = next(r for r in (tmp_path / "out" / "equivalence.csv").read_text().splitlines() if r.startswith("a|"))
    assert row.endswith(",True")


def test_nan_margin_and_alpha_are_refused(tmp_path):
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    for opt in ("--margin", "--alpha"):
        for bad in ("nan", "inf"):
            r = CliRunner().invoke(cli, ["forms", "a", "b", opt, bad, "--out", str(tmp_path / "o")])
            assert r.exit_code == 2 and "must be a finite number" in r.output, r.output
