"""Human baselines: studies where people answer the same probe items as models.

A study directory (``probegen study make``) holds ``manifest.json`` (dataset, design, counts, file
hashes), ``items.jsonl`` (what annotators see: no gold), ``assignment.json`` (per annotator: condition,
items in order, shared items), ``gold.jsonl`` (never served), ``tokens.json`` (the secret URL tokens) and
``answers/<annotator>.jsonl`` (appended and fsynced one by one). Scoring is in ``diagnostics.human``.
"""
