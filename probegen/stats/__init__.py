"""The statistics every analysis shares, written once, each from the library that has it.

- :mod:`.bootstrap`: the cluster bootstrap (whole clusters drawn with replacement by a seeded
  ``numpy.random.Generator``; percentile intervals as ``scipy.stats.bootstrap`` computes them);
- :mod:`.variance`: the cluster-robust (CR1) variance of a ratio mean, from statsmodels;
- :mod:`.significance`: Holm's correction (statsmodels ``multipletests``), the TOST of a difference
  with a given standard error, and Satterthwaite's degrees of freedom.
"""
