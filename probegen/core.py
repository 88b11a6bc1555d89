"""The one evaluation core: units -> one table of unique requests -> scores -> decisions.

Every command that scores expresses its work the same way. A :class:`Unit` is one decision the
task asks for:

- a CoDA21 group: k context queries against the same k definitions, decided by one-to-one
  ``alignment`` or per-row best column (``simple``);
- a multiple-choice item: one query against its choices, decided by ``argmax``;
- a context choice: n candidate queries each with one continuation, decided by ``best-row``
  (generation, not a probe answer: the earliest row, i.e. corpus order, wins exact ties).

:func:`request_table` puts the (query, candidate) pairs of any number of units (several
ablations of several datasets too) into one table of unique requests; :func:`score_units` scores
that table once through the shared scorer (cache, batching, prefix reuse and data-parallel
sharding live there) and gives every unit its score matrix back; :func:`decide` turns a matrix
into predictions. Ties are broken by a generator seeded from the seed and the unit id alone, so
a scorer that returns the same score everywhere gets chance accuracy, never the gold, and the
decision of a unit does not depend on which other units were scored with it.
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
        """The prompt template a chat model is asked this unit with (the generative and letter methods):
        by decision, ``matching`` for alignment/simple, ``choice`` for argmax (a :class:`PromptUnit` names its own).

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
    """What the core says of one unit, for every kind and every method: the score matrix it was
    decided on, the decision, and the scorer's own account (``detail``: the generative and letter
    methods' answers per option order; None for the others). Gold, correctness and confidence
    follow from these and the unit.

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
        scores, a relative measure only): what calibration calls a cloze row's distribution."""
        m = np.asarray(self.scores, dtype=np.float64)
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return cast(np.ndarray, e / e.sum(axis=1, keepdims=True))

    def confidence(self) -> np.ndarray:
        """Per row, the probability :meth:`distribution` gives the decision (``best-row``: one entry,
        the chosen row's share of the softmax over the rows' first candidates)."""
        if self.unit.decision == "best-row":
            col = np.asarray(self.scores, dtype=np.float64)[:, :1].T
            e = np.exp(col - col.max())
            return np.array([float((e / e.sum())[0, int(self.pred[0])])])
        d = self.distribution()
        return cast(np.ndarray, d[np.arange(len(self.pred)), self.pred])

    def row(self, **fields: Any) -> dict[str, Any]:
        """The one result-row layout of every kind and method: ``id``, the kind's own ``fields``
        (what the unit is about), then the outcome: ``scores`` (rows x candidates, the matrix decided
        on, 6 decimals), ``pred`` and ``gold`` (a list, one entry per row; ``best-row``: one),
        ``correct`` (the share of the unit's rows decided right: 1.0 or 0.0 for a one-row item) and,
        from a scorer that answers whole units, its account under ``generation``.

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
    """A unit a chat model is asked with a prompt template of its own (:mod:`probegen.generate`):
    ``ask`` names the template ("" = by decision, as :meth:`Unit.asks`) and ``fields`` are its extra
    placeholders as (name, value) pairs (the made-up word; a word-in-context item's sentences, whose
    one row the template words itself, so that row's query is empty). Scored, not asked, it is a unit
    like any other.

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
    """The one scorer protocol the core consumes: a score matrix (rows x candidates, higher = better)
    per unit, and what the scorer can say about its work. Every scorer of probegen is one: the
    pair scorers (:class:`PairScorer`: causal and masked LMs, embedders, static vectors, served
    models) and the scorers that answer whole units (the generative and letter methods).

    ``kind`` says what it is (``causal``, ``masked``, ``embedding``, ``static``, ``generative``,
    ``letter``); ``name`` the model as the user gave it."""

    name: str = ""
    kind: str = ""
    #: how queries are written for it: ``pattern`` (LMs), ``plain`` (embedding, static), ``generate`` (asked)
    query_style: str = "pattern"
    #: how a multi-token candidate's log-probs are reduced (``sum``, ``mean``; LMs only)
    reduction: str | None = None

    @abstractmethod
    def score_units(self, units: Sequence["Unit"], progress: bool = False) -> list[np.ndarray]:
        """A rows x candidates score matrix per unit, in order."""

    def detail(self, unit: "Unit") -> dict[str, Any] | None:
        """What the scorer says of ``unit`` beyond its scores (the generative and letter methods'
        answers per option order, recorded under ``generation``); None for the others."""
        return None

    def exchanges(self) -> list[dict[str, Any]] | None:
        """Every prompt and raw answer so far (``responses.jsonl``); None for a scorer that asks no prompts."""
        return None

    def stats(self) -> dict[str, Any] | None:
        """Counters of the work done (requests, cache hits, ...), recorded in results.json; None without any."""
        return None


class PairScorer(UnitScorer):
    """A scorer of (query, candidate) pairs: a list of units is scored through one table of unique
    requests (:func:`request_table`), each pair once, and the values laid out per unit."""

    @abstractmethod
    def score_pairs(self, pairs: Sequence[tuple[str, str]], progress: bool = False) -> dict[tuple[str, str], float]:
        """The score of every pair."""

    def score_units(self, units: Sequence["Unit"], progress: bool = False) -> list[np.ndarray]:
        return unit_matrices(units, self.score_pairs(request_table(units), progress=progress))


class ScoreFunction(UnitScorer):
    """Any object with ``score(queries, candidate_lists, progress)`` (a stand-in model, a user's
    function) as a :class:`UnitScorer`: every unit row is asked as it is (the object dedupes itself).

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
    """Each unit's rows x candidates matrix from the scores of its (query, candidate) pairs; a
    ragged unit (best-row: rows of different lengths) gets one column per row, its first candidate."""
    out = []
    for u in units:
        widths = {len(c) for c in u.candidates}
        if len(widths) == 1:
            out.append(np.array([[values[(q, c)] for c in cands] for q, cands in zip(u.queries, u.candidates)],
                                dtype=np.float64))
        else:
            out.append(np.array([[values[(q, cands[0])]] for q, cands in zip(u.queries, u.candidates)],
                                dtype=np.float64))
    return out


def tie_rng(seed: int, unit_id: str) -> np.random.Generator:
    """The tie-breaking generator of one unit: depends on the seed and the unit id only."""
    return np.random.default_rng([seed, zlib.crc32(f"{unit_id}/ties".encode())])


def request_table(units: Iterable[Unit]) -> list[Pair]:
    """The unique (query, candidate) pairs of ``units``, grouped by query in first-seen order.

    Pairs that share a query sit together so a causal scorer computes each prefix once.

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
    """Score every unit in one scorer call; a rows x candidates matrix per unit. ``scorer`` is a
    :class:`UnitScorer` (probegen's scorers) or any object with ``score(queries, candidate_lists)``
    (:class:`ScoreFunction`)."""
    return as_unit_scorer(scorer).score_units(list(units), progress=progress)


#: significant digits kept before deciding (:func:`quantize`)
DECISION_DIGITS = 9


def quantize(scores: Any, digits: int = DECISION_DIGITS) -> np.ndarray:
    """``scores`` on a grid of ``digits`` significant digits of their largest magnitude.

    Why: two scores that are mathematically equal but computed along different paths (the same
    features in another order, a BLAS built for another instruction set) differ in their last bits,
    and which one is larger then depends on the CPU. On the grid they are equal, so the tie rule
    decides them the same way everywhere; scores that differ in the 9th digit are still ordered.

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
    """:func:`quantize`'s grid counted in whole steps: integers (as floats), so the sums an alignment
    compares are exact and two assignments that add up the same values tie exactly, whatever order
    and last bits the values came with; their order is then the tie rule's, not the rounding's.

    >>> a = grid_units([0.1, 0.2, 0.3]); a.tolist(), bool(a[0] + a[1] == a[2])
    ([100000000.0, 200000000.0, 300000000.0], True)
    """
    m = np.asarray(scores, dtype=np.float64)
    step = _grid_step(m, digits)
    return m if step == 0.0 else np.round(m / step)


def decide(unit: Unit, matrix: np.ndarray, seed: int = 0, model: str = "",
           rng: np.random.Generator | None = None) -> np.ndarray:
    """Predictions for one unit from its score matrix (higher = better).

    ``alignment``/``simple``: the predicted column of each row; ``argmax``: the best column of
    each row; ``best-row``: one entry, the row whose (first) candidate scores highest. ``rng``
    replaces the unit's tie-breaking generator (:func:`tie_rng`) for a caller that keeps its own
    seeded streams (AFLite's splits draw one per split and unit).

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
    """The one score-to-decision rule, on a score matrix alone (higher = better): what
    :func:`decide` applies to a unit, for callers whose scores belong to no unit (a control
    classifier's, AFLite's, a fine-tuned probe's, one option order of the letter method) and which
    keep their own seeded tie-breaking generator ``rng`` (:func:`tie_rng` for a unit id).

    ``alignment``/``simple``: the predicted column of each row; ``argmax``: the best column of each
    row; ``best-row``: one entry, the row whose (first) candidate scores highest. Scores are first
    put on a 9-significant-digit grid (:func:`quantize`), so last-bit differences between CPUs are
    ties, and exact ties are broken by ``rng``, never towards a position.

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
    """The one path from units to outcomes: every unit scored in one scorer call
    (:func:`score_units`), its matrix optionally ``adjust``-ed (WordNetQA's length normalisation),
    decided by :func:`decide` and given the scorer's own account of it (:meth:`UnitScorer.detail`).

    Every command and method goes through here (eval, bias, compare, the context chooser; the
    generative and letter methods are scorers like any other).

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
