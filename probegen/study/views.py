"""What an annotator sees of one probe item in one condition, and the gold kept apart from it.

Conditions follow the bias paper's human study (Liu, McCarthy & Korhonen): ``full`` (the item as
models get it), ``context`` (the target hidden; annotators first guess it) and ``word`` (the target
word alone). People see a blank (:data:`MASK`) where models see the made-up word.

A view is a plain dict that never names a synset or the answer; the kinds build views and golds
(:meth:`probegen.tasks.Studyable.study_view`, ``study_gold``). A view's ``kind`` names its page
layout (:class:`Layout`, found by :func:`layout_of`), not a dataset kind: ``mc``
(``{"kind": "mc", "prompt", "choices", "marks"}``, ``marks`` the spans the page highlights) or
``align`` (``{"kind": "align", "rows": [[left, target, right], ...], "definitions": [...]}``).
"""

from __future__ import annotations

import zlib
from typing import Any, cast

import numpy as np

from ..errors import DatasetError, ProbegenError

CONDITIONS = ("full", "context", "word")
MASK = "_____"
LETTERS = "ABCDEFGHIJ"


def study_rng(seed: int, key: str) -> np.random.Generator:
    """The study's seeded generator for one draw named ``key`` (sampling, dealing, a kind's picks)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


# Guidelines by what the page shows (:func:`guide_key`): each says only what is on the screen
INSTRUCTIONS = {
    "full": "Read the text and pick the answer that fits the highlighted word as it is used there.",
    "full-plain": "Read the question and pick the answer that fits it best.",
    "context": (
        "The target word is hidden (_____). First guess the hidden word from the sentence and type "
        "your guess; then pick the answer that fits the hidden word as it is used in the sentence."
    ),
    "word": (
        "Only the highlighted word is shown, without a sentence. Think of the word's most representative "
        "(most common) meaning, then pick the answer that fits it."
    ),
}
ALIGN_NOTE = (
    "Pair every {row} on the left with one definition on the right; each definition is used once. "
    "Click a {row}, then a definition (or press the {row}'s number, then the definition's letter)."
)


class Layout:
    """One page layout of a view: its prompt as text, its options, the form of an answer and of the
    guesses of hidden words, and the guideline notes it adds (``row_note``: how rows are paired)."""

    keys_note: str = ""
    row_note: str | None = None

    def prompt_text(self, view: dict[str, Any]) -> str:
        """The prompt as text; the word the page highlights is in [brackets] (a CSV has no highlight)."""
        raise NotImplementedError

    def options(self, view: dict[str, Any]) -> list[str]:
        """The texts the annotator picks from, in the order shown (lettered A, B, ...)."""
        raise NotImplementedError

    def plain(self, view: dict[str, Any]) -> bool:
        """Whether the full condition shows no target word to highlight (its own guideline)."""
        return False

    def check(self, view: dict[str, Any], answer: Any) -> tuple[Any, int]:
        """(the answer normalised, how many hidden words a guess names), or a ValueError saying why not."""
        raise NotImplementedError

    def guess_of(self, guesses: list[str]) -> Any:
        """The guess as stored: the layout's form of the guessed words."""
        raise NotImplementedError

    def split_guess(self, cell: str) -> Any:
        """A CSV guess cell as a guess."""
        raise NotImplementedError

    def format_answer(self, answer: Any) -> str:
        """An answer as the CSV writes it."""
        raise NotImplementedError

    def parse_answer(self, text: str) -> Any:
        """A CSV answer cell as an answer (checked later by :meth:`check`), or a ValueError."""
        raise NotImplementedError


class Choices(Layout):
    """One question with choices: the answer is one choice (its index, or its letter), a guess one word."""

    keys_note = "Keys: 1-5 or a-e pick an answer, Enter submits."

    def prompt_text(self, view: dict[str, Any]) -> str:
        text = view["prompt"]
        for a, b in sorted(view.get("marks") or [], reverse=True):
            text = f"{text[:a]}[{text[a:b]}]{text[b:]}"
        return cast(str, text)

    def options(self, view: dict[str, Any]) -> list[str]:
        return cast("list[str]", view["choices"])

    def plain(self, view: dict[str, Any]) -> bool:
        return not view.get("marks")

    def check(self, view: dict[str, Any], answer: Any) -> tuple[Any, int]:
        n = len(view["choices"])
        if isinstance(answer, str) and len(answer.strip()) == 1 and answer.strip().upper() in LETTERS[:n]:
            answer = LETTERS.index(answer.strip().upper())
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < n:
            raise ValueError(f"answer must be a choice index 0..{n - 1} or a letter {LETTERS[0]}-{LETTERS[n - 1]}")
        return answer, 1

    def guess_of(self, guesses: list[str]) -> Any:
        return guesses[0]

    def split_guess(self, cell: str) -> Any:
        return cell

    def format_answer(self, answer: Any) -> str:
        return LETTERS[answer]

    def parse_answer(self, text: str) -> Any:
        return text


