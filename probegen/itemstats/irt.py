"""Item response theory: 1PL, 2PL and 3PL (guessing floor fixed at 1/k) by marginal maximum likelihood
over a N(0, 1) ability on a Gauss grid, missing cells left out:

    P(right | theta) = c + (1 - c) * sigmoid(a * (theta - b)),   c = 0 (1PL, 2PL) or 1/k (3PL)

Weak normal priors keep all-right or all-wrong items finite; ``a`` may go negative (a mis-keyed item).
By hand because no library compared fixes c at 1/k, leaves missing cells out and gives intervals
(docs/itemstats.md). Other fitters register through the entry-point group ``probegen.irt_fitters``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..errors import ProbegenError

MODELS = ("1pl", "2pl", "3pl")
PRIOR_A = (1.0, 1.5)
PRIOR_B = (0.0, 3.0)
#: |a| below this (and not negative) is flagged as near-zero discrimination
NEAR_ZERO = 0.25
Z95 = 1.959964
#: grid points of the respondents' posteriors once the items are fitted (0.025 apart on [-5, 5])
POSTERIOR_GRID = 401


@dataclass
class IrtFit:
    """Per item ``a``, ``b``, ``c``, SEs and outfit (~1 fits, >> 1 misfits); per respondent ``theta`` (EAP)
    and ``theta_sd``; the marginal log-likelihood."""

    model: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    a_se: np.ndarray
    b_se: np.ndarray
    theta: np.ndarray
    theta_sd: np.ndarray
    outfit: np.ndarray
    loglik: float
    iterations: int
    flags: list[list[str]] = field(default_factory=list)

    def prob(self, theta: np.ndarray) -> np.ndarray:
        """P(right) of every (theta, item): shape (len(theta), items)."""
        return prob(np.asarray(theta, float)[:, None], self.a[None, :], self.b[None, :], self.c[None, :])

    def item_rows(self) -> list[dict[str, Any]]:
        """Per item: difficulty and discrimination with 95% intervals, guessing floor, outfit, flags."""
        return [{"b": float(self.b[i]), "b_lo": float(self.b[i] - Z95 * self.b_se[i]),
                 "b_hi": float(self.b[i] + Z95 * self.b_se[i]), "a": float(self.a[i]),
                 "a_lo": float(self.a[i] - Z95 * self.a_se[i]), "a_hi": float(self.a[i] + Z95 * self.a_se[i]),
                 "c": float(self.c[i]), "outfit": float(self.outfit[i]), "flags": ";".join(self.flags[i])}
                for i in range(len(self.b))]


def prob(theta: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The item characteristic curve (numpy, broadcasting)."""
    return np.asarray(c + (1 - c) / (1 + np.exp(-a * (theta - b))))


def _grid(n: int = 41) -> tuple[np.ndarray, np.ndarray]:
    nodes = np.linspace(-5, 5, n)
    w = np.exp(-nodes ** 2 / 2)
    return nodes, np.log(w / w.sum())


