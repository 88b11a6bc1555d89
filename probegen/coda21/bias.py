"""CoDA21's bias tables, subsets, control views and entropy inputs
(:meth:`probegen.tasks.Task.bias_inputs`). A unit is a group (its accuracy, label baseline 1/k);
subsets are the parts of speech; the controls are alignment controls over the groups' rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..tasks.bias_inputs import LABEL, AlignmentView, BiasInputs, FilterInputs, UnitTable
from .items import Group

if TYPE_CHECKING:
    from .dataset import Coda21Dataset

POS_NAMES = (("n", "noun"), ("v", "verb"))


def table(records: dict[str, list[dict[str, Any]]], pos: Sequence[str] | None = None) -> UnitTable:
    """One unit per group: each ablation's group accuracy, label 1/k (``pos``: only these parts of speech)."""
    base = [r for r in records["full"] if pos is None or r["pos"] in pos]
    ids = [r["id"] for r in base]
    per: dict[str, np.ndarray] = {}
    for mode, rs in records.items():
        acc = {r["id"]: r["correct"] for r in rs}
        per[mode] = np.array([acc[i] for i in ids])
    per[LABEL] = np.array([1.0 / r["k"] for r in base])
    return UnitTable(ids, np.ones(len(ids)), per)


def query_texts(group: Group) -> dict[str, tuple[str, ...]]:
    """Per side a control reads (``word``, ``context`` without the target), one text per row."""
    from .render import query

    return {"word": tuple(f"{it.lemma.replace('_', ' ')} {it.context.word}" for it in group.items),
            "context": tuple(query(it.context, group.pos, "plain", "context", "", {}) for it in group.items)}


def alignment_views(groups: Sequence[Group]) -> list[AlignmentView]:
    """The groups as alignment views (clustered by their ancestor; row ids are the members' synsets)."""
    return [AlignmentView(g.id, g.ancestor, tuple(it.definition for it in g.items), query_texts(g),
                          tuple(it.synset for it in g.items)) for g in groups]


def bias_inputs(data: Coda21Dataset, records: dict[str, list[dict[str, Any]]]) -> BiasInputs:
    """What ``probegen bias`` measures of a scored CoDA21 dataset: POS subsets, alignment controls, entropy."""
    groups = list(data.groups)
    present = {g.pos for g in groups}
    subsets = {name: (pos,) for pos, name in POS_NAMES
               if sum(g.pos == pos for g in groups) >= 2 and len(present) > 1}
    return BiasInputs(
        table=lambda pos: table(records, pos),
        unit="group",
        n_items=sum(g.k for g in groups),
        strata=tuple(sorted(present)),
        subsets=subsets,
        alignment_views=alignment_views(groups),
        entropy={"sense": [(it.lemma, it.synset) for g in groups for it in g.items]},
        entropy_notes={"label_note": "a CoDA21 row's label is its definition, i.e. its sense: see sense entropy"},
        notes=("M_definition is chance by construction (identical rows tie); Bias_D should be near 0.",),
    )


def filter_inputs(data: Coda21Dataset) -> FilterInputs:
    """A CoDA21 dataset as AFLite reads it: groups as alignment views (a row is a member), concepts
    the groups' ancestors; a group left with fewer than the dataset's ``k_min`` members is dropped."""
    import dataclasses

    groups = list(data.groups)

    def keep(alive: Mapping[int, np.ndarray]) -> Any:
        return dataclasses.replace(data, groups=[
            dataclasses.replace(groups[i], items=tuple(it for it, a in zip(groups[i].items, rows) if a))
            for i, rows in alive.items()])

    return FilterInputs(concepts=[g.ancestor for g in groups], concept_unit="ancestor", rows_name="CoDA21 members",
                        keep=keep, alignment_views=alignment_views(groups),
                        min_rows=int(data.manifest.get("config", {}).get("k_min", 5)))
