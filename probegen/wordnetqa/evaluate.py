"""Scoring WordNetQA items with any scorer and picking an answer.

Every item becomes one query (rendered by mode, ``render.py``) scored against its choices through
one request table of ``probegen.core``; the prediction is the argmax with seeded tie-breaking, so a
scorer that gives every choice the same score gets chance accuracy. ``length_norm`` of LM scores:
``none``, ``tokens`` (per-token mean: a scorer loaded with ``reduction="mean"``) or ``chars``
(lm-eval's acc_norm); cosine scores are never normalised.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Iterable, Protocol, Sequence, cast

import numpy as np

from ..core import Outcome, as_unit_scorer, evaluate_units
from ..errors import ProbegenError
from ..scorers import LM_KINDS
from ..settings import Settings
from .render import MODES

if TYPE_CHECKING:
    from ..tasks import Dataset
    from .items import MCItem

    class MCData(Dataset, Protocol):
        """A loaded WordNetQA dataset, or a stand-in with its records and manifest."""

        items: list[MCItem]

LENGTH_NORMS = ("none", "tokens", "chars")


def normalise(scores: np.ndarray, choices: Iterable[str], length_norm: str, scorer_kind: str) -> np.ndarray:
    """Scores after length normalisation (only LM log-probs are normalised).

    >>> normalise(np.array([-4.0, -6.0]), ["ab", "abcdef"], "chars", "causal").tolist()
    [-2.0, -1.0]
    >>> normalise(np.array([0.5, 0.2]), ["ab", "abcdef"], "chars", "embedding").tolist()
    [0.5, 0.2]
    """
    if length_norm == "chars" and scorer_kind in LM_KINDS:
        lengths = np.array([max(len(c.strip()), 1) for c in choices], dtype=np.float64)
        return scores / lengths
    return scores


def evaluate_mc(data: MCData, scorer: Any, settings: Settings | None = None, mode: str = "full",
                progress: bool = False) -> dict[str, Any]:
    """``{"items": [records in dataset order], "metrics": {...}}`` of every item (of ``settings.split``)
    scored in ``mode``; a record is :meth:`probegen.core.Outcome.row` with the item's fields."""
    return evaluate_mc_modes(data, scorer, settings or Settings(), [mode], progress)[0]


def evaluate_mc_modes(data: MCData, scorer: Any, settings: Settings, modes: Sequence[str],
                      progress: bool = False) -> list[dict[str, Any]]:
    """:func:`evaluate_mc` for several modes (e.g. the bias ablations) through one request table."""
    seed, length_norm, split = settings.seed, settings.length_norm, settings.split
    for mode in modes:
        if mode not in MODES:
            raise ProbegenError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    if length_norm not in LENGTH_NORMS:
        raise ProbegenError(f"unknown length normalisation {length_norm!r}; choose from {', '.join(LENGTH_NORMS)}")
    kind = as_unit_scorer(scorer).kind
    if length_norm == "tokens" and kind in LM_KINDS and _reduction(scorer) != "mean":
        raise ProbegenError("--length-norm tokens needs the LM scored with --reduction mean")
    items = [it for it in data.items if split is None or it.split == split]
    if not items:
        raise ProbegenError(f"no items to evaluate{f' in split {split!r}' if split else ''}")
    from ..tasks import get

    units = [u for mode in modes for u in get("wordnetqa").scorer_units(data, mode, settings, scorer)]
    # the decision is taken on the length-normalised scores (the unit's candidates are the choices)
    outcomes = evaluate_units(units, scorer, seed, progress,
                              adjust=lambda u, m: normalise(m[0], u.candidates[0], length_norm, kind)[None, :])
    out = []
    for i, mode in enumerate(modes):
        records = [_record(it, o) for it, o in zip(items, outcomes[i * len(items) : (i + 1) * len(items)])]
        m = metrics(records)
        m["mode"] = mode
        m["length_norm"] = length_norm if kind in LM_KINDS else "none (cosine scores)"
        out.append({"items": records, "metrics": m})
    return out


def _record(it: MCItem, o: Outcome) -> dict[str, Any]:
    """One item's record: what it asks, then the outcome (length-normalised scores, the seeded-tie
    argmax) and the type of the choice taken."""
    types = [m.type for m in it.choice_meta] if it.choice_meta else []
    return o.row(probe=it.probe, cluster=it.cluster, split=it.split, synset=it.synset, gold_synset=it.gold_synset,
                 hops=it.hops, distractor_type=it.distractor_type, distractor_hops=it.distractor_hops,
                 choices=list(it.choices), choice_types=types, pred_type=types[int(o.pred[0])] if types else None)


def _reduction(scorer: Any) -> str | None:
    try:
        return cast("str | None", scorer.settings().get("reduction"))
    except Exception:
        return as_unit_scorer(scorer).reduction


