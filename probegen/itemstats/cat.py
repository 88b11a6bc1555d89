"""Computerized adaptive testing over a calibrated item bank (:mod:`.irt` parameters per item, each in a
record given whole): the engine, free of models and files. :func:`run_cat` gives records in batches to a
respondent (records -> 0/1 answers): ability by EAP under the bank's N(0, 1) prior (Simpson's rule on a
grid; its SD the SE); selection by Fisher information with content balance over the strata (Kingsbury
and Zara) and randomesque exposure control; stop at ``budget`` items, ``target_se`` or an empty bank;
full-set accuracy predicted as ``eval`` computes it, a cluster's items taken as fully correlated.

>>> bank = CatBank(a=np.ones(4), b=np.array([-1.0, 0.0, 0.5, 2.0]), c=np.zeros(4), record=np.arange(4))
>>> res = run_cat(bank, CatConfig(budget=2, batch_items=1), lambda recs: {int(r): 1.0 for r in recs})
>>> [s["records"] for s in res.steps], res.items_given
([[1], [2]], 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, cast

import numpy as np

from ..errors import ProbegenError
from .irt import prob

#: the prior of every ability estimate: the N(0, 1) the bank's marginal-likelihood calibration assumed
PRIOR_MEAN, PRIOR_SD = 0.0, 1.0
#: the quadrature grid of the posterior (0.025 apart on [-6, 6]: finer than a 100-item test's SD)
GRID = np.linspace(-6.0, 6.0, 481)
Z95 = 1.959964
#: content balance: a stratum value's count of items given may differ from its share of the bank times
#: the items given by at most this share of the items given, plus one record (the stated tolerance)
BALANCE_TOLERANCE = 0.10

Respond = Callable[[Sequence[int]], dict[int, float]]


@dataclass
class CatBank:
    """The engine's view of a bank: per item ``a``, ``b``, ``c``, ``record`` (index); per record its
    ``stratum`` and eval's ``cluster`` (None: one stratum; each record its own cluster)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    record: np.ndarray
    stratum: list[str] | None = None
    cluster: list[str] | None = None

    @property
    def n_records(self) -> int:
        return int(self.record.max()) + 1 if len(self.record) else 0

    def record_items(self) -> list[np.ndarray]:
        """The item indices of each record."""
        order = np.argsort(self.record, kind="stable")
        bounds = np.searchsorted(self.record[order], np.arange(self.n_records + 1))
        return [order[bounds[r]:bounds[r + 1]] for r in range(self.n_records)]


@dataclass(frozen=True)
class CatConfig:
    """How a test runs: stop at ``budget`` items or SE ``target_se``; ``randomesque``: records drawn among
    (1: the most informative); ``balance``: over the strata; ``seed``: of the randomesque draws."""

    budget: int | None = None
    target_se: float | None = None
    batch_items: int = 10
    randomesque: int = 1
    balance: bool = True
    seed: int = 0

    def check(self, bank_items: int) -> None:
        """One line for a config the bank cannot run."""
        if self.budget is None and self.target_se is None:
            raise ProbegenError("an adaptive test needs a stopping rule: --budget N items or --target-se SE")
        if self.budget is not None and not 1 <= self.budget <= bank_items:
            raise ProbegenError(f"--budget must be from 1 to the bank's {bank_items} items; got {self.budget}")
        if self.target_se is not None and not (isinstance(self.target_se, (int, float))
                                               and math.isfinite(self.target_se) and self.target_se > 0):
            raise ProbegenError(f"--target-se must be a positive number; got {self.target_se!r}")
        if self.batch_items < 1 or self.randomesque < 1:
            raise ProbegenError(f"--batch-items and --randomesque must be at least 1; got {self.batch_items} and "
                                f"{self.randomesque}")


@dataclass
class CatResult:
    """A finished test: answers (item -> 0/1), records given in order, the steps, ability, SE, prediction."""

    answers: dict[int, float]
    records: list[int]
    steps: list[dict[str, Any]]
    theta: float
    se: float
    prediction: dict[str, float]
    stopped: str
    balance: dict[str, Any] = field(default_factory=dict)

    @property
    def items_given(self) -> int:
        return len(self.answers)


