"""Trained partial-input controls: can a small classifier solve a probe without its question?

Over the views a kind hands them (:mod:`probegen.tasks.bias_inputs`):

- choice views (WordNetQA), ``choice-only``: a logistic regression on the choices alone (TF-IDF, length,
  overlap with the other choices), per probe type, folds grouped by concept cluster (position is not a
  feature: it is the Label baseline).
- alignment views (CoDA21), ``definition-order``: does the stored row order leak? (ridge on the text; chance 1/k)
- alignment views, ``word-overlap`` / ``context-overlap``: learned string overlap between the target word (or
  the context) and each definition, aligned one-to-one: how much of Bias_W / Bias_C a string matcher explains.

Each control reports accuracy with a cluster bootstrap CI, chance, and ``artefact`` = CI above chance.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from typing import Any, Iterator, Sequence

import numpy as np

from probegen.core import quantize
from probegen.tasks.bias_inputs import AlignmentView, BiasInputs, ChoiceView

from . import fitting
from .bias import bootstrap_accuracy

_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _content(text: str) -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {t for t in _tokens(text) if t not in ENGLISH_STOP_WORDS}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _rank(x: np.ndarray) -> np.ndarray:
    """Ranks scaled to [0, 1], ties sharing their average rank (a stable sort would leak order).

    >>> _rank(np.array([3.0, 1.0, 3.0])).tolist()
    [0.75, 0.0, 0.75]
    """
    from scipy.stats import rankdata

    return np.asarray((rankdata(x) - 1) / max(len(x) - 1, 1))


def _trigrams(text: str) -> set[str]:
    s = f"  {text.lower()}  "
    return {s[i : i + 3] for i in range(len(s) - 2)}


# ---- shared bits ----------------------------------------------------------------------------------
def _folds(groups: list[str], n_folds: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import GroupKFold

    n = len(set(groups))
    folds: Iterator[tuple[np.ndarray, np.ndarray]] = GroupKFold(n_splits=min(n_folds, n)).split(
        np.zeros(len(groups)), groups=groups)
    return folds


def _tfidf(train: list[str], *others: list[str]) -> tuple[list[Any], list[str]]:
    """Word (1-2 gram) and character (3-5 gram) TF-IDF fitted on the training texts only."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer

    vecs = []
    for kw in ({"ngram_range": (1, 2)}, {"analyzer": "char_wb", "ngram_range": (3, 5), "max_features": 50000}):
        for min_df in (2, 1):  # tiny training sets may have no term seen twice
            v = TfidfVectorizer(sublinear_tf=True, min_df=min_df, **kw)
            try:
                v.fit(train)
                break
            except ValueError:
                continue
        else:
            continue
        vecs.append(v)
    if not vecs:
        return [None] * (1 + len(others)), []
    out = [hstack([v.transform(texts) for v in vecs]).tocsr() for texts in (train, *others)]
    names = [n for v in vecs for n in v.get_feature_names_out()]
    return out, names


def _with_numeric(sparse: Any, numeric: np.ndarray, scaler: Any) -> Any:
    from scipy.sparse import csr_matrix, hstack

    dense = csr_matrix(scaler.transform(numeric))
    return dense if sparse is None else hstack([sparse, dense]).tocsr()


def control_result(name: str, applies_to: str, target: str, correct: np.ndarray, units: list[Any] | None,
                   chance: float, n_boot: int, seed: int, note: str, **extra: Any) -> dict[str, Any]:
    """A control's results entry: its accuracy with a bootstrap CI over ``units``, and chance."""
    boot = bootstrap_accuracy(correct, units, n_boot=n_boot, seed=seed)
    ci = boot["ci"]
    return {
        "control": name,
        "applies_to": applies_to,
        "target": target,
        "accuracy": boot["accuracy"],
        "ci": ci,
        "chance": float(chance),
        "n_items": boot["n_items"],
        "n_units": boot["n_units"],
        "artefact": bool(ci is not None and ci[0] > chance),
        "note": note,
        **extra,
    }


def skipped_control(name: str, applies_to: str, reason: str) -> dict[str, Any]:
    """The results entry of a control that could not run, and why."""
    return {"control": name, "applies_to": applies_to, "skipped": reason}


