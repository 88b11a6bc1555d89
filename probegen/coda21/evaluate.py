"""Scoring CoDA21 groups with any scorer and aligning contexts to definitions: each group is one
:class:`probegen.core.Unit` (its k contexts against its k definitions in a seeded column order).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import Outcome, Unit, evaluate_units
from ..settings import Settings
from .dataset import Coda21Dataset, group_rng
from .items import Group


def column_order(group_id: str, k: int, seed: int) -> np.ndarray:
    """The seeded order in which a group's definitions are presented as columns."""
    return group_rng(seed, group_id + "/definitions").permutation(k)


def group_unit(g: Group, queries: list[str], settings: Settings) -> Unit:
    """One group as a unit: its rows' ``queries`` against its definitions in the seeded column order."""
    order = column_order(g.id, g.k, settings.seed)
    gold = np.argsort(order)  # row i's definition sits at column position gold[i]
    return Unit.group(g.id, queries, [g.items[j].definition for j in order], gold.tolist(), settings.matching)


def evaluate_modes(ds: Coda21Dataset, scorer: Any, settings: Settings, modes: Sequence[str],
                   progress: bool = False) -> list[dict[str, Any]]:
    """:func:`evaluate` in several conditions through one request table, one entry per mode."""
    from ..tasks import get

    units = [u for mode in modes for u in get("coda21").scorer_units(ds, mode, settings, scorer)]
    outcomes = evaluate_units(units, scorer, seed=settings.seed, progress=progress)
    out, n = [], len(ds.groups)
    for i, _ in enumerate(modes):
        records = [_record(g, o) for g, o in zip(ds.groups, outcomes[i * n : (i + 1) * n])]
        out.append({"groups": records, "metrics": metrics(records)})
    return out


def evaluate(ds: Coda21Dataset, scorer: Any, settings: Settings | None = None, mode: str = "context",
             progress: bool = False) -> dict[str, Any]:
    """``{"groups": [per-group records], "metrics": {...}}``: every group's k x k matrix scored in one
    call in condition ``mode``, then aligned."""
    return evaluate_modes(ds, scorer, settings or Settings(), [mode], progress)[0]


def _record(g: Group, o: Outcome) -> dict[str, Any]:
    order = np.argsort(o.gold)  # the inverse permutation: column j shows item order[j]'s definition
    return o.row(pos=g.pos, k=g.k, rows=[it.synset for it in g.items], columns=[g.items[j].synset for j in order])


def metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean group accuracy per POS with the random baseline (mean of 1/k) beside it.

    >>> metrics([{"pos": "n", "k": 5, "correct": 0.4}, {"pos": "v", "k": 10, "correct": 0.2}])["all"]
    {'accuracy': 0.30000000000000004, 'random': 0.15000000000000002, 'groups': 2}
    """
    out: dict[str, Any] = {}
    for pos, name in (("n", "noun"), ("v", "verb"), (None, "all")):
        rs = [r for r in records if pos is None or r["pos"] == pos]
        if not rs:
            continue
        out[name] = {
            "accuracy": float(np.mean([r["correct"] for r in rs])),
            "random": float(np.mean([1.0 / r["k"] for r in rs])),
            "groups": len(rs),
        }
    return out
