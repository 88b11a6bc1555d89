"""Choosing one SemCor context per group member.

The paper keeps, among a synset's SemCor sentences, the one in which bert-base-uncased gives the
masked target word the highest log probability (averaged over word pieces). probegen does the
same with any masked LM. No masked LM ships offline, so the default context scorer is the
bundled causal LM with the causal analogue of that criterion: the mean log probability of the
target's tokens given the sentence to its left, log P(target | left context) / n_tokens. (A
causal LM cannot look right of the word; the left context is what makes the word predictable.)

Only usable contexts are scored: a SemCor sentence that shows another form of the target lemma
outside the hidden span (``probegen.leaks``) is dropped before scoring. The criterion above
rewards exactly those sentences (a word is predictable where it already appeared), so filtering
after scoring would not be enough.

Scores go through the shared scorer, so they land in the persistent score cache: a second run,
or another variant sharing synsets, recomputes nothing.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..leaks import Morphology, leaks
from ..text import split_at_span
from .items import Context

# With no left context (the target opens the sentence) a causal LM has nothing to condition on;
# a sentence-start cue keeps such contexts comparable instead of unscoreable.
_EMPTY_LEFT = "Sentence:"


def usable_occurrences(occurrences: Sequence, limit: int, morph: Morphology) -> list:
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
        left, target, _ = split_at_span(c.tokens, c.span)
        return left, target
    a, b = c.char_span
    return c.text[:a].rstrip(), c.text[a:b]


def _token_view(c: Context) -> tuple[list[str], tuple[int, int]]:
    """(tokens, target token span) for a masked LM; a context without tokens is split on spaces.

    >>> _token_view(Context("the dogs barked", (4, 8)))
    (['the', 'dogs', 'barked'], (1, 2))
    """
    if c.tokens is not None:
        return list(c.tokens), tuple(c.span)
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


def score_contexts(contexts: Sequence[Context], scorer, progress: bool = False) -> np.ndarray:
    """How predictable the target is in each context under ``scorer`` (higher = clearer)."""
    if not contexts:
        return np.zeros(0)
    if scorer.kind == "masked":
        return np.array([scorer.span_logprob(*_token_view(c)) for c in contexts])
    if scorer.kind != "causal":
        raise ValueError(f"a context scorer must be a causal or masked LM, not {scorer.kind!r}")
    queries, conts = causal_queries(contexts)
    return np.array([s[0] for s in scorer.score(queries, conts, progress=progress)])


def choose_contexts(
    candidates: dict[str, list[Context]], scorer, progress: bool = False
) -> dict[str, Context]:
    """The best-scoring context of each synset (ties go to the earliest in corpus or example order).

    Synsets with a single candidate context keep it without scoring.
    """
    flat: list[tuple[str, Context]] = [
        (name, c) for name in sorted(candidates) for c in candidates[name] if len(candidates[name]) > 1
    ]
    scores = score_contexts([c for _, c in flat], scorer, progress=progress)
    best: dict[str, tuple[float, Context]] = {}
    for (name, c), s in zip(flat, scores):
        if name not in best or s > best[name][0]:
            best[name] = (float(s), c)
    out = {name: ctxs[0] for name, ctxs in candidates.items() if len(ctxs) == 1}
    out.update({name: c for name, (_, c) in best.items()})
    return out
