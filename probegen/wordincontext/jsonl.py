"""The generic word-in-context JSONL: bring any lexical-semantic dataset to ``probegen bias``.

One JSON object per line::

    {"id": "q1", "lemma": "bank", "pos": "n",
     "context": "They sat on the bank of the river.", "span": [16, 20],
     ... one of the three task shapes ...,
     "split": "train", "unit": "bank", "meta": {...}}

Task shapes (every line of a file must have the same one):

- pair (WiC-style): ``"context2": str, "span2": [a, b], "label": true | false`` (also "T"/"F");
- choice (WSD-style): ``"choices": [str, ...]`` (at least 2, all different) and ``"gold": int``
  (0-based index into ``choices``);
- label (classification of one context): ``"label": str`` (any class name).

``span`` / ``span2`` are character offsets ``[start, end)`` of the target inside ``context`` /
``context2``: the target is hidden by position, never found by string search. Optional:
``id`` (default ``line<N>``; must be unique), ``lemma`` (default the target text, lower-cased),
``pos``, ``split`` (``train``/``dev``/``test``, default ``test``; ``bias --method trained``
needs a train and a test split), ``unit`` (items resampled together by the bootstrap and kept
together by training subsamples; default the lemma), ``meta`` (free, carried along).

The whole file is validated before anything is scored: a bad line raises one ``DatasetError``
naming the file, the line number and what is wrong (and how many other lines are bad).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contexts import Context
from ..errors import DatasetError
from ..io import first_jsonl_row, parse_json, read_text
from .items import SPLITS, WicItem

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
    """One generic-JSONL object as an item (``LineError`` saying what is wrong).

    >>> it = parse_row({"context": "a bank loan", "span": [2, 6], "choices": ["x", "y"], "gold": 1}, 3)
    >>> it.id, it.lemma, it.task, it.split
    ('line3', 'bank', 'choice', 'test')
    >>> parse_row({"context": "a bank loan", "span": [2, 60], "label": "n"}, 4)
    Traceback (most recent call last):
    probegen.wordincontext.jsonl.LineError: 'span' [2, 60] is outside 'context' (11 characters)
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
    common = dict(id=str(iid), lemma=lemma, pos=str(row.get("pos", "")), context=ctx, split=split, unit=str(unit), meta=meta)
    if "context2" in row or "span2" in row:
        label = row.get("label")
        if not isinstance(label, (bool, str)) or label not in _BOOL:
            raise LineError("a pair needs 'label' true/false (or \"T\"/\"F\")")
        return WicItem(context2=_span(row, "context2", "span2"), label=_BOOL[label], **common)
    if "choices" in row or "gold" in row:
        choices = row.get("choices")
        if not (isinstance(choices, list) and len(choices) >= 2 and all(isinstance(c, str) and c.strip() for c in choices)):
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


def read_items(path: str | Path) -> list[WicItem]:
    """Read and validate a whole generic-JSONL file (``DatasetError`` with the first bad line).

    Checks per line (JSON, fields, spans, task shape) and across lines (one task shape, unique
    ids; a label task needs at least two classes) before returning anything.
    """
    path = Path(path)
    items: list[WicItem] = []
    errors: list[str] = []
    ids: dict[str, int] = {}
    for n, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = parse_json(line, path, n)
        except DatasetError as e:
            errors.append(str(e))
            continue
        try:
            it = parse_row(row, n)
        except LineError as e:
            errors.append(f"{path}:{n}: {e}")
            continue
        if it.id in ids:
            errors.append(f"{path}:{n}: id {it.id!r} repeats line {ids[it.id]}")
            continue
        ids[it.id] = n
        if items and it.task != items[0].task:
            errors.append(f"{path}:{n}: a {it.task} item, but line {ids[items[0].id]} is a {items[0].task} item (one task per file)")
            continue
        items.append(it)
    if errors:
        more = f" (and {len(errors) - 1} more bad line{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise DatasetError(errors[0] + more)
    if not items:
        raise DatasetError(f"{path} has no items")
    return items


def looks_generic(path: str | Path) -> bool:
    """True if ``path`` is a .jsonl file whose first object has a ``context`` string and a ``span``."""
    p = Path(path)
    if not p.is_file() or p.suffix != ".jsonl":
        return False
    row = first_jsonl_row(p)
    return isinstance(row, dict) and isinstance(row.get("context"), str) and "span" in row