# ---- metrics (pure functions over records) ---------------------------------------------------------
def _acc(rs: list[dict[str, Any]]) -> dict[str, Any]:
    clusters: dict[str, bool] = {}
    for r in rs:
        clusters[r["cluster"]] = clusters.get(r["cluster"], True) and bool(r["correct"])
    return {
        "accuracy": float(np.mean([r["correct"] for r in rs])) if rs else None,
        "strict_cluster_accuracy": float(np.mean(list(clusters.values()))) if clusters else None,
        "random": float(np.mean([1.0 / len(r["choices"]) for r in rs])) if rs else None,
        "n_items": len(rs),
        "n_clusters": len(clusters),
    }


def metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Instance accuracy, strict cluster accuracy (every item of a concept right), the random
    baseline, and breakdowns by probe, split, hops x distractor type, and distractor distance.

    >>> rs = [
    ...     {"probe": "hypernymy", "cluster": "h:a", "split": "test", "hops": 1, "distractor_type": "random",
    ...      "distractor_hops": None, "correct": True, "choices": list("abcde"), "pred_type": "gold"},
    ...     {"probe": "hypernymy", "cluster": "h:a", "split": "test", "hops": 2, "distractor_type": "isa",
    ...      "distractor_hops": 1, "correct": False, "choices": list("abcde"), "pred_type": "isa_down"},
    ...     {"probe": "hypernymy", "cluster": "h:b", "split": "test", "hops": 1, "distractor_type": "random",
    ...      "distractor_hops": None, "correct": True, "choices": list("abcde"), "pred_type": "gold"},
    ... ]
    >>> m = metrics(rs)
    >>> round(m["accuracy"], 3), m["strict_cluster_accuracy"], m["n_clusters"]
    (0.667, 0.5, 2)
    >>> m["by_hops_distractor"]["hypernymy"]["1"]["random"]
    {'accuracy': 1.0, 'n': 2}
    >>> m["errors_by_type"]["hypernymy"]
    {'isa_down': 1.0}
    """
    out: dict[str, Any] = _acc(records)
    by_probe: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_probe[r["probe"]].append(r)
        by_split[r.get("split", "all")].append(r)
    out["by_probe"] = {p: _acc(rs) for p, rs in sorted(by_probe.items())}
    out["by_split"] = {s: _acc(rs) for s, rs in sorted(by_split.items())}
    grid: dict[str, dict[str, dict[str, list[Any]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    dist: dict[str, dict[str, dict[str, list[Any]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    errors: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in records:
        grid[r["probe"]][str(r["hops"])][r["distractor_type"]].append(r["correct"])
        d = r.get("distractor_hops")
        dist[r["probe"]][r["distractor_type"]]["-" if d is None else str(d)].append(r["correct"])
        if not r["correct"] and r.get("pred_type"):
            errors[r["probe"]][r["pred_type"]] += 1
    out["by_hops_distractor"] = {
        p: {h: {t: _cell(v) for t, v in sorted(ts.items())} for h, ts in sorted(hs.items(), key=lambda x: int(x[0]))}
        for p, hs in sorted(grid.items())
    }
    out["by_distractor_distance"] = {
        p: {t: {d: _cell(v) for d, v in sorted(ds.items())} for t, ds in sorted(ts.items())}
        for p, ts in sorted(dist.items())
    }
    out["errors_by_type"] = {
        p: {t: round(n / sum(es.values()), 6) for t, n in sorted(es.items())} for p, es in sorted(errors.items())
    }
    return out


def _cell(v: list[bool]) -> dict[str, Any]:
    return {"accuracy": float(np.mean(v)), "n": len(v)}


def summary(model: str, metrics: dict[str, Any]) -> str:
    """A terminal table: accuracy and strict cluster accuracy per probe, then hops x distractor."""
    lines = [f"{'model':<24} {'probe':<12} {'accuracy':>9} {'cluster':>8} {'random':>7} {'items':>7} {'clusters':>8}"]
    rows = list(metrics.get("by_probe", {}).items())
    if len(rows) != 1:
        rows.append(("all", metrics))
    for probe, m in rows:
        lines.append(
            f"{model:<24} {probe:<12} {m['accuracy']:>9.3f} {m['strict_cluster_accuracy']:>8.3f} {m['random']:>7.3f} "
            f"{m['n_items']:>7} {m['n_clusters']:>8}"
        )
    grid = metrics.get("by_hops_distractor", {})
    types = sorted({t for hs in grid.values() for ts in hs.values() for t in ts})
    if types:
        lines.append("")
        lines.append("accuracy by hops x distractor type (n)")
        lines.append(f"{'probe':<12} {'hops':>4} " + " ".join(f"{t:>14}" for t in types))
        for probe, hs in grid.items():
            for h, ts in hs.items():
                cells = [f"{ts[t]['accuracy']:.3f} ({ts[t]['n']})" if t in ts else "-" for t in types]
                lines.append(f"{probe:<12} {h:>4} " + " ".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)
