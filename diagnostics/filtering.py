"""``probegen filter --artefacts``: AFLite over a dataset whose kind hands it choice or alignment views
(:meth:`probegen.tasks.Filterable.artefact_inputs`: CoDA21, WordNetQA), written as a new dataset.

A control measured on what AFLite kept is biased towards chance (the filter removed what this classifier
got right, lucky guesses included), so a seeded share of the concepts is held out first: never filtered,
not in the output. The controls are trained on the rest before and after filtering and tested on the
held-out units: a drop means the shortcut is gone, below chance that the filter planted the opposite cue.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np

from probegen.errors import ProbegenError
from probegen.io import sha256_text
from probegen.tasks.bias_inputs import ChoiceView, FilterInputs

from .aflite import FilterSettings, Predictor, aflite, alignment_predictor, choice_predictor


def heldout_concepts(concepts: list[str], frac: float, seed: int) -> set[str]:
    """A seeded share ``frac`` of the distinct concepts: at least 2, and at least 4 left for filtering.

    >>> sorted(heldout_concepts(["a", "b", "c", "d", "e", "f", "g", "h", "a"], 0.25, 0))
    ['e', 'h']
    >>> heldout_concepts(list("abcde"), 0.25, 0)
    Traceback (most recent call last):
    ...
    probegen.errors.ProbegenError: too few concepts (5) to hold out 2 and filter at least 4
    """
    names = sorted(set(concepts))
    n = max(2, round(frac * len(names)))
    if len(names) - n < 4:
        raise ProbegenError(f"too few concepts ({len(names)}) to hold out {n} and filter at least 4")
    order = np.random.default_rng([seed, zlib.crc32(b"heldout")]).permutation(len(names))
    return {names[i] for i in order[:n]}


class AlignmentArtefacts:
    """AFLite over alignment views (CoDA21 groups): a word-only overlap aligner; a row is one member."""

    def __init__(self, inputs: FilterInputs, applies_to: str) -> None:
        self.inputs, self.applies_to = inputs, applies_to
        self.concept_unit = inputs.concept_unit
        self.what = f"word-only overlap aligner ({inputs.rows_name})"
        self.method_note = "; a group left with fewer than k_min members is dropped"

    def units(self) -> list[Any]:
        return list(self.inputs.alignment_views)

    def rows(self, unit: Any) -> int:
        return int(unit.k)

    def setup(self, sub: list[Any]) -> tuple[int, list[str], list[int], Callable[..., Any], Any]:
        """(min rows, clusters, sizes, chance(alive), predictor) of the units the filter sees."""
        min_rows = self.inputs.min_rows
        chance = lambda alive: float(np.mean([1.0 / a.sum() for a in alive if a.sum() >= min_rows]))  # noqa: E731
        return min_rows, [g.id for g in sub], [g.k for g in sub], chance, alignment_predictor(sub)

    def controls(self, units: list[Any], train: list[int], alive: list[np.ndarray], test: list[int], min_rows: int,
                 seed: int, n_boot: int = 1000) -> list[dict[str, Any]]:
        """The word-only aligner trained on the alive rows of ``train``, tested on whole ``test`` groups."""
        from . import baselines as B

        train = [i for i in train if alive[i].sum() >= min_rows]
        local = train + test
        predict = alignment_predictor([units[i] for i in local])
        got = predict(np.arange(len(train)), np.arange(len(train), len(local)),
                      [alive[i] for i in train] + [np.ones(units[i].k, dtype=bool) for i in test], seed)
        acc = np.array([got[len(train) + t].mean() for t in range(len(test))])
        chance = float(np.mean([1.0 / units[i].k for i in test]))
        concepts = self.inputs.concepts
        res = B.control_result("word-overlap", self.applies_to, "one-to-one alignment", acc,
                               [concepts[i] for i in test], chance, n_boot, seed,
                               f"word-only overlap aligner trained on {len(train)} groups, tested on "
                               f"{len(test)} held-out groups (bootstrap over {self.concept_unit}s)", n_train=len(train))
        return [{**res, "correct": acc.tolist()}]

    def tested(self, units: list[Any], test: list[int], control: dict[str, Any]) -> list[int]:
        """The held-out units a control was tested on (every one)."""
        return test

    def kept(self, units: list[Any], rest: list[int], alive: list[np.ndarray], min_rows: int,
             removed_at: list[tuple[int, int]]) -> tuple[Any, list[str], list[str]]:
        """(filtered dataset, removed rows, dropped groups): a group below ``min_rows`` members is dropped."""
        data = self.inputs.keep({i: alive[i] for i in rest if alive[i].sum() >= min_rows})
        removed = [f"{units[i].id}/{units[i].row_ids[j]}" for i, j in removed_at]
        dropped = [units[i].id for i in rest if alive[i].sum() < min_rows]
        return data, removed, dropped


class ChoiceArtefacts:
    """AFLite over choice views (WordNetQA items): choice-only classifiers per probe type; a row is an item."""

    method_note = ""

    def __init__(self, inputs: FilterInputs, applies_to: str) -> None:
        self.inputs = inputs
        self.concept_unit = inputs.concept_unit
        self.what = f"choice-only classifier per probe type ({inputs.rows_name})"

    def units(self) -> list[Any]:
        return list(self.inputs.choice_views)

    def rows(self, unit: Any) -> int:
        return 1

    def setup(self, sub: list[Any]) -> tuple[int, list[str], list[int], Callable[..., Any], Any]:
        """(min rows, clusters, sizes, chance(alive), predictor) of the items the filter sees."""
        chance = lambda alive: float(np.mean([1.0 / len(v.choices) for v, a in zip(sub, alive) if a[0]]))  # noqa: E731
        return 1, [v.cluster for v in sub], [1] * len(sub), chance, per_probe_predictor(sub)

    def controls(self, units: list[Any], train: list[int], alive: list[np.ndarray], test: list[int], min_rows: int,
                 seed: int, n_boot: int = 1000) -> list[dict[str, Any]]:
        """Choice-only classifiers per probe type, trained on the alive ``train`` items, tested on ``test``."""
        from . import baselines as B

        train = [i for i in train if alive[i].sum() >= min_rows]
        views, out = units, []
        for probe in sorted({views[i].probe for i in test}):
            tr = [views[i] for i in train if views[i].probe == probe]
            te = [i for i in test if views[i].probe == probe]
            if len({v.cluster for v in tr}) < 2 or len(tr) < 10:
                out.append(B.skipped_control("choice-only", probe, f"too few training items ({len(tr)})"))
                continue
            out.append(self._probe_control(views, tr, te, seed, n_boot, probe))
        return out

    def _probe_control(self, views: list[ChoiceView], tr: list[ChoiceView], te: list[int], seed: int, n_boot: int,
                       probe: str) -> dict[str, Any]:
        from . import baselines as B

        tr_texts, tr_num, y, _ = B.choice_rows(tr)
        te_texts, te_num, _, owner = B.choice_rows([views[i] for i in te])
        _, s, _ = B.choice_model(tr_texts, tr_num, y, te_texts, te_num)
        correct = np.array([float(B.pick_choice(s[owner == t], np.random.default_rng([seed, i]))
                                  == views[i].answer) for t, i in enumerate(te)])
        chance = float(np.mean([1.0 / len(views[i].choices) for i in te]))
        concepts = self.inputs.concepts
        res = B.control_result("choice-only", probe, "gold choice (argmax over choices)", correct,
                        [concepts[i] for i in te],
                        chance, n_boot, seed, "logistic regression (Newton-CG) on choice text/length/overlap "
                        f"trained on {len(tr)} items, tested on {len(te)} held-out items (bootstrap over "
                        f"{self.concept_unit}s)", n_train=len(tr))
        return {**res, "correct": correct.tolist()}

    def tested(self, units: list[Any], test: list[int], control: dict[str, Any]) -> list[int]:
        """The held-out items of the control's probe type."""
        return [i for i in test if units[i].probe == control["applies_to"]]

    def kept(self, units: list[Any], rest: list[int], alive: list[np.ndarray], min_rows: int,
             removed_at: list[tuple[int, int]]) -> tuple[Any, list[str], list[str]]:
        """(filtered dataset, removed items, dropped items: the same)."""
        removed = [units[i].id for i, _ in removed_at]
        return self.inputs.keep({i: alive[i] for i in rest if alive[i][0]}), removed, removed


