"""Scoring CoDA21 groups with any scorer and aligning contexts to definitions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..aligner import align
from .dataset import Coda21Dataset, group_rng
from .render import render_group


@dataclass(frozen=True)
class EvalConfig:
    """How a CoDA21 evaluation renders and aligns (recorded in results.json)."""

    nonce: str = "bkatuhla"
    pattern: str = "definition-of"
    matching: str = "alignment"
    mode: str = "context"
    seed: int = 0


def column_order(group_id: str, k: int, seed: int) -> np.ndarray:
    """The seeded order in which a group's definitions are presented as columns."""
    return group_rng(seed, group_id + "/definitions").permutation(k)


def evaluate(ds: Coda21Dataset, scorer, cfg: EvalConfig, progress: bool = False) -> dict[str, Any]:
    """Score every group's k x k matrix in one scorer call, then align each group.

    Returns ``{"groups": [per-group records], "metrics": {...}}``.
    """
    from ..templating import coda21_patterns

    patterns = coda21_patterns(cfg.pattern)
    queries: list[str] = []
    cands: list[list[str]] = []
    layout = []
    for g in ds.groups:
        order = column_order(g.id, g.k, cfg.seed)
        defs = [g.items[j].definition for j in order]
        rows = render_group(g, scorer.query_style, cfg.mode, cfg.nonce, patterns)
        layout.append((g, order, len(queries)))
        queries.extend(rows)
        cands.extend([defs] * g.k)
    scores = scorer.score(queries, cands, progress=progress)

    records = []
    for g, order, start in layout:
        mat = np.vstack(scores[start : start + g.k])
        gold = np.argsort(order)  # row i's definition sits at column position gold[i]
        pred = align(mat, cfg.matching, seed=group_rng(cfg.seed, g.id + "/ties"))
        records.append(
            {
                "id": g.id,
                "pos": g.pos,
                "k": g.k,
                "rows": [it.synset for it in g.items],
                "columns": [g.items[j].synset for j in order],
                "scores": mat.round(6).tolist(),
                "pred": pred.tolist(),
                "gold": gold.tolist(),
                "accuracy": float(np.mean(pred == gold)),
            }
        )
    return {"groups": records, "metrics": metrics(records)}


def metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean group accuracy per POS with the random baseline (mean of 1/k) beside it."""
    out: dict[str, Any] = {}
    for pos, name in (("n", "noun"), ("v", "verb"), (None, "all")):
        rs = [r for r in records if pos is None or r["pos"] == pos]
        if not rs:
            continue
        out[name] = {
            "accuracy": float(np.mean([r["accuracy"] for r in rs])),
            "random": float(np.mean([1.0 / r["k"] for r in rs])),
            "groups": len(rs),
        }
    return out