def _log_probs(nodes: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """(log P, log (1 - P), sigmoid) on the grid: Q x I each."""
    eta = a[None, :] * (nodes[:, None] - b[None, :])
    ls, lms = -np.logaddexp(0, -eta), -np.logaddexp(0, eta)
    logp = ls
    if (c > 0).any():
        logp = np.logaddexp(np.log(np.where(c > 0, c, 1e-300))[None, :], np.log1p(-c)[None, :] + ls)
    return logp, np.log1p(-c)[None, :] + lms, np.exp(ls)


def _objective(x: np.ndarray, y0: np.ndarray, m: np.ndarray, nodes: np.ndarray, logw: np.ndarray, c: np.ndarray,
               shared_a: bool) -> tuple[float, np.ndarray]:
    """Minus the marginal log-posterior and its gradient (Fisher's identity)."""
    n_items = len(c)
    a = np.full(n_items, x[0]) if shared_a else x[:n_items]
    b = x[-n_items:]
    logp, logq, sig = _log_probs(nodes, a, b, c)
    parts = y0 @ logp.T + (m - y0) @ logq.T + logw[None, :]  # J x Q
    top = parts.max(axis=1, keepdims=True)
    ll_j = top[:, 0] + np.log(np.exp(parts - top).sum(axis=1))
    post = np.exp(parts - ll_j[:, None])
    r, n = post.T @ y0, post.T @ m  # Q x I: expected right / answered at each grid ability
    p = np.exp(logp)
    g = (r - n * p) * (1 - c)[None, :] * sig * (1 - sig) / np.clip(p * (1 - p), 1e-300, None)  # dLL/deta
    ga = (g * (nodes[:, None] - b[None, :])).sum(0) - (a - PRIOR_A[0]) / PRIOR_A[1] ** 2
    gb = (g * -a[None, :]).sum(0) - (b - PRIOR_B[0]) / PRIOR_B[1] ** 2
    prior = (((a - PRIOR_A[0]) ** 2).sum() / (2 * PRIOR_A[1] ** 2)
             + ((b - PRIOR_B[0]) ** 2).sum() / (2 * PRIOR_B[1] ** 2))
    if shared_a:  # one a: its prior counted once
        prior -= ((a[0] - PRIOR_A[0]) ** 2) / (2 * PRIOR_A[1] ** 2) * (n_items - 1)
        ga = np.array([ga.sum() + (a[0] - PRIOR_A[0]) / PRIOR_A[1] ** 2 * (n_items - 1)])
    return float(-(ll_j.sum()) + prior), -np.concatenate([ga, gb])


def _start_a(y: np.ndarray) -> np.ndarray:
    """Starting discriminations from the item-rest correlations (so a mis-keyed item starts negative)."""
    from .classical import item_table

    r = np.clip(np.nan_to_num(item_table(y)["item_rest"], nan=0.3), -0.9, 0.9)
    return np.asarray(1.7 * r / np.sqrt(1 - r ** 2))


FITTER_GROUP = "probegen.irt_fitters"
#: a fitter (:func:`fitters`): (0/1 matrix, options per item or None) -> the fit
Fitter = Callable[[np.ndarray, "np.ndarray | None"], IrtFit]


@functools.cache
def fitters() -> dict[str, Fitter]:
    """The IRT fitters by name: :data:`MODELS`, then the entry points of :data:`FITTER_GROUP` (new names).

    >>> list(fitters())[:3]
    ['1pl', '2pl', '3pl']
    """
    from importlib.metadata import entry_points

    from ..plugins import load_plugins

    found: dict[str, Fitter] = {m: functools.partial(fit, model=m) for m in MODELS}

    def add(name: str, f: Any) -> None:
        if name in found or not callable(f):
            raise ProbegenError("an IRT fitter is a new name for a function (y, k) -> probegen.itemstats.irt.IrtFit")
        found[name] = f

    for ep in sorted(entry_points(group=FITTER_GROUP), key=lambda e: e.name):
        load_plugins([ep], "IRT fitter", FITTER_GROUP, lambda obj: obj, functools.partial(add, ep.name))
    return found


def fit(y: np.ndarray, k: np.ndarray | None = None, model: str = "2pl", max_iter: int = 500,
        quad: int = 41) -> IrtFit:
    """Fit ``model`` (or a plugin fitter of that name) to the 0/1 matrix ``y`` (respondents x items, NaN =
    missing); ``k``: options per item (3PL's floor 1/k; default 2).

    >>> fit(np.ones((2, 2)), model="4pl")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: unknown IRT model '4pl'; choose from 1pl, 2pl, 3pl
    """
    from scipy.optimize import minimize

    if model not in MODELS:
        if model not in fitters():
            raise ProbegenError(f"unknown IRT model {model!r}; choose from {', '.join(fitters())}")
        fitted = fitters()[model](y, k)
        if not isinstance(fitted, IrtFit):
            raise ProbegenError(f"IRT fitter {model!r} returned {type(fitted).__name__}, not an IrtFit")
        return replace(fitted, model=model)  # recorded by the name it is fitted again by (a bank, subset)
    y = np.asarray(y, float)
    n_items = y.shape[1]
    kk = np.full(n_items, 2.0) if k is None else np.asarray(k, float)
    c = 1.0 / kk if model == "3pl" else np.zeros(n_items)
    m = (~np.isnan(y)).astype(float)
    y0 = np.nan_to_num(y)
    nodes, logw = _grid(quad)
    p = np.clip((y0.sum(0) + 0.5) / (m.sum(0) + 1), 0.02, 0.98)
    p = np.clip((p - c) / (1 - c), 0.02, 0.98)
    x0 = np.concatenate([np.ones(1) if model == "1pl" else _start_a(y), -np.log(p / (1 - p))])
    res = minimize(_objective, x0, args=(y0, m, nodes, logw, c, model == "1pl"), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "gtol": 1e-5})
    a = np.full(n_items, res.x[0]) if model == "1pl" else res.x[:n_items].copy()
    b = res.x[-n_items:].copy()
    post, loglik = _posterior(y0, m, nodes, logw, a, b, c)
    fine = _grid(POSTERIOR_GRID)  # abilities: a grid finer than a long test's posterior SD
    post_fine, _ = _posterior(y0, m, *fine, a, b, c)
    theta = post_fine @ fine[0]
    theta_sd = np.sqrt(np.maximum(post_fine @ fine[0] ** 2 - theta ** 2, 0))
    return _finish(model, y, a, b, c, post, nodes, (theta, theta_sd), loglik, int(res.nit))


