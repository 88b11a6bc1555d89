"""Dataset-level measures of how much a word alone gives away: sense and label entropy.

If every target lemma is used with one sense throughout a dataset (entropy 0), a model that
memorises word -> sense needs no context at all; the bias paper uses such measures to explain
high Bias_W. Entropies are in bits.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable

import numpy as np


def entropy(counts: Iterable[int]) -> float:
    """Shannon entropy (bits) of a count distribution.

    >>> entropy([1, 1])
    1.0
    >>> entropy([5])
    0.0
    """
    c = np.asarray([x for x in counts if x > 0], dtype=np.float64)
    if c.size <= 1:
        return 0.0
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def per_word_entropy(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Entropy of the values each word is paired with (``pairs``: (word, value) per item), summarised: the mean
    over words, over words seen at least twice, the share with one value, and the top words.

    >>> r = per_word_entropy([("bank", "bank.n.01"), ("bank", "bank.n.02"), ("dog", "dog.n.01")])
    >>> r["mean"], r["mean_multi"], r["share_single"], r["n_words"]
    (0.5, 1.0, 0.5, 2)
    """
    values: dict[str, Counter[Any]] = defaultdict(Counter)
    for word, value in pairs:
        values[word][value] += 1
    if not values:
        return {"n_words": 0, "n_items": 0, "mean": None, "mean_multi": None, "n_multi": 0, "share_single": None,
                "top": []}
    ent = {w: entropy(c.values()) for w, c in values.items()}
    multi = [w for w, c in values.items() if sum(c.values()) >= 2]
    top = sorted(ent, key=lambda w: (-ent[w], w))[:5]
    return {
        "n_words": len(values),
        "n_items": sum(sum(c.values()) for c in values.values()),
        "mean": float(np.mean(list(ent.values()))),
        "mean_multi": float(np.mean([ent[w] for w in multi])) if multi else None,
        "n_multi": len(multi),
        "share_single": float(np.mean([len(c) == 1 for c in values.values()])),
        "top": [{"word": w, "entropy": round(ent[w], 4), "values": len(values[w])} for w in top if ent[w] > 0],
    }


def sense_entropy(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Per-lemma entropy of the senses (synsets) a target lemma is used with across items.

    >>> sense_entropy([("run", "run.v.01"), ("run", "run.v.01")])["share_single"]
    1.0
    """
    return per_word_entropy((w.lower(), s) for w, s in pairs)


def label_entropy(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Per-word entropy of the gold labels (answers) a word is paired with.

    >>> label_entropy([("cat", "feline"), ("cat", "pet")])["mean"]
    1.0
    """
    return per_word_entropy((w.lower(), lab) for w, lab in pairs)
