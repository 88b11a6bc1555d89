"""What the generative method adds to accuracy: invalid answers and order effects.

:func:`summarize` reads the per-unit records an evaluation writes (each with ``gold`` and the
``generation`` detail of :meth:`probegen.generate.GenerativeScorer.detail`) and reports

- ``asks`` and, per status, their share: ``valid`` (the first answer parsed), ``valid_after_retry``,
  ``partial`` (some rows answered, the rest completed at random) and ``invalid`` (nothing usable);
  ``invalid_rate`` = partial + invalid, and ``random_rows`` (the share of rows decided at random);
- ``per_order``: the accuracy of each option order alone (order 0 is the evaluator's own), over the
  orders every unit has (``orders``; ``orders_max`` when units with more options have more, as
  under ``--permutations rotations``);
- ``consistency``: the share of rows whose answer is the same under every order (1.0 with one order);
- ``majority``: the accuracy of the majority answer over the orders, which is the evaluation's
  ``accuracy`` (with one order, the answer itself).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


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
    per_order, agree, rows, random_rows = [], [], 0, 0
    for p in range(n_orders):
        accs = []
        for r in gen:
            gold = np.atleast_1d(np.asarray(r["gold"]))
            ans = np.asarray(r["generation"]["answers"][p])[: len(gold)]
            accs.append(float(np.mean(ans == gold)) if len(gold) else 0.0)
        per_order.append(float(np.mean(accs)))
    for r in gen:
        answers = np.asarray(r["generation"]["answers"])  # orders x rows
        agree.extend((answers == answers[0]).all(axis=0).tolist())
        rows += answers.size
        random_rows += sum(len(x) for x in r["generation"]["random_rows"])
    share = {s: statuses.count(s) / len(statuses) for s in ("valid", "valid-after-retry", "partial", "invalid")}
    method = gen[0]["generation"].get("method", "generate")
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
        "majority": float(np.mean([_accuracy(r) for r in gen])),
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
    from ..methods import recorded

    return recorded(block.get("method"), "generate").summary_lines(block)


def _accuracy(record: dict[str, Any]) -> float:
    """A record's accuracy: its ``correct``, the share of its rows decided right (the one row layout)."""
    return float(record["correct"])
