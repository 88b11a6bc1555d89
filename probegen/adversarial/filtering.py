"""``probegen filter --artefacts``: AFLite over a CoDA21 or WordNetQA dataset, written as a new dataset."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ProbegenError
from .aflite import FilterSettings, aflite, coda21_predictor, mc_predictor


def _controls(kind: str, data: Any, seed: int) -> list[dict[str, Any]]:
    """The cross-validated partial-input controls the filter targets, with bootstrap CIs."""
    from diagnostics import baselines as B

    if kind == "coda21":
        return [B.overlap_control(data.groups, "word", seed=seed)]
    return B.choice_only_control([B.mc_view(it, i) for i, it in enumerate(data.items)], seed=seed)


def filter_dataset(path: str | Path, out: Path, s: FilterSettings, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Filter the dataset at ``path`` into ``out``; returns the manifest's ``filter`` record."""
    from diagnostics import baselines as B
    from diagnostics.run_bias import load_dataset

    kind, data = load_dataset(path)
    if kind == "coda21":
        units = data.groups
        ids = [g.id for g in units]
        clusters, sizes, min_rows = ids, [g.k for g in units], int(data.manifest.get("config", {}).get("k_min", 5))
        chance = lambda alive: float(np.mean([1.0 / a.sum() for a in alive if a.sum() >= min_rows]))  # noqa: E731
        predict, what = coda21_predictor(units), "word-only overlap aligner (CoDA21 members)"
    else:
        units = data.items
        views = [B.mc_view(it, i) for i, it in enumerate(units)]
        ids, clusters, sizes, min_rows = [v.id for v in views], [v.cluster for v in views], [1] * len(views), 1
        chance = lambda alive: float(np.mean([1.0 / len(v.choices) for v, a in zip(views, alive) if a[0]]))  # noqa: E731
        predict, what = per_probe_predictor(views), "choice-only classifier per probe type (WordNetQA items)"
    if len(set(clusters)) < 4:
        raise ProbegenError(f"{path}: too few units ({len(set(clusters))}) to filter")
    log(f"AFLite on {len(units)} units of {path}: {what}, budget {s.budget} rows")
    before = _controls(kind, data, s.seed)
    res = aflite(predict, sizes, clusters, min_rows, chance, s, log)
    alive = res["alive"]
    if kind == "coda21":
        from ..coda21.dataset import counts, write

        groups = [dataclasses.replace(g, items=tuple(it for it, a in zip(g.items, alive[i]) if a))
                  for i, g in enumerate(units) if alive[i].sum() >= min_rows]
        kept = dataclasses.replace(data, groups=groups)
        removed = [f"{ids[i]}/{units[i].items[j].synset}" for i, j in res["removed"]]
        dropped = [ids[i] for i in range(len(units)) if alive[i].sum() < min_rows]
    else:
        from ..wordnetqa.dataset import counts, write

        kept = dataclasses.replace(data, items=[it for i, it in enumerate(units) if alive[i][0]])
        removed = [ids[i] for i, _ in res["removed"]]
        dropped = removed
    after = _controls(kind, kept, s.seed)
    record = {
        "source": str(path),
        "source_manifest_sha256": _manifest_hash(data),
        "method": "AFLite: per-row predictability over random cluster-grouped splits; most predictable rows removed"
                  + ("; a group left with fewer than k_min members is dropped" if kind == "coda21" else ""),
        "control": what,
        "settings": dataclasses.asdict(s),
        "removed": removed,
        "units_dropped": dropped,
        "rounds": res["rounds"],
        "stopped_near_chance": res["stopped_near_chance"],
        "controls_before": before,
        "controls_after": after,
    }
    manifest = {**data.manifest, "filter": record}
    manifest["counts"] = counts(kept.groups if kind == "coda21" else kept.items)
    write(dataclasses.replace(kept, manifest=manifest), out)
    return record


def per_probe_predictor(views: list) -> Any:
    """A choice-only predictor trained separately per probe type (each probe has its own artefacts)."""
    by_probe: dict[str, np.ndarray] = {}
    for i, v in enumerate(views):
        by_probe.setdefault(v.probe, []).append(i)
    parts = {p: (np.array(ix), mc_predictor([views[i] for i in ix])) for p, ix in by_probe.items()}
    local = np.zeros(len(views), dtype=int)
    probe_of = [v.probe for v in views]
    for p, (ix, _) in parts.items():
        local[ix] = np.arange(len(ix))

    def predict(train: np.ndarray, test: np.ndarray, alive: list, seed: int) -> dict:
        out = {}
        for p, (ix, pred) in parts.items():
            tr = local[[i for i in train if probe_of[i] == p]]
            te = [i for i in test if probe_of[i] == p]
            if len(tr) and te:
                got = pred(tr, local[te], [alive[i] for i in ix], seed)
                out.update({int(ix[j]): v for j, v in got.items()})
        return out

    return predict


def _manifest_hash(data: Any) -> str:
    import json

    from ..io import sha256_text

    return sha256_text(json.dumps(data.manifest, sort_keys=True))


def summary(record: dict[str, Any]) -> str:
    """Control accuracy before and after, one line per control."""
    lines = [f"removed {len(record['removed'])} rows ({len(record['units_dropped'])} units dropped) in "
             f"{len(record['rounds'])} rounds; stopped near chance: {'yes' if record['stopped_near_chance'] else 'no'}"]
    for b, a in zip(record["controls_before"], record["controls_after"]):
        if "skipped" in b or "skipped" in a:
            continue
        fmt = lambda r: f"{r['accuracy']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" if r.get("ci") else f"{r['accuracy']:.3f}"  # noqa: E731
        lines.append(f"{b['control']} ({b['applies_to']}): {fmt(b)} -> {fmt(a)}  (chance {a['chance']:.3f}, "
                     f"artefact {'yes' if b['artefact'] else 'no'} -> {'yes' if a['artefact'] else 'no'})")
    return "\n".join(lines)
