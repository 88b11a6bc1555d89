"""The one way probegen's trained controls fit a classifier, so that the same seed decides the same on any CPU.

A trained control (choice-only, definition-order, overlap, AFLite's predictors, the trained method's probes)
turns float features into discrete decisions, and another CPU's BLAS rounds their arithmetic differently
(AVX-512 sums a dot product in another order than AVX2). Three guards keep the decisions off the last bits:

1. **Features on a grid** (:func:`quantize_features`): :data:`FEATURE_BITS` significant bits (about 6
   digits), far coarser than a CPU's 1e-15 relative rounding, so both machines usually train on identical
   inputs. (Model embeddings differ more, about 1e-6; guard 2 protects those.)
2. **A solver whose answer is a property of the data** (:func:`linear_classifier`): L2 logistic regression
   is strictly convex and Newton-CG converges quadratically to its optimum, so a 1e-6 relative perturbation
   moves scores by at most 7e-6 (50,495 WordNetQA hypernymy choices). The SGD fit used before was chaotic:
   a 1e-15 perturbation flipped 21 of 105 decisions; L-BFGS was as stable but 3 times slower.
3. **Decisions on a grid with a stated tie rule**: :func:`probegen.core.decide_scores` (9 significant
   digits, exact ties broken by a generator seeded by the unit); real sets' smallest top-2 gaps are 1e-3.

>>> import numpy as np
>>> quantize_features(np.array([1.0 + 1e-12, 1.0, 0.0, -3.0000000001]))   # last-bit noise vanishes
array([ 1.,  1.,  0., -3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Significant bits kept of every feature value: a relative step of 2**-20 (about 9.5e-7).
FEATURE_BITS = 20
#: Newton-CG tolerance: the optimum within about 1e-9 whatever order the BLAS sums in (about 10 iterations)
TOL = 1e-8
MAX_ITER = 1000


def quantize_features(X: Any) -> Any:
    """``X`` (dense or scipy sparse) with every value rounded to :data:`FEATURE_BITS` significant bits (exact,
    by ``frexp``/``ldexp``); zeros, infinities and NaN unchanged.

    >>> import numpy as np
    >>> from scipy.sparse import csr_matrix
    >>> quantize_features(csr_matrix([[0.0, 0.1 + 0.2]])).toarray() == quantize_features(np.array([[0.0, 0.3]]))
    array([[ True,  True]])
    """
    if hasattr(X, "tocsr"):  # sparse: round the stored values only
        out = X.tocsr(copy=True)
        out.data = _round_bits(np.asarray(out.data, dtype=np.float64))
        return out
    return _round_bits(np.asarray(X, dtype=np.float64))


def _round_bits(x: np.ndarray) -> np.ndarray:
    finite = np.isfinite(x)
    mant, exp = np.frexp(np.where(finite, x, 0.0))
    out = np.ldexp(np.round(mant * 2.0**FEATURE_BITS), exp - FEATURE_BITS)
    return np.where(finite, out, x)


def linear_classifier(C: float = 1.0) -> Any:
    """L2-regularised logistic regression (``C``: scikit-learn's inverse strength), Newton-CG to :data:`TOL`."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, solver="newton-cg", tol=TOL, max_iter=MAX_ITER)


def fit(model: Any, X: Any, y: Any) -> Any:
    """``model`` fitted on the quantised ``X`` (the one place a control's features enter a fit)."""
    return model.fit(quantize_features(X), y)


def scores(model: Any, X: Any) -> np.ndarray:
    """``model``'s decision scores of the quantised ``X``, for :func:`probegen.core.decide_scores`."""
    return np.asarray(model.decision_function(quantize_features(X)), dtype=np.float64)