def posterior(bank: CatBank, answers: dict[int, float]) -> np.ndarray:
    """The ability's posterior on :data:`GRID` (normalised by Simpson's rule) given ``answers``."""
    from scipy.integrate import simpson

    log = -0.5 * ((GRID - PRIOR_MEAN) / PRIOR_SD) ** 2
    if answers:
        idx = np.fromiter(answers, int)
        y = np.array([answers[i] for i in idx])
        p = np.clip(prob(GRID[:, None], bank.a[idx][None, :], bank.b[idx][None, :], bank.c[idx][None, :]), 1e-12,
                    1 - 1e-12)
        log = log + (np.log(p) * y + np.log1p(-p) * (1 - y)).sum(axis=1)
    dens = np.exp(log - log.max())
    return cast(np.ndarray, dens / simpson(dens, x=GRID))


def eap(post: np.ndarray) -> tuple[float, float]:
    """(EAP, posterior SD) of a posterior on :data:`GRID`.

    >>> t, s = eap(posterior(CatBank(np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1, int)), {}))
    >>> round(t, 6) + 0.0, round(s, 3)
    (0.0, 1.0)
    """
    from scipy.integrate import simpson

    mean = float(simpson(post * GRID, x=GRID))
    return mean, float(np.sqrt(max(simpson(post * (GRID - mean) ** 2, x=GRID), 0.0)))


def item_information(bank: CatBank, theta: float) -> np.ndarray:
    """Fisher information of every bank item at ``theta``."""
    p = prob(np.array([theta])[:, None], bank.a[None, :], bank.b[None, :], bank.c[None, :])[0]
    sig = (p - bank.c) / (1 - bank.c)
    return cast(np.ndarray, (bank.a * (1 - bank.c) * sig * (1 - sig)) ** 2 / np.clip(p * (1 - p), 1e-12, None))


def _tokens(label: str) -> list[str]:
    """The strata of a record's label, one per dimension (``pos=n;hops=2`` -> ``pos=n``, ``hops=2``)."""
    return label.split(";") if label else ["all"]


def _labels(bank: CatBank) -> list[str]:
    return bank.stratum or ["all"] * bank.n_records


def _stratum_targets(bank: CatBank, items: list[np.ndarray]) -> dict[str, float]:
    """Each stratum's share of the bank's items (per dimension: the shares of one dimension add to 1)."""
    total = sum(len(i) for i in items)
    out: dict[str, float] = {}
    for label, its in zip(_labels(bank), items):
        for t in _tokens(label):
            out[t] = out.get(t, 0.0) + len(its) / total
    return out


def pick_batch(bank: CatBank, theta: float, given: set[int], room: int, cfg: CatConfig, rng: np.random.Generator,
               items: list[np.ndarray], counts: dict[str, int]) -> list[tuple[int, float]]:
    """The next batch: (record, information at ``theta``) pairs, at most ``room`` items, each record from the
    stratum furthest below its share (every dimension's strata compete), drawn among its
    ``cfg.randomesque`` most informative records that fit."""
    per_item = item_information(bank, theta)
    info = np.array([per_item[its].sum() for its in items])
    labels = _labels(bank) if cfg.balance else ["all"] * bank.n_records
    toks = [_tokens(label) for label in labels]
    targets = _stratum_targets(bank, items) if cfg.balance else {"all": 1.0}
    counts = dict(counts)
    n_given = sum(len(items[r]) for r in given)
    batch: list[tuple[int, float]] = []
    taken = set(given)
    while room > 0:
        free = [r for r in range(bank.n_records) if r not in taken and len(items[r]) <= room]
        if not free:
            break
        open_strata = {t for r in free for t in toks[r]}
        need = {t: targets[t] * (n_given + 1) - counts.get(t, 0) for t in open_strata}
        top = max(sorted(need), key=lambda t: need[t])
        pool = sorted((r for r in free if top in toks[r]), key=lambda r: (-info[r], r))
        r = pool[int(rng.integers(min(cfg.randomesque, len(pool))))]
        batch.append((r, float(info[r])))
        taken.add(r)
        room -= len(items[r])
        n_given += len(items[r])
        for t in toks[r]:
            counts[t] = counts.get(t, 0) + len(items[r])
    return batch


