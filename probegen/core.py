"""The one evaluation core: units -> one table of unique requests -> scores -> decisions.

A :class:`Unit` is one decision: a CoDA21 group (k queries against the same k definitions,
``alignment`` or ``simple``), a multiple-choice item (``argmax``) or a context choice (n candidate
queries, ``best-row``: the earliest row wins exact ties). :func:`request_table` puts the pairs of
any number of units into one table of unique requests, scored once; :func:`decide` turns a
matrix into predictions. Ties are broken by a generator seeded from the seed and the unit id
alone, so a constant scorer gets chance accuracy and a unit's decision does not depend on the
other units scored with it.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence, cast

import numpy as np

from .aligner import Matching, align, argmax_random_ties
from .errors import ProbegenError

DECISIONS = ("alignment", "simple", "argmax", "best-row")
Pair = tuple[str, str]


@dataclass(frozen=True)
class Unit:
    """One decision: ``queries[i]`` is scored against every candidate in ``candidates[i]``.

    ``gold`` holds the gold column of each row (``alignment``, ``simple``, ``argmax``) or the
    gold row (``best-row``, one entry); it may be empty when there is no gold (context choice).
    """

    id: str
    queries: tuple[str, ...]
    candidates: tuple[tuple[str, ...], ...]
    decision: str
    gold: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"unknown decision {self.decision!r}; choose from {', '.join(DECISIONS)}")
        if len(self.queries) != len(self.candidates) or not self.queries:
            raise ValueError(f"unit {self.id}: {len(self.queries)} queries but {len(self.candidates)} candidate lists")

    def asks(self) -> str:
        """The prompt template a chat model is asked this unit with: ``matching`` or ``choice`` by decision.

        >>> Unit.choice("i", "q", ["a", "b"]).asks(), Unit.group("g", ["q"], ["d"], [0], "alignment").asks()
        ('choice', 'matching')
        """
        if self.decision == "best-row":
            raise ProbegenError(f"unit {self.id} chooses among candidate contexts: the generative method cannot ask it")
        return "choice" if self.decision == "argmax" else "matching"

    @classmethod
    def group(cls, id: str, queries: Sequence[str], columns: Sequence[str], gold: Sequence[int],
              matching: str) -> "Unit":
        """k queries against the same k columns (a CoDA21 group), decided by ``matching``.

        >>> Unit.group("g", ["q1", "q2"], ["d1", "d2"], [1, 0], "alignment").candidates
        (('d1', 'd2'), ('d1', 'd2'))
        """
        cols = tuple(columns)
        return cls(id, tuple(queries), tuple(cols for _ in queries), matching, tuple(int(g) for g in gold))

    @classmethod
    def choice(cls, id: str, query: str, choices: Sequence[str], gold: int | None = None) -> "Unit":
        """One query against its choices (a multiple-choice item), decided by argmax."""
        return cls(id, (query,), (tuple(choices),), "argmax", () if gold is None else (int(gold),))


@dataclass(frozen=True, eq=False)
class Outcome:
    """One unit's score matrix, decision and the scorer's own account (``detail``: the generative and
    letter methods' answers per option order; else None).

    >>> o = Outcome(Unit.choice("i", "q", ["a", "b", "c"], 2), np.log([[0.2, 0.2, 0.6]]), np.array([2]))
    >>> o.correct.tolist(), o.accuracy, [round(c, 2) for c in o.confidence().tolist()]
    ([True], 1.0, [0.6])
    >>> g = Unit.group("g", ["x", "y"], ["d", "e"], [1, 0], "alignment")
    >>> Outcome(g, np.zeros((2, 2)), np.array([1, 1])).accuracy
    0.5
    """

    unit: Unit
    scores: np.ndarray
    pred: np.ndarray
    detail: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.unit.id

    @property
    def gold(self) -> np.ndarray:
        """The gold column of each row (the gold row for ``best-row``); empty without gold."""
        return np.asarray(self.unit.gold, dtype=int)

    @property
    def correct(self) -> np.ndarray:
        """Per gold entry, whether the decision is the gold (empty without gold)."""
        return np.asarray(self.pred[: len(self.gold)] == self.gold, dtype=bool)

    @property
    def accuracy(self) -> float:
        """The share of the unit's rows decided right (0.0 without gold)."""
        return float(np.mean(self.correct)) if len(self.gold) else 0.0

    def distribution(self) -> np.ndarray:
        """Each row's softmax over its candidates, the scores read as log-probabilities (for cosine
        scores, a relative measure only)."""
        m = np.asarray(self.scores, dtype=np.float64)
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return cast(np.ndarray, e / e.sum(axis=1, keepdims=True))

    def confidence(self) -> np.ndarray:
        """Per row, the probability :meth:`distribution` gives the decision (``best-row``: one entry, over
        the rows' first candidates)."""
        if self.unit.decision == "best-row":
            col = np.asarray(self.scores, dtype=np.float64)[:, :1].T
            e = np.exp(col - col.max())
            return np.array([float((e / e.sum())[0, int(self.pred[0])])])
        d = self.distribution()
        return cast(np.ndarray, d[np.arange(len(self.pred)), self.pred])

    def row(self, **fields: Any) -> dict[str, Any]:
        """The one result-row layout of every kind and method: ``id``, the kind's ``fields``, ``scores``
        (6 decimals), ``pred``, ``gold``, ``correct`` (the share of rows right) and ``generation`` (the
        scorer's account, if any).

        >>> Outcome(Unit.choice("i", "q", ["a", "b"], 1), np.array([[0.1, 0.9]]), np.array([1])).row(probe="x")
        {'id': 'i', 'probe': 'x', 'scores': [[0.1, 0.9]], 'pred': [1], 'gold': [1], 'correct': 1.0}
        """
        out = {"id": self.id, **fields, "scores": np.round(np.asarray(self.scores, dtype=np.float64), 6).tolist(),
               "pred": [int(x) for x in self.pred], "gold": [int(x) for x in self.gold], "correct": self.accuracy}
        if self.detail is not None:
            out["generation"] = self.detail
        return out


@dataclass(frozen=True)
class PromptUnit(Unit):
    """A unit a chat model is asked with a prompt template of its own: ``ask`` names it ("" = by
    decision) and ``fields`` are its extra placeholders as (name, value) pairs. Scored, it is a plain unit.

    >>> u = PromptUnit("p", ("",), (("yes", "no"),), "argmax", (0,), ask="yes-no", fields=(("word", "bank"),))
    >>> u.asks(), prompt_fields(u), prompt_fields(Unit.choice("i", "q", ["a"]))
    ('yes-no', {'word': 'bank'}, {})
    """

    ask: str = ""
    fields: tuple[tuple[str, str], ...] = ()

    def asks(self) -> str:
        return self.ask or super().asks()


def prompt_fields(unit: Unit) -> dict[str, str]:
    """The extra placeholders a chat model's prompt for ``unit`` fills (none for a plain unit)."""
    return dict(unit.fields) if isinstance(unit, PromptUnit) else {}


# ---- the scorer protocol ----------------------------------------------------------------------------
class UnitScorer(ABC):
    """The one scorer protocol: a score matrix (rows x candidates, higher = better) per unit. ``kind``:
    ``causal``, ``masked``, ``embedding``, ``static``, ``generative`` or ``letter``; ``name``: the model
    as the user gave it."""

    name: str = ""
    kind: str = ""
    #: how queries are written for it: ``pattern`` (LMs), ``plain`` (embedding, static); one that asks gets prompts
    query_style: str = "pattern"
    #: how a multi-token candidate's log-probs are reduced (``sum``, ``mean``; LMs only)
    reduction: str | None = None

    @abstractmethod
    def score_units(self, units: Sequence["Unit"], progress: bool = False) -> list[np.ndarray]:
        """A rows x candidates score matrix per unit, in order."""

    def detail(self, unit: "Unit") -> dict[str, Any] | None:
        """What the scorer says of ``unit`` beyond its scores (recorded under ``generation``), or None."""
        return None

    def exchanges(self) -> list[dict[str, Any]] | None:
        """Every prompt and raw answer so far (``responses.jsonl``); None for a scorer that asks no prompts."""
        return None

    def stats(self) -> dict[str, Any] | None:
        """Counters of the work done (requests, cache hits, ...), recorded in results.json; None without any."""
        return None


class PairScorer(UnitScorer):
    """A scorer of (query, candidate) pairs: units are scored through one table of unique requests."""

    @abstractmethod
    def score_pairs(self, pairs: Sequence[tuple[str, str]], progress: bool = False) -> dict[tuple[str, str], float]:
        """The score of every pair."""

    def score_units(self, units: Sequence["Unit"], progress: bool = False) -> list[np.ndarray]:
        return unit_matrices(units, self.score_pairs(request_table(units), progress=progress))


class ScoreFunction(UnitScorer):
    """Any object with ``score(queries, candidate_lists, progress)`` as a :class:`UnitScorer`.

    >>> class Overlap:
    ...     def score(self, queries, candidates, progress=False):
    ...         return [[float(len(set(q) & set(c))) for c in cs] for q, cs in zip(queries, candidates)]
    >>> as_unit_scorer(Overlap()).score_units([Unit.choice("i", "dog", ["cat", "god"])])[0].tolist()
    [[0.0, 3.0]]
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = str(getattr(model, "name", type(model).__name__))
        self.kind = str(getattr(model, "kind", ""))
        self.query_style = str(getattr(model, "query_style", "pattern"))
        self.reduction = getattr(model, "reduction", None)

    def score_units(self, units: Sequence["Unit"], progress: bool = False) -> list[np.ndarray]:
        queries = [q for u in units for q in u.queries]
        cands = [list(c) for u in units for c in u.candidates]
        rows = self.model.score(queries, cands, progress=progress)
        return unit_matrices(units, {(q, c): float(v) for q, cs, r in zip(queries, cands, rows) for c, v in zip(cs, r)})


def as_unit_scorer(scorer: Any) -> UnitScorer:
    """``scorer`` itself when it is a :class:`UnitScorer`, else wrapped as a :class:`ScoreFunction`."""
    return scorer if isinstance(scorer, UnitScorer) else ScoreFunction(scorer)


def unit_matrices(units: Sequence["Unit"], values: dict[tuple[str, str], float]) -> list[np.ndarray]:
    """Each unit's rows x candidates matrix from its pairs' scores; a ragged unit (best-row) gets one
    column, each row's first candidate."""
    out = []
    for u in units:
        ragged = len({len(c) for c in u.candidates}) > 1
        rows = [[values[(q, c)] for c in (cands[:1] if ragged else cands)] for q, cands in zip(u.queries, u.candidates)]
        out.append(np.array(rows, dtype=np.float64))
    return out


def tie_rng(seed: int, unit_id: str) -> np.random.Generator:
    """The tie-breaking generator of one unit: depends on the seed and the unit id only."""
    return np.random.default_rng([seed, zlib.crc32(f"{unit_id}/ties".encode())])


def request_table(units: Iterable[Unit]) -> list[Pair]:
    """The unique (query, candidate) pairs of ``units``, grouped by query (so a causal scorer computes
    each prefix once) in first-seen order.

    >>> u1 = Unit.group("g", ["a", "b"], ["x", "y"], [0, 1], "alignment")
    >>> u2 = Unit.choice("i", "a", ["y", "z"])
    >>> request_table([u1, u2])
    [('a', 'x'), ('a', 'y'), ('a', 'z'), ('b', 'x'), ('b', 'y')]
    """
    grouped: dict[str, dict[str, None]] = {}
    for u in units:
        for q, cands in zip(u.queries, u.candidates):
            slot = grouped.setdefault(q, {})
            for c in cands:
                slot.setdefault(c, None)
    return [(q, c) for q, cands in grouped.items() for c in cands]


def score_units(units: Sequence[Unit], scorer: Any, progress: bool = False) -> list[np.ndarray]:
    """Score every unit in one call of ``scorer`` (a :class:`UnitScorer` or a :class:`ScoreFunction`'s model)."""
    return as_unit_scorer(scorer).score_units(list(units), progress=progress)


#: significant digits kept before deciding (:func:`quantize`)
DECISION_DIGITS = 9


def quantize(scores: Any, digits: int = DECISION_DIGITS) -> np.ndarray:
    """``scores`` on a grid of ``digits`` significant digits of their largest magnitude, so that equal
    scores computed along different paths (whose last bits differ by CPU) tie everywhere.

    >>> a = 0.1 + 0.2; b = 0.3                 # equal, but not in binary floating point
    >>> bool(a > b), bool(quantize([a, b])[0] == quantize([a, b])[1])
    (True, True)
    >>> quantize([1.0, 1.000001, -3.0]).tolist()
    [1.0, 1.000001, -3.0]
    """
    m = np.asarray(scores, dtype=np.float64)
    step = _grid_step(m, digits)
    return m if step == 0.0 else np.round(m / step) * step


def _grid_step(m: np.ndarray, digits: int) -> float:
    finite = m[np.isfinite(m)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    return 0.0 if scale == 0.0 else float(10.0 ** (np.floor(np.log10(scale)) - (digits - 1)))


def grid_units(scores: Any, digits: int = DECISION_DIGITS) -> np.ndarray:
    """:func:`quantize`'s grid counted in whole steps (integers as floats), so the sums an alignment
    compares are exact and equal assignments tie exactly.

    >>> a = grid_units([0.1, 0.2, 0.3]); a.tolist(), bool(a[0] + a[1] == a[2])
    ([100000000.0, 200000000.0, 300000000.0], True)
    """
    m = np.asarray(scores, dtype=np.float64)
    step = _grid_step(m, digits)
    return m if step == 0.0 else np.round(m / step)


def decide(unit: Unit, matrix: np.ndarray, seed: int = 0, model: str = "",
           rng: np.random.Generator | None = None) -> np.ndarray:
    """Predictions for one unit from its score matrix (:func:`decide_scores`); a non-finite score is one
    line naming the pair. ``rng`` replaces the unit's tie-breaking generator (:func:`tie_rng`).

    >>> m = np.array([[0.0, 5.0], [1.0, 9.0]])
    >>> decide(Unit.group("g", ["a", "b"], ["x", "y"], [0, 1], "alignment"), m).tolist()
    [0, 1]
    >>> decide(Unit.group("g", ["a", "b"], ["x", "y"], [0, 1], "simple"), m).tolist()
    [1, 1]
    >>> tied = [decide(Unit.choice(f"i{n}", "q", ["a", "b"]), np.zeros((1, 2)))[0] for n in range(40)]
    >>> bool(0 < sum(tied) < 40)  # exact ties are broken at random, never towards one position
    True
    """
    m = np.asarray(matrix, dtype=np.float64)
    if not np.all(np.isfinite(m)):
        bad = np.argwhere(~np.isfinite(m))[0]
        who = f"model {model}: " if model else ""
        q = unit.queries[bad[0]]
        c = unit.candidates[bad[0]][bad[1] if unit.decision != "best-row" else 0]
        raise ProbegenError(f"{who}non-finite score for unit {unit.id}, pair ({q[:60]!r}, {c[:60]!r})")
    return decide_scores(m, unit.decision, rng if rng is not None else tie_rng(seed, unit.id))


def decide_scores(matrix: np.ndarray, decision: str, rng: np.random.Generator) -> np.ndarray:
    """The one score-to-decision rule on a score matrix (higher = better), ties broken by ``rng``.

    ``alignment``/``simple``: the predicted column of each row; ``argmax``: the best column of each
    row; ``best-row``: one entry, the row whose first candidate scores highest. Scores are first put
    on the decision grid (:func:`grid_units`), so last-bit differences between CPUs are ties.

    >>> decide_scores(np.array([[0.2, 0.9, 0.1]]), "argmax", tie_rng(0, "item")).tolist()
    [1]
    >>> picks = [int(decide_scores(np.zeros((1, 3)), "argmax", tie_rng(0, f"i{n}"))[0]) for n in range(60)]
    >>> sorted(set(picks))
    [0, 1, 2]
    >>> decide_scores(np.array([[1.0, 0.0]]), "best", tie_rng(0, "x"))
    Traceback (most recent call last):
    ValueError: unknown decision 'best'; choose from alignment, simple, argmax, best-row
    """
    m = np.asarray(matrix, dtype=np.float64)
    if not np.all(np.isfinite(m)):
        raise ProbegenError(f"non-finite score at row, column {tuple(int(x) for x in np.argwhere(~np.isfinite(m))[0])}")
    # last-bit differences are ties, decided alike on every CPU; whole grid steps keep an alignment's sums exact
    m = grid_units(m)
    if decision in ("alignment", "simple"):
        return align(m, cast(Matching, decision), seed=rng)
    if decision == "argmax":
        return np.array([argmax_random_ties(row, seed=rng) for row in m], dtype=int)
    if decision == "best-row":
        return np.array([int(np.argmax(m[:, 0]))], dtype=int)
    raise ValueError(f"unknown decision {decision!r}; choose from alignment, simple, argmax, best-row")


def evaluate_units(units: Sequence[Unit], scorer: Any, seed: int = 0, progress: bool = False,
                   adjust: Callable[[Unit, np.ndarray], np.ndarray] | None = None) -> list[Outcome]:
    """The one path from units to outcomes: scored in one call, each matrix optionally ``adjust``-ed
    (WordNetQA's length normalisation), decided by :func:`decide`, with :meth:`UnitScorer.detail`.

    >>> class Overlap:
    ...     def score(self, queries, candidates, progress=False):
    ...         return [[float(len(set(q) & set(c))) for c in cs] for q, cs in zip(queries, candidates)]
    >>> [o.pred.tolist() for o in evaluate_units([Unit.choice("i", "dog", ["cat", "god"], 1)], Overlap())]
    [[1]]
    """
    sc = as_unit_scorer(scorer)
    units = list(units)
    out = []
    for u, m in zip(units, score_units(units, sc, progress=progress)):
        m = adjust(u, m) if adjust is not None else m
        out.append(Outcome(u, m, decide(u, m, seed, sc.name), sc.detail(u)))
    return out
