"""The word-in-context item model, one per line of the generic JSONL (see ``jsonl.py``).

Every item has a context with its target located by character span. What is asked comes in one
of three shapes (``task``):

- ``pair``: a second context with its own target span and a boolean ``label`` (WiC: is the
  target used in the same sense in both?);
- ``choice``: candidate ``choices`` (e.g. sense definitions) and the ``gold`` index (WSD);
- ``label``: a class ``label`` for the one context (e.g. a supersense tag).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..text import replace_char_span

TASKS = ("pair", "choice", "label")
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Target:
    """A context with the target word at ``span`` (characters ``text[a:b]``)."""

    text: str
    span: tuple[int, int]

    @property
    def word(self) -> str:
        a, b = self.span
        return self.text[a:b]

    def masked(self, replacement: str) -> "Target":
        """The context with the target replaced by ``replacement``, the span now on it.

        >>> Target("the mice saw ice", (13, 16)).masked("[MASK]")
        Target(text='the mice saw [MASK]', span=(13, 19))
        """
        a, _ = self.span
        return Target(replace_char_span(self.text, self.span, replacement), (a, a + len(replacement)))

    def alone(self) -> "Target":
        """The target word without its context.

        >>> Target("the mice saw ice", (13, 16)).alone()
        Target(text='ice', span=(0, 3))
        """
        w = self.word
        return Target(w, (0, len(w)))


@dataclass(frozen=True)
class WicItem:
    """One word-in-context item; ``unit`` groups items for bootstrap resampling and training
    subsamples (the lemma for WiC pairs, the SemCor document for WSD items)."""

    id: str
    lemma: str
    pos: str
    context: Target
    context2: Target | None = None
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

    def to_json(self) -> dict[str, Any]:
        """The item as one generic-JSONL object (only the fields its task uses)."""
        d: dict[str, Any] = {"id": self.id, "lemma": self.lemma, "pos": self.pos,
                             "context": self.context.text, "span": list(self.context.span)}
        if self.context2 is not None:
            d.update(context2=self.context2.text, span2=list(self.context2.span), label=bool(self.label))
        elif self.choices:
            d.update(choices=list(self.choices), gold=self.gold)
        else:
            d["label"] = self.label
        d.update(split=self.split, unit=self.unit or self.lemma)
        if self.meta:
            d["meta"] = self.meta
        return d
