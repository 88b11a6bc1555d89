"""Position bias of methods that show options in an order, and PriDe debiasing (issue 28 §2).

Over an evaluation's records. An ordered method's record carries under ``generation``: ``orders`` (per order,
``perm[p]`` = the option shown at position ``p``, 0 = "A"), ``probs`` (per order, rows x n over the shown
positions), ``method`` and optionally ``answers`` (per order, the option taken per row). A cloze record (no
order) uses the stored order with the softmax of its ``scores``: order cannot matter to it, so it is the control.

Statistics over (row, order) observations, each with a 95% percentile bootstrap CI over whole clusters
(CoDA21 groups, WordNetQA concepts): ``selection_rate[p]`` and ``gold_rate[p]``, ``recall[p]``, ``rstd`` (the
recalls' SD over positions; Zheng et al. 2023, arXiv 2309.03882), ``consistency`` (same option under every
order), ``circular`` (CircularEval: right under every cyclic rotation) and ``pride`` (:func:`pride`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from probegen.stats.bootstrap import cluster_index, cluster_weights, per_cluster, percentile_ci, ratio_ci

ALPHA = 0.05
#: generate: each order's one-hot answer is floored at this probability before the log prior
GENERATE_FLOOR = 0.01
DEFAULT_SHARE = 0.05
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class Row:
    """One decided row (a multiple-choice item, a CoDA21 context): ``perms`` orders x n (option at each
    position), ``probs`` orders x n over positions, ``chosen`` the option taken per order, ``pred`` the run's
    decision."""

    unit: str
    cluster: str
    gold: int
    perms: np.ndarray
    probs: np.ndarray
    chosen: np.ndarray
    pred: int
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.perms.shape[1])


def softmax(x: Any) -> np.ndarray:
    """Row-wise softmax (the cloze method's distribution over its candidates).

    >>> softmax([0.0, 0.0]).tolist(), softmax([[0.0, np.log(3.0)]]).round(3).tolist()
    ([0.5, 0.5], [[0.25, 0.75]])
    """
    a = np.asarray(x, dtype=np.float64)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


def cluster_of(record: dict[str, Any]) -> str:
    """The resampling cluster of a record: its ``synset`` (a WordNetQA concept), else its id.

    >>> cluster_of({"id": "i1", "synset": "dog.n.01"}), cluster_of({"id": "g7", "k": 5})
    ('dog.n.01', 'g7')
    """
    return str(record.get("synset") or record["id"])


def method_of(records: Sequence[dict[str, Any]]) -> str:
    """The records' ``generation.method`` (``generate`` without one), else the cloze method's title.

    >>> method_of([{"scores": [[0, 1]]}]), method_of([{"generation": {"answers": [[0]]}}])
    ('cloze', 'generate')
    """
    for r in records:
        gen = r.get("generation")
        if gen:
            return str(gen.get("method") or "generate")
    from probegen import methods

    return methods.get("score").title


def _argmax_option(uid: str, order: int, row: int, perm: np.ndarray, probs: np.ndarray) -> int:
    """The option an order's distribution picks (ties broken by the one tie rule of probegen.core)."""
    from probegen.core import decide_scores, tie_rng

    return int(perm[int(decide_scores(probs[None, :], "argmax", tie_rng(0, f"{uid}/order/{order}/row/{row}"))[0])])


def _record_rows(r: dict[str, Any], cluster: Callable[[dict[str, Any]], str]) -> list[Row]:
    gold = np.atleast_1d(np.asarray(r["gold"], dtype=int))
    pred = np.atleast_1d(np.asarray(r["pred"], dtype=int))
    gen = r.get("generation") or {}
    keep: dict[str, Any] = {k: r[k] for k in ("hops", "distractor_type", "probe", "pos") if k in r}
    uid, c = str(r["id"]), cluster(r)
    if gen:
        perms = np.asarray(gen["orders"], dtype=int)
        probs = np.asarray(gen["probs"], dtype=np.float64)  # orders x rows x n
        answers = gen.get("answers")
        out = []
        for i in range(probs.shape[1]):
            chosen = (np.array([a[i] for a in answers], dtype=int) if answers is not None
                      else np.array([_argmax_option(uid, o, i, perms[o], probs[o, i]) for o in range(len(perms))]))
            out.append(Row(uid, c, int(gold[i]), perms, probs[:, i, :], chosen, int(pred[i]), keep))
        return out
    scores = np.asarray(r["scores"], dtype=np.float64)
    scores = scores[None, :] if scores.ndim == 1 else scores
    n = scores.shape[1]
    return [Row(uid, c, int(gold[i]), np.arange(n)[None, :], softmax(scores[i])[None, :], np.array([pred[i]]),
                int(pred[i]), keep)
            for i in range(len(gold))]


def rows_of(records: Sequence[dict[str, Any]],
            cluster: Callable[[dict[str, Any]], str] = cluster_of) -> tuple[list[Row], str | None]:
    """(rows, None) from an evaluation's records, or ([], why) when they cannot be read as ordered answers.

    >>> rows, why = rows_of([{"id": "i", "gold": [1], "pred": [1], "scores": [[0.0, 2.0]]}])
    >>> why, rows[0].perms.tolist(), rows[0].probs.round(2).tolist(), rows[0].chosen.tolist()
    (None, [[0, 1]], [[0.12, 0.88]], [1])
    """
    rows: list[Row] = []
    for r in records:
        gen = r.get("generation")
        if gen and not ("orders" in gen and "probs" in gen):
            return [], "the records carry no option orders (generation.orders/probs): recorded before issue 28"
        if not gen and "scores" not in r:
            return [], "the records carry neither scores nor option orders"
        if "pred" not in r or "gold" not in r:
            return [], "the records carry no prediction and gold"
        rows += _record_rows(r, cluster)
    return rows, None


# ---- the statistics ----------------------------------------------------------------------------
def _observations(rows: Sequence[Row], width: int) -> dict[str, np.ndarray]:
    """Per row (summed over its orders): chosen at / shown gold at / right with gold at / has position p."""
    out = {k: np.zeros((len(rows), width)) for k in ("chosen", "gold", "right", "has")}
    for i, r in enumerate(rows):
        for o, perm in enumerate(r.perms):
            pos_of = np.argsort(perm)  # option -> its shown position
            g, c = pos_of[r.gold], pos_of[r.chosen[o]]
            out["chosen"][i, c] += 1
            out["gold"][i, g] += 1
            out["right"][i, g] += float(r.chosen[o] == r.gold)
            out["has"][i, : r.n] += 1
    return out


def rotations_complete(rows: Sequence[Row]) -> bool:
    """Whether every row's orders include all n cyclic rotations of its first order.

    >>> base = np.array([0, 1, 2])
    >>> r = Row("u", "c", 0, np.array([np.roll(base, -k) for k in range(3)]), np.zeros((3, 3)), np.zeros(3, int), 0)
    >>> rotations_complete([r]), rotations_complete([Row("u", "c", 0, base[None, :], np.zeros((1, 3)),
    ...                                                  np.zeros(1, int), 0)])
    (True, False)
    """
    return bool(rows) and all({tuple(np.roll(r.perms[0], -k).tolist()) for k in range(r.n)}
                              <= {tuple(p) for p in r.perms.tolist()} for r in rows)


def _rstd(recall_num: np.ndarray, recall_den: np.ndarray, w: np.ndarray) -> dict[str, Any]:
    """Standard deviation (population) of the recalls over the positions that hold a gold."""
    with np.errstate(divide="ignore", invalid="ignore"):
        point = recall_num.sum(0) / recall_den.sum(0)
        reps = (w @ recall_num) / (w @ recall_den)
    ok = recall_den.sum(0) > 0
    value = float(np.std(point[ok])) if ok.any() else None
    rep_std = np.array([np.std(rr[ok & np.isfinite(rr)]) if (ok & np.isfinite(rr)).any() else np.nan for rr in reps])
    return {"value": value, "ci": percentile_ci(rep_std, ALPHA)}


def position_stats(rows: Sequence[Row], n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The position statistics of ``rows`` (see the module doc), each with a cluster-bootstrap CI.

    >>> rows = [Row("u1", "a", 0, np.array([[0, 1]]), np.array([[0.9, 0.1]]), np.array([0]), 0),
    ...         Row("u2", "b", 1, np.array([[0, 1]]), np.array([[0.8, 0.2]]), np.array([0]), 0)]
    >>> s = position_stats(rows, n_boot=50)
    >>> [p["selection_rate"]["value"] for p in s["positions"]], [p["recall"]["value"] for p in s["positions"]]
    ([1.0, 0.0], [1.0, 0.0])
    >>> s["rstd"]["value"], s["consistency"]["value"], s["circular"]["reason"][:22]
    (0.5, None, 'the orders do not incl')
    """
    width = max(r.n for r in rows)
    idx, names = cluster_index(r.cluster for r in rows)
    obs = {k: per_cluster(v, idx, len(names)) for k, v in _observations(rows, width).items()}
    w = cluster_weights(len(names), n_boot, seed)
    sel, gold = ratio_ci(obs["chosen"], obs["has"], w), ratio_ci(obs["gold"], obs["has"], w)
    rec = ratio_ci(obs["right"], obs["gold"], w)
    positions = [{"position": LETTERS[p] if p < len(LETTERS) else str(p), "selection_rate": sel[p],
                  "gold_rate": gold[p], "recall": rec[p], "n": int(obs["has"][:, p].sum())} for p in range(width)]
    n_orders = min(len(r.perms) for r in rows)
    ones = np.ones(len(rows))
    same = np.array([float((r.chosen == r.chosen[0]).all()) for r in rows])
    consistency = (ratio_ci(per_cluster(same, idx, len(names)), per_cluster(ones, idx, len(names)), w) if n_orders > 1
                   else {"value": None, "ci": None, "reason": "one option order per unit: nothing to compare"})
    if rotations_complete(rows):
        strict = np.array([float((r.chosen == r.gold).all()) for r in rows])
        circular = ratio_ci(per_cluster(strict, idx, len(names)), per_cluster(ones, idx, len(names)), w)
    else:
        circular = {"value": None, "ci": None,
                    "reason": "the orders do not include every cyclic rotation of the options (--permutations "
                              "rotations)"}
    return {"rows": len(rows), "clusters": len(names), "orders": n_orders, "positions": positions,
            "rstd": _rstd(obs["right"], obs["gold"], w), "consistency": consistency, "circular": circular,
            "bootstrap": {"n": n_boot, "seed": seed, "alpha": ALPHA}}


# ---- PriDe ---------------------------------------------------------------------------------------
def split_clusters(clusters: Sequence[str], share: float, seed: int) -> tuple[set[str], set[str]]:
    """(estimation clusters, held-out clusters): a seeded ``share`` of the clusters, at least one each way.

    >>> est, held = split_clusters(["a", "b", "c", "d"], 0.05, 0)
    >>> len(est), len(held), est | held == {"a", "b", "c", "d"}
    (1, 3, True)
    """
    names = sorted(set(clusters))
    if len(names) < 2:
        raise ValueError("PriDe needs at least two clusters: one to estimate the prior on, one to test")
    k = min(max(1, int(round(share * len(names)))), len(names) - 1)
    rng = np.random.default_rng([seed, zlib.crc32(b"pride")])
    est = {names[i] for i in rng.choice(len(names), size=k, replace=False)}
    return est, set(names) - est


def _floored(p: np.ndarray, floor: float) -> np.ndarray:
    q = np.maximum(np.asarray(p, dtype=np.float64), floor)
    return np.asarray(q / q.sum(axis=-1, keepdims=True))


def row_log_prior(perms: np.ndarray, probs: np.ndarray, floor: float = 1e-6) -> np.ndarray:
    """One row's log prior over positions (PriDe): observed(d | order) = prior(d) x debiased(option at d),
    the debiased distribution the geometric mean over orders; with all cyclic rotations, the paper's estimate.

    >>> perms = np.array([[0, 1], [1, 0]])
    >>> np.exp(row_log_prior(perms, np.array([[0.9, 0.1], [0.9, 0.1]]))).round(2).tolist()   # always "A"
    [0.9, 0.1]
    >>> np.exp(row_log_prior(perms, np.array([[0.9, 0.1], [0.1, 0.9]]))).round(2).tolist()   # always option 0
    [0.5, 0.5]
    """
    logp = np.log(_floored(probs, floor))  # orders x positions
    opt = np.zeros_like(logp)
    for o, perm in enumerate(perms):
        opt[o, perm] = logp[o]
    deb = opt.mean(axis=0)
    deb = deb - np.log(np.exp(deb - deb.max()).sum()) - deb.max()
    lp = np.mean([logp[o] - deb[perm] for o, perm in enumerate(perms)], axis=0)
    return np.asarray(lp - lp.max() - np.log(np.exp(lp - lp.max()).sum()))


def estimate_prior(rows: Sequence[Row], floor: float = 1e-6) -> dict[int, np.ndarray]:
    """Per option count n, the mean prior of the rows asked under at least two distinct orders."""
    per: dict[int, list[np.ndarray]] = {}
    for r in rows:
        if len({tuple(p) for p in r.perms.tolist()}) > 1:
            per.setdefault(r.n, []).append(np.exp(row_log_prior(r.perms, r.probs, floor)))
    return {n: np.mean(ps, axis=0) for n, ps in per.items()}


def option_matrix(row: Row, prior: np.ndarray | None = None, floor: float = 0.0) -> np.ndarray:
    """A row's distribution over its options: each order's (divided by ``prior`` and renormalised when given)
    mapped to options, averaged over orders.

    >>> r = Row("u", "c", 0, np.array([[0, 1], [1, 0]]), np.array([[0.6, 0.4], [0.6, 0.4]]), np.array([0, 1]), 0)
    >>> option_matrix(r).tolist(), option_matrix(r, np.array([0.6, 0.4])).tolist()
    ([0.5, 0.5], [0.5, 0.5])
    """
    p = _floored(row.probs, floor) if floor else np.asarray(row.probs, dtype=np.float64)
    if prior is not None:
        p = p / prior
        p = p / p.sum(axis=-1, keepdims=True)
    out = np.zeros(row.n)
    for o, perm in enumerate(row.perms):
        out[perm] += p[o]
    return out / len(row.perms)


def _decide_units(rows: Sequence[Row], mats: Sequence[np.ndarray], decision: str, seed: int) -> np.ndarray:
    """Per row, 1.0 if the unit's decision (probegen.core.decide) on the log of ``mats`` is right."""
    from probegen.core import decide_scores, tie_rng

    out = np.zeros(len(rows))
    by_unit: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_unit.setdefault(r.unit, []).append(i)
    for uid, ix in by_unit.items():
        dec = decision if len(ix) > 1 or decision == "argmax" else "argmax"
        m = np.log(np.maximum(np.array([mats[i] for i in ix]), 1e-12))
        pred = decide_scores(m, dec, tie_rng(seed, uid))
        out[ix] = (pred == np.array([rows[i].gold for i in ix])).astype(float)
    return out


def pride(rows: Sequence[Row], share: float = DEFAULT_SHARE, seed: int = 0, n_boot: int = 1000, method: str = "letter",
          decision: str = "argmax", estimator: Callable[..., dict[int, np.ndarray]] = estimate_prior) -> dict[str, Any]:
    """PriDe (Zheng et al. 2023): the prior over positions estimated on a seeded ``share`` of the clusters
    (by ``estimator``, which sees those rows only), removed from the held-out rows; accuracy before and after
    on the same held-out rows (paired cluster-bootstrap CIs), with every order averaged and with order 0 alone
    (``first_order``: the paper's test-time setting). ``decision``: the units' rule (CoDA21: alignment).
    Generate answers are floored at :data:`GENERATE_FLOOR`.
    """
    if min(len({tuple(p) for p in r.perms.tolist()}) for r in rows) < 2:
        return {"value": None, "reason": "PriDe needs at least two option orders per unit (--permutations)"}
    try:
        est, held = split_clusters([r.cluster for r in rows], share, seed)
    except ValueError as e:
        return {"value": None, "reason": str(e)}
    from probegen import methods

    votes = methods.recorded(method, "generate").votes
    floor = GENERATE_FLOOR if votes else 1e-6
    est_rows = [r for r in rows if r.cluster in est]
    test = [r for r in rows if r.cluster in held]
    prior = estimator(est_rows, floor)
    idx, names = cluster_index(r.cluster for r in test)
    w = cluster_weights(len(names), n_boot, seed)
    ones = per_cluster(np.ones(len(test)), idx, len(names))

    def compare(rs: list[Row]) -> dict[str, Any]:
        before = _decide_units(rs, [option_matrix(r) for r in rs], decision, seed)
        after = _decide_units(rs,
                              [option_matrix(r, prior[r.n], floor) if r.n in prior else option_matrix(r) for r in rs],
                              decision, seed)
        b, a = per_cluster(before, idx, len(names)), per_cluster(after, idx, len(names))
        return {"before": ratio_ci(b, ones, w), "after": ratio_ci(a, ones, w), "gain": ratio_ci(a - b, ones, w)}

    first = [Row(r.unit, r.cluster, r.gold, r.perms[:1], r.probs[:1], r.chosen[:1], r.pred, r.fields) for r in test]
    return {"share": share, "seed": seed, "floor": floor if votes else None,
            "estimation": {"clusters": len(est), "rows": len(est_rows)},
            "heldout": {"clusters": len(held), "rows": len(test)},
            "prior": {str(n): [round(float(x), 6) for x in p] for n, p in sorted(prior.items())},
            "not_debiased_rows": int(sum(r.n not in prior for r in test)),
            **compare(test), "first_order": compare(first)}


def position_block(records: Sequence[dict[str, Any]], n_boot: int = 1000, seed: int = 0, share: float | None = None,
                   decision: str = "argmax", cluster: Callable[[dict[str, Any]], str] = cluster_of) -> dict[str, Any]:
    """The ``position`` block of results.json for one condition's records (see the module doc)."""
    method = method_of(records)
    rows, why = rows_of(records, cluster)
    if why or not rows:
        return {"method": method, "value": None, "reason": why or "no rows"}
    from probegen import methods

    ordered = methods.recorded(method, "generate").ordered
    out = {"method": method,
           "order_source": ("the option orders shown" if ordered
                            else "the dataset's stored option order (cloze control: order cannot matter)"),
           **position_stats(rows, n_boot, seed)}
    out["pride"] = (pride(rows, DEFAULT_SHARE if share is None else share, seed, n_boot, method, decision) if ordered
                    else {"value": None,
                          "reason": "the cloze method shows no option order: there is no position prior to remove"})
    return out
