"""Per-item results out of probegen and into it, in other harnesses' formats (docs/exchange.md).

- :mod:`.export`: a ``probegen eval`` run as Every Eval Ever (aggregate JSON + samples JSONL,
  validated against the package's own JSON schemas, bundled in ``eee_schema/``) or as an inspect-ai
  eval log written through inspect-ai's own models;
- :mod:`.ingest`: lm-eval ``--log_samples`` files, inspect-ai eval logs and Every Eval Ever samples
  read as respondents of :mod:`probegen.itemstats` (``probegen items``), mapped to probegen's item ids.
"""