def adapter_of(inputs: FilterInputs, applies_to: str) -> AlignmentArtefacts | ChoiceArtefacts:
    """The AFLite adapter of the shape a kind's filter inputs come in (``applies_to``: the kind)."""
    if inputs.alignment_views:
        return AlignmentArtefacts(inputs, applies_to)
    if inputs.choice_views:
        return ChoiceArtefacts(inputs, applies_to)
    raise ProbegenError(f"the {applies_to!r} kind handed the artefact filter no units")


def _paired(before: list[dict[str, Any]], after: list[dict[str, Any]], units: list[Any], test: list[int], adapter: Any,
            seed: int) -> list[dict[str, Any]]:
    """Each after-control with the after - before difference on the same held-out units (paired bootstrap CI)."""
    from .bias import bootstrap_accuracy

    for b, a in zip(before, after):
        if "correct" not in b or "correct" not in a:
            continue
        te = adapter.tested(units, test, a)
        concepts = [adapter.inputs.concepts[i] for i in te]
        d = bootstrap_accuracy(np.array(a["correct"]) - np.array(b["correct"]), concepts, seed=seed)
        a["diff"] = {"value": d["accuracy"], "ci": d["ci"]}
    for r in before + after:
        r.pop("correct", None)
    return after


def check_holdout(holdout: float) -> None:
    """The held-out share lies strictly between 0 and 1 (one line otherwise)."""
    if not 0 < holdout < 1:
        raise ProbegenError(f"--holdout must lie strictly between 0 and 1, got {holdout}")