# ---- choice views: choice-only -------------------------------------------------------------------------
CHOICE_NUMERIC = ("n_chars", "n_words", "len_z", "len_rank", "is_longest", "is_shortest", "overlap_mean", "overlap_max")


def choice_numeric(choices: tuple[str, ...]) -> np.ndarray:
    """Per-choice features that only compare a choice with its sibling choices.

    >>> f = choice_numeric(("a big red dog", "a cat", "a dog"))
    >>> f[:, CHOICE_NUMERIC.index("is_longest")].tolist()
    [1.0, 0.0, 0.0]
    """
    n = len(choices)
    lengths = np.array([len(c) for c in choices], dtype=np.float64)
    words = np.array([len(_tokens(c)) for c in choices], dtype=np.float64)
    sd = lengths.std()
    z = (lengths - lengths.mean()) / sd if sd > 0 else np.zeros(n)
    rank = _rank(lengths)
    toks = [set(_tokens(c)) for c in choices]
    overlap = np.array([[_jaccard(toks[i], toks[j]) for j in range(n) if j != i] or [0.0] for i in range(n)])
    return np.column_stack(
        [
            np.log1p(lengths),
            words,
            z,
            rank,
            (lengths == lengths.max()).astype(float),
            (lengths == lengths.min()).astype(float),
            overlap.mean(axis=1),
            overlap.max(axis=1),
        ]
    )


