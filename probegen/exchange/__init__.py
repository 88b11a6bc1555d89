"""Per-item results into and out of probegen (docs/exchange.md): :mod:`.respondent` (the one per-item table
type), :mod:`.runs` (probegen's run, bias and study folders read as respondents), :mod:`.ingest` (lm-eval,
inspect-ai and Every Eval Ever files read as respondents), :mod:`.export` (an eval run written as Every Eval
Ever or an inspect-ai log). :mod:`probegen.itemstats` analyses the respondents; this package never imports it.
"""
