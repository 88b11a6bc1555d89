"""AFLite-style artefact filtering (Le Bras et al., 2020) with probegen's partial-input controls.

Each round trains cheap partial-input classifiers on many random splits (whole clusters on one side),
counts how often each held-out unit is predicted right, and removes the most predictable ones, until the
controls are within ``tolerance`` of chance or the budget is spent. That in-filter accuracy is optimistic,
so ``filtering`` first holds out concepts the filter never sees. Controls: choice-only over choice views
(WordNetQA), a word-only overlap aligner over alignment views (CoDA21).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from probegen.tasks.bias_inputs import AlignmentView, ChoiceView

from . import baselines as B
from . import fitting


@dataclass(frozen=True)
class FilterSettings:
    """AFLite knobs (recorded in the manifest)."""

    budget: int  # most units removed in total
    splits: int = 8  # random train/test splits per round
    train_frac: float = 0.6
    step: float = 0.05  # share of the remaining units removed per round at most
    threshold: float = 0.75  # only units predicted right at least this often are removed
    tolerance: float = 0.02  # stop when the accuracy on a round's test splits <= chance + tolerance
    max_rounds: int = 20
    seed: int = 0
    # share of concepts held out before filtering: never filtered, the controls are measured on them
    holdout: float = 0.25


# (train units, test units, alive rows per unit, seed) -> per test unit, the correctness of its alive rows;
# a unit is what splits keep whole (an item, a group), a row what can be removed (the item, a group's row)
Predictor = Callable[[np.ndarray, np.ndarray, list[np.ndarray], int], dict[int, np.ndarray]]


def choice_predictor(views: list[ChoiceView]) -> Predictor:
    """Choice-only classifier over choice items (one row per item); as in AFLite the features are computed
    once and each split only refits the linear classifier."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import StandardScaler

    from probegen.core import decide_scores

    texts, numeric, y, owner = B.choice_rows(views)
    tfidf = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=2).fit_transform(texts)
    X = fitting.quantize_features(hstack([tfidf, csr_matrix(StandardScaler().fit_transform(numeric))]).tocsr())
    rows_of = np.split(np.arange(len(owner)), np.flatnonzero(np.diff(owner)) + 1)

    def predict(train: np.ndarray, test: np.ndarray, alive: list[np.ndarray], seed: int) -> dict[int, np.ndarray]:
        tr = np.concatenate([rows_of[i] for i in train])
        # a convex fit solved to its optimum (diagnostics.fitting): the same removals on every CPU
        clf = fitting.fit(fitting.linear_classifier(), X[tr], y[tr])
        te = np.concatenate([rows_of[i] for i in test])
        s = fitting.scores(clf, X[te])
        out, at = {}, 0
        for i in test:
            n = len(rows_of[i])
            pick = decide_scores(s[None, at : at + n], "argmax",
                                 np.random.default_rng([seed, int(i)]))[0]  # classifier scores
            out[int(i)] = np.array([float(pick == views[i].answer)])
            at += n
        return out

    return predict


def alignment_predictor(groups: list[AlignmentView]) -> Predictor:
    """Word-only overlap aligner over alignment groups (one row per member): which rows give their definition away."""
    from probegen.core import decide_scores

    feats = [B.overlap_features(g, "word") for g in groups]  # k x k x F

    def sub(i: int, rows: np.ndarray) -> np.ndarray:
        return np.asarray(feats[i][np.ix_(rows, rows)])

    def predict(train: np.ndarray, test: np.ndarray, alive: list[np.ndarray], seed: int) -> dict[int, np.ndarray]:
        X = np.vstack([sub(i, alive[i]).reshape(-1, feats[i].shape[-1]) for i in train])
        y = np.concatenate([np.eye(int(alive[i].sum()), dtype=int).ravel() for i in train])
        clf = fitting.fit(fitting.linear_classifier(), X, y)
        out = {}
        for i in test:
            f = sub(i, alive[i])
            k = len(f)
            mat = fitting.scores(clf, f.reshape(-1, f.shape[-1])).reshape(k, k)
            pred = decide_scores(mat, "alignment", np.random.default_rng([seed, int(i)]))
            out[int(i)] = (pred == np.arange(k)).astype(float)
        return out

    return predict


# ---- the filter ------------------------------------------------------------------------------------------
def aflite(
    predict: Predictor, sizes: list[int], clusters: list[str], min_rows: int, chance: Callable[[list[Any]], float],
    s: FilterSettings, log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the rounds over units of ``sizes`` rows; the removed (unit, row) pairs and a per-round log. A unit
    with fewer than ``min_rows`` alive rows is out; ``chance(alive)``: the control's chance; the budget counts rows.

    >>> always_right = lambda train, test, alive, seed: {int(i): np.ones(int(alive[i].sum())) for i in test}
    >>> s = FilterSettings(budget=3, step=0.5)
    >>> res = aflite(always_right, [1] * 8, [f"c{i}" for i in range(8)], 1, lambda alive: 0.2, s, log=lambda m: None)
    >>> res["removed"], [r["split_accuracy"] for r in res["rounds"]]   # all equally predictable: lowest ids first
    ([(0, 0), (1, 0), (2, 0)], [1.0, 1.0])
    """
    from sklearn.model_selection import GroupShuffleSplit

    alive = [np.ones(n, dtype=bool) for n in sizes]
    removed: list[tuple[int, int]] = []
    rounds = []
    for r in range(1, s.max_rounds + 1):
        units = np.array([i for i, a in enumerate(alive) if a.sum() >= min_rows])
        if len(set(np.array(clusters)[units])) < 4:
            break
        right = [np.zeros(n) for n in sizes]
        seen = np.zeros(len(sizes))
        gss = GroupShuffleSplit(n_splits=s.splits, train_size=s.train_frac, random_state=s.seed * 1000 + r)
        for k, (tr, te) in enumerate(gss.split(units, groups=np.array(clusters)[units])):
            got = predict(units[tr], units[te], alive, s.seed * 100003 + r * 101 + k)
            for i, v in got.items():
                right[i][alive[i]] += v
                seen[i] += 1
        total = sum(right[i][alive[i]].sum() for i in units)
        n_pred = sum(seen[i] * alive[i].sum() for i in units)
        acc, ch = float(total / max(n_pred, 1)), chance(alive)
        rounds.append({"round": r, "units": int(len(units)), "rows": int(sum(alive[i].sum() for i in units)),
                       "split_accuracy": round(acc, 4), "chance": round(ch, 4)})
        log(f"  round {r}: {len(units)} units, control accuracy on the round's test splits {acc:.3f} (chance {ch:.3f})")
        room = s.budget - len(removed)
        if acc <= ch + s.tolerance or room <= 0:
            break
        cand = [(right[i][j] / seen[i], i, j) for i in units if seen[i] for j in np.flatnonzero(alive[i])
                if right[i][j] / seen[i] >= s.threshold]
        cand.sort(key=lambda c: (-c[0], c[1], c[2]))  # most predictable first, then unit and row order
        take = cand[: min(room, max(1, int(s.step * rounds[-1]["rows"])))]
        if not take:
            break
        for _, i, j in take:
            alive[i][j] = False
            removed.append((int(i), int(j)))
        rounds[-1]["removed"] = len(take)
    last = rounds[-1] if rounds else None
    return {"removed": removed, "alive": alive, "rounds": rounds,
            "stopped_near_chance": bool(last and last["split_accuracy"] <= last["chance"] + s.tolerance)}
