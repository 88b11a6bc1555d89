"""What the generative method adds to accuracy (:func:`summarize`): asks and the share per status,
``invalid_rate`` (partial + invalid), ``random_rows``, ``per_order`` accuracy over the orders every unit
has, ``consistency`` (rows answered alike under every order) and ``majority`` (the evaluation's accuracy).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..methods import recorded
from ..methods.generate import GenerateMethod


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The generative block of one evaluation's records (None if no record has one).

    >>> recs = [{"gold": [0, 1], "correct": 1.0, "generation": {"answers": [[0, 1], [1, 0]],
    ...          "status": ["valid", "partial"], "random_rows": [[], [1]]}}]
    >>> s = summarize(recs)
    >>> s["per_order"], s["consistency"], s["invalid_rate"], s["random_rows"]
    ([1.0, 0.0], 0.0, 0.5, 0.25)
    """
    gen = [r for r in records if r.get("generation")]
    if not gen:
        return None
    statuses = [s for r in gen for s in r["generation"]["status"]]
    n_orders = min(len(r["generation"]["answers"]) for r in gen)  # per-order accuracy: the orders every unit has
    most_orders = max(len(r["generation"]["answers"]) for r in gen)  # rotations of units with more options
    def accuracy(r: dict[str, Any], p: int) -> float:
        gold = np.atleast_1d(np.asarray(r["gold"]))
        return float(np.mean(np.asarray(r["generation"]["answers"][p])[: len(gold)] == gold)) if len(gold) else 0.0

    per_order = [float(np.mean([accuracy(r, p) for r in gen])) for p in range(n_orders)]
    agree: list[bool] = []
    rows = random_rows = 0
    for r in gen:
        answers = np.asarray(r["generation"]["answers"])  # orders x rows
        agree.extend((answers == answers[0]).all(axis=0).tolist())
        rows += answers.size
        random_rows += sum(len(x) for x in r["generation"]["random_rows"])
    share = {s: statuses.count(s) / len(statuses) for s in ("valid", "valid-after-retry", "partial", "invalid")}
    method = gen[0]["generation"].get("method", GenerateMethod.name)  # runs from before the letter method
    masses = [m for r in gen for order in r["generation"].get("label_mass") or [] for m in order]
    return {
        "method": method,
        "asks": len(statuses),
        "valid": share["valid"],
        "valid_after_retry": share["valid-after-retry"],
        "partial": share["partial"],
        "invalid": share["invalid"],
        "invalid_rate": share["partial"] + share["invalid"],
        "random_rows": random_rows / rows if rows else 0.0,
        "orders": n_orders,
        **({"orders_max": most_orders} if most_orders > n_orders else {}),
        "per_order": per_order,
        "consistency": float(np.mean(agree)) if agree else None,
        "majority": float(np.mean([float(r["correct"]) for r in gen])),
        **({"label_mass": float(np.mean(masses))} if masses else {}),
    }


def summary_lines(block: dict[str, Any] | None) -> list[str]:
    """The lines an evaluation summary adds for the generative block ([] without one).

    >>> print("\\n".join(summary_lines({"asks": 10, "valid": 0.6, "valid_after_retry": 0.1, "partial": 0.2,
    ...     "invalid": 0.1, "invalid_rate": 0.3, "random_rows": 0.25, "orders": 1, "per_order": [0.4],
    ...     "consistency": 1.0, "majority": 0.4})))  # doctest: +NORMALIZE_WHITESPACE
    generated answers: 10 asks; valid 60.0%, valid after one retry 10.0%, partial 20.0%, invalid 10.0% (invalid rate
    30.0%; 25.0% of rows decided at random)
    >>> print(summary_lines({"method": "letter", "asks": 40, "label_mass": 0.8176,
    ...                      "orders": 1})[0])  # doctest: +NORMALIZE_WHITESPACE
    letter answers: 40 asks, each the next token's distribution over the option labels; mean probability mass on the
    option labels 81.8%
    """
    if not block:
        return []
    return recorded(block.get("method"), GenerateMethod.name).summary_lines(block)
