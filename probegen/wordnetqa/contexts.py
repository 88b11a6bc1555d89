"""Contexts for WordNetQA questions: example sentences with the concept's word located by span.

A lemma is matched as a whole word through WordNet's morphology ("geese" -> goose; a multiword
lemma with only its head inflected: "took off"). An example where no lemma of its synset is
located, or that shows another form of it outside its span (``probegen.leaks``), is not used; a
concept left without any context is skipped and counted. SemCor sentences may fill in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..contexts import Context, locate, recorded
from ..leaks import Morphology, leaks, tokens_with_spans

if TYPE_CHECKING:
    from ..wordnet_graph import WordNetGraph

__all__ = ["ContextStats", "Morphology", "collect_contexts", "locate", "semcor_contexts", "tokens_with_spans",
           "wordnet_contexts"]


@dataclass
class ContextStats:
    """Counters reported in the manifest: how many concepts and examples were usable."""

    concepts: int = 0
    with_examples: int = 0
    examples: int = 0
    examples_located: int = 0  # located and usable
    examples_leaky: int = 0  # located, but another form of the lemma is visible: not used
    semcor_leaky: int = 0  # SemCor occurrences dropped for the same reason
    with_context: int = 0
    semcor_filled: int = 0
    skipped_no_context: int = 0
    by_source: dict[str, int] = field(default_factory=lambda: {"wordnet": 0, "semcor": 0})

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def wordnet_contexts(
    graph: WordNetGraph, synset: str, morph: Morphology, limit: int, stats: ContextStats | None = None
) -> list[tuple[str, Context]]:
    """Up to ``limit`` (lemma, context) pairs from the synset's leak-free example sentences."""
    out = []
    for i, ex in enumerate(graph.examples(synset)):
        found = locate(ex, graph.lemmas(synset), graph.pos(synset), morph)
        if found:
            lemma, span = found
            if leaks(ex, span, lemma, morph):
                if stats is not None:
                    stats.examples_leaky += 1
                continue
            out.append((lemma, Context(text=ex, char_span=span, source="wordnet", ref=str(i))))
            if len(out) >= limit:
                break
    return out


def semcor_contexts(
    graph: WordNetGraph, synset: str, occurrences: list[Context], morph: Morphology, limit: int,
    stats: ContextStats | None = None,
) -> list[tuple[str, Context]]:
    """Up to ``limit`` (lemma, context) pairs from leak-free SemCor occurrences."""
    lemmas = graph.lemmas(synset)
    out = []
    for ctx in occurrences:
        a, b = ctx.char_span
        if not 0 <= a < b <= len(ctx.text):
            continue
        own = recorded(ctx.lemma, "lemma")
        lemma = next((lem for lem in lemmas if lem.lower() == own.lower()), own)
        if leaks(ctx.text, ctx.char_span, lemma, morph):
            if stats is not None:
                stats.semcor_leaky += 1
            continue
        out.append((lemma, ctx))
        if len(out) >= limit:
            break
    return out


def collect_contexts(
    graph: WordNetGraph, synsets: list[str], wn: Any, limit: int,
    semcor_index: dict[str, list[Context]] | None = None,
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
        found = wordnet_contexts(graph, s, morph, limit=len(exs) or 1, stats=stats)
        stats.examples_located += len(found)
        found = found[:limit]
        if not found and semcor_index is not None and semcor_index.get(s):
            found = semcor_contexts(graph, s, semcor_index[s], morph, limit, stats)
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
