"""What an annotator sees of one probe item in one condition, and the gold kept apart from it.

Conditions follow the bias paper's human study (Liu, McCarthy & Korhonen):

- ``full``: the item as models get it (CoDA21: the true word in each context);
- ``context``: the target hidden by its span (annotators first guess the hidden word);
- ``word``: the target word alone, no sentence (annotators think of its most representative
  meaning).

The ablated texts come from the same library pieces the bias diagnostics score: WordNetQA
stems from ``templates/wordnetqa.json`` through :mod:`probegen.wordnetqa.render` (``fill_stem``
with the sentence hidden by :meth:`Context.replaced`, ``word_stem``), CoDA21 contexts cut at the
target's character span (never by string search). Only the stand-in differs: people see a blank
(:data:`MASK`) where models see the made-up word.

A view is a plain dict (JSON for the page and the CSV export); it never names a synset or the
answer. Multiple choice: ``{"kind": "mc", "prompt", "choices"}``. A CoDA21 group:
``{"kind": "align", "rows": [[left, target, right], ...], "definitions": [...]}`` where
``target`` is the word (full, word) or the blank (context) and the definitions are in a seeded
order that does not follow the rows.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..errors import DatasetError, ProbegenError

CONDITIONS = ("full", "context", "word")
MASK = "_____"
LETTERS = "ABCDEFGHIJ"

INSTRUCTIONS = {
    "full": "Read the text and pick the answer that fits the highlighted word as it is used there.",
    "context": (
        "The target word is hidden (_____). First guess the hidden word from the sentence and type "
        "your guess; then pick the answer that fits the hidden word as it is used in the sentence."
    ),
    "word": (
        "Only the word is shown, without a sentence. Think of the word's most representative "
        "(most common) meaning, then pick the answer that fits it."
    ),
}
ALIGN_NOTE = (
    "Pair every {row} on the left with one definition on the right; each definition is used once. "
    "Click a {row}, then a definition (or press the {row}'s number, then the definition's letter)."
)
KEYS_NOTE = {
    "mc": "Keys: 1-5 or a-e pick an answer, Enter submits.",
    "align": "Keys: 1-9 (0 = 10) select a row, a-j pair it with a definition, Enter submits.",
}
# views whose rows are each paired with a definition, and how the pairing is explained
ROW_NOTES = {"align": ALIGN_NOTE}


def is_group(view: dict[str, Any]) -> bool:
    """True for a group view (rows to pair with definitions), False for one question with choices:
    the view's layout says which, so readers never compare format names.

    >>> is_group({"kind": "align", "rows": [], "definitions": []}), is_group({"kind": "mc", "prompt": "p", "choices": []})
    (True, False)
    """
    return "rows" in view


def instructions(condition: str, kind: str) -> str:
    """The guideline shown above every item of ``condition`` (``kind``: ``mc`` or ``align``).

    >>> instructions("word", "mc").startswith("Only the word is shown")
    True
    """
    text = INSTRUCTIONS[condition]
    note = ROW_NOTES.get(kind)
    if note:
        row = "word" if condition == "word" else "sentence"
        text += " " + note.format(row=row)
    return text + " " + KEYS_NOTE[kind]


def check_conditions(conditions: list[str]) -> list[str]:
    """Validate and order a condition list.

    >>> check_conditions(["word", "full"])
    ['full', 'word']
    """
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad or not conditions:
        raise ProbegenError(f"unknown condition {bad[0] if bad else ''!r}; use a comma list of {', '.join(CONDITIONS)}")
    if len(set(conditions)) != len(conditions):
        raise ProbegenError(f"condition listed twice in {','.join(conditions)}")
    return [c for c in CONDITIONS if c in conditions]


# ---- WordNetQA (multiple choice) -------------------------------------------------------------------
def mc_prompt(item, condition: str) -> str:
    """The question stem of a WordNetQA item in ``condition`` (the bias diagnostics' stems, no LM wrapper)."""
    from ..wordnetqa.render import fill_stem, probe_spec, template_by_id

    if condition == "full":
        return item.question
    tmpl = template_by_id(item.template)
    if tmpl is None:
        raise DatasetError(
            f"item {item.id} has no known template (a release-format row?): only the full condition can be shown"
        )
    if condition == "word":
        return probe_spec(item.probe)["word_stem"].format(word=item.surface)
    sentence = item.context.replaced(MASK) if item.context else ""
    return fill_stem(tmpl, sentence, MASK, item.definition)


def mc_view(item, condition: str) -> dict[str, Any]:
    """A WordNetQA item as shown in ``condition``: the stem and the choices in the dataset's order."""
    return {"kind": "mc", "prompt": mc_prompt(item, condition), "choices": list(item.choices)}


def mc_gold(item) -> dict[str, Any]:
    """What scoring needs of a WordNetQA item: the gold index, choice count and the hidden word."""
    return {
        "kind": "mc",
        "dataset_id": item.id,
        "unit": item.cluster,
        "gold": int(item.answer),
        "n": len(item.choices),
        "words": [[item.surface, item.word]],
    }


# ---- CoDA21 (alignment groups) ---------------------------------------------------------------------
def definition_order(group_id: str, k: int, seed: int) -> list[int]:
    """The seeded order the group's definitions are shown in (item index per position).

    It depends on the study seed and the group id only, never on the rows' order.

    >>> definition_order("g1", 5, 0) == definition_order("g1", 5, 0)
    True
    >>> sorted(definition_order("g1", 5, 0))
    [0, 1, 2, 3, 4]
    """
    rng = np.random.default_rng([seed, zlib.crc32(f"study-definitions/{group_id}".encode())])
    return [int(i) for i in rng.permutation(k)]


def align_row(ctx, condition: str) -> list[str]:
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


def align_view(group, condition: str, seed: int) -> dict[str, Any]:
    """A CoDA21 group as shown in ``condition``: rows in stored order, definitions in a seeded order."""
    order = definition_order(group.id, group.k, seed)
    return {
        "kind": "align",
        "rows": [align_row(it.context, condition) for it in group.items],
        "definitions": [group.items[i].definition for i in order],
    }


def align_gold(group, seed: int) -> dict[str, Any]:
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
