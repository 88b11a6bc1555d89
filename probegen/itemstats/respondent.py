"""One respondent's answers (:class:`Respondent`) and how runs name their dataset: the types the
response table (:mod:`.table`) and the readers of other harnesses' results
(:mod:`probegen.exchange.ingest`) share, without either importing the other."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Respondent:
    """One respondent's answers: ``cells`` maps item id -> cell dict (the table's columns but the respondent's)."""

    name: str
    model: str
    method: str
    variant: str
    source: str
    dataset: str
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the dataset is unknown (another harness's results): :func:`gather` gives it the runs' dataset holding its items
    adopt: bool = False
    #: the manifest of the probegen dataset a foreign file says it answered (an lm-eval export's
    #: ``dataset_manifest``), where it says so: what ``probegen forms`` and ``compare`` identify it by
    manifest: dict[str, Any] | None = None


def _dataset_key(path: Any, kind: Any = None) -> str:
    """How runs name their dataset, comparable across runs: its real path where it exists (``kind``
    is not part of it: a bias run's entries do not all record it)."""
    p = str(path)
    return os.path.realpath(p) if os.path.exists(p) else p


def identity(resp: Respondent) -> str:
    """``model|method|variant``: one respondent's name across datasets (``probegen forms``, ``compare``).
    A foreign file's variant is left out: it names the file's task (lm-eval ``task=...``, EEE
    ``result=...``), which differs from one dataset to the next for one model and method."""
    return f"{resp.model}|{resp.method}" if resp.adopt else f"{resp.model}|{resp.method}|{resp.variant}"
