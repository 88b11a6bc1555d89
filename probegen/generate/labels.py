"""How the letter method spells and tokenises an option label (shared by the in-process and the
served backend, :mod:`probegen.generate.letter` and :mod:`probegen.generate.letter_api`)."""

from __future__ import annotations

from typing import Any, Sequence


def label_variants(ask: str, labels: Sequence[str]) -> list[tuple[str, ...]]:
    """The texts that spell each label as the answer's start.

    >>> label_variants("choice", ["A", "B"])
    [('A', ' A'), ('B', ' B')]
    >>> label_variants("yes-no", ["yes", "no"])[1]
    ('no', 'No', ' no', ' No')
    """
    if ask == "yes-no":
        return [tuple(dict.fromkeys((w, w.capitalize(), " " + w, " " + w.capitalize()))) for w in labels]
    return [(lab, " " + lab) for lab in labels]


def continuation(tokenizer: Any, prompt: str, variant: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(prompt ids, variant ids) of ``prompt + variant`` tokenised together: the variant's tokens end after
    the prompt (a straddling token counts for the variant, as in the served-model scorer)."""
    enc = tokenizer(prompt + variant, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    cut = len(prompt)
    k = next((i for i, (s, e) in enumerate(offsets) if e > cut or s >= cut), len(ids))
    return tuple(ids[:k]), tuple(ids[k:])
