"""Word-in-context datasets on disk: probegen's directory (``items.jsonl`` in the schema of
``jsonl.py`` and ``manifest.json``), a bare generic JSONL file and a WiC release copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..dataset import MANIFEST_FILE, ItemsDataset, find
from ..errors import DatasetError
from ..io import read_manifest
from .items import SPLITS, WicItem
from .jsonl import looks_generic, read_items
from .wic_tsv import is_wic_tsv, read_wic

ITEMS_FILE = "items.jsonl"
KINDS = ("wic", "wsd", "wordincontext")


class WicDataset(ItemsDataset[WicItem]):
    """Word-in-context items and their manifest (``kind``: wic, wsd or wordincontext)."""

    title = "word-in-context"
    record = WicItem

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", "wordincontext"))

    @property
    def task(self) -> str:
        return self.items[0].task

    def split(self, name: str) -> list[WicItem]:
        return [it for it in self.items if it.split == name]


def split_counts(items: list[WicItem]) -> dict[str, dict[str, Any]]:
    """Per split: items, units, lemmas, and the label (pair) or choice-count (choice) tallies."""
    out: dict[str, dict[str, Any]] = {}
    for s in SPLITS:
        its = [it for it in items if it.split == s]
        if not its:
            continue
        c: dict[str, Any] = {"items": len(its), "lemmas": len({(it.lemma, it.pos) for it in its}),
                             "units": len({it.unit for it in its})}
        # the tallies follow the items' shape (one per file): pairs, choices or labels
        if its[0].context2 is not None:
            c["true"] = sum(bool(it.label) for it in its)
            c["false"] = len(its) - c["true"]
        elif its[0].choices:
            c["mean_choices"] = round(sum(len(it.choices) for it in its) / len(its), 3)
        else:
            c["labels"] = dict(sorted({str(it.label): sum(str(j.label) == str(it.label) for j in its)
                                       for it in its}.items()))
        c["by_pos"] = dict(sorted({p: sum(it.pos == p for it in its) for p in {it.pos for it in its}}.items()))
        out[s] = c
    return out


def write(ds: WicDataset, out: str | Path) -> Path:
    """Write ``items.jsonl`` and ``manifest.json`` (with the items' sha256) as one directory, atomically."""
    return ds.write(out)


def manifest_kind(path: str | Path) -> str | None:
    """The ``kind`` in a dataset directory's manifest (None without one; a malformed one is an error)."""
    mf = Path(path) / MANIFEST_FILE
    if not mf.is_file():
        return None
    return read_manifest(mf).get("kind")


def load(path: str | Path) -> WicDataset:
    """Read a probegen wic/wsd directory, a generic JSONL file or a WiC release copy (validated in full)."""
    p = find(path)
    if p.is_dir() and (p / MANIFEST_FILE).is_file():
        manifest = WicDataset.read_manifest(p, KINDS)
        return WicDataset(read_items(WicDataset.records_path(p)), manifest, str(p))
    if looks_generic(p) or (p.is_file() and p.suffix == ".jsonl"):
        return WicDataset(read_items(p), {"kind": "wordincontext", "source_format": "generic-jsonl"}, str(p))
    if is_wic_tsv(p):
        return WicDataset(read_wic(p), {"kind": "wic", "source_format": "wic-tsv"}, str(p))
    raise DatasetError(f"{p} is not a word-in-context dataset (a probegen wic/wsd directory, a generic .jsonl, or WiC "
                       "*.data.txt)")
