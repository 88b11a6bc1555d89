"""The generic path of a task that gives only :meth:`~probegen.tasks.base.Task.units`: records
(:meth:`probegen.core.Outcome.row` with ``n`` candidates, chance 1/n), metrics and chance level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..core import Outcome
    from ..settings import Settings
    from .base import Dataset, Task


def score_rows(task: "Task", data: "Dataset", scorer: Any, conditions: Sequence[str], settings: "Settings",
               progress: bool = True) -> dict[str, list[dict[str, Any]]]:
    """Per condition, every unit's record, from one scorer call over all conditions' units."""
    from ..core import evaluate_units

    per = {c: task.scorer_units(data, c, settings, scorer) for c in conditions}
    outcomes = iter(evaluate_units([u for c in conditions for u in per[c]], scorer, settings.seed, progress))
    return {c: [record(o) for _, o in zip(per[c], outcomes)] for c in conditions}


def record(o: "Outcome") -> dict[str, Any]:
    """One unit's record (see the module doc).

    >>> from probegen.core import Outcome, Unit
    >>> record(Outcome(Unit.choice("u1", "q", ["a", "b"], 1), np.array([[0.1, 0.9]]), np.array([1])))["correct"]
    1.0
    """
    return o.row(n=len(o.unit.candidates[0]))


def metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean unit accuracy, the random baseline (mean 1/n) and the unit count.

    >>> metrics([{"correct": 1.0, "n": 2}, {"correct": 0.0, "n": 4}])
    {'accuracy': 0.5, 'random': 0.375, 'units': 2}
    """
    if not rows:
        return {"accuracy": None, "random": None, "units": 0}
    return {"accuracy": float(np.mean([r["correct"] for r in rows])),
            "random": float(np.mean([1.0 / r["n"] for r in rows])), "units": len(rows)}


def summary(model: str, m: dict[str, Any]) -> str:
    """A one-row terminal table of :func:`metrics`."""
    acc = "-" if m.get("accuracy") is None else f"{m['accuracy']:.3f}"
    rnd = "-" if m.get("random") is None else f"{m['random']:.3f}"
    return (f"{'model':<24} {'accuracy':>9} {'random':>7} {'units':>7}\n"
            f"{model:<24} {acc:>9} {rnd:>7} {m.get('units', 0):>7}")


def chance(units: Sequence[Any]) -> float:
    """Mean 1/(number of candidates) over units."""
    return float(np.mean([1.0 / len(u.candidates[0]) for u in units])) if units else 0.0
