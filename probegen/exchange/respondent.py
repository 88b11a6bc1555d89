"""The one per-item table type, :class:`Respondent`, with its cells' checks and how runs name their dataset:
:mod:`probegen.exchange` makes respondents and :mod:`probegen.itemstats` analyses them."""

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
    #: the dataset is unknown (another harness's results): the join gives it the runs' dataset holding its items
    adopt: bool = False
    #: the manifest of the dataset a foreign file says it answered (``probegen forms`` and ``compare``)
    manifest: dict[str, Any] | None = None
    #: item id -> (key, options) (:func:`content`), where the file carries them: what the join checks
    content: dict[str, tuple[Any, tuple[str, ...] | None]] = field(default_factory=dict)
    #: the dataset's fingerprint where the file names it (a run's ``dataset.manifest_sha256``)
    fingerprint: str | None = None


def dataset_key(path: Any) -> str:
    """How runs name their dataset, comparable across runs: its real path where it exists."""
    p = str(path)
    return os.path.realpath(p) if os.path.exists(p) else p


def identity(resp: Respondent) -> str:
    """``model|method|variant``: one respondent's name across datasets (``probegen forms``, ``compare``); a
    foreign file's variant (its task, which differs from one dataset to the next) is left out."""
    return f"{resp.model}|{resp.method}" if resp.adopt else f"{resp.model}|{resp.method}|{resp.variant}"


def check_correct(value: Any, where: str, partial: bool = False) -> float:
    """A cell's correctness as a float: 0 or 1 (a bool too), or with ``partial`` (documented partial
    credit) any number in [0, 1]; anything else is one line naming ``where``.

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
    """What an item is, as a file carries it: its key's label and its options' labels as a set (None if none).

    >>> content("b", ["b", "a"])
    ('b', ('a', 'b'))
    """
    opts = tuple(sorted(str(o) for o in options)) if isinstance(options, (list, tuple)) and options else None
    return key, opts


def contradiction(a: tuple[Any, tuple[str, ...] | None], b: tuple[Any, tuple[str, ...] | None]) -> str | None:
    """Why two files' contents of one item id are not one question (None if nothing says so): other
    options, or other keys where both are labels of those options (not a letter against a text).

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
