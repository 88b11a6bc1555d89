"""The aligner finds the best one-to-one alignment and never lets ties favour gold."""

import itertools

import numpy as np
import pytest

from probegen.aligner import align, argmax_random_ties


def _best_by_search(m: np.ndarray) -> float:
    k = len(m)
    return max(sum(m[i, p[i]] for i in range(k)) for p in itertools.permutations(range(k)))


@pytest.mark.parametrize("k", range(2, 9))
def test_alignment_matches_exhaustive_search(k):
    rng = np.random.default_rng(k)
    for _ in range(3 if k == 8 else 10):
        m = rng.normal(size=(k, k))
        pred = align(m)
        assert sorted(pred.tolist()) == list(range(k))  # one-to-one
        assert m[np.arange(k), pred].sum() == pytest.approx(_best_by_search(m))


def test_simple_matching_takes_each_rows_best():
    m = np.array([[0.0, 5.0, 1.0], [1.0, 9.0, 0.0], [0.0, 0.0, 2.0]])
    assert align(m, "simple").tolist() == [1, 1, 2]
    assert align(m).tolist() != [1, 1, 2]


def test_constant_scores_get_chance_accuracy_not_one():
    k, n = 6, 2000
    acc = [np.mean(align(np.zeros((k, k)), seed=i) == np.arange(k)) for i in range(n)]
    assert abs(np.mean(acc) - 1 / k) < 0.03
    picks = [argmax_random_ties(np.zeros(5), seed=i) for i in range(2000)]
    assert abs(np.mean(np.array(picks) == 0) - 0.2) < 0.04


def test_bad_matrices_are_rejected():
    with pytest.raises(ValueError):
        align(np.zeros((2, 3)))
    from probegen.errors import ProbegenError

    with pytest.raises(ProbegenError, match="row 1, column 0"):  # one clear line, not a bare ValueError
        align(np.array([[0.0, 0.0], [np.inf, 0.0]]))
