"""The one per-item table type: a respondent's answers (:class:`Respondent`), its cells' checks and how
runs name their dataset. :mod:`probegen.exchange` makes respondents (runs, studies, other harnesses'
files) and :mod:`probegen.itemstats` analyses them."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import ProbegenError


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
    #: what each item is, where the file carries it: item id -> (key, options) (:func:`content`); the
    #: join checks it (:func:`contradiction`), never the id alone
    content: dict[str, tuple[Any, tuple[str, ...] | None]] = field(default_factory=dict)
    #: the dataset's fingerprint where the file names it (a run's ``dataset.manifest_sha256``)
    fingerprint: str | None = None


def dataset_key(path: Any, kind: Any = None) -> str:
    """How runs name their dataset, comparable across runs: its real path where it exists (``kind``
    is not part of it: a bias run's entries do not all record it)."""
    p = str(path)
    return os.path.realpath(p) if os.path.exists(p) else p


def identity(resp: Respondent) -> str:
    """``model|method|variant``: one respondent's name across datasets (``probegen forms``, ``compare``).
    A foreign file's variant is left out: it names the file's task (lm-eval ``task=...``, EEE
    ``result=...``), which differs from one dataset to the next for one model and method."""
    return f"{resp.model}|{resp.method}" if resp.adopt else f"{resp.model}|{resp.method}|{resp.variant}"


def check_correct(value: Any, where: str, partial: bool = False) -> float:
    """A cell's correctness as a float: 0 or 1, or with ``partial`` (a foreign scorer's documented
    partial credit, e.g. inspect-ai's P = 0.5) any number in [0, 1]; anything else is one line naming
    ``where`` (file and line). A bool is 0 or 1.

    >>> check_correct(1, "f line 1"), check_correct(True, "f"), check_correct(0.5, "f", partial=True)
    (1.0, 1.0, 0.5)
    >>> check_correct(0.5, "f line 3")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: f line 3: correct is 0.5, not 0 or 1
    >>> check_correct(float("nan"), "f line 2", partial=True)
    Traceback (most recent call last):
    probegen.errors.ProbegenError: f line 2: correct is nan, not a number in [0, 1]
    """
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        (0 <= value <= 1 if partial else value in (0, 1))
    if isinstance(value, bool) or ok:
        return float(value)
    shown = str(repr(value) if not isinstance(value, (int, float)) else value)[:60]
    raise ProbegenError(f"{where}: correct is {shown}, not " + ("a number in [0, 1]" if partial else "0 or 1"))


def content(key: Any, options: Sequence[Any] | None) -> tuple[Any, tuple[str, ...] | None]:
    """What an item is, as a file carries it: its key (the right option's label) and its options'
    labels (None where the file has none). The options are compared as a set: a tool may show them
    in another order.

    >>> content("b", ["b", "a"])
    ('b', ('a', 'b'))
    """
    opts = tuple(sorted(str(o) for o in options)) if isinstance(options, (list, tuple)) and options else None
    return key, opts


def contradiction(a: tuple[Any, tuple[str, ...] | None], b: tuple[Any, tuple[str, ...] | None]) -> str | None:
    """Why two files' contents of an item of one id are not one question (None if nothing says so):
    their options differ, or their keys differ where both are labels of the same options (a key
    written as a letter or an index by another tool is not compared with a key written as text).

    >>> contradiction(content("x", ["x", "y"]), content("y", ["y", "x"]))
    "key 'x' vs 'y'"
    >>> contradiction(content("x", ["x", "y"]), content("A", None)) is None
    True
    >>> contradiction(content("x", ["x", "y"]), content("p", ["p", "q"]))
    "options differ: 'x; y' vs 'p; q'"
    """
    (ka, oa), (kb, ob) = a, b
    if oa is not None and ob is not None and oa != ob:
        return f"options differ: {'; '.join(oa)[:60]!r} vs {'; '.join(ob)[:60]!r}"
    opts = set(oa or ()) | set(ob or ())
    if ka is None or kb is None or str(ka) == str(kb) or type(ka) is not type(kb):
        return None
    if isinstance(ka, str) and not (ka in opts and kb in opts):
        return None
    return f"key {str(ka)[:60]!r} vs {str(kb)[:60]!r}"
