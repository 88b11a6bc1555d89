"""Choosing one SemCor context per group member.

The paper keeps, among a synset's SemCor sentences, the one in which bert-base-uncased gives the
masked target word the highest log probability (averaged over word pieces). probegen does the
same with any masked LM. No masked LM ships offline, so the default context scorer is the
bundled causal LM with the causal analogue of that criterion: the mean log probability of the
target's tokens given the sentence to its left, log P(target | left context) / n_tokens. (A
causal LM cannot look right of the word; the left context is what makes the word predictable.)

Only usable contexts are scored: a SemCor sentence that shows another form of the target lemma
outside the hidden span (``probegen.leaks``) is dropped before scoring (it still counts towards
the synset's eligibility, as the paper counts SemCor occurrences). The criterion above
rewards exactly those sentences (a word is predictable where it already appeared), so filtering
after scoring would not be enough.

Scores go through the shared scorer, so they land in the persistent score cache: a second run,
or another variant sharing synsets, recomputes nothing.
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
    """The first ``limit`` occurrences (SemCor's ``probegen.semcor.Occurrence`` in corpus order, or
    a synset's examples, ``probegen.contexts.ExampleOccurrence``) where no form of the target
    lemma is visible outside the target's span."""
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
    """One ``best-row`` unit per synset with several candidate contexts, rows in candidate order.

    A causal LM's row is (left context, [target continuation]); a masked LM's is (the words as
    JSON, ["start:end"]): the requests of :meth:`MaskedScorer.span_requests`.

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
    """The best-scoring context of each synset (ties go to the earliest in corpus or example order).

    Synsets with a single candidate context keep it without scoring. All candidates are scored
    as one request table through the runner (sharded under ``torchrun``), each synset decided
    by the core's ``best-row`` rule.
    """
    units = context_units(candidates, scorer.kind)
    requests = scorer.span_requests() if scorer.kind == "masked" else scorer
    out = {name: ctxs[0] for name, ctxs in candidates.items() if len(ctxs) == 1}
    for o in runner.evaluate(units, requests, progress=progress):
        out[o.id] = candidates[o.id][int(o.pred[0])]
    return out


def leak_rates_of(ds: Coda21Dataset, morph: Morphology | None = None) -> dict[str, dict[str, Any]]:
    """``leak_rates`` of a CoDA21 dataset's contexts, per POS, with each item's recorded lemma.

    A file in the original release's schema records no lemma (import guesses the synset
    name's head, "fan" for "buffs" of fan.n.03), so there the lemma is the synset's lemma the
    hidden word is a form of.
    """
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