def filter_units(inputs: FilterInputs, kind: str, s: FilterSettings, path: str | Path, manifest: dict[str, Any],
                 log: Callable[[str], None] = print) -> tuple[Any, dict[str, Any]]:
    """Hold out concepts and filter the rest of a dataset's views (``inputs``, of ``kind``, read from ``path``
    with ``manifest``): (the kept dataset, the manifest's ``filter`` record)."""
    adapter = adapter_of(inputs, kind)
    units = adapter.units()
    concepts = list(adapter.inputs.concepts)
    held = heldout_concepts(concepts, s.holdout, s.seed)
    test = [i for i, c in enumerate(concepts) if c in held]
    rest = [i for i, c in enumerate(concepts) if c not in held]
    # the filter sees only these
    min_rows, clusters, sizes, chance, predict = adapter.setup([units[i] for i in rest])
    if len(set(clusters)) < 4:
        raise ProbegenError(f"{path}: too few units ({len(set(clusters))}) to filter")
    log(f"held out {len(held)} of {len(set(concepts))} concepts ({adapter.concept_unit}s; {len(test)} units), never "
        "filtered")
    log(f"AFLite on the other {len(rest)} units of {path}: {adapter.what}, budget {s.budget} rows")
    res = aflite(predict, sizes, clusters, min_rows, chance, s, log)
    alive = [np.ones(adapter.rows(u), dtype=bool) for u in units]
    for k, i in enumerate(rest):
        alive[i] = res["alive"][k]
    log(f"controls on the {len(test)} held-out units, trained on the rest before and after filtering")
    before = adapter.controls(units, rest, [np.ones_like(a) for a in alive], test, min_rows, s.seed)
    after = _paired(before, adapter.controls(units, rest, alive, test, min_rows, s.seed), units, test, adapter, s.seed)
    kept, removed, dropped = adapter.kept(units, rest, alive, min_rows, [(rest[i], j) for i, j in res["removed"]])
    return kept, _record(path, manifest, s, adapter, held, [units[i].id for i in test], res, removed, dropped, before,
                         after)


