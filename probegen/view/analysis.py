"""What the ``probegen view`` page adds to the runs' items: :func:`side_pairs` (the compare tab's paired
tests) and :func:`item_stats` (a ``probegen items`` table keyed by the page's item ids)."""

from __future__ import annotations

import csv
import math
from itertools import combinations
from pathlib import Path
from typing import Any

from ..errors import ProbegenError

#: the items.csv columns the page shows (numbers; ``flags`` is split into a list)
STAT_COLUMNS = ("p", "item_rest", "b", "b_lo", "b_hi", "a", "a_lo", "a_hi", "c", "outfit")
#: more sides than this: only pairs of sides in different runs under the same condition are compared
MAX_SIDES = 40
#: accuracies and differences are written with 6 decimals (p-values whole: a small one must not read 0)
ROUNDED = ("acc_a", "acc_b", "diff", "ci_lo", "ci_hi")


def _sides(model: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    """{"run~set~condition": {item id: its decisions right (1) or wrong (0)}}, in the page's order."""
    out: dict[str, dict[str, list[int]]] = {}
    for r, run in enumerate(model["runs"]):
        for s in run["sets"]:
            for c in s["conditions"]:
                out[f"{r}~{s['name']}~{c}"] = {}
    for it in model["items"]:
        for c, e in it["conds"].items():
            side = out.get(f"{it['run']}~{it['set']}~{c}")
            if side is not None and isinstance(e.get("ok"), list):
                side[it["id"]] = e["ok"]
    return out


def _comparable(a: str, b: str, many: bool) -> bool:
    ra, sa, ca = a.split("~", 2)
    rb, sb, cb = b.split("~", 2)
    return sa == sb and (not many or (ra != rb and ca == cb))


def side_pairs(model: dict[str, Any], n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Every two sides (run x dataset x condition) on the same dataset, compared on the decisions both
    made: accuracy difference with a paired cluster-bootstrap CI, exact McNemar p, Holm over every pair.

    >>> m = {"runs": [{"sets": [{"name": "d", "conditions": ["full"]}]}] * 2,
    ...      "items": [{"run": r, "set": "d", "id": f"q{i}", "conds": {"full": {"ok": [int(r == 0 or i < 2)]}}}
    ...                for r in (0, 1) for i in range(8)]}
    >>> p = side_pairs(m, n_boot=100)[0]
    >>> p["a"], p["b"], p["items"], p["diff"], p["a_only"], p["b_only"], p["p_mcnemar"]
    ('0~d~full', '1~d~full', 8, 0.75, 6, 0, 0.03125)
    """
    import numpy as np

    from ..itemstats.paired import paired_diff
    from ..stats.significance import holm

    sides = _sides(model)
    many = len(sides) > MAX_SIDES
    rows = []
    for a, b in combinations(sides, 2):
        if not _comparable(a, b, many):
            continue
        x: list[int] = []
        z: list[int] = []
        clusters: list[str] = []
        for iid, ok in sides[a].items():
            other = sides[b].get(iid)
            if other is not None and len(other) == len(ok):
                x += ok
                z += other
                clusters += [iid] * len(ok)
        if not x:
            continue
        res = paired_diff(np.array(x), np.array(z), clusters, n_boot, seed, alpha)
        rows.append({"a": a, "b": b, **{k: (round(v, 6) if k in ROUNDED else v) for k, v in res.items()}})
    for r, adj in zip(rows, holm([r["p_mcnemar"] for r in rows])):
        r["p_holm"] = adj
        r["significant"] = adj < alpha
    return rows


def _number(v: str) -> float | None:
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def view_id(item: str, unit: str) -> str:
    """The page's id of an items.csv item: a CoDA21 row's group, else the item itself.

    >>> view_id("g7#2", "g7"), view_id("q1", "definitions:dog.n.01")
    ('g7', 'q1')
    """
    return unit if item.startswith(unit + "#") else item


def item_stats(folder: str | Path, model: dict[str, Any]) -> dict[str, Any]:
    """``{"path", "rows": [{"view", "item", p, item_rest, b, ..., "flags": [...]}]}`` from the
    ``items.csv`` of a ``probegen items`` folder; one line if it is not one or matches no item."""
    path = Path(folder) / "items.csv"
    if not path.is_file():
        raise ProbegenError(f"--items {folder}: no items.csv there (give a `probegen items ... --out DIR` folder)")
    from ..io import read_text

    reader = csv.DictReader(read_text(path).splitlines())
    missing = {"item", "unit", "flags", *STAT_COLUMNS} - set(reader.fieldnames or [])
    if missing:
        raise ProbegenError(f"{path}: not a probegen items table (no column {', '.join(sorted(missing))})")
    rows = []
    for rec in reader:
        row: dict[str, Any] = {"view": view_id(rec["item"], rec["unit"]), "item": rec["item"]}
        row.update({k: _number(rec[k]) for k in STAT_COLUMNS})
        row["flags"] = [f for f in (rec["flags"] or "").split(";") if f]
        rows.append(row)
    ids = {it["id"] for it in model["items"]}
    if not any(r["view"] in ids for r in rows):
        raise ProbegenError(f"{path}: none of its {len(rows)} items is an item of the runs given (another dataset?)")
    return {"path": str(folder), "rows": rows}
