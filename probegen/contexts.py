"""The one context model: a sentence with the target located by character span.

CoDA21 groups and WordNetQA items both carry a :class:`Context`; SemCor occurrences
(:class:`probegen.semcor.Occurrence`) build one with ``.context()``. The target is always found
by its span, never by string search ("ice" would also hit "mice").

The two families keep their own on-disk layouts (``schema=``), which predate this module and
must not change: CoDA21 writes the token span and SemCor sentence id when known (and ``source``
and ``ref`` for a wordnet example), WordNetQA always writes ``source`` and ``ref``.

Wordnets without a sense-tagged corpus give their synsets' own example sentences as contexts
(``--contexts examples``): :func:`example_occurrences` finds the target in each example through
the wordnet's morphology and yields :class:`ExampleOccurrence` s, which build a Context like
SemCor's occurrences do, so the rest of a build does not care where a context came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal

from .errors import DatasetError
from .text import detokenize, replace_char_span

__all__ = ["Context", "ExampleOccurrence", "Schema", "example_occurrences", "locate"]

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
        if not word.strip():  # an empty word "matches" between two characters: the target would stay visible
            raise DatasetError(f"empty target word for context {text[:60]!r}")
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
            if self.source == "wordnet":  # a synset's example (--contexts examples): no SemCor id
                d["source"] = self.source
                d["ref"] = self.ref if self.ref is not None else ""
            elif self.ref is not None:
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
        text, sp = d["text"], d["char_span"]
        if not isinstance(text, str):
            raise DatasetError("context text must be a string")
        if not (isinstance(sp, list) and len(sp) == 2 and all(type(x) is int for x in sp)):
            raise DatasetError(f"char_span must be [start, end] character offsets (integers), got {str(sp)[:40]}")
        a, b = sp
        if not 0 <= a < b <= len(text):
            raise DatasetError(f"char_span {[a, b]} outside context {text[:60]!r}" if a < b else f"char_span {[a, b]} is empty or reversed")
        if not text[a:b].strip():
            raise DatasetError(f"char_span {[a, b]} covers only white space in context {text[:60]!r}")
        if schema == "wordnetqa":
            return cls(text=text, char_span=(a, b), source=d.get("source", "wordnet"), ref=str(d.get("ref", "")))
        if schema == "coda21":
            if d.get("source") == "wordnet":
                return cls(text=text, char_span=(a, b), source="wordnet", ref=str(d.get("ref", "")))
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


def locate(text: str, lemmas: Iterable[str], pos: str, morph) -> tuple[str, tuple[int, int]] | None:
    """(lemma, char span) of the first of ``lemmas`` found as whole words in ``text``, else None.

    Lemmas are tried in the wordnet's order; within a lemma the first occurrence wins. The head
    word (last of a noun, first of a verb) may be inflected (``morph``: a
    :class:`probegen.leaks.Morphology`); the other words must match exactly.

    >>> from probegen.leaks import Morphology
    >>> class WN:
    ...     def _morphy(self, form, pos):
    ...         return {("took", "v"): ["take"]}.get((form, pos), [])
    >>> locate("She took off early.", ["take_off"], "v", Morphology(WN()))
    ('take_off', (4, 12))
    """
    from .leaks import tokens_with_spans

    toks = tokens_with_spans(text)
    for lemma in lemmas:
        # the lemma is split like the sentence: "potter's_wheel" -> potter, s, wheel
        words = [t for t, _, _ in tokens_with_spans(lemma.replace("_", " "))]
        if not words:
            continue
        n = len(words)
        head = 0 if pos == "v" else n - 1
        for i in range(len(toks) - n + 1):
            window = toks[i : i + n]
            if all(window[j][0] == w for j, w in enumerate(words) if j != head):
                tok = window[head][0]
                if tok == words[head] or words[head] in morph.bases(tok, pos):
                    return lemma, (window[0][1], window[-1][2])
    return None


@dataclass(frozen=True)
class ExampleOccurrence:
    """A synset's own example sentence with its target located: the counterpart of a SemCor
    :class:`probegen.semcor.Occurrence` (``lemma``, ``span``, ``sent_id``, ``context()``).

    >>> occ = ExampleOccurrence("dog.n.01", 0, "the dogs barked", (4, 8), "dog")
    >>> occ.context().to_json("wordnetqa")
    {'text': 'the dogs barked', 'char_span': [4, 8], 'source': 'wordnet', 'ref': '0'}
    """

    synset: str
    index: int  # which of the synset's examples
    text: str
    char_span: tuple[int, int]
    lemma: str

    @property
    def span(self) -> tuple[int, int]:
        return self.char_span

    sent_id = None  # no SemCor sentence

    def context(self) -> Context:
        """The example as a Context (``source="wordnet"``, ``ref`` = the example's index)."""
        return Context(text=self.text, char_span=self.char_span, source="wordnet", ref=str(self.index), lemma=self.lemma)


def example_occurrences(graph, synsets: Iterable[str], morph) -> dict[str, list[ExampleOccurrence]]:
    """synset -> its examples in which one of its lemmas is found (:func:`locate`), in the
    wordnet's order; synsets with none are left out. Whether a form of the target is still
    visible elsewhere in the sentence is for the caller to check, as for SemCor
    (``probegen.leaks``)."""
    out: dict[str, list[ExampleOccurrence]] = {}
    for s in synsets:
        found = []
        for i, ex in enumerate(graph.examples(s)):
            hit = locate(ex, graph.lemmas(s), graph.pos(s), morph)
            if hit:
                found.append(ExampleOccurrence(s, i, ex, hit[1], hit[0]))
        if found:
            out[s] = found
    return out
