"""The one item protocol every probe record builds on (CoDA21 ``Group``, WordNetQA ``MCItem``,
``WicItem``): an ``id``, a part of speech ``pos`` ("" when a file does not say), its hidden targets
(``targets()``) and one JSON object per record in its kind's own layout (``to_json``/``from_json``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Iterator

from .contexts import Context

__all__ = ["Item"]


class Item(ABC):
    """One record of a dataset (a line of its records file); ``what`` names it in error messages.

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
