"""The one way probegen's trained controls fit a classifier, so that the same seed decides the same on any CPU.

A trained control (choice-only, definition-order, word/context overlap, AFLite's predictors, the
trained method's linear probes) turns float features into discrete decisions: an item right or
wrong, a row removed or kept. Another instruction set rounds the features' arithmetic differently
(a BLAS kernel built for AVX-512 sums a dot product in another order than one built for AVX2), so
the decisions must not depend on the last bits. Three guards, each with its reason:

1. **Features on a grid** (:func:`quantize_features`): every feature value is rounded to
   :data:`FEATURE_BITS` significant bits (about 6 decimal digits). Another CPU's rounding of a
   TF-IDF weight, a standardised length or an overlap ratio is around 1e-15 relative, far below the
   grid's 1e-6 step, so both machines usually train on bit-identical inputs; and no reader of a
   feature looks at its 7th digit. (Model embeddings differ more between CPUs, about 1e-6
   relative, which the grid does not absorb: guard 2 is what protects those.)
2. **A solver whose answer is a property of the data, not of its path** (:func:`linear_classifier`):
   L2-regularised logistic regression is strictly convex, and Newton-CG converges quadratically to
   its unique optimum (:data:`TOL`), so features perturbed by a relative 1e-6 move the decision
   scores by at most 7e-6 (measured on 50,495 training choices of a WordNetQA hypernymy set, scores
   up to 7.3). The stochastic-gradient fit used before (50 epochs at the step 1/(alpha t), alpha
   1e-5) was chaotic: a 1e-15 relative perturbation of its inputs moved scores by up to 24 and
   flipped 21 of 105 hypernymy decisions of a 12-concept set; L-BFGS at the same tolerance was as
   stable but 3 times slower, and at its default tolerance moved scores by 0.06.
3. **Decisions on a grid with a stated tie rule**: scores go to
   :func:`probegen.core.decide_scores`, which puts them on a 9-significant-digit grid and breaks
   exact ties with a generator seeded by the unit, never towards a position. Near-ties that the
   perturbation could flip need a top-2 score gap below about 1e-5; the smallest gaps measured on
   real sets are 1e-3 and above.

>>> import numpy as np
>>> quantize_features(np.array([1.0 + 1e-12, 1.0, 0.0, -3.0000000001]))   # last-bit noise vanishes
array([ 1.,  1.,  0., -3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Significant bits kept of every feature value: a relative step of 2**-20 (about 9.5e-7).
FEATURE_BITS = 20
#: Newton-CG tolerance: tight enough that the fit lands on the optimum within about 1e-9, whatever
#: order the BLAS sums in (Newton's quadratic convergence gets there in about 10 iterations).
TOL = 1e-8
MAX_ITER = 1000


def quantize_features(X: Any) -> Any:
    """``X`` (a dense array or a scipy sparse matrix) with every value rounded to :data:`FEATURE_BITS`
    significant bits; zeros, infinities and NaN unchanged. Exact (``frexp``/``ldexp``), so the same
    value rounds the same on every CPU.

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
    """L2-regularised logistic regression, solved by Newton-CG to :data:`TOL` (see the module doc).

    ``C`` is scikit-learn's inverse regularisation strength; the controls use the default 1.0 on
    standardised features.
    """
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, solver="newton-cg", tol=TOL, max_iter=MAX_ITER)


def fit(model: Any, X: Any, y: Any) -> Any:
    """``model`` fitted on the quantised ``X`` (the one place a control's features enter a fit)."""
    return model.fit(quantize_features(X), y)


def scores(model: Any, X: Any) -> np.ndarray:
    """``model``'s decision scores of the quantised ``X``, for :func:`probegen.core.decide_scores`."""
    return np.asarray(model.decision_function(quantize_features(X)), dtype=np.float64)
