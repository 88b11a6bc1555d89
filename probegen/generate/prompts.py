"""Prompt templates of the generative protocol: a :class:`Question` becomes chat messages, the text from a
YAML file (``templates/prompts/en.yaml`` or ``--prompts FILE``). Every text is put on one line (an empty
one shown as the file's ``empty`` text), so the line-based answer format stays unambiguous.

>>> t = prompt_templates()
>>> q = Question("choice", ("Which is a fruit?",), ("a stone", "an apple"))
>>> print(t.messages(q)[1]["content"])
Which is a fruit?
<BLANKLINE>
A. a stone
B. an apple
<BLANKLINE>
Answer with the letter only (A to B).
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, cast

from ..errors import ProbegenError

#: the kinds of question a prompt can ask
ASKS = ("matching", "choice", "sense", "yes-no")
#: the bundled prompt file (package ``templates``)
BUNDLED_FILE = "templates/prompts/en.yaml"

# Placeholders each text may use: an unknown one is an error when the file is loaded, not mid-run.
_SCHEMA: dict[str, dict[str, tuple[str, ...]]] = {
    "matching": {
        "row": ("number", "text"),
        "option": ("letter", "text"),
        "nonce_note": ("nonce",),
        "user": ("rows", "options", "nonce_note", "k", "n_options", "last_letter", "example", "nonce", "word"),
        "retry": ("error", "k", "n_options", "last_letter", "example", "nonce", "word"),
    },
    "choice": {
        "option": ("letter", "text"),
        "no_question": (),
        "user": ("question", "options", "n_options", "last_letter", "nonce", "word"),
        "retry": ("error", "n_options", "last_letter", "nonce", "word"),
    },
    "sense": {
        "option": ("letter", "text"),
        "user": ("sentence", "word", "options", "n_options", "last_letter", "nonce"),
        "retry": ("error", "n_options", "last_letter", "nonce", "word"),
    },
    "yes-no": {"user": ("word", "sentence1", "sentence2", "question", "nonce"), "retry": ("error", "word", "nonce")},
}
_TOP = ("system", "empty")


def letters(n: int) -> list[str]:
    """The first ``n`` option labels: ``A``..``Z``, then ``AA``..``AZ``, ``BA``.. (spreadsheet columns).

    >>> letters(3)
    ['A', 'B', 'C']
    >>> letters(28)[-3:]
    ['Z', 'AA', 'AB']
    >>> letters(0)
    []
    """
    out = []
    for i in range(max(n, 0)):
        label, i = "", i + 1
        while i:  # bijective base 26: there is no "zero" letter
            i, r = divmod(i - 1, 26)
            label = chr(ord("A") + r) + label
        out.append(label)
    return out


@dataclass(frozen=True)
class Question:
    """What one prompt asks, independent of the task: ``ask`` (:data:`ASKS`), ``rows`` (the k contexts of a
    matching, else ``(question,)``), ``options`` (lettered in this order; yes-no's ``("yes", "no")``) and
    ``fields`` (extra placeholders: ``nonce``, ``word``, ``sentence1``, ``sentence2``)."""

    ask: str
    rows: tuple[str, ...]
    options: tuple[str, ...]
    fields: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class PromptTemplates:
    """One prompt file: where it came from, its sha256, and its checked content."""

    file: str  # templates/prompts/en.yaml, or the path given with --prompts
    sha256: str
    data: dict[str, Any] = field(compare=False, repr=False)

    def messages(self, q: Question) -> list[dict[str, str]]:
        """The chat messages that ask ``q``: a system message (unless the file's is empty), then the user's.

        >>> q = Question("yes-no", (), ("yes", "no"), {"word": "bank", "sentence1": "A river bank.", "sentence2": ""})
        >>> print(prompt_templates().messages(q)[-1]["content"])
        Does the word "bank" (in square brackets) have the same meaning in these two sentences?
        <BLANKLINE>
        Sentence 1: A river bank.
        Sentence 2: (no text)
        <BLANKLINE>
        Answer yes or no.
        """
        out = [{"role": "system", "content": self.data["system"]}] if self.data["system"] else []
        return out + [{"role": "user", "content": self.user(q)}]

    def user(self, q: Question) -> str:
        """The user message that asks ``q`` (what :meth:`messages` sends after the system message)."""
        block = self._block(q)
        values = self._values(q)
        values.update(_FILL[q.ask](self, q, block))
        return tidy(block["user"].format(**values))

    def retry(self, q: Question, error: str) -> str:
        """The user message sent after an answer that could not be read: it shows ``error`` and asks again.

        >>> q = Question("choice", ("Q?",), ("x", "y", "z"))
        >>> prompt_templates().retry(q, "no option letter found")
        'Your answer could not be read: no option letter found. Answer with the letter only (A to C).'
        """
        values = self._values(q)
        values["error"] = one_line(error).rstrip(".") or "no answer"
        return tidy(self._block(q)["retry"].format(**values))

    def record(self) -> dict[str, str]:
        """What results.json and the manifest record about the prompts: ``{"file", "sha256"}``."""
        return {"file": self.file, "sha256": self.sha256}

    # ---- filling in ---------------------------------------------------------------------------
    def _block(self, q: Question) -> dict[str, str]:
        if q.ask not in ASKS:
            raise ProbegenError(f"unknown question kind {q.ask!r}: use one of {', '.join(ASKS)}")
        return cast("dict[str, str]", self.data[q.ask])

    def _text(self, text: str) -> str:
        return one_line(text) or self.data["empty"]

    def _options(self, q: Question, block: dict[str, str]) -> str:
        return "\n".join(block["option"].format(letter=lab, text=self._text(t))
                         for lab, t in zip(letters(len(q.options)), q.options))

    def _values(self, q: Question) -> dict[str, Any]:
        """The placeholders every text of ``q.ask`` may use, besides rows/options/question/error."""
        n = len(q.options)
        k = len(q.rows)
        values: dict[str, Any] = {
            "k": k,
            "n_options": n,
            "last_letter": letters(n)[-1] if n else "A",
            # the format shown ("1: A", "2: B", ...): a model that copies it gives the identity matching,
            # a pattern visible in the results, rather than a plausible-looking one
            "example": _example(k, n),
        }
        for key in ("nonce", "word", "sentence", "sentence1", "sentence2"):
            values[key] = self._text(q.fields.get(key, ""))
        values["question"] = self._text(q.rows[0] if q.rows else "")  # yes-no's; choice's is filled in by _fill_choice
        return values


def _fill_matching(t: PromptTemplates, q: Question, block: dict[str, str]) -> dict[str, str]:
    nonce = one_line(q.fields.get("nonce", ""))
    return {
        "rows": "\n".join(block["row"].format(number=i + 1, text=t._text(r)) for i, r in enumerate(q.rows)),
        "options": t._options(q, block),
        "nonce_note": block["nonce_note"].format(nonce=nonce) if nonce else "",
    }


def _fill_choice(t: PromptTemplates, q: Question, block: dict[str, str]) -> dict[str, str]:
    question = one_line(q.rows[0]) if q.rows else ""
    return {"options": t._options(q, block), "question": question or block["no_question"]}


# what each ask fills in besides the shared placeholders (a table, not comparisons of kind names)
_FILL: dict[str, Callable[[PromptTemplates, Question, dict[str, str]], dict[str, str]]] = {
    "matching": _fill_matching, "choice": _fill_choice,
    "sense": lambda t, q, block: {"options": t._options(q, block)}, "yes-no": lambda t, q, block: {}}


def _example(k: int, n: int) -> str:
    labs = letters(max(n, 1))
    lines = [f"{i + 1}: {labs[i % len(labs)]}" for i in range(min(k, 3))]
    if k > 3:
        lines.append("...")
    return "\n".join(lines) or "1: A"


def tidy(text: str) -> str:
    """No trailing spaces (an empty optional part leaves one), no leading or trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.splitlines()).strip()


def one_line(text: Any) -> str:
    """``text`` on one line, runs of whitespace as one space (None as empty)."""
    return " ".join(str(text or "").split())


# ---- loading --------------------------------------------------------------------------------------
def prompt_templates(path: str | None = None) -> PromptTemplates:
    """The bundled prompts or those of the file ``path`` (``--prompts FILE``); a malformed file is one line
    naming the file and the key.

    >>> prompt_templates().file
    'templates/prompts/en.yaml'
    >>> prompt_templates("/nonexistent/prompts.yaml")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --prompts /nonexistent/prompts.yaml: cannot read it (No such file or directory)
    """
    if path:
        from ..io import open_input

        try:
            with open_input(Path(path).expanduser(), "prompts file") as fh:  # a FIFO or a device: one line, unread
                raw = fh.read()
        except OSError as e:
            raise ProbegenError(f"--prompts {path}: cannot read it ({e.strerror or e})") from None
        return PromptTemplates(path, hashlib.sha256(raw).hexdigest(), _parse(raw, path))
    return _bundled()


@lru_cache(maxsize=1)
def _bundled() -> PromptTemplates:
    raw = resources.files("probegen.templates").joinpath("prompts", "en.yaml").read_bytes()
    return PromptTemplates(BUNDLED_FILE, hashlib.sha256(raw).hexdigest(), _parse(raw, BUNDLED_FILE))


def _parse(raw: bytes, name: str) -> dict[str, Any]:
    """A prompt file parsed (YAML or JSON) and checked against the schema; one-line errors name file and key."""
    from ..io import load_yaml_file

    data = load_yaml_file(raw, name)  # no aliases (a "billion laughs")
    if not isinstance(data, dict):
        raise ProbegenError(f"{name}: needs a mapping with {', '.join(_TOP + ASKS)} (see {BUNDLED_FILE})")
    for key in _TOP:
        if not isinstance(data.get(key), str):
            raise ProbegenError(f"{name}: missing {key!r} (a string)" if key not in data
                                else f"{name}: {key}: must be a string")
        check_prompt_fields(data[key], (), f"{name}: {key}")
    for ask, keys in _SCHEMA.items():
        block = data.get(ask)
        if not isinstance(block, dict):
            raise ProbegenError(f"{name}: missing {ask!r}" if ask not in data
                                else f"{name}: {ask}: must be a mapping of {', '.join(keys)}")
        for key, allowed in keys.items():
            if key not in block:
                raise ProbegenError(f"{name}: missing {ask}.{key}")
            if not isinstance(block[key], str):
                raise ProbegenError(f"{name}: {ask}.{key}: must be a string")
            check_prompt_fields(block[key], allowed, f"{name}: {ask}.{key}")
    return data


def check_prompt_fields(text: str, allowed: tuple[str, ...], where: str) -> None:
    """Fail now, naming the placeholder, on what ``text.format(...)`` would crash on later."""
    try:
        parts = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
    except ValueError as e:  # a lone "{" or "}"
        raise ProbegenError(f"{where}: malformed ({e}); write a literal brace as {{{{ or }}}}") from None
    for f, spec, conv in parts:
        if f not in allowed or spec or conv:
            shown = "{" + f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            use = ", ".join("{" + a + "}" for a in allowed) if allowed else "no placeholder"
            raise ProbegenError(f"{where}: unknown placeholder {shown}; use {use}")
