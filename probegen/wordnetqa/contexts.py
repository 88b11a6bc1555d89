"""Contexts for WordNetQA questions: example sentences with the concept's word located by span.

WordNet example sentences contain inflected forms ("the dogs barked"), so a lemma is matched
as a whole word through WordNet's own morphology (``morphy``: "dogs" -> dog, "geese" -> goose,
"took" -> take). Multiword lemmas match their words in sequence, with only the head inflected
(the last word of a noun, the first of a verb: "took off"). An example where no lemma of its
synset can be located is not used; a concept left without any context is skipped and counted.
Optionally SemCor sentences (sense-tagged, so the target's span is known) fill in for concepts
whose WordNet examples gave none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .items import Context

# words with inner hyphens ("x-ray"); apostrophes split ("dog's" -> dog, s), dots never join
_TOKEN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


@dataclass
class ContextStats:
    """Counters reported in the manifest: how many concepts and examples were usable."""

    concepts: int = 0
    with_examples: int = 0
    examples: int = 0
    examples_located: int = 0
    with_context: int = 0
    semcor_filled: int = 0
    skipped_no_context: int = 0
    by_source: dict = field(default_factory=lambda: {"wordnet": 0, "semcor": 0})

    def to_json(self) -> dict:
        return dict(self.__dict__)


class Morphology:
    """Base forms of a token under WordNet's morphology, memoised (``wn._morphy`` of nltk)."""

    def __init__(self, wn) -> None:
        self._fn: Callable[[str, str], Iterable[str]] = getattr(wn, "_morphy", None) or (
            lambda form, pos: [b for b in [wn.morphy(form, pos)] if b]
        )
        self._memo: dict[tuple[str, str], frozenset[str]] = {}

    def bases(self, token: str, pos: str) -> frozenset[str]:
        key = (token, pos)
        got = self._memo.get(key)
        if got is None:
            try:
                found = set(self._fn(token, pos))
            except Exception:  # odd tokens (digits, unicode) can trip morphy; the token itself still counts
                found = set()
            got = self._memo[key] = frozenset(found | {token})
        return got


def tokens_with_spans(text: str) -> list[tuple[str, int, int]]:
    """Lower-cased word tokens with their character spans.

    >>> tokens_with_spans("The dog's X-ray")
    [('the', 0, 3), ('dog', 4, 7), ('s', 8, 9), ('x-ray', 10, 15)]
    """
    return [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def locate(text: str, lemmas: Iterable[str], pos: str, morph: Morphology) -> tuple[str, tuple[int, int]] | None:
    """(lemma, char span) of the first of ``lemmas`` found as whole words in ``text``, else None.

    Lemmas are tried in WordNet order; within a lemma the first occurrence wins. The head word
    (last of a noun, first of a verb) may be inflected; the other words must match exactly.
    """
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


def wordnet_contexts(graph, synset: str, morph: Morphology, limit: int) -> list[tuple[str, Context]]:
    """Up to ``limit`` (lemma, context) pairs from the synset's example sentences, in WordNet order."""
    out = []
    for i, ex in enumerate(graph.examples(synset)):
        found = locate(ex, graph.lemmas(synset), graph.pos(synset), morph)
        if found:
            lemma, span = found
            out.append((lemma, Context(ex, span, "wordnet", str(i))))
            if len(out) >= limit:
                break
    return out


def semcor_contexts(graph, synset: str, occurrences, morph: Morphology, limit: int) -> list[tuple[str, Context]]:
    """Up to ``limit`` (lemma, context) pairs from SemCor occurrences (token spans are gold)."""
    from ..text import detokenize

    out = []
    for occ in occurrences[:limit]:
        text, spans = detokenize(occ.tokens)
        a, b = spans[occ.span[0]][0], spans[occ.span[1] - 1][1]
        if not 0 <= a < b <= len(text):
            continue
        surface = text[a:b]
        found = locate(surface, graph.lemmas(synset), graph.pos(synset), morph)
        lemma = found[0] if found else graph.lemmas(synset)[0]
        out.append((lemma, Context(text, (a, b), "semcor", occ.sent_id)))
    return out


def collect_contexts(
    graph, synsets: list[str], wn, limit: int, semcor_index: dict | None = None
) -> tuple[dict[str, list[tuple[str, Context]]], ContextStats]:
    """Contexts for every synset that has one, and the counters of what was skipped."""
    morph = Morphology(wn)
    stats = ContextStats()
    out: dict[str, list[tuple[str, Context]]] = {}
    for s in synsets:
        stats.concepts += 1
        exs = graph.examples(s)
        if exs:
            stats.with_examples += 1
            stats.examples += len(exs)
        found = wordnet_contexts(graph, s, morph, limit=len(exs) or 1)
        stats.examples_located += len(found)
        found = found[:limit]
        if not found and semcor_index is not None and semcor_index.get(s):
            found = semcor_contexts(graph, s, semcor_index[s], morph, limit)
            if found:
                stats.semcor_filled += 1
        if not found:
            stats.skipped_no_context += 1
            continue
        stats.with_context += 1
        for _, c in found:
            stats.by_source[c.source] += 1
        out[s] = found
    return out, stats
