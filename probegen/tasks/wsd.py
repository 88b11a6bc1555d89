"""WSD: pick the sense (definition) of a target word in its context among candidate choices.

A probegen ``make wsd`` directory (kind ``wsd``) or a generic word-in-context JSONL whose rows
have ``choices`` and ``gold``; reading lives in :mod:`probegen.wordincontext`, the shared
word-in-context behaviour in :class:`probegen.tasks.wic.WordInContextTask`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .wic import WordInContextTask, choice_correct, majority, pair_features

__all__ = ["WsdTask", "choice_correct"]


class WsdTask(WordInContextTask):
    """WSD items: one context, candidate sense definitions and the gold index."""

    name = "wsd"
    title = "WSD"
    shape = "choice"
    kinds = ("wsd", "wordincontext")
    stats_noun = "items (choose the sense)"
    paper_key = "wsd"
    scores_choices = True
    # senses are listed in an order under --method letter/generate: PriDe's prior applies (WiC's yes/no has no order)
    options = WordInContextTask.options | {"debias_share"}
    bias_options = WordInContextTask.bias_options | {"debias_share"}

    def split_labels(self, c: dict[str, Any]) -> str:
        return f"mean choices {c['mean_choices']}"

    def trained_features(self, items, view, vectors):
        """One row per (item, choice): ``[u, d, |u-d|, u*d]``, y = is gold, group = the item's index."""
        u = vectors([view(it.context) for it in items])
        idx = np.array([i for i, it in enumerate(items) for _ in it.choices])
        d = vectors([(c, None) for it in items for c in it.choices])
        y = np.array([j == it.gold for it in items for j in range(len(it.choices))])
        return pair_features(u[idx], d), y, idx

    def prior_correct(self, train: Sequence[Any], test: Sequence[Any], seed: int) -> np.ndarray:
        """Per test item: is the gold at the training data's most frequent gold position?"""
        pos = int(majority([it.gold for it in train], seed))
        return np.array([it.gold == pos for it in test])

    def classifier_correct(self, clf, X, y, groups, ids=None, seed=0):
        return choice_correct(clf.decision_function(X), groups, y, ids, seed)

    def gold_text(self, item: Any) -> str:
        return item.choices[item.gold]

    def sense_text(self, item: Any) -> str | None:
        return item.choices[item.gold]

    def head_classes(self, train):
        return None

    def generative_unit(self, item: Any, condition: str, nonce: str) -> Any:
        """A lettered choice among the item's sense definitions (the ``sense`` prompt)."""
        from ..core import PromptUnit

        fields = (("sentence", self.shown(item.context, condition, nonce)),
                  ("word", self.named(item, condition, nonce)))
        return PromptUnit(str(item.id), ("",), (tuple(item.choices),), "argmax", (int(item.gold),), ask="sense",
                          fields=fields)

    def gold_index(self, item, classes):
        return int(item.gold)