def predict(bank: CatBank, answers: dict[int, float], post: np.ndarray) -> dict[str, float]:
    """Predicted full-set accuracy with a 95% interval (see the module doc)."""
    from scipy.integrate import simpson

    items = bank.record_items()
    p = prob(GRID[:, None], bank.a[None, :], bank.b[None, :], bank.c[None, :])  # G x I
    known = np.zeros(len(bank.a), bool)
    y = np.zeros(len(bank.a))
    for i, v in answers.items():
        known[i], y[i] = True, v
    exp_item = np.where(known[None, :], y[None, :], p)
    sd_item = np.where(known[None, :], 0.0, np.sqrt(p * (1 - p)))
    from scipy.sparse import csr_matrix

    n = bank.n_records
    size = np.array([len(i) for i in items], float)
    member = csr_matrix((np.ones(len(bank.record)), (np.arange(len(bank.record)), bank.record)),
                        shape=(len(bank.record), n))  # item x record
    rec_mean = np.asarray(member.T.dot(exp_item.T)).T / size  # G x R
    rec_sd = np.asarray(member.T.dot(sd_item.T)).T / size  # the items of a record fully correlated
    clusters = bank.cluster or [str(r) for r in range(n)]
    _, cl = np.unique(clusters, return_inverse=True)
    in_cluster = csr_matrix((np.ones(n), (np.arange(n), cl)), shape=(n, int(cl.max()) + 1))
    cl_sd = np.asarray(in_cluster.T.dot(rec_sd.T)).T  # the records of a cluster fully correlated
    acc = rec_mean.mean(axis=1)
    mean = float(simpson(post * acc, x=GRID))
    var = float(simpson(post * (acc - mean) ** 2, x=GRID) + simpson(post * (cl_sd ** 2).sum(axis=1), x=GRID) / n ** 2)
    sd = math.sqrt(max(var, 0.0))
    return {"accuracy": mean, "lo": max(0.0, mean - Z95 * sd), "hi": min(1.0, mean + Z95 * sd), "sd": sd}


def balance_report(bank: CatBank, records: list[int], items: list[np.ndarray],
                   tolerance: float = BALANCE_TOLERANCE) -> dict[str, Any]:
    """Per stratum: its share of the bank, items given, the count its share would give, and whether they
    differ by at most ``tolerance`` x items given + the stratum's largest record."""
    targets = _stratum_targets(bank, items)
    labels = _labels(bank)
    n = sum(len(items[r]) for r in records)
    rows = []
    for t, share in sorted(targets.items()):
        got = sum(len(items[r]) for r in records if t in _tokens(labels[r]))
        largest = max(len(items[r]) for r in range(bank.n_records) if t in _tokens(labels[r]))
        rows.append({"stratum": t, "bank_share": share, "given": got, "expected": share * n,
                     "within": abs(got - share * n) <= tolerance * n + largest})
    return {"tolerance": tolerance, "rule": "|given - share x items given| <= tolerance x items given + the "
            "stratum's largest record", "strata": rows, "all_within": all(r["within"] for r in rows)}


def run_cat(bank: CatBank, cfg: CatConfig, respond: Respond) -> CatResult:
    """Administer the bank to ``respond`` (see the module doc) until a stopping rule holds."""
    cfg.check(len(bank.a))
    items = bank.record_items()
    rng = np.random.default_rng(cfg.seed)
    answers: dict[int, float] = {}
    records: list[int] = []
    counts: dict[str, int] = {}
    strata = _labels(bank)
    steps: list[dict[str, Any]] = []
    post = posterior(bank, answers)
    theta, se = eap(post)
    budget = cfg.budget if cfg.budget is not None else len(bank.a)
    stopped = ""
    while True:
        if cfg.target_se is not None and se <= cfg.target_se:
            stopped = f"SE {se:.3f} <= target {cfg.target_se}"
            break
        room = min(cfg.batch_items, budget - len(answers))
        if room <= 0:
            stopped = f"budget of {budget} items"
            break
        batch = pick_batch(bank, theta, set(records), room, cfg, rng, items, counts)
        if not batch:
            stopped = "bank used up" if len(records) == bank.n_records else "no record fits the rest of the budget"
            break
        chosen = [r for r, _ in batch]
        got = respond(chosen)
        for r in chosen:
            for i in items[r]:
                if int(i) not in got:
                    raise ProbegenError(f"the respondent gave no answer to item {int(i)} of record {r}")
                answers[int(i)] = float(got[int(i)])
            for t in _tokens(strata[r]):
                counts[t] = counts.get(t, 0) + len(items[r])
        records += chosen
        steps.append({"step": len(steps) + 1, "theta_before": theta, "se_before": se, "records": chosen,
                      "information": [round(v, 6) for _, v in batch], "strata": [strata[r] for r in chosen],
                      "right": [float(np.mean([answers[int(i)] for i in items[r]])) for r in chosen]})
        post = posterior(bank, answers)
        theta, se = eap(post)
        steps[-1].update(theta=theta, se=se, items_given=len(answers))
    return CatResult(answers, records, steps, theta, se, predict(bank, answers, post), stopped,
                     balance_report(bank, records, items))