def _posterior(y0: np.ndarray, m: np.ndarray, nodes: np.ndarray, logw: np.ndarray, a: np.ndarray, b: np.ndarray,
               c: np.ndarray) -> tuple[np.ndarray, float]:
    """(respondents x grid posterior, marginal log-likelihood); items in chunks to bound memory."""
    parts = np.tile(logw[None, :], (len(y0), 1))
    step = max(1, 4_000_000 // len(nodes))
    for s in range(0, len(a), step):
        sl = slice(s, s + step)
        logp, logq, _ = _log_probs(nodes, a[sl], b[sl], c[sl])
        parts += y0[:, sl] @ logp.T + (m[:, sl] - y0[:, sl]) @ logq.T
    top = parts.max(axis=1, keepdims=True)
    ll_j = top[:, 0] + np.log(np.exp(parts - top).sum(axis=1))
    return np.exp(parts - ll_j[:, None]), float(ll_j.sum())


def _finish(model: str, y: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, post: np.ndarray,
            nodes: np.ndarray, abilities: tuple[np.ndarray, np.ndarray], loglik: float, iterations: int) -> IrtFit:
    """Intervals, item fit and flags of a fitted model (``post``: respondents' posteriors on the fitting grid
    ``nodes``; ``abilities``: EAP and posterior SD on the fine grid)."""
    theta, theta_sd = abilities
    m = ~np.isnan(y)
    nq = post.T @ m.astype(float)  # Q x I: expected respondents at each grid ability who answered the item
    pq = prob(nodes[:, None], a[None, :], b[None, :], c[None, :])
    sig = (pq - c[None, :]) / (1 - c[None, :])
    w = ((1 - c[None, :]) * sig * (1 - sig)) ** 2 / np.clip(pq * (1 - pq), 1e-12, None)
    ga, gb = nodes[:, None] - b[None, :], -a[None, :]
    iaa = (nq * w * ga ** 2).sum(0) + 1 / PRIOR_A[1] ** 2
    ibb = (nq * w * gb ** 2).sum(0) + 1 / PRIOR_B[1] ** 2
    iab = (nq * w * ga * gb).sum(0)
    if model == "1pl":  # one shared a: each b's interval alone
        a_se = np.full_like(a, 1 / np.sqrt(iaa.sum()))
        b_se = 1 / np.sqrt(ibb)
    else:
        det = np.clip(iaa * ibb - iab ** 2, 1e-12, None)
        a_se, b_se = np.sqrt(ibb / det), np.sqrt(iaa / det)
    pt = prob(theta[:, None], a[None, :], b[None, :], c[None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        z2 = np.where(m, (np.nan_to_num(y) - pt) ** 2 / np.clip(pt * (1 - pt), 1e-6, None), 0.0)
        outfit = z2.sum(0) / m.sum(0)
    fitted = IrtFit(model, a, b, c, a_se, b_se, theta, theta_sd, outfit, loglik, iterations)
    fitted.flags = item_flags(y, a, a + Z95 * a_se)
    return fitted


def item_flags(y: np.ndarray, a: np.ndarray, a_hi: np.ndarray | None = None) -> list[list[str]]:
    """Per item: ``negative discrimination`` (``a_hi`` < 0: possibly mis-keyed), ``possibly negative
    discrimination`` (a < 0), ``near-zero discrimination``, ``all right``, ``all wrong``, ``unanswered``.

    >>> item_flags(np.array([[1.0, 0.0, 1.0], [1.0, 1.0, np.nan]]), np.array([1.0, -0.5, 0.1]))
    [['all right'], ['negative discrimination'], ['near-zero discrimination', 'all right']]
    >>> item_flags(np.array([[1.0], [0.0]]), np.array([-0.5]), np.array([0.4]))
    [['possibly negative discrimination']]
    """
    a_hi = a if a_hi is None else a_hi
    m = ~np.isnan(y)
    n, right = m.sum(0), np.nansum(y, 0)
    out = []
    for i in range(y.shape[1]):
        f = []
        if a_hi[i] < 0:
            f.append("negative discrimination")
        elif a[i] < 0:
            f.append("possibly negative discrimination")
        elif a[i] < NEAR_ZERO:
            f.append("near-zero discrimination")
        if n[i] == 0:
            f.append("unanswered")
        elif right[i] == n[i]:
            f.append("all right")
        elif right[i] == 0:
            f.append("all wrong")
        out.append(f)
    return out


def information(fitted: IrtFit, theta: np.ndarray) -> np.ndarray:
    """Fisher information of every item at the abilities ``theta``: shape (len(theta), items)."""
    t = np.asarray(theta, float)[:, None]
    p = prob(t, fitted.a[None, :], fitted.b[None, :], fitted.c[None, :])
    sig = (p - fitted.c[None, :]) / (1 - fitted.c[None, :])
    return np.asarray((fitted.a[None, :] * (1 - fitted.c[None, :]) * sig * (1 - sig)) ** 2
                      / np.clip(p * (1 - p), 1e-12, None))


def simulate(n_resp: int, n_items: int, model: str = "2pl", k: int = 4, missing: float = 0.1,
             seed: int = 0) -> dict[str, np.ndarray]:
    """Responses from known parameters (a ~ LogNormal(0, 0.3), b, theta ~ N(0, 1), 3PL c = 1/k), a share
    ``missing`` of cells left out."""
    rng = np.random.default_rng(seed)
    a = np.exp(rng.normal(0, 0.3, n_items))
    b = rng.normal(0, 1, n_items)
    c = np.full(n_items, 1 / k if model == "3pl" else 0.0)
    theta = rng.normal(0, 1, n_resp)
    y = (rng.random((n_resp, n_items)) < prob(theta[:, None], a[None, :], b[None, :], c[None, :])).astype(float)
    y[rng.random(y.shape) < missing] = np.nan
    return {"y": y, "a": a, "b": b, "c": c, "theta": theta, "k": np.full(n_items, float(k))}
