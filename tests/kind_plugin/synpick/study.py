"""synonym-pick's study page: ``probegen study make`` samples its words and shows each as a question
with choices (the ``mc`` page layout of :mod:`probegen.study.views`; no probegen file names the kind).

- ``full``: "Which word means the same as <word> (<definition>)?", the word highlighted;
- ``context``: the word hidden by the blank, its definition shown (annotators guess the word first);
- ``word``: the word alone.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from probegen.study.views import MASK
from probegen.tasks import Studyable

STEM = "Which word means the same as "


def _prompt(word: str, definition: str | None) -> tuple[str, list[list[int]]]:
    """The question and the span of ``word`` in it (none when it is the blank)."""
    tail = f" ({definition})?" if definition is not None else "?"
    marks = [] if word == MASK else [[len(STEM), len(STEM) + len(word)]]
    return STEM + word + tail, marks


class StudyHooks(Studyable):
    """Every word is a study unit; its view is one question with the dataset's choices."""

    def fingerprint(self, data: Any) -> str:
        """The sha256 of the items as canonical JSON (the plugin's datasets carry no fingerprint)."""
        text = "".join(json.dumps(it, sort_keys=True, ensure_ascii=False) + "\n" for it in data.items)
        return hashlib.sha256(text.encode()).hexdigest()

    def study_pool(self, data: Any, cfg: Any) -> tuple[list[Any], str, dict[str, int]]:
        return list(data.items), "words", {}

    def study_view(self, data: Any, unit: Any, condition: str, seed: int) -> dict[str, Any]:
        word = MASK if condition == "context" else unit["word"]
        prompt, marks = _prompt(word, None if condition == "word" else unit["definition"])
        return {"kind": "mc", "prompt": prompt, "choices": list(unit["choices"]), "marks": marks}

    def study_gold(self, unit: Any, seed: int) -> dict[str, Any]:
        return {"kind": "mc", "dataset_id": unit["id"], "unit": unit["id"], "gold": int(unit["gold"]),
                "n": len(unit["choices"]), "words": [[unit["word"], unit["word"]]]}