def _record(path: str | Path, manifest: dict[str, Any], s: FilterSettings, adapter: Any, held: set[str],
            held_ids: list[str], res: dict[str, Any], removed: list[str], dropped: list[str], before: list[Any],
            after: list[Any]) -> dict[str, Any]:
    """The manifest's ``filter`` record."""
    return {
        "source": str(path),
        "source_manifest_sha256": sha256_text(json.dumps(manifest, sort_keys=True)),
        "method": "AFLite: per-row predictability over random cluster-grouped splits; most predictable rows removed"
                  + adapter.method_note,
        "control": adapter.what,
        "settings": dataclasses.asdict(s),
        "held_out": {
            "unit": adapter.concept_unit,
            "concepts": sorted(held),
            "ids": held_ids,
            "note": "held out before filtering: never filtered and not in this dataset; the controls are trained "
                    "on the rest before / after filtering and tested on these",
        },
        "removed": removed,
        "units_dropped": dropped,
        "rounds": res["rounds"],
        "stopped_near_chance": res["stopped_near_chance"],
        "controls_before": before,
        "controls_after": after,
    }


def per_probe_predictor(views: list[ChoiceView]) -> Predictor:
    """A choice-only predictor trained separately per probe type (each probe has its own artefacts)."""
    by_probe: dict[str, list[int]] = {}
    for i, v in enumerate(views):
        by_probe.setdefault(v.probe, []).append(i)
    parts = {p: (np.array(ix), choice_predictor([views[i] for i in ix])) for p, ix in by_probe.items()}
    local = np.zeros(len(views), dtype=int)
    probe_of = [v.probe for v in views]
    for ix, _ in parts.values():
        local[ix] = np.arange(len(ix))

    def predict(train: np.ndarray, test: np.ndarray, alive: list[np.ndarray], seed: int) -> dict[int, np.ndarray]:
        out = {}
        for p, (ix, pred) in parts.items():
            tr = local[[i for i in train if probe_of[i] == p]]
            te = [i for i in test if probe_of[i] == p]
            if len(tr) and te:
                got = pred(tr, local[te], [alive[i] for i in ix], seed)
                out.update({int(ix[j]): v for j, v in got.items()})
        return out

    return predict


def summary(record: dict[str, Any]) -> str:
    """What was held out and removed, then each control on the held-out units before -> after filtering."""
    h = record["held_out"]

    def fmt_ci(ci: list[float] | None) -> str:
        return f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""

    def fmt(r: dict[str, Any]) -> str:
        return f"{r['accuracy']:.3f}{fmt_ci(r.get('ci'))}"

    lines = [f"held out {len(h['concepts'])} concepts by {h['unit']} ({len(h['ids'])} units): never filtered, not in "
             "the output",
             f"removed {len(record['removed'])} rows ({len(record['units_dropped'])} units dropped) from the rest in "
             f"{len(record['rounds'])} rounds; stopped near chance: {'yes' if record['stopped_near_chance'] else 'no'}",
             "controls trained on the rest before -> after filtering, tested on the held-out units:"]
    for b, a in zip(record["controls_before"], record["controls_after"]):
        if "skipped" in b or "skipped" in a:
            lines.append(f"{b['control']} ({b['applies_to']}): skipped ({b.get('skipped') or a.get('skipped')})")
            continue
        d = a.get("diff")
        diff = f"; diff {d['value']:+.3f}{fmt_ci(d['ci'])}" if d else ""
        lines.append(f"{b['control']} ({b['applies_to']}): {fmt(b)} -> {fmt(a)}  (chance {a['chance']:.3f}{diff}; "
                     f"{a['n_items']} items, {a['n_units']} {h['unit']}s)")
    return "\n".join(lines)
