"""Choosing the group members a reference model finds most confusable (pure functions over score tables).

Swapping the definitions of rows i and j of a group's score matrix ``M`` (gold on the diagonal)
changes the alignment score by ``gain_ij = M_ij + M_ji - M_ii - M_jj``, in which row and column
offsets cancel. Members are added greedily: most rows wrong in the best alignment, then the largest
summed swap gain, never breaking the similarity cap.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from scipy.optimize import linear_sum_assignment


def swap_gains(m: np.ndarray) -> np.ndarray:
    """``gain[i, j] = M_ij + M_ji - M_ii - M_jj`` (0 on the diagonal).

    >>> swap_gains(np.array([[0.0, 1.0], [2.0, 0.0]])).tolist()
    [[0.0, 3.0], [3.0, 0.0]]
    """
    m = np.asarray(m, dtype=np.float64)
    d = np.diag(m)
    g = m + m.T - d[:, None] - d[None, :]
    np.fill_diagonal(g, 0.0)
    return cast(np.ndarray, g)


def alignment_errors(m: np.ndarray) -> int:
    """Rows that the best one-to-one alignment of ``m`` sends away from the diagonal (nudged down by a hair:
    a tie with gold counts as wrong, since the evaluator breaks ties at random).

    >>> alignment_errors(np.ones((3, 3)))   # all tied: counted as fully confusable
    3
    """
    m = np.asarray(m, dtype=np.float64)
    if len(m) < 2:
        return 0
    scale = max(1.0, float(np.abs(m).max()))
    rows, cols = linear_sum_assignment(m - 1e-9 * scale * np.eye(len(m)), maximize=True)
    return int(np.sum(cols != rows))


def most_confusable(
    scores: np.ndarray,
    similarity: np.ndarray,
    k: int,
    max_similarity: float,
    required: list[int] | None = None,
) -> list[int] | None:
    """Indices of ``k`` candidates whose group the reference model aligns worst, or None.

    ``scores``: the n x n context-by-definition matrix; no chosen pair's ``similarity`` may exceed
    ``max_similarity``; ties go to the lower index.

    >>> s = np.eye(4) * 5; s[0, 1] = s[1, 0] = 6           # 0 and 1 swap: the model confuses them
    >>> most_confusable(s, np.zeros((4, 4)), 2, 0.8)
    [0, 1]
    """
    n = len(scores)
    if n < k:
        return None
    ok = np.asarray(similarity) <= max_similarity + 1e-9
    np.fill_diagonal(ok, True)
    # gains in whole steps of the decision grid (probegen.core.grid_units): their sums are exact, so candidates that
    # gain the same tie on every CPU and the lower index takes them
    from ..core import grid_units

    gains = swap_gains(grid_units(scores))
    chosen: list[int] = list(required or [])
    if not chosen:
        masked = np.where(ok, gains, -np.inf)
        np.fill_diagonal(masked, -np.inf)
        if not np.isfinite(masked).any():
            return None
        i, j = np.unravel_index(int(np.argmax(masked)), masked.shape)  # first maximum: lowest indices
        chosen = sorted([int(i), int(j)])
    while len(chosen) < k:
        best: tuple[int, float, int] | None = None
        for x in range(n):
            if x in chosen or not ok[x, chosen].all():
                continue
            sub = chosen + [x]
            key = (alignment_errors(scores[np.ix_(sub, sub)]), float(gains[x, chosen].sum()), -x)
            if best is None or key > best:
                best = key
        if best is None:
            return None
        chosen.append(-best[2])
    return sorted(chosen)
