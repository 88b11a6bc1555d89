"""The one context model: a sentence with the target located by character span.

CoDA21 groups and WordNetQA items both carry a :class:`Context`; SemCor occurrences
(:class:`probegen.semcor.Occurrence`) build one with ``.context()``. The target is always found
by its span, never by string search ("ice" would also hit "mice").

The two families keep their own on-disk layouts (``schema=``), which predate this module and
must not change: CoDA21 writes the token span and SemCor sentence id when known, WordNetQA
always writes ``source`` and ``ref``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from .errors import DatasetError
from .text import detokenize, replace_char_span

__all__ = ["Context", "Schema"]

Schema = Literal["coda21", "wordnetqa"]


@dataclass(frozen=True)
class Context:
    """A sentence with the target located by character span (and token span if known).

    ``source`` says where the sentence comes from: ``semcor`` (``ref`` = the SemCor sentence id,
    e.g. ``brown1/br-a01#1``), ``wordnet`` (``ref`` = the index of the synset's example),
    ``release`` (a sentence read from a released item) or ``user`` (given by hand). ``lemma`` is
    the target's lemma where the source records one (SemCor does).

    >>> c = Context.from_tokens(("The", "mice", "saw", "ice", "."), (3, 4), ref="br-x#1")
    >>> c.text, c.char_span, c.surface, c.source
    ('The mice saw ice.', (13, 16), 'ice', 'semcor')
    >>> c.replaced("bkatuhla")
    'The mice saw bkatuhla.'
    """

    text: str
    char_span: tuple[int, int]
    tokens: tuple[str, ...] | None = None
    span: tuple[int, int] | None = None
    source: str = "user"
    ref: str | None = None
    lemma: str | None = None

    @property
    def surface(self) -> str:
        """The target as written in the sentence (e.g. "buffs", not the lemma "buff")."""
        a, b = self.char_span
        return self.text[a:b]

    # the CoDA21 model's name for it, used across CoDA21, the study views and the diagnostics
    word = surface

    @property
    def sent_id(self) -> str | None:
        """The SemCor sentence id, or None for a sentence from elsewhere."""
        return self.ref if self.source == "semcor" else None

    def replaced(self, replacement: str | None) -> str:
        """The sentence with the target span replaced (``None``: removed, spaces tidied).

        >>> Context("the mice saw ice", (13, 16)).replaced("bkatuhla")
        'the mice saw bkatuhla'
        >>> Context("the ice melted", (4, 7)).replaced(None)
        'the melted'
        """
        return replace_char_span(self.text, self.char_span, replacement)

    @classmethod
    def from_tokens(
        cls, tokens: tuple[str, ...], span: tuple[int, int], ref: str | None = None,
        source: str = "semcor", lemma: str | None = None,
    ) -> "Context":
        """Build from (SemCor) tokens; the text is detokenised and the character span derived
        from the token span."""
        text, spans = detokenize(tokens)
        return cls(text=text, char_span=(spans[span[0]][0], spans[span[1] - 1][1]), tokens=tuple(tokens),
                   span=tuple(span), source=source, ref=ref, lemma=lemma)

    @classmethod
    def from_text(cls, text: str, word: str, source: str = "user") -> "Context":
        """Locate ``word`` as a whole word (never inside another word) in ``text``; case-exact
        first, then ignoring case.

        >>> Context.from_text("The mice saw ice.", "ice").char_span
        (13, 16)
        """
        for flags in (0, re.IGNORECASE):
            m = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags)
            if m:
                return cls(text=text, char_span=(m.start(), m.end()), source=source)
        raise DatasetError(f"target word {word!r} not found as a whole word in context {text[:60]!r}")

    def to_json(self, schema: Schema) -> dict[str, Any]:
        """The context in ``schema``'s layout.

        >>> c = Context("the ice melted", (4, 7), source="wordnet", ref="0")
        >>> c.to_json("wordnetqa")
        {'text': 'the ice melted', 'char_span': [4, 7], 'source': 'wordnet', 'ref': '0'}
        >>> Context("the ice melted", (4, 7)).to_json("coda21")
        {'text': 'the ice melted', 'char_span': [4, 7]}
        """
        d: dict[str, Any] = {"text": self.text, "char_span": list(self.char_span)}
        if schema == "wordnetqa":
            d["source"] = self.source
            d["ref"] = self.ref if self.ref is not None else ""
        elif schema == "coda21":
            if self.tokens is not None:
                d["tokens"] = list(self.tokens)
                d["span"] = list(self.span or ())
            if self.ref is not None:
                d["sent_id"] = self.ref
        else:
            raise ValueError(f"unknown context schema {schema!r}")
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any], schema: Schema) -> "Context":
        """Read a context written in ``schema``'s layout; a span outside the text is a DatasetError.

        >>> Context.from_json({"text": "a dog", "char_span": [2, 5], "sent_id": "br#1"}, "coda21").source
        'semcor'
        >>> Context.from_json({"text": "a dog", "char_span": [2, 9]}, "wordnetqa")
        Traceback (most recent call last):
        probegen.errors.DatasetError: char_span [2, 9] outside context 'a dog'
        """
        text = d["text"]
        a, b = (int(x) for x in d["char_span"])
        if not 0 <= a < b <= len(text):
            raise DatasetError(f"char_span {[a, b]} outside context {text[:60]!r}")
        if schema == "wordnetqa":
            return cls(text=text, char_span=(a, b), source=d.get("source", "wordnet"), ref=str(d.get("ref", "")))
        if schema == "coda21":
            # CoDA21 contexts with tokens or a sentence id are SemCor's; the rest were supplied
            return cls(
                text=text,
                char_span=(a, b),
                tokens=tuple(d["tokens"]) if "tokens" in d else None,
                span=tuple(d["span"]) if "span" in d else None,
                source="semcor" if "tokens" in d or "sent_id" in d else "user",
                ref=d.get("sent_id"),
            )
        raise ValueError(f"unknown context schema {schema!r}")
