"""The word-in-context record, one per line of the generic JSONL (see ``jsonl.py``).

Every item has a context with its target located by character span, and one of three shapes
(``task``): ``pair`` (a second context and a boolean ``label``: WiC), ``choice`` (``choices`` and
the ``gold`` index: WSD) or ``label`` (a class ``label`` for the one context).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..contexts import Context
from ..errors import DatasetError
from ..items import Item

__all__ = ["SPLITS", "TASKS", "Context", "LineError", "Target", "WicItem", "parse_row"]

TASKS = ("pair", "choice", "label")
SPLITS = ("train", "dev", "test")

# The word-in-context context class before the shared one: ``Target(text, (a, b))`` builds a
# Context with the target at characters a:b (``.span`` and ``.word`` read as they did).
Target = Context


@dataclass(frozen=True)
class WicItem(Item):
    """One word-in-context item; ``unit`` groups items for resampling and training subsamples.

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
        """One generic-JSONL object as an item (:func:`parse_row`; a DatasetError if it is wrong)."""
        try:
            return parse_row(d, line)
        except LineError as e:
            raise DatasetError(f"malformed {cls.what}{f' (line {line})' if line else ''}: {e}") from None


# ---- one generic-JSONL row (the reader, probegen.wordincontext.jsonl, adds the file and line) ---------
_BOOL = {True: True, False: False, "T": True, "F": False, "true": True, "false": False}


class LineError(ValueError):
    """What is wrong with one line (the reader adds the file and line number)."""


def _span(row: dict[str, Any], text_key: str, span_key: str) -> Context:
    text = row.get(text_key)
    if not isinstance(text, str) or not text.strip():
        raise LineError(f"'{text_key}' must be a non-empty string")
    sp = row.get(span_key)
    if not (isinstance(sp, list) and len(sp) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in sp)):
        raise LineError(f"'{span_key}' must be [start, end] character offsets (integers)")
    a, b = sp
    if not 0 <= a < b <= len(text):
        raise LineError(f"'{span_key}' {sp} is outside '{text_key}' ({len(text)} characters)")
    if not text[a:b].strip():
        raise LineError(f"'{span_key}' {sp} covers only white space")
    return Context(text, (a, b))


def parse_row(row: Any, line: int) -> WicItem:
    """One generic-JSONL object as an item (``LineError`` saying what is wrong); the reader is
    :func:`probegen.wordincontext.jsonl.read_items`.

    >>> it = parse_row({"context": "a bank loan", "span": [2, 6], "choices": ["x", "y"], "gold": 1}, 3)
    >>> it.id, it.lemma, it.task, it.split
    ('line3', 'bank', 'choice', 'test')
    >>> parse_row({"context": "a bank loan", "span": [2, 60], "label": "n"}, 4)
    Traceback (most recent call last):
    probegen.wordincontext.items.LineError: 'span' [2, 60] is outside 'context' (11 characters)
    """
    if not isinstance(row, dict):
        raise LineError("not a JSON object")
    ctx = _span(row, "context", "span")
    iid = row.get("id", f"line{line}")
    if not isinstance(iid, (str, int)) or isinstance(iid, bool):
        raise LineError("'id' must be a string or an integer")
    lemma = row.get("lemma", ctx.word.strip().lower())
    if not isinstance(lemma, str) or not lemma:
        raise LineError("'lemma' must be a non-empty string")
    split = row.get("split", "test")
    if split not in SPLITS:
        raise LineError(f"'split' must be one of {', '.join(SPLITS)}, not {split!r}")
    unit = row.get("unit", lemma)
    meta = row.get("meta", {})
    if not isinstance(meta, dict):
        raise LineError("'meta' must be an object")
    common = dict(id=str(iid), lemma=lemma, pos=str(row.get("pos", "")), context=ctx, split=split, unit=str(unit),
                  meta=meta)
    if "context2" in row or "span2" in row:
        label = row.get("label")
        if not isinstance(label, (bool, str)) or label not in _BOOL:
            raise LineError("a pair needs 'label' true/false (or \"T\"/\"F\")")
        return WicItem(context2=_span(row, "context2", "span2"), label=_BOOL[label], **common)
    if "choices" in row or "gold" in row:
        choices = row.get("choices")
        if not (isinstance(choices, list) and len(choices) >= 2 and all(isinstance(c, str)
                                                                        and c.strip() for c in choices)):
            raise LineError("'choices' must be a list of at least 2 non-empty strings")
        if len(set(choices)) != len(choices):
            raise LineError("'choices' repeats a choice text (the gold would be ambiguous)")
        gold = row.get("gold")
        if not isinstance(gold, int) or isinstance(gold, bool) or not 0 <= gold < len(choices):
            raise LineError(f"'gold' must be an index 0..{len(choices) - 1} into 'choices'")
        return WicItem(choices=tuple(choices), gold=gold, **common)
    label = row.get("label")
    if not isinstance(label, (str, bool, int)) or (isinstance(label, str) and not label.strip()):
        raise LineError("give 'context2'+'span2'+'label' (pair), 'choices'+'gold' (choice) or 'label' (one context)")
    return WicItem(label=str(label), **common)
