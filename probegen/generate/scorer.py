"""The generative method: each unit asked as a prompt per option order (temperature 0, the run's seed,
through the response cache), the answer parsed; an answer that does not parse is shown its error once
and asked again, and what is still missing is completed by a seeded random choice, the ask counted
``partial`` or ``invalid`` (reported beside accuracy, never folded in silently). The score matrix holds
per row the share of orders that chose each option: the decision is the majority answer.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence, cast

import numpy as np

from ..core import UnitScorer, prompt_fields
from ..errors import ProbegenError

#: how many answer tokens each template gets: a fixed allowance plus one per row (a matching line)
TOKENS_BASE = 24
TOKENS_PER_ROW = 8
STATUSES = ("valid", "valid-after-retry", "partial", "invalid")


def order_of(seed: int, unit_id: str, order: int, n: int) -> np.ndarray:
    """Option order ``order`` of a unit: the identity for 0, else seeded by ``seed``, the unit id, ``order``.

    >>> order_of(0, "g1", 0, 4).tolist()
    [0, 1, 2, 3]
    >>> (order_of(0, "g1", 1, 4) == order_of(0, "g1", 1, 4)).all()
    np.True_
    """
    if order == 0:
        return np.arange(n)
    return np.random.default_rng([seed, zlib.crc32(f"{unit_id}/order/{order}".encode())]).permutation(n)


#: ``--permutations rotations``: every cyclic rotation of the base order (CircularEval)
ROTATIONS = "rotations"


def check_permutations(permutations: int | str) -> int | str:
    """``permutations`` as the scorers take it: an int >= 1 or ``"rotations"``; else one ProbegenError line.

    >>> check_permutations("3"), check_permutations("rotations")
    (3, 'rotations')
    """
    if permutations == ROTATIONS:
        return ROTATIONS
    try:
        n = int(permutations)
    except (TypeError, ValueError):
        raise ProbegenError(f"--permutations takes a number of orders or 'rotations', not {permutations!r}") from None
    if n < 1:
        raise ProbegenError(f"--permutations must be at least 1 (got {n})")
    return n


def option_orders(ask: str, seed: int, unit_id: str, n: int, permutations: int | str) -> list[np.ndarray]:
    """The option orders a unit is asked under (generative and letter method): ``perm[p]`` is the
    option index shown at position p. Matching: order 0 is the evaluator's own (CoDA21's columns are
    already seeded), then seeded permutations. Choices: every order seeded (:func:`order_of`'s p + 1),
    so the gold's place in the file never rewards a model that always answers "A". Yes-no: fixed
    (the prompt lists no options). ``rotations``: the n cyclic rotations of the base order.

    >>> [o.tolist() for o in option_orders("matching", 0, "g", 3, "rotations")]
    [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    >>> [o.tolist() for o in option_orders("yes-no", 0, "w", 2, 2)]
    [[0, 1], [0, 1]]
    """
    permutations = check_permutations(permutations)
    if ask == "yes-no":
        return [np.arange(n) for _ in range(1 if permutations == ROTATIONS else cast(int, permutations))]
    shift = 0 if ask == "matching" else 1
    if permutations == ROTATIONS:
        base = order_of(seed, unit_id, shift, n)
        return [np.roll(base, -r) for r in range(max(n, 1))]
    return [order_of(seed, unit_id, p + shift, n) for p in range(cast(int, permutations))]


def complete(answer: Sequence[int | None], n_options: int, one_to_one: bool, rng: np.random.Generator) -> list[int]:
    """``answer`` with every missing row a random option (one-to-one: of the options no row took).

    >>> complete([2, None, 0], 3, True, np.random.default_rng(0))
    [2, 1, 0]
    """
    out: list[Any] = list(answer)
    missing = [i for i, a in enumerate(out) if a is None]
    if not missing:
        return [int(a) for a in out]
    if one_to_one:
        free = [j for j in range(n_options) if j not in set(a for a in out if a is not None)]
        if len(free) < len(missing):
            raise ValueError("more rows than options left")
        picks = rng.permutation(free)[: len(missing)]
    else:
        picks = rng.integers(n_options, size=len(missing))
    for i, p in zip(missing, picks):
        out[i] = int(p)
    return [int(a) for a in out]


@dataclass
class _Ask:
    """One (unit, option order) question and what became of it."""

    unit: int
    order: int
    perm: np.ndarray
    question: Any
    messages: list[dict[str, str]]
    responses: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    status: str = ""
    answer: list[int] = field(default_factory=list)  # in the unit's own option indices
    random_rows: list[int] = field(default_factory=list)


class AskingScorer(UnitScorer):
    """What the generative and the letter scorers share: a ``backend`` asked with the ``prompts`` under
    ``permutations`` option orders (an int or ``"rotations"``) seeded by ``seed``; details and exchanges."""

    def __init__(self, backend: Any, prompts: Any, permutations: int | str, seed: int) -> None:
        self.backend = backend
        self.name = backend.name
        self.prompts = prompts
        self.permutations = check_permutations(permutations)
        self.seed = int(seed)
        self._details: dict[Any, dict[str, Any]] = {}
        self._exchanges: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}

    def _stats(self, prefix: str) -> dict[str, Any]:
        """The scorer's counts and the backend's counters (named ``prefix_...``)."""
        back = self.backend.stats() if hasattr(self.backend, "stats") else {}
        return {**self.counts, **{f"{prefix}_{k}": v for k, v in back.items()}}

    def detail(self, unit: Any) -> dict[str, Any] | None:
        """What each option order gave for ``unit`` (the last call that asked it)."""
        return self._details.get(unit_key(unit))

    def exchanges(self) -> list[dict[str, Any]]:
        """Every exchange with the model so far, in ask order (``responses.jsonl``)."""
        return list(self._exchanges)

    def close(self) -> None:
        """Close the backend."""
        if hasattr(self.backend, "close"):
            self.backend.close()


class GenerativeScorer(AskingScorer):
    """Answers units by asking a chat model ``chat``. :meth:`detail` gives per order ``answers`` (the option
    chosen per row), ``status``, ``random_rows``, and as the letter method ``method``, ``orders``
    (``perm[p]``: the option shown at position p) and ``probs`` (1.0 at the position answered)."""

    kind = "generative"

    def __init__(self, chat: Any, prompts: Any, permutations: int | str = 1, seed: int = 0,
                 retry: bool = True) -> None:
        super().__init__(chat, prompts, permutations, seed)
        self.retry = retry
        self.counts = {s: 0 for s in STATUSES} | {"asks": 0, "rows": 0, "random_rows": 0}

    def settings(self) -> dict[str, Any]:
        """The method's settings (results.json ``scorer``): backend identity, prompts, orders, decoding."""
        return {"method": "generate", "backend": self.backend.identity(), "prompts": self.prompts.record(),
                "permutations": self.permutations, "temperature": 0.0, "seed": self.seed,
                "retries": 1 if self.retry else 0, "max_tokens": f"{TOKENS_BASE} + {TOKENS_PER_ROW} per row"}

    def stats(self) -> dict[str, Any]:
        """Asks by status, rows completed at random, and the chat backend's counters."""
        return self._stats("chat")

    # ---- asking -------------------------------------------------------------------------------------
    def score_units(self, units: Sequence[Any], progress: bool = False) -> list[np.ndarray]:
        """Per unit, rows x options: the share of option orders that chose each option."""
        from .prompts import Question

        asks: list[_Ask] = []
        for i, u in enumerate(units):
            ask = u.asks()
            widths = {len(c) for c in u.candidates}
            if len(widths) != 1 or any(c != u.candidates[0] for c in u.candidates):
                raise ProbegenError(f"unit {u.id}: the generative method asks every row against the same options")
            options = u.candidates[0]
            rows, fields = u.queries if ask == "matching" else u.queries[:1], prompt_fields(u)
            for p, perm in enumerate(option_orders(ask, self.seed, u.id, len(options), self.permutations)):
                q = Question(ask=ask, rows=tuple(rows), options=tuple(options[j] for j in perm), fields=fields)
                asks.append(_Ask(i, p, perm, q, self.prompts.messages(q)))
        self._ask([(a, a.messages) for a in asks], progress, "asking")
        parsed = {id(a): self._parse(a, a.responses[0]) for a in asks}
        again = [a for a in asks if not parsed[id(a)].valid] if self.retry else []
        if again:
            convs = [(a, [*a.messages, {"role": "assistant", "content": a.responses[0]},
                          {"role": "user",
                           "content": self.prompts.retry(a.question, parsed[id(a)].error)}]) for a in again]
            self._ask(convs, progress, "asking again")
        for a in asks:
            first = parsed[id(a)]
            a.errors.append(first.error)
            final = first
            if len(a.responses) > 1:
                final = self._parse(a, a.responses[1])
                a.errors.append(final.error)
            u = units[a.unit]
            if final.valid:
                a.status = "valid" if len(a.responses) == 1 else "valid-after-retry"
            else:
                a.status = "invalid" if all(x is None for x in final.answer) else "partial"
            rng = np.random.default_rng([self.seed, zlib.crc32(f"{u.id}/order/{a.order}/complete".encode())])
            shown = complete(final.answer, len(a.perm), a.question.ask == "matching", rng)
            a.random_rows = [r for r, x in enumerate(final.answer) if x is None]
            a.answer = [int(a.perm[j]) for j in shown]  # back to the unit's own option indices
        return self._collect(units, asks)

    def _ask(self, convs: list[tuple[_Ask, list[dict[str, str]]]], progress: bool, what: str) -> None:
        """Send the conversations (duplicates once), grouped by answer allowance; append each answer."""
        by_tokens: dict[int, list[tuple[_Ask, list[dict[str, str]]]]] = {}
        for a, msgs in convs:
            by_tokens.setdefault(TOKENS_BASE + TOKENS_PER_ROW * len(a.question.rows), []).append((a, msgs))
        for max_tokens, group in sorted(by_tokens.items()):
            unique: dict[str, list[dict[str, str]]] = {}
            for _, msgs in group:
                unique.setdefault(json.dumps(msgs, ensure_ascii=False), msgs)
            texts = self.backend.chat(list(unique.values()), max_tokens=max_tokens, seed=self.seed, progress=progress)
            answer = dict(zip(unique, texts))
            for a, msgs in group:
                a.responses.append(answer[json.dumps(msgs, ensure_ascii=False)])

    def _parse(self, a: _Ask, text: str) -> Any:
        """The strict parse of one answer (:func:`probegen.generate.parse.parse`)."""
        from .parse import parse

        q = a.question
        return parse(q.ask, text, len(q.rows), len(q.options), q.options)

    def _collect(self, units: Sequence[Any], asks: list[_Ask]) -> list[np.ndarray]:
        mats = [np.zeros((len(u.queries) if u.asks() == "matching" else 1, len(u.candidates[0]))) for u in units]
        per_unit: dict[int, list[_Ask]] = {}
        for a in asks:
            per_unit.setdefault(a.unit, []).append(a)
            self.counts[a.status] += 1
            self.counts["asks"] += 1
            self.counts["rows"] += len(a.answer)
            self.counts["random_rows"] += len(a.random_rows)
            convo = [*a.messages, {"role": "assistant", "content": a.responses[0]}]
            if len(a.responses) > 1:
                convo += [{"role": "user", "content": self.prompts.retry(a.question, a.errors[0])},
                          {"role": "assistant", "content": a.responses[1]}]
            self._exchanges.append({"unit": units[a.unit].id, "ask": a.question.ask, "order": a.order,
                                    "option_order": a.perm.tolist(), "options": list(a.question.options),
                                    "messages": convo, "errors": a.errors,
                                    "status": a.status, "answer": a.answer, "random_rows": a.random_rows})
        for i, u in enumerate(units):
            mine = sorted(per_unit.get(i, []), key=lambda a: a.order)
            for a in mine:
                for r, j in enumerate(a.answer):
                    mats[i][r, j] += 1.0 / len(mine)
            self._details[unit_key(u)] = {"method": "generate", "answers": [a.answer for a in mine],
                                      "status": [a.status for a in mine], "random_rows": [a.random_rows for a in mine],
                                      "orders": [a.perm.tolist() for a in mine], "probs": [_one_hot(a) for a in mine]}
        return [np.round(m, 12) for m in mats]


def _one_hot(a: _Ask) -> list[list[float]]:
    """Per row, 1.0 at the SHOWN position answered (rows completed at random as completed)."""
    shown = {int(j): p for p, j in enumerate(a.perm)}  # option index -> position shown
    out = [[0.0] * len(a.perm) for _ in a.answer]
    for r, j in enumerate(a.answer):
        out[r][shown[j]] = 1.0
    return out


def unit_key(unit: Any) -> tuple[Any, ...]:
    """A unit's identity for :meth:`GenerativeScorer.detail` (ids repeat across conditions; the content does not)."""
    return (unit.id, unit.queries, unit.candidates, unit.asks(), tuple(prompt_fields(unit).items()))
