"""The word-in-context record, one per line of the generic JSONL (see ``jsonl.py``).

Every item has a context (a :class:`~probegen.contexts.Context` held as text) with its target
located by character span. What is asked comes in one of three shapes (``task``):

- ``pair``: a second context with its own target span and a boolean ``label`` (WiC: is the
  target used in the same sense in both?);
- ``choice``: candidate ``choices`` (e.g. sense definitions) and the ``gold`` index (WSD);
- ``label``: a class ``label`` for the one context (e.g. a supersense tag).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..contexts import Context
from ..errors import DatasetError
from ..items import Item

__all__ = ["SPLITS", "TASKS", "Context", "Target", "WicItem"]

TASKS = ("pair", "choice", "label")
SPLITS = ("train", "dev", "test")

# The word-in-context context class before the shared one: ``Target(text, (a, b))`` builds a
# Context with the target at characters a:b (``.span`` and ``.word`` read as they did).
Target = Context


@dataclass(frozen=True)
class WicItem(Item):
    """One word-in-context item; ``unit`` groups items for bootstrap resampling and training
    subsamples (the lemma for WiC pairs, the SemCor document for WSD items).

    >>> it = WicItem("p1", "bank", "n", Context("the bank", (4, 8)), Context("a bank", (2, 6)), True)
    >>> it.task, it.to_json()["span2"], [c.surface for c, _ in it.targets()]
    ('pair', [2, 6], ['bank', 'bank'])
    """

    what = "word-in-context item"

    id: str
    lemma: str
    pos: str
    context: Context
    context2: Context | None = None
    label: Any = None  # pair: bool; label task: a string
    choices: tuple[str, ...] = ()
    gold: int | None = None
    split: str = "test"
    unit: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def task(self) -> str:
        if self.context2 is not None:
            return "pair"
        return "choice" if self.choices else "label"

    def targets(self) -> Iterator[tuple[Context, str]]:
        """Both contexts of a pair (one otherwise), each with the item's lemma."""
        yield self.context, self.lemma
        if self.context2 is not None:
            yield self.context2, self.lemma

    def to_json(self) -> dict[str, Any]:
        """The item as one generic-JSONL object (only the fields its task uses)."""
        d: dict[str, Any] = {"id": self.id, "lemma": self.lemma, "pos": self.pos,
                             "context": self.context.text, "span": list(self.context.char_span)}
        if self.context2 is not None:
            d.update(context2=self.context2.text, span2=list(self.context2.char_span), label=bool(self.label))
        elif self.choices:
            d.update(choices=list(self.choices), gold=self.gold)
        else:
            d["label"] = self.label
        d.update(split=self.split, unit=self.unit or self.lemma)
        if self.meta:
            d["meta"] = self.meta
        return d

    @classmethod
    def from_json(cls, d: Any, line: int = 0) -> "WicItem":
        """One generic-JSONL object as an item (``line``: its line, for the default id
        ``line<N>``); a DatasetError saying what is wrong (``jsonl.parse_row`` checks it)."""
        from .jsonl import LineError, parse_row

        try:
            return parse_row(d, line)
        except LineError as e:
            raise DatasetError(f"malformed {cls.what}{f' (line {line})' if line else ''}: {e}") from None
