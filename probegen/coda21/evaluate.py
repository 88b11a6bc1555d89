"""Scoring CoDA21 groups with any scorer and aligning contexts to definitions.

Each group becomes one :class:`probegen.core.Unit` (its k rendered contexts against its k
definitions in a seeded column order); every group, and every ablation mode asked for, goes
through the one request table of :mod:`probegen.core`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..core import Outcome, Unit, evaluate_units
from ..templating import default_nonce
from .dataset import Coda21Dataset, group_rng
from .items import Group
from .render import render_group


@dataclass(frozen=True)
class EvalConfig:
    """How a CoDA21 evaluation renders and aligns (recorded in results.json)."""

    nonce: str = field(default_factory=default_nonce)  # templates/nonce_words.json, written once
    pattern: str = "definition-of"
    matching: str = "alignment"
    mode: str = "context"
    seed: int = 0


def column_order(group_id: str, k: int, seed: int) -> np.ndarray:
    """The seeded order in which a group's definitions are presented as columns."""
    return group_rng(seed, group_id + "/definitions").permutation(k)


def group_unit(g: Group, style: str, cfg: EvalConfig, patterns: dict[str, str]) -> Unit:
    """One group as a unit: rendered rows against the definitions in the seeded column order."""
    order = column_order(g.id, g.k, cfg.seed)
    gold = np.argsort(order)  # row i's definition sits at column position gold[i]
    unit = Unit.group(g.id, render_group(g, style, cfg.mode, cfg.nonce, patterns),
                      [g.items[j].definition for j in order], gold.tolist(), cfg.matching)
    if style == "generate":  # the prompt names the made-up word that hides the target
        unit = replace(unit, fields=(("nonce", cfg.nonce),))
    return unit


def evaluate_modes(ds: Coda21Dataset, scorer, cfgs: Sequence[EvalConfig],
                   progress: bool = False) -> list[dict[str, Any]]:
    """Evaluate several configurations (e.g. the bias ablations) through one request table."""
    from ..templating import coda21_patterns

    units = [group_unit(g, scorer.query_style, cfg, coda21_patterns(cfg.pattern)) for cfg in cfgs for g in ds.groups]
    # ties depend on the evaluation seed only; every mode shares it
    seeds = {cfg.seed for cfg in cfgs}
    if len(seeds) != 1:
        raise ValueError("evaluate_modes needs one seed for every configuration")
    outcomes = evaluate_units(units, scorer, seed=seeds.pop(), progress=progress)
    out, n = [], len(ds.groups)
    for i, _ in enumerate(cfgs):
        records = [_record(g, o) for g, o in zip(ds.groups, outcomes[i * n : (i + 1) * n])]
        out.append({"groups": records, "metrics": metrics(records)})
    return out


def evaluate(ds: Coda21Dataset, scorer, cfg: EvalConfig, progress: bool = False) -> dict[str, Any]:
    """Score every group's k x k matrix in one scorer call, then align each group.

    Returns ``{"groups": [per-group records], "metrics": {...}}``.
    """
    return evaluate_modes(ds, scorer, [cfg], progress)[0]


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