def choice_rows(items: list[ChoiceView]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(choice texts, numeric features, gold-or-not, owning item's index): one row per choice of ``items``."""
    texts: list[str] = []
    numeric: list[Any] = []
    y: list[Any] = []
    owner: list[Any] = []
    for i, it in enumerate(items):
        texts.extend(it.choices)
        numeric.append(choice_numeric(it.choices))
        y.extend(j == it.answer for j in range(len(it.choices)))
        owner.extend([i] * len(it.choices))
    return texts, np.vstack(numeric), np.array(y, dtype=int), np.array(owner)


def choice_model(tr_texts: list[str], tr_num: np.ndarray, y: np.ndarray, te_texts: list[str],
                 te_num: np.ndarray) -> tuple[Any, np.ndarray, list[str]]:
    """Fit gold-vs-not on training choices; return the model, test scores and feature names."""
    from sklearn.preprocessing import StandardScaler

    (Xtr, Xte), names = _tfidf(tr_texts, te_texts)
    scaler = StandardScaler().fit(tr_num)
    # a convex fit solved to its optimum (diagnostics.fitting): the same decisions on every CPU
    clf = fitting.fit(fitting.linear_classifier(), _with_numeric(Xtr, tr_num, scaler), y)
    return clf, fitting.scores(clf, _with_numeric(Xte, te_num, scaler)), list(names) + list(CHOICE_NUMERIC)


def _sample_clusters(its: list[ChoiceView], max_items: int, rng: np.random.Generator) -> list[ChoiceView]:
    """Whole clusters in a seeded random order until ``max_items`` items are kept."""
    sizes = Counter(it.cluster for it in its)
    keep, n = set(), 0
    for c in rng.permutation(sorted(sizes)):
        keep.add(c)
        n += sizes[c]
        if n >= max_items:
            break
    return [it for it in its if it.cluster in keep]


def choice_only_control(
    items: list[ChoiceView], n_folds: int = 5, n_boot: int = 1000, seed: int = 0, max_items: int | None = 20000
) -> list[dict[str, Any]]:
    """Choice-only accuracy per probe type, cross-validated with concept clusters kept whole; ``max_items``
    caps the items per probe type (whole clusters, seeded) to bound training time."""
    rng = np.random.default_rng(seed)
    out = []
    for probe in sorted({it.probe for it in items}):
        its = [it for it in items if it.probe == probe and 0 <= it.answer < len(it.choices) and len(it.choices) >= 2]
        if max_items and len(its) > max_items:
            its = _sample_clusters(its, max_items, rng)
        n_clusters = len({it.cluster for it in its})
        if n_clusters < 2 or len(its) < 10:
            out.append(skipped_control("choice-only", probe, f"too few items ({len(its)}) or clusters ({n_clusters})"))
            continue
        texts, numeric, y, owner = choice_rows(its)
        correct = np.zeros(len(its))
        for f, (tr, te) in enumerate(_folds([it.cluster for it in its], n_folds)):
            tr_rows, te_rows = np.isin(owner, tr), np.isin(owner, te)
            _, s, _ = choice_model(
                [t for t, m in zip(texts, tr_rows) if m], numeric[tr_rows], y[tr_rows],
                [t for t, m in zip(texts, te_rows) if m], numeric[te_rows],
            )
            te_owner = owner[te_rows]
            for i in te:
                pick = pick_choice(s[te_owner == i], np.random.default_rng([seed, f, int(i)]))
                correct[i] = float(pick == its[i].answer)
        chance = float(np.mean([1.0 / len(it.choices) for it in its]))
        clf, _, names = choice_model(texts, numeric, y, texts[:2], numeric[:2])  # all items: for inspection
        coef = clf.coef_[0]
        # equal weights (features that always co-occur) in name order: a sort's order of ties differs between CPUs
        q = quantize(coef)
        top = [{"feature": names[j], "weight": round(float(coef[j]), 3)}
               for j in sorted(range(len(coef)), key=lambda j: (-q[j], names[j]))[:6]]
        out.append(
            control_result(
                "choice-only", probe, "gold choice (argmax over choices)", correct, [it.cluster for it in its], chance,
                n_boot, seed,
                "logistic regression (Newton-CG) on choice text/length/overlap; folds grouped by concept cluster",
                top_features=top,
            )
        )
    return out


# ---- alignment views: definition-order and overlap controls -----------------------------------
def definition_order_control(groups: Sequence[AlignmentView], applies_to: str, n_folds: int = 5, n_boot: int = 1000,
                             seed: int = 0) -> dict[str, Any]:
    """Can definition text alone predict each definition's position in the stored gold order? Ridge on
    definition features, ranked within a test group; expected chance (1/k: rows are stored shuffled).
    ``applies_to``: the kind the result names."""
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    name = "definition-order"
    if len({g.id for g in groups}) < 2:
        return skipped_control(name, applies_to, "needs at least 2 groups")
    defs = [d for g in groups for d in g.definitions]
    numeric = np.vstack([choice_numeric(tuple(g.definitions))[:, :4] for g in groups])  # the length features
    target = np.concatenate([np.arange(g.k) / max(g.k - 1, 1) for g in groups])
    owner = np.concatenate([[i] * g.k for i, g in enumerate(groups)])
    acc = np.zeros(len(groups))
    for f, (tr, te) in enumerate(_folds([g.id for g in groups], n_folds)):
        tr_rows, te_rows = np.isin(owner, tr), np.isin(owner, te)
        (Xtr, Xte), _ = _tfidf([d for d, m in zip(defs, tr_rows) if m], [d for d, m in zip(defs, te_rows) if m])
        scaler = StandardScaler().fit(numeric[tr_rows])
        # solved to a tight tolerance on quantised features (diagnostics.fitting): the same ranks on every CPU
        model = fitting.fit(Ridge(alpha=1.0, tol=1e-10), _with_numeric(Xtr, numeric[tr_rows], scaler), target[tr_rows])
        pred = model.predict(fitting.quantize_features(_with_numeric(Xte, numeric[te_rows], scaler)))
        te_owner = owner[te_rows]
        for i in te:
            p = quantize(pred[te_owner == i])  # equal predictions tie on every CPU
            jitter = np.random.default_rng([seed, f, int(i)]).permutation(len(p))  # random tie order
            order = np.lexsort((jitter, p))  # rows sorted by predicted position
            pos = np.empty(len(p), dtype=int)
            pos[order] = np.arange(len(p))
            acc[i] = float(np.mean(pos == np.arange(len(p))))
    chance = float(np.mean([1.0 / g.k for g in groups]))
    return control_result(name, applies_to, "position in the gold (stored row) order", acc, None, chance, n_boot, seed,
                   "Ridge on definition text/length; leak check of the stored row order")


def pair_features(query: str, definition: str) -> list[float]:
    """Surface overlap between a query (word or context) and a definition.

    >>> pair_features("dancer", "a performer who dances")[2] > 0   # shared 4-letter stem 'danc'
    True
    """
    q, d = _content(query), _content(definition)
    q4 = {t[:4] for t in q if len(t) >= 4}
    d4 = {t[:4] for t in d if len(t) >= 4}
    return [
        float(np.log1p(len(q & d))),
        _jaccard(q, d),
        float(np.log1p(len(q4 & d4))),
        _jaccard(_trigrams(query), _trigrams(definition)),
    ]


def pick_choice(scores: np.ndarray, rng: np.random.Generator) -> int:
    """A control classifier's answer among one item's choices, decided by the core (exact ties at random).

    >>> pick_choice(np.array([0.2, 0.9, 0.1]), np.random.default_rng(0))
    1
    """
    from probegen.core import decide_scores

    return int(decide_scores(np.asarray(scores)[None, :], "argmax", rng)[0])


def overlap_features(view: AlignmentView, side: str) -> np.ndarray:
    """k x k x F surface-overlap features between each row's ``side`` query and each definition."""
    return np.array([[pair_features(q, d) for d in view.definitions] for q in view.queries[side]])


def _id_rng(seed: int, key: str) -> np.random.Generator:
    """A generator that depends only on the seed and a unit's key (ties decided the same in every run)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def overlap_control(groups: Sequence[AlignmentView], side: str, applies_to: str, n_folds: int = 5,
                    n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Align each group by learned surface overlap between ``side`` ('word' or 'context') and definitions."""
    from probegen.core import decide_scores

    name = f"{side}-overlap"
    if side not in ("word", "context"):
        raise ValueError(f"side must be 'word' or 'context', not {side!r}")
    if len({g.id for g in groups}) < 2:
        return skipped_control(name, applies_to, "needs at least 2 groups")
    feats = [overlap_features(g, side) for g in groups]
    acc = np.zeros(len(groups))
    for tr, te in _folds([g.id for g in groups], n_folds):
        X = np.vstack([feats[i].reshape(-1, feats[i].shape[-1]) for i in tr])
        y = np.concatenate([np.eye(groups[i].k, dtype=int).ravel() for i in tr])
        clf = fitting.fit(fitting.linear_classifier(), X, y)
        for i in te:
            k = groups[i].k
            mat = fitting.scores(clf, feats[i].reshape(-1, feats[i].shape[-1])).reshape(k, k)
            pred = decide_scores(mat, "alignment", _id_rng(seed, groups[i].id + "/control"))
            acc[i] = float(np.mean(pred == np.arange(k)))
    chance = float(np.mean([1.0 / g.k for g in groups]))
    what = "target word (lemma + surface form)" if side == "word" else "context with the target removed"
    return control_result(name, applies_to, "one-to-one alignment", acc, None, chance, n_boot, seed,
                   f"LogisticRegression on string overlap between the {what} and each definition")


def alignment_controls(groups: Sequence[AlignmentView], applies_to: str, n_folds: int = 5, n_boot: int = 1000,
                       seed: int = 0) -> list[dict[str, Any]]:
    """The alignment controls: definition-order leak check, word and context surface overlap."""
    return [
        definition_order_control(groups, applies_to, n_folds, n_boot, seed),
        overlap_control(groups, "word", applies_to, n_folds, n_boot, seed),
        overlap_control(groups, "context", applies_to, n_folds, n_boot, seed),
    ]


def controls(inputs: BiasInputs, applies_to: str, n_folds: int = 5, n_boot: int = 1000,
             seed: int = 0) -> list[dict[str, Any]]:
    """The trained controls of a kind's views: alignment controls over its alignment views (naming
    ``applies_to``, the kind), the choice-only control over its choice views."""
    out = []
    if inputs.alignment_views:
        out += alignment_controls(list(inputs.alignment_views), applies_to, n_folds, n_boot, seed)
    if inputs.choice_views:
        out += choice_only_control(list(inputs.choice_views), n_folds, n_boot, seed)
    return out
