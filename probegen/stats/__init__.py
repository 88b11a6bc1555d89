"""The statistics every analysis shares, each from the library that has it: :mod:`.bootstrap` (the
cluster bootstrap), :mod:`.variance` (the cluster-robust variance, statsmodels) and
:mod:`.significance` (Holm from statsmodels, the TOST, Satterthwaite's degrees of freedom)."""
