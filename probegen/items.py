"""The one item protocol every probe record builds on.

A dataset is a list of records, one JSON object a line of its records file, plus a manifest
(:class:`probegen.dataset.Dataset`). Each kind has its record class, built on :class:`Item`:

- CoDA21: :class:`probegen.coda21.items.Group`, k synsets whose contexts are aligned to their
  definitions (each a :class:`~probegen.coda21.items.Member`);
- WordNetQA: :class:`probegen.wordnetqa.items.MCItem`, one multiple-choice question;
- word in context: :class:`probegen.wordincontext.items.WicItem`, a pair, a choice or a label.

Every record has an ``id`` and a part of speech ``pos`` (empty when a file does not say), hides
its target word in one or more :class:`~probegen.contexts.Context` s (``targets()``), and reads
and writes itself as one JSON object (``to_json`` / ``from_json``). The layouts differ by kind
and predate this module: each ``to_json`` writes its kind's layout byte for byte as before.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Iterator

from .contexts import Context

__all__ = ["Item"]


class Item(ABC):
    """One record of a dataset (a line of its records file); see the module doc.

    ``what`` names the record in error messages ("malformed CoDA21 group g7: ...").

    >>> from probegen.wordincontext.items import WicItem
    >>> it = WicItem("q1", "bank", "n", Context("a bank loan", (2, 6)), choices=("x", "y"), gold=1, unit="bank")
    >>> isinstance(it, Item), it.what, [(c.surface, lemma) for c, lemma in it.targets()]
    (True, 'word-in-context item', [('bank', 'bank')])
    >>> WicItem.from_json(it.to_json()) == it
    True
    """

    __slots__ = ()
    what: ClassVar[str] = "item"

    # every record has these (dataclass fields of the subclasses)
    id: str
    pos: str

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The record as one JSON object in its kind's layout."""

    @classmethod
    @abstractmethod
    def from_json(cls, d: Any) -> "Item":
        """The record read from one JSON object (a DatasetError saying what is wrong)."""

    @abstractmethod
    def targets(self) -> Iterator[tuple[Context, str]]:
        """(context, lemma) of every hidden target: what the no-leak check looks at."""
