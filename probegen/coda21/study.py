"""A human study of a CoDA21 dataset (:class:`probegen.tasks.Studyable`'s hooks, the ``align`` page
layout: rows in stored order, definitions in a seeded order).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..study.views import MASK
from .items import Context, Group


# ---- views and gold -------------------------------------------------------------------------------
def definition_order(group_id: str, k: int, seed: int) -> list[int]:
    """The order the group's definitions are shown in (item index per position), seeded by the seed
    and the group id only.

    >>> definition_order("g1", 5, 0) == definition_order("g1", 5, 0)
    True
    >>> sorted(definition_order("g1", 5, 0))
    [0, 1, 2, 3, 4]
    """
    rng = np.random.default_rng([seed, zlib.crc32(f"study-definitions/{group_id}".encode())])
    return [int(i) for i in rng.permutation(k)]


def align_row(ctx: Context, condition: str) -> list[str]:
    """One context as ``[left, target, right]``: the word in place (full), a blank (context), the word alone (word).

    >>> from probegen.coda21.items import Context
    >>> c = Context(text="The mice saw ice.", char_span=(13, 16))
    >>> align_row(c, "context"), align_row(c, "word")
    (['The mice saw ', '_____', '.'], ['', 'ice', ''])
    """
    a, b = ctx.char_span
    if condition == "word":
        return ["", ctx.word, ""]
    # the target is cut out by its character span, never found by string search
    return [ctx.text[:a], MASK if condition == "context" else ctx.word, ctx.text[b:]]


def align_view(group: Group, condition: str, seed: int) -> dict[str, Any]:
    """A CoDA21 group as shown in ``condition``: rows in stored order, definitions in a seeded order."""
    order = definition_order(group.id, group.k, seed)
    return {
        "kind": "align",
        "rows": [align_row(it.context, condition) for it in group.items],
        "definitions": [group.items[i].definition for i in order],
    }


def align_gold(group: Group, seed: int) -> dict[str, Any]:
    """Gold of a group: for row i, the shown position of item i's definition."""
    order = definition_order(group.id, group.k, seed)
    where = {item: pos for pos, item in enumerate(order)}
    return {
        "kind": "align",
        "dataset_id": group.id,
        "unit": group.id,
        "gold": [where[i] for i in range(group.k)],
        "n": group.k,
        "words": [[it.context.word, it.lemma.replace("_", " ")] for it in group.items],
    }
