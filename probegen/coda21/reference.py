"""The CoDA21 paper's Tables 1 and 2 (copied into probegen/reference/)."""

from __future__ import annotations

import csv
from importlib import resources

_POS = {"noun": "n", "verb": "v"}


def table1() -> dict[tuple[str, str], dict[str, int]]:
    """{(variant, pos): {"groups", "unique_synsets"}} from the paper's Table 1."""
    text = resources.files("probegen.reference").joinpath("coda21_table1.csv").read_text(encoding="utf-8")
    return {
        (r["dataset"], _POS[r["pos"]]): {"groups": int(r["groups"]), "unique_synsets": int(r["unique_synsets"])}
        for r in csv.DictReader(text.splitlines())
    }
