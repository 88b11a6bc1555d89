"""Human baselines: studies where people answer the same probe items as models.

A study directory (``probegen study make``) holds:

- ``manifest.json``: dataset path and content hash, conditions, sizes, seed, design, counts and
  the sha256 of every file below except the secrets and the answers;
- ``items.jsonl``: what annotators see, one row per (condition, item): no gold, no synset names;
- ``assignment.json``: per annotator, its condition and items in presentation order, and which
  of them are shared with the condition's other annotators (the overlap for agreement);
- ``gold.jsonl``: the answers and what scoring needs; never served to annotators;
- ``tokens.json``: the annotators' secret URL tokens (the only file that differs between two
  runs with the same seed: tokens must be unguessable);
- ``answers/<annotator>.jsonl``: answers as given, appended and fsynced one by one
  (``probegen study serve`` and ``probegen study import``).

The library part lives here (views, sampling, storage, CSV, the Flask app); scoring with
bootstrap CIs and bias ratios is in ``diagnostics.human``.
"""