class Matching(Layout):
    """Rows to pair with definitions: the answer a different definition per row, a guess one word per row."""

    keys_note = "Keys: 1-9 (0 = 10) select a row, a-j pair it with a definition, Enter submits."
    row_note = ALIGN_NOTE

    def prompt_text(self, view: dict[str, Any]) -> str:
        return "\n".join(f"{r + 1}. {left}{mid if mid == MASK else f'[{mid}]'}{right}"
                         for r, (left, mid, right) in enumerate(view["rows"]))

    def options(self, view: dict[str, Any]) -> list[str]:
        return cast("list[str]", view["definitions"])

    def check(self, view: dict[str, Any], answer: Any) -> tuple[Any, int]:
        k = len(view["rows"])
        if not isinstance(answer, list) or len(answer) != k or any(isinstance(x, bool) or not isinstance(x, int)
                                                                   for x in answer):
            raise ValueError(f"answer must list {k} definition indices, one per row")
        if sorted(answer) != list(range(k)):
            raise ValueError(f"answer must pair every row with a different definition (a permutation of 0..{k - 1})")
        return answer, k

    def guess_of(self, guesses: list[str]) -> Any:
        return guesses

    def split_guess(self, cell: str) -> Any:
        return cell.split("|")

    def format_answer(self, answer: Any) -> str:
        return ",".join(LETTERS[a] for a in answer)

    def parse_answer(self, text: str) -> Any:
        out = []
        for part in text.split(","):
            p = part.strip().upper()
            if len(p) != 1 or p not in LETTERS:
                raise ValueError(f"answer {text!r}: give one definition letter per row, comma-separated "
                                 "(e.g. C,A,E,B,D)")
            out.append(LETTERS.index(p))
        return out


LAYOUTS: dict[str, Layout] = {"mc": Choices(), "align": Matching()}


def layout_of(view: dict[str, Any]) -> Layout:
    """The page layout of ``view`` (named by its ``kind``).

    >>> type(layout_of({"kind": "align", "rows": [], "definitions": []})).__name__
    'Matching'
    >>> layout_of({"kind": "mc", "prompt": "p", "choices": ["a", "b"]}).check({"choices": ["a", "b"]}, "B")
    (1, 1)
    """
    try:
        return LAYOUTS[view["kind"]]
    except KeyError:
        raise DatasetError(f"a study view of unknown layout {view.get('kind')!r}; known: "
                           f"{', '.join(LAYOUTS)}") from None


def guide_key(condition: str, view: dict[str, Any]) -> str:
    """Which guideline fits ``view`` in ``condition``: ``full-plain`` for a full question with no target
    word to highlight, else the condition.

    >>> guide_key("full", {"kind": "mc", "prompt": "Which words mean x?", "choices": [], "marks": []})
    'full-plain'
    >>> (guide_key("full", {"kind": "align", "rows": [], "definitions": []}),
    ...  guide_key("word", {"kind": "mc", "marks": [[0, 3]]}))
    ('full', 'word')
    """
    if condition == "full" and layout_of(view).plain(view):
        return "full-plain"
    return condition


def instructions(condition: str, view: dict[str, Any]) -> str:
    """The guideline shown above ``view`` in ``condition``.

    >>> instructions("word", {"kind": "mc", "prompt": "The word dog means:", "choices": [], "marks": [[9, 12]]})[:33]
    'Only the highlighted word is show'
    """
    layout = layout_of(view)
    text = INSTRUCTIONS[guide_key(condition, view)]
    if layout.row_note:
        row = "word" if condition == "word" else "sentence"
        text += " " + layout.row_note.format(row=row)
    return text + " " + layout.keys_note


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
