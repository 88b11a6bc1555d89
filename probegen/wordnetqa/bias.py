"""WordNetQA's bias tables, probe-type subsets, choice views and entropy inputs
(:meth:`probegen.tasks.Task.bias_inputs`). A unit is a concept (synset); the label baseline is the
majority gold position; the strata are probe types (:data:`probegen.wordnetqa.task.EXCLUDED_RATIOS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import ProbegenError
from ..tasks.bias_inputs import BiasInputs, ChoiceView, FilterInputs, UnitTable, choice_view, unit_sums

if TYPE_CHECKING:
    from .dataset import WordNetQADataset


def _gold(record: dict[str, Any]) -> tuple[int, int]:
    """(gold position as presented, number of choices) of a :meth:`probegen.core.Outcome.row` record.

    >>> _gold({"gold": [2], "choices": ["a", "b", "c", "d"]})
    (2, 4)
    """
    return int(record["gold"][0]), len(record["choices"])


def concept_of(record: dict[str, Any], item: Any) -> str:
    """The concept (synset) a record is about: the bootstrap's resampling unit.

    >>> concept_of({"synset": "dog.n.01", "cluster": "hypernymy:dog.n.01"}, None)
    'dog.n.01'
    >>> concept_of({"cluster": "synonymy:dog.n.01"}, {"synset": "dog.n.01"})
    'dog.n.01'
    """
    got = record.get("synset")
    return str(got) if got else choice_view(item).sense


def table(records: dict[str, list[dict[str, Any]]], items: list[Any], probes: Sequence[str] | None = None) -> UnitTable:
    """One unit per concept: summed correctness and gold-position counts (``probes``: only these)."""
    full = records["full"]
    for mode, rs in records.items():
        if len(rs) != len(full):
            raise ProbegenError(f"ablation {mode} returned {len(rs)} items, full {len(full)}")
        if rs and "id" in rs[0] and [r.get("id") for r in rs] != [r.get("id") for r in full]:
            raise ProbegenError(f"ablation {mode} lists items in another order than full")
    wanted = None if probes is None else set(probes)
    keep = [i for i, r in enumerate(full) if wanted is None or r.get("probe", "all") in wanted]
    golds = [_gold(full[i]) for i in keep]
    width = max((n for _, n in golds), default=1)
    counts = np.zeros((len(keep), width))
    for row, (g, _) in enumerate(golds):
        counts[row, g] = 1.0
    per = {mode: np.array([float(bool(rs[i]["correct"])) for i in keep]) for mode, rs in records.items()}
    units = [concept_of(full[i], items[i]) for i in keep]
    return unit_sums(per, units, counts)


def choice_views(items: Sequence[Any]) -> list[ChoiceView]:
    """The items as choice views (clustered by concept, per probe type)."""
    return [choice_view(it, i) for i, it in enumerate(items)]


def bias_inputs(data: WordNetQADataset, records: dict[str, list[dict[str, Any]]]) -> BiasInputs:
    """What ``probegen bias`` measures of a scored WordNetQA dataset: probe-type subsets, the
    choice-only control, sense and label entropy."""
    items = list(data.items)
    views = choice_views(items)
    probes = tuple(sorted({str(r.get("probe", "all")) for r in records["full"]}))
    worded = [v for v in views if v.word]
    return BiasInputs(
        table=lambda strata: table(records, items, strata),
        unit="concept",
        n_items=len(items),
        strata=probes,
        subsets={p: (p,) for p in probes} if len(probes) > 1 else {},
        choice_views=views,
        entropy={"sense": [(v.word, v.sense) for v in worded],
                 "label": [(v.word, v.choices[v.answer]) for v in worded if 0 <= v.answer < len(v.choices)]},
        entropy_notes={"sense_note": "items carry no target word", "label_note": "items carry no target word"},
    )


def filter_inputs(data: WordNetQADataset) -> FilterInputs:
    """A WordNetQA dataset as AFLite reads it: items as choice views (one row each), concepts their synsets."""
    items = list(data.items)
    return FilterInputs(concepts=[it.synset for it in items], concept_unit="synset", rows_name="WordNetQA items",
                        keep=lambda alive: type(data)([items[i] for i in alive], data.manifest, data.source),
                        choice_views=choice_views(items))
