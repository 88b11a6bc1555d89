"""Turning score matrices into predictions: one-to-one alignment, simple matching, argmax.

Ties never favour the gold answer: before solving, rows and columns are put in a seeded random
order, so a scorer that returns the same score everywhere gets chance accuracy, not 1.0.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

from .errors import NonFiniteScore

Matching = Literal["alignment", "simple"]
MATCHINGS = ("alignment", "simple")


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def align(
    scores: np.ndarray, matching: Matching = "alignment", seed: int | np.random.Generator | None = 0
) -> np.ndarray:
    """Predicted column for each row of a k x k score matrix (higher = better).

    ``alignment`` maximises the summed score over one-to-one assignments (Hungarian algorithm);
    ``simple`` lets each row take its best column independently (CoDA21's ablation).

    >>> align(np.array([[0.0, 5.0], [1.0, 9.0]])).tolist()
    [0, 1]
    >>> align(np.array([[0.0, 5.0], [1.0, 9.0]]), "simple").tolist()
    [1, 1]
    """
    m = np.asarray(scores, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ValueError(f"expected a non-empty square score matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        r, c = np.argwhere(~np.isfinite(m))[0]
        raise NonFiniteScore(f"score matrix contains NaN or infinite values (first at row {r}, column {c})")
    rng = _rng(seed)
    k = m.shape[0]
    rp, cp = rng.permutation(k), rng.permutation(k)
    shuffled = m[np.ix_(rp, cp)]
    if matching == "alignment":
        rows, cols = linear_sum_assignment(shuffled, maximize=True)
        pred_shuffled = np.empty(k, dtype=int)
        pred_shuffled[rows] = cols
    elif matching == "simple":
        pred_shuffled = shuffled.argmax(axis=1)
    else:
        raise ValueError(f"unknown matching {matching!r}; choose from {', '.join(MATCHINGS)}")
    pred = np.empty(k, dtype=int)
    pred[rp] = cp[pred_shuffled]
    return pred


def argmax_random_ties(scores: np.ndarray, seed: int | np.random.Generator | None = 0) -> int:
    """Index of the best score, breaking exact ties uniformly at random with the seed.

    >>> argmax_random_ties([0.1, 0.9, 0.3])
    1
    >>> sorted({argmax_random_ties([0.5, 0.5, 0.2, 0.5], seed=s) for s in range(50)})   # never always the first
    [0, 1, 3]
    """
    s = np.asarray(scores, dtype=np.float64)
    best = np.flatnonzero(s == s.max())
    return int(best[0]) if len(best) == 1 else int(_rng(seed).choice(best))
