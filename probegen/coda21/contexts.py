"""Choosing one SemCor context per group member.

The paper keeps the sentence in which bert-base-uncased gives the masked target the highest log
probability; probegen does the same with any masked LM, and by default with the bundled causal LM:
log P(target | left context) / n_tokens (no masked LM ships offline). Leaky sentences (another
form of the lemma outside the span, ``probegen.leaks``) are dropped before scoring: the criterion
rewards exactly them. Scores land in the persistent score cache.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Sequence, cast

from ..contexts import recorded
from ..core import Unit
from ..leaks import Morphology, default_morphology, leak_rates, leaks, record_leak_rates, surface_lemma
from ..scorers import CAUSAL_KINDS, LM_KINDS
from ..text import split_at_span
from .items import Context, Member

if TYPE_CHECKING:
    from ..runner import Runner
    from .dataset import Coda21Dataset

# With no left context (the target opens the sentence) a causal LM has nothing to condition on;
# a sentence-start cue keeps such contexts comparable instead of unscoreable.
_EMPTY_LEFT = "Sentence:"


def usable_occurrences(occurrences: Sequence[Any], limit: int, morph: Morphology) -> list[Any]:
    """The first ``limit`` occurrences where no form of the target lemma is visible outside its span."""
    out = []
    for occ in occurrences:
        c = occ.context()
        if not leaks(c.text, c.char_span, occ.lemma, morph):
            out.append(occ)
            if len(out) >= limit:
                break
    return out


def _split(c: Context) -> tuple[str, str]:
    """(left text, target) of a context: by tokens for SemCor's, by characters for the rest."""
    if c.tokens is not None:
        left, target, _ = split_at_span(c.tokens, recorded(c.span, "span"))
        return left, target
    a, b = c.char_span
    return c.text[:a].rstrip(), c.text[a:b]


def _token_view(c: Context) -> tuple[list[str], tuple[int, int]]:
    """(tokens, target token span) for a masked LM; a context without tokens is split on spaces.

    >>> _token_view(Context("the dogs barked", (4, 8)))
    (['the', 'dogs', 'barked'], (1, 2))
    """
    if c.tokens is not None:
        return list(c.tokens), cast("tuple[int, int]", tuple(recorded(c.span, "span")))
    a, b = c.char_span
    left = c.text[:a].split()
    return left + [c.text[a:b]] + c.text[b:].split(), (len(left), len(left) + 1)


def causal_queries(contexts: Sequence[Context]) -> tuple[list[str], list[list[str]]]:
    """(left-context query, [target continuation]) per context for a causal LM.

    >>> causal_queries([Context("the dogs barked", (4, 8))])
    (['the'], [[' dogs']])
    """
    queries, conts = [], []
    for c in contexts:
        left, target = _split(c)
        queries.append(left if left.strip() else _EMPTY_LEFT)
        conts.append([target if target.startswith(" ") else " " + target])
    return queries, conts


def context_units(candidates: dict[str, list[Context]], kind: str) -> list[Unit]:
    """One ``best-row`` unit per synset with several candidate contexts, rows in candidate order: a
    causal LM's (left context, [target]), a masked LM's (the words as JSON, ["start:end"]).

    >>> [u.queries for u in context_units({"a.n.01": [Context("the dogs barked", (4, 8))] * 2}, "causal")]
    [('the', 'the')]
    """
    if kind not in LM_KINDS:
        raise ValueError(f"a context scorer must be a causal or masked LM, not {kind!r}")
    units = []
    for name in sorted(candidates):
        ctxs = candidates[name]
        if len(ctxs) < 2:
            continue
        if kind in CAUSAL_KINDS:
            queries, conts = causal_queries(ctxs)
        else:
            views = [_token_view(c) for c in ctxs]
            queries = [json.dumps(list(w), ensure_ascii=False) for w, _ in views]
            conts = [[f"{a}:{b}"] for _, (a, b) in views]
        units.append(Unit(name, tuple(queries), tuple(tuple(c) for c in conts), "best-row"))
    return units


def choose_contexts(
    candidates: dict[str, list[Context]], scorer: Any, progress: bool = False, *, runner: Runner
) -> dict[str, Context]:
    """The best-scoring context of each synset (ties: the earliest), all candidates in one request
    table; a synset with one candidate keeps it unscored."""
    units = context_units(candidates, scorer.kind)
    requests = scorer.span_requests() if scorer.kind == "masked" else scorer
    out = {name: ctxs[0] for name, ctxs in candidates.items() if len(ctxs) == 1}
    for o in runner.evaluate(units, requests, progress=progress):
        out[o.id] = candidates[o.id][int(o.pred[0])]
    return out


def leak_rates_of(ds: Coda21Dataset, morph: Morphology | None = None) -> dict[str, dict[str, Any]]:
    """``leak_rates`` of a CoDA21 dataset's contexts, per POS (a release file records no lemma: there
    the synset's lemma the hidden word is a form of)."""
    morph = morph or default_morphology()
    if ds.manifest.get("source_format") != "coda21-json":
        return record_leak_rates(ds.groups, morph)
    from ..wordnet_graph import load_graph

    graph = load_graph()

    def lemma_of(it: Member) -> str:
        lemmas = graph.lemmas(it.synset) if it.synset in graph else ()
        return surface_lemma(it.context.surface, lemmas, morph) or it.lemma

    return leak_rates([(g.pos, it.context.text, it.context.char_span, lemma_of(it))
                       for g in ds.groups for it in g.items], morph)
