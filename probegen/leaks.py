"""Whether a hidden target word is still visible elsewhere in its context.

One rule, for every generator and ``probegen stats``: a context leaks if, outside the hidden span,
a form of the target lemma (or of the hidden word) occurs as whole words, case-insensitive. A token
is a form of a word when WordNet's morphology, in any part of speech, gives that word as a base form
("took" -> take, "walked" -> walk even for the noun); a multiword lemma counts when its words occur
in sequence, each possibly inflected. Not covered: a split phrasal verb ("gave it up"), synonyms.
"""

from __future__ import annotations

import re
from functools import lru_cache
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Iterable, cast

if TYPE_CHECKING:
    from .items import Item

# words with inner hyphens ("x-ray"); apostrophes split ("dog's" -> dog, s), dots never join
_TOKEN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_POS = ("n", "v", "a", "r")


def tokens_with_spans(text: str) -> list[tuple[str, int, int]]:
    """Lower-cased word tokens with their character spans.

    >>> tokens_with_spans("The dog's X-ray")
    [('the', 0, 3), ('dog', 4, 7), ('s', 8, 9), ('x-ray', 10, 15)]
    """
    return [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


class Morphology:
    """Base forms of a token under a wordnet's morphology, memoised: a
    :class:`~probegen.lexicon.LexicalResource` or an nltk reader."""

    def __init__(self, wn: Any) -> None:  # a LexicalResource or an nltk reader
        from .lexicon.base import LexicalResource

        if isinstance(wn, LexicalResource):
            # a WNDB resource keeps nltk's own morphy
            wn = getattr(wn, "reader", None) or SimpleNamespace(_morphy=wn.base_forms)
        self._fn: Callable[[str, str], Iterable[str]] = getattr(wn, "_morphy", None) or (
            lambda form, pos: [b for b in [wn.morphy(form, pos)] if b]
        )
        self._memo: dict[tuple[str, str], frozenset[str]] = {}

    def bases(self, token: str, pos: str) -> frozenset[str]:
        """The token's base forms in one part of speech, the token itself included."""
        key = (token, pos)
        got = self._memo.get(key)
        if got is None:
            try:
                found = set(self._fn(token, pos))
            except Exception:  # odd tokens (digits, unicode) can trip morphy; the token itself still counts
                found = set()
            got = self._memo[key] = frozenset(found | {token})
        return got

    def all_bases(self, token: str) -> frozenset[str]:
        """The token's base forms in any part of speech ("walked" -> walk even for a noun target)."""
        got = self._memo.get((token, "*"))
        if got is None:
            got = self._memo[(token, "*")] = frozenset().union(*(self.bases(token, p) for p in _POS))
        return got


@lru_cache(maxsize=2)
def default_morphology(wordnet: str | None = None) -> Morphology:
    """A shared Morphology over a wordnet source (``None``: WordNet 3.0), one memo per process."""
    from .lexicon.sources import open_resource

    return Morphology(open_resource(wordnet))


def morphology_for(manifest: dict[str, Any] | None, warn: Callable[[str], object] | None = None) -> Morphology:
    """The morphology of the wordnet a dataset was made from (its manifest's ``data.wordnet.source``,
    else WordNet 3.0); a source that cannot be opened falls back to WordNet 3.0 through ``warn``.

    >>> morphology_for({}) is default_morphology(None)
    True
    """
    from .errors import ProbegenError

    source = ((manifest or {}).get("data") or {}).get("wordnet", {}).get("source")
    if not source or source == "pwn30":
        return default_morphology(None)
    try:
        return default_morphology(source)
    except ProbegenError as e:
        if warn is not None:
            warn(f"leak check with WordNet 3.0's morphology: the dataset's wordnet {source!r} is not available ({e})")
        return default_morphology(None)


def _words(phrase: str) -> tuple[str, ...]:
    """A lemma or surface split like a sentence: "potter's_wheel" -> (potter, s, wheel)."""
    return tuple(t for t, _, _ in tokens_with_spans(phrase.replace("_", " ")))


def target_patterns(surface: str, lemma: str) -> set[tuple[str, ...]]:
    """The word sequences whose forms count as the target: the lemma's and the hidden word's.

    >>> sorted(target_patterns("took off", "take_off"))
    [('take', 'off'), ('took', 'off')]
    """
    return {words for words in (_words(lemma), _words(surface)) if words}


def visible_target_forms(
    text: str, span: tuple[int, int], lemma: str, morph: Morphology | None = None
) -> list[str]:
    """The forms of ``lemma`` ("_" joining words) and of the hidden word visible outside ``span``, in
    text order. Only the target's words are looked for among a token's bases, never the reverse
    ("bees" has the base "be", yet "are" is no form of "bee").

    >>> class WN:  # a stand-in for nltk's reader: two irregular forms
    ...     def _morphy(self, form, pos):
    ...         return {("juries", "n"): ["jury"], ("gave", "v"): ["give"]}.get((form, pos), [])
    >>> m = Morphology(WN())
    >>> visible_target_forms("The jury said the Jury's juries met.", (4, 8), "jury", m)
    ['Jury', 'juries']
    >>> visible_target_forms("They gave up, then give up again.", (5, 12), "give_up", m)
    ['give up']
    >>> visible_target_forms("They gave up and gave it up.", (5, 12), "give_up", m)  # split phrasal verbs: not seen
    []
    """
    morph = morph or default_morphology()
    a, b = span
    toks = tokens_with_spans(text)
    bases = [morph.all_bases(t) for t, _, _ in toks]
    found: set[tuple[int, int]] = set()
    for pattern in target_patterns(text[a:b], lemma):
        n = len(pattern)
        for i in range(len(toks) - n + 1):
            if pattern[0] in bases[i] and all(w in bases[i + j] for j, w in enumerate(pattern[1:], 1)):
                x, y = toks[i][1], toks[i + n - 1][2]
                if y <= a or x >= b:  # a window overlapping the span is the target itself
                    found.add((x, y))
    return [text[x:y] for x, y in sorted(found)]


def leaks(text: str, span: tuple[int, int], lemma: str, morph: Morphology | None = None) -> bool:
    """True if any form of the target is visible outside the hidden span (see ``visible_target_forms``)."""
    return bool(visible_target_forms(text, span, lemma, morph))


def leak_rates(rows: Iterable[tuple[str, str, tuple[int, int], str]],
               morph: Morphology | None = None) -> dict[str, dict[str, Any]]:
    """Per POS: contexts, how many leak, and the rate, from (pos, text, span, lemma) rows (repeats count once).

    >>> class WN:
    ...     def _morphy(self, form, pos):
    ...         return []
    >>> rows = [("n", "a dog bit a dog", (2, 5), "dog"), ("n", "a dog barked", (2, 5), "dog")]
    >>> leak_rates(rows, Morphology(WN()))
    {'n': {'contexts': 2, 'leaky': 1, 'rate': 0.5}}
    """
    morph = morph or default_morphology()
    out: dict[str, dict[str, Any]] = {}
    for pos, text, span, lemma in dict.fromkeys((p, t, tuple(s), lem) for p, t, s, lem in rows):
        c = out.setdefault(pos, {"contexts": 0, "leaky": 0, "rate": 0.0})
        c["contexts"] += 1
        c["leaky"] += leaks(text, cast("tuple[int, int]", span), lemma, morph)
    for c in out.values():
        c["rate"] = c["leaky"] / c["contexts"] if c["contexts"] else 0.0
    return out


def surface_lemma(surface: str, lemmas: Iterable[str], morph: Morphology | None = None) -> str | None:
    """The first of ``lemmas`` that the hidden word ``surface`` is a form of, else None (for datasets
    that record no lemma).

    >>> class WN:
    ...     def _morphy(self, form, pos):
    ...         return {("buffs", "n"): ["buff"]}.get((form, pos), [])
    >>> surface_lemma("buffs", ["fan", "buff", "devotee"], Morphology(WN()))
    'buff'
    """
    morph = morph or default_morphology()
    surf = _words(surface)
    for lemma in lemmas:
        words = _words(lemma)
        if len(words) == len(surf) and all(w in morph.all_bases(t) for t, w in zip(surf, words)):
            return lemma
    return None


def record_leak_rates(records: Iterable[Item], morph: Morphology | None = None) -> dict[str, dict[str, Any]]:
    """``leak_rates`` of every target any kind's records hide (:meth:`probegen.items.Item.targets`).

    >>> from probegen.contexts import Context
    >>> from probegen.wordincontext.items import WicItem
    >>> class WN:
    ...     def _morphy(self, form, pos):
    ...         return []
    >>> it = WicItem("p", "dog", "n", Context("a dog bit a dog", (2, 5)), Context("a dog", (2, 5)), True)
    >>> record_leak_rates([it], Morphology(WN()))
    {'n': {'contexts': 2, 'leaky': 1, 'rate': 0.5}}
    """
    return leak_rates(((r.pos, c.text, c.char_span, lemma) for r in records for c, lemma in r.targets()), morph)


def format_leak_rates(rates: dict[str, dict[str, Any]]) -> str:
    """One line for ``probegen stats``.

    >>> format_leak_rates({"n": {"contexts": 713, "leaky": 0, "rate": 0.0},
    ...                    "v": {"contexts": 8, "leaky": 1, "rate": 0.125}})
    'visible target forms outside the hidden span: n 0/713 (0.0%), v 1/8 (12.5%)'
    """
    parts = [f"{pos} {r['leaky']}/{r['contexts']} ({100 * r['rate']:.1f}%)" for pos, r in sorted(rates.items())]
    return "visible target forms outside the hidden span: " + (", ".join(parts) or "no contexts")
