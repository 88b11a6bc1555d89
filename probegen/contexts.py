"""The one context model: a sentence with the target located by span, never by string search
("ice" would also hit "mice"). Every probe kind, SemCor's index and the synsets' examples use it.

A context from SemCor is held as tokens (the index holds ~217k), its text and character span
rendered on first use; any other is held as text, its ``span`` then its ``char_span``. The kinds'
on-disk layouts (``schema=``) predate this module and must not change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Literal, TypeVar, cast

from .errors import DatasetError
from .text import detokenize, replace_char_span

if TYPE_CHECKING:
    from .leaks import Morphology
    from .wordnet_graph import WordNetGraph

__all__ = ["Context", "ExampleOccurrence", "Schema", "example_occurrences", "locate"]

# "with-source": every context names its source and ref (multiple choice); "with-tokens": SemCor
# tokens, span and sentence id when known (CoDA21)
Schema = Literal["with-tokens", "with-source"]

_set = object.__setattr__  # frozen: fields are set once, by the constructors below
_new = object.__new__


def _shown(value: Any) -> str:
    """A bad value quoted in an error message: short, on one line."""
    return " ".join(str(value)[:40].split())


@dataclass(frozen=True, slots=True)
class Context:
    """A sentence with the target located by character span (and by token span if known).

    ``source``: ``semcor`` (``ref`` = the sentence id, e.g. ``brown1/br-a01#1``), ``wordnet`` (``ref`` =
    the example's index), ``release`` or ``user``. ``lemma`` and ``synset``: the target's, where the
    source records them. ``span``: in tokens when it has ``tokens``, else ``char_span``.

    >>> c = Context.from_tokens(("The", "mice", "saw", "ice", "."), (3, 4), ref="br-x#1")
    >>> c.text, c.char_span, c.span, c.surface, c.source
    ('The mice saw ice.', (13, 16), (3, 4), 'ice', 'semcor')
    >>> c.replaced("bkatuhla")
    'The mice saw bkatuhla.'
    >>> t = Context("the mice saw ice", (13, 16))
    >>> t.span, t.word
    ((13, 16), 'ice')
    """

    text: str
    char_span: tuple[int, int]
    tokens: tuple[str, ...] | None = None
    span: tuple[int, int] | None = None
    source: str = "user"
    ref: str | None = None
    lemma: str | None = None
    synset: str | None = None

    def __post_init__(self) -> None:
        if self.span is None and self.tokens is None:  # held as text: its units are characters
            _set(self, "span", self.char_span)

    def __getattr__(self, name: str) -> Any:
        # reached only for a slot not yet set: the text of a context held as tokens, rendered once
        if name in ("text", "char_span"):
            tokens = object.__getattribute__(self, "tokens")  # unset (mid-unpickling): AttributeError
            a, b = cast("tuple[int, int]", self.span)  # set for a context held as tokens
            text, spans = detokenize(tokens)
            char_span = (spans[a][0], spans[b - 1][1])  # both or neither are set
            _set(self, "text", text)
            _set(self, "char_span", char_span)
            return object.__getattribute__(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def from_tokens(
        cls, tokens: tuple[str, ...], span: tuple[int, int], ref: str | None = None,
        source: str = "semcor", lemma: str | None = None, synset: str | None = None,
    ) -> "Context":
        """A context held as (SemCor) tokens; its text and character span are rendered on first use."""
        c = _new(cls)  # no __init__: the text is not rendered now (SemCor's index holds ~217k)
        _set(c, "tokens", tuple(tokens))  # a tuple is kept as is: sentences share theirs
        _set(c, "span", tuple(span))
        _set(c, "source", source)
        _set(c, "ref", ref)
        _set(c, "lemma", lemma)
        _set(c, "synset", synset)
        return c

    @classmethod
    def from_text(cls, text: str, word: str, source: str = "user") -> "Context":
        """Locate ``word`` as a whole word in ``text``; case-exact first, then ignoring case.

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

    @property
    def surface(self) -> str:
        """The target as written in the sentence (e.g. "buffs", not the lemma "buff")."""
        a, b = self.char_span
        return self.text[a:b]

    # the CoDA21 and word-in-context name for it, used across the kinds, the study views and the diagnostics
    word = surface

    @property
    def sent_id(self) -> str | None:
        """The SemCor sentence id, or None for a sentence from elsewhere."""
        return self.ref if self.source == "semcor" else None

    def context(self) -> "Context":
        """Itself (an occurrence is a context; callers of ``occurrence.context()`` still work)."""
        return self

    def replaced(self, replacement: str | None) -> str:
        """The sentence with the target span replaced (``None``: removed, spaces tidied).

        >>> Context("the mice saw ice", (13, 16)).replaced("bkatuhla")
        'the mice saw bkatuhla'
        >>> Context("the ice melted", (4, 7)).replaced(None)
        'the melted'
        """
        return replace_char_span(self.text, self.char_span, replacement)

    def as_text(self) -> "Context":
        """This context held as text (``span`` becomes the character span), the rest kept.

        >>> Context.from_tokens(("The", "ice", "."), (1, 2)).as_text().span
        (4, 7)
        """
        if self.tokens is None:
            return self
        return replace(self, tokens=None, span=None)

    def masked(self, replacement: str) -> "Context":
        """The context (as text) with the target replaced by ``replacement``, the span now on it.

        >>> Context("the mice saw ice", (13, 16)).masked("[MASK]").text
        'the mice saw [MASK]'
        >>> Context("the mice saw ice", (13, 16)).masked("[MASK]").span
        (13, 19)
        """
        a, _ = self.char_span
        return replace(self, text=self.replaced(replacement), char_span=(a, a + len(replacement)), tokens=None,
                       span=None)

    def alone(self) -> "Context":
        """The target word without its context.

        >>> Context("the mice saw ice", (13, 16)).alone()  # doctest: +NORMALIZE_WHITESPACE
        Context(text='ice', char_span=(0, 3), tokens=None, span=(0, 3), source='user', ref=None, lemma=None,
                synset=None)
        """
        w = self.surface
        return Context(w, (0, len(w)))

    def to_json(self, schema: Schema) -> dict[str, Any]:
        """The context in ``schema``'s layout.

        >>> c = Context("the ice melted", (4, 7), source="wordnet", ref="0")
        >>> c.to_json("with-source")
        {'text': 'the ice melted', 'char_span': [4, 7], 'source': 'wordnet', 'ref': '0'}
        >>> Context("the ice melted", (4, 7)).to_json("with-tokens")
        {'text': 'the ice melted', 'char_span': [4, 7]}
        """
        d: dict[str, Any] = {"text": self.text, "char_span": list(self.char_span)}
        if schema == "with-source":
            d["source"] = self.source
            d["ref"] = self.ref if self.ref is not None else ""
        elif schema == "with-tokens":
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

        >>> Context.from_json({"text": "a dog", "char_span": [2, 5], "sent_id": "br#1"}, "with-tokens").source
        'semcor'
        >>> Context.from_json({"text": "a dog", "char_span": [2, 9]}, "with-source")
        Traceback (most recent call last):
        probegen.errors.DatasetError: char_span [2, 9] outside context 'a dog'
        """
        text = d["text"]
        a, b = _checked_span(text, d["char_span"])
        if schema == "with-source":
            return cls(text=text, char_span=(a, b), source=d.get("source", "wordnet"), ref=str(d.get("ref", "")))
        if schema == "with-tokens":
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


def _checked_span(text: Any, sp: Any) -> tuple[int, int]:
    """``sp`` as the (start, end) target span of ``text``, else a DatasetError saying what is wrong."""
    if not isinstance(text, str):
        raise DatasetError("context text must be a string")
    if not (isinstance(sp, list) and len(sp) == 2 and all(type(x) is int for x in sp)):
        raise DatasetError(f"char_span must be [start, end] character offsets (integers), got {_shown(sp)}")
    a, b = sp
    if not 0 <= a < b <= len(text):
        raise DatasetError(f"char_span {[a, b]} outside context {text[:60]!r}" if a < b
                           else f"char_span {[a, b]} is empty or reversed")
    if not text[a:b].strip():
        raise DatasetError(f"char_span {[a, b]} covers only white space in context {text[:60]!r}")
    return a, b


T = TypeVar("T")


def recorded(value: T | None, what: str) -> T:
    """``value``, a part of a context its source always records (a SemCor occurrence's); ValueError if None.

    >>> recorded("bank.n.01", "synset")
    'bank.n.01'
    """
    if value is None:
        raise ValueError(f"this context has no {what} (a SemCor occurrence records it)")
    return value


def locate(text: str, lemmas: Iterable[str], pos: str, morph: Morphology) -> tuple[str, tuple[int, int]] | None:
    """(lemma, char span) of the first of ``lemmas`` (in order) found as whole words in ``text``, else None.
    The head word (last of a noun, first of a verb) may be inflected (``morph``); the others match exactly.

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


def ExampleOccurrence(synset: str, index: int, text: str, char_span: tuple[int, int],  # noqa: N802
                      lemma: str) -> Context:
    """A synset's own example sentence as a Context (``source="wordnet"``, ``ref`` = the example's index).

    >>> occ = ExampleOccurrence("dog.n.01", 0, "the dogs barked", (4, 8), "dog")
    >>> occ.to_json("with-source"), occ.synset, occ.sent_id
    ({'text': 'the dogs barked', 'char_span': [4, 8], 'source': 'wordnet', 'ref': '0'}, 'dog.n.01', None)
    """
    return Context(text=text, char_span=char_span, source="wordnet", ref=str(index), lemma=lemma, synset=synset)


def example_occurrences(graph: WordNetGraph, synsets: Iterable[str], morph: Morphology) -> dict[str, list[Context]]:
    """synset -> its examples in which one of its lemmas is found (:func:`locate`), as contexts; synsets
    with none are left out. Leaks elsewhere in the sentence are the caller's to check."""
    out: dict[str, list[Context]] = {}
    for s in synsets:
        found = []
        for i, ex in enumerate(graph.examples(s)):
            hit = locate(ex, graph.lemmas(s), graph.pos(s), morph)
            if hit:
                found.append(ExampleOccurrence(s, i, ex, hit[1], hit[0]))
        if found:
            out[s] = found
    return out
