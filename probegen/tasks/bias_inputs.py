"""What a kind hands ``probegen bias`` and ``probegen filter``: plain data in the shapes diagnostics'
engines take (the library never imports ``diagnostics``); a kind fills them in its own ``bias.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..stats.bootstrap import cluster_index, per_cluster

LABEL = "label"
FULL = "full"


@dataclass
class UnitTable:
    """Per-unit correctness of each ablation: ``correct[a][u]`` summed over unit ``u``'s items, ``weight[u]``
    their number. The label baseline is an ablation ``"label"`` or ``label_counts`` (per unit, gold
    answers per position: the baseline answers the position gold most often in the whole set).
    """

    units: list[str]
    weight: np.ndarray
    correct: dict[str, np.ndarray]
    label_counts: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.weight = np.asarray(self.weight, dtype=np.float64)
        self.correct = {k: np.asarray(v, dtype=np.float64) for k, v in self.correct.items()}
        n = len(self.units)
        for name, v in self.correct.items():
            if v.shape != (n,):
                raise ValueError(f"ablation {name!r} has {v.shape} values for {n} units")
        if self.label_counts is not None:
            self.label_counts = np.asarray(self.label_counts, dtype=np.float64)


def unit_sums(per_item: dict[str, np.ndarray], units: list[Any], label_counts: np.ndarray | None = None) -> UnitTable:
    """Per-item correctness (and ``label_counts``, items x positions) summed per unit.

    >>> t = unit_sums({"full": np.array([1, 0, 1]), "label": np.array([0.5, 0.5, 0.5])}, ["a", "a", "b"])
    >>> t.units, t.weight.tolist(), t.correct["full"].tolist()
    (['a', 'b'], [2.0, 1.0], [1.0, 1.0])
    """
    idx, names = cluster_index(units)
    correct = {k: per_cluster(v, idx, len(names)) for k, v in per_item.items()}
    lc = None if label_counts is None else per_cluster(label_counts, idx, len(names))
    return UnitTable([str(u) for u in names], per_cluster(np.ones(len(idx)), idx, len(names)), correct, lc)


def record_table(records: Mapping[str, Sequence[Mapping[str, Any]]], keep: Iterable[str] | None = None) -> UnitTable:
    """One unit per record of :mod:`probegen.tasks.generic` (label baseline 1/n); ``keep``: these ids only.

    >>> recs = {"full": [{"id": "a", "correct": 1.0, "n": 2}, {"id": "b", "correct": 0.0, "n": 4}]}
    >>> record_table(recs).correct["label"].tolist(), record_table(recs, ["b"]).units
    ([0.5, 0.25], ['b'])
    """
    wanted = None if keep is None else {str(k) for k in keep}
    full = [r for r in records["full"] if wanted is None or str(r["id"]) in wanted]
    ids = [str(r["id"]) for r in full]
    per = {}
    for mode, rs in records.items():
        acc = {str(r["id"]): r["correct"] for r in rs}
        per[mode] = np.array([acc[i] for i in ids])
    per[LABEL] = np.array([1.0 / r["n"] for r in full])
    return UnitTable(ids, np.ones(len(ids)), per)


# ---- shape views ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChoiceView:
    """One question against its options (the choice-only control, AFLite). ``cluster``: kept whole by
    cross-validation; ``probe``: the stratum a control is trained per; ``word``/``sense``: for entropy."""

    id: str
    choices: tuple[str, ...]
    answer: int
    cluster: str
    probe: str
    word: str
    sense: str


def _get(obj: Any, names: Iterable[str], default: Any = None) -> Any:
    for n in names:
        v = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if v is not None:
            return v
    return default


def _text(choice: Any) -> str:
    return choice if isinstance(choice, str) else str(_get(choice, ("text", "answer", "label"), choice))


def choice_view(item: Any, index: int = 0) -> ChoiceView:
    """Read a multiple-choice item (dataclass or dict) through the common field names.

    >>> v = choice_view({"id": "q1", "choices": ["a dog", "a cat"], "answer": 1, "cluster": "c1",
    ...                  "probe": "definitions"})
    >>> v.answer, v.cluster, v.probe
    (1, 'c1', 'definitions')
    """
    choices = tuple(_text(c) for c in _get(item, ("choices", "options", "candidates"), ()))
    ans = _get(item, ("answer", "answer_index", "gold", "label"))
    if isinstance(ans, str):
        ans = choices.index(ans) if ans in choices else ord(ans.upper()) - ord("A")
    iid = str(_get(item, ("id", "qid"), index))
    cluster = str(_get(item, ("cluster", "cluster_id", "concept"), iid))
    return ChoiceView(
        id=iid,
        choices=choices,
        answer=int(ans) if ans is not None else -1,
        cluster=cluster,
        probe=str(_get(item, ("probe", "probe_type", "relation"), "all")),
        word=str(_get(item, ("word", "target", "lemma", "concept_word"), "")),
        sense=str(_get(item, ("synset", "sense", "concept"), cluster)),
    )


@dataclass(frozen=True)
class AlignmentView:
    """A group of query rows against its definitions, row i's gold being definition i. ``queries``: per
    side a control reads (``word``, ``context``), one text per row; ``cluster``: kept whole by splits."""

    id: str
    cluster: str
    definitions: tuple[str, ...]
    queries: Mapping[str, tuple[str, ...]]
    row_ids: tuple[str, ...] = ()

    @property
    def k(self) -> int:
        return len(self.definitions)


# ---- what a kind hands the bias analysis ---------------------------------------------------------------
@dataclass(frozen=True)
class BiasInputs:
    """One scored dataset as the bias analysis reads it: ``table(strata)``, the bias table over those
    strata's records (None: all); ``subsets``: named subsets, each the strata it keeps; ``*_views``: the
    controls' inputs; ``entropy``: ``(word, sense)`` under ``sense``, ``(word, gold label)`` under ``label``.
    """

    table: Callable[[Sequence[str] | None], UnitTable]
    unit: str
    n_items: int
    strata: tuple[str, ...] = ()
    subsets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    choice_views: Sequence[ChoiceView] = ()
    alignment_views: Sequence[AlignmentView] = ()
    entropy: Mapping[str, Sequence[tuple[str, str]]] = field(default_factory=dict)
    entropy_notes: Mapping[str, str] = field(default_factory=dict)
    notes: Sequence[str] = ()


def keep_subsets(counts: Mapping[str, int], least: int = 2) -> dict[str, tuple[str, ...]]:
    """One subset per stratum with at least ``least`` items (none for a lone stratum).

    >>> keep_subsets({"noun.animal": 12, "noun.plant": 1, "noun.food": 5}, least=5)
    {'noun.animal': ('noun.animal',), 'noun.food': ('noun.food',)}
    >>> keep_subsets({"noun.animal": 12})
    {}
    """
    if len(counts) < 2:
        return {}
    return {s: (s,) for s in sorted(counts) if counts[s] >= least}


# ---- what a kind hands the artefact filter -----------------------------------------------------------
@dataclass(frozen=True)
class FilterInputs:
    """A loaded dataset as AFLite reads it (:meth:`probegen.tasks.Filterable.artefact_inputs`);
    ``keep(alive)``: the dataset cut to ``alive`` (unit index -> its alive rows)."""

    concepts: Sequence[str]
    concept_unit: str
    rows_name: str
    keep: Callable[[Mapping[int, np.ndarray]], Any]
    choice_views: Sequence[ChoiceView] = ()
    alignment_views: Sequence[AlignmentView] = ()
    min_rows: int = 1
