"""The generic word-in-context JSONL: bring any lexical-semantic dataset to ``probegen bias``.

One JSON object per line::

    {"id": "q1", "lemma": "bank", "pos": "n",
     "context": "They sat on the bank of the river.", "span": [16, 20],
     ... one of the three task shapes ...,
     "split": "train", "unit": "bank", "meta": {...}}

Task shapes (one per file): pair (WiC-style: ``"context2"``, ``"span2"``, ``"label": true | false``,
also "T"/"F"); choice (WSD-style: ``"choices"``, at least 2 and all different, and a 0-based
``"gold"``); label (``"label": str``, any class name).

``span`` / ``span2`` are character offsets ``[start, end)`` of the target in ``context`` /
``context2`` (never found by string search). Optional: ``id`` (default ``line<N>``, unique),
``lemma`` (default the target text, lower-cased), ``pos``, ``split`` (default ``test``; ``bias
--method trained`` needs train and test), ``unit`` (kept together by the bootstrap and training
subsamples; default the lemma), ``meta``. The whole file is validated before anything is scored.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DatasetError
from ..io import first_jsonl_row, parse_json, read_text
from .items import LineError, WicItem, parse_row

__all__ = ["LineError", "looks_generic", "parse_row", "read_items"]

def read_items(path: str | Path) -> list[WicItem]:
    """Read and validate a whole generic-JSONL file (``DatasetError`` with the first bad line)."""
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
            errors.append(f"{path}:{n}: a {it.task} item, but line {ids[items[0].id]} is a {items[0].task} item (one "
                          "task per file)")
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
