"""The four WordNetQA probe types: which unique questions a concept gets, with which gold answer.

- ``definitions``: one question per context (up to ``max_contexts``); gold = the concept's gloss.
- ``hypernymy`` / ``hyponymy``: gold = an ancestor / descendant at k = min_hops..max_hops hops,
  at most ``max_answers_per_hop`` per hop (seeded); noun answers closer than ``min_answer_depth``
  to the root are skipped.
- ``synonymy``: one question per concept; its stem is the gloss, gold = the concept's lemmas.
- a relation probe (a spec's own, ``cfg.relation``): gold = a relative by that relation, per hop.

ISA questions of one concept use its contexts in turn (answer i takes context i mod n).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np

from ..contexts import Context
from .config import WordNetQAConfig

if TYPE_CHECKING:
    from ..wordnet_graph import WordNetGraph


@dataclass(frozen=True)
class Question:
    """A unique question before distractors: the concept, its context and the gold answer."""

    qid: str
    probe: str
    concept: str
    word: str  # the concept's lemma that the context contains (spaces, not underscores)
    context: Context | None
    gold: str
    hops: int
    chain: tuple[str, ...]


def isa_paths(graph: WordNetGraph, start: str, max_hops: int, up: bool, instances: bool) -> dict[str, tuple[str, ...]]:
    """Every ancestor (``up``) or descendant within ``max_hops`` with one shortest path from ``start``
    (through the alphabetically first neighbours).

    >>> class Toy:  # dog -> canine -> carnivore, and dog -> pet
    ...     up = {"dog": ["pet", "canine"], "canine": ["carnivore"], "pet": [], "carnivore": []}
    ...     def parents(self, n, instances):
    ...         return self.up[n]
    >>> isa_paths(Toy(), "dog", 2, up=True, instances=False)
    {'canine': ('dog', 'canine'), 'carnivore': ('dog', 'canine', 'carnivore'), 'pet': ('dog', 'pet')}
    >>> list(isa_paths(Toy(), "dog", 1, up=True, instances=False))
    ['canine', 'pet']
    """
    step = (lambda n: graph.parents(n, instances)) if up else (lambda n: graph.children(n, instances))
    return _shortest_paths(start, max_hops, step)


def relation_paths(graph: WordNetGraph, start: str, relation: str, max_hops: int) -> dict[str, tuple[str, ...]]:
    """Every relative by ``relation`` (``graph.related``) within ``max_hops``, with one shortest path,
    chosen as in :func:`isa_paths`.

    >>> class Toy:  # snore entails sleep; sleep entails nothing
    ...     rel = {"snore": ["sleep"], "sleep": []}
    ...     def related(self, n, relation):
    ...         return self.rel[n]
    >>> relation_paths(Toy(), "snore", "entailment", 3)
    {'sleep': ('snore', 'sleep')}
    """
    return _shortest_paths(start, max_hops, lambda n: graph.related(n, relation))


def _shortest_paths(start: str, max_hops: int, step: Callable[[str], Iterable[str]]) -> dict[str, tuple[str, ...]]:
    paths: dict[str, tuple[str, ...]] = {}
    frontier: list[tuple[str, ...]] = [(start,)]
    for _ in range(max_hops):
        nxt = []
        for path in frontier:
            for m in step(path[-1]):
                if m != start and m not in paths:
                    paths[m] = path + (m,)
                    nxt.append(paths[m])
        frontier = sorted(nxt, key=lambda p: p[-1])
    return dict(sorted(paths.items()))


def _sample_per_hop(paths: dict[str, tuple[str, ...]], k: int, key: str, seed: int) -> list[str]:
    """At most ``k`` relatives per hop, seeded, returned by hop then name.

    >>> paths = {"a": ("x", "a"), "b": ("x", "b"), "c": ("x", "c"), "d": ("x", "a", "d")}
    >>> picked = _sample_per_hop(paths, 2, "hypernymy/x", 0)
    >>> len(picked), picked[-1], set(picked[:2]) <= {"a", "b", "c"}
    (3, 'd', True)
    >>> picked == _sample_per_hop(paths, 2, "hypernymy/x", 0)   # same seed and key, same answers
    True
    """
    by_hop: dict[int, list[str]] = {}
    for x, p in paths.items():
        by_hop.setdefault(len(p) - 1, []).append(x)
    out = []
    for hop in sorted(by_hop):
        xs = sorted(by_hop[hop])
        if len(xs) > k:
            rng = np.random.default_rng([seed, zlib.crc32(f"answers/{key}/{hop}".encode())])
            xs = sorted(xs[int(i)] for i in rng.choice(len(xs), size=k, replace=False))
        out.extend(xs)
    return out


def questions(
    probe: str, concept: str, contexts: list[tuple[str, Context]], graph: WordNetGraph, cfg: WordNetQAConfig
) -> list[Question]:
    """The unique questions of one probe type about one concept (possibly none; a synonymy question
    has no context: its stem is the gloss, its gold every lemma).

    >>> class Toy:
    ...     def lemmas(self, s):
    ...         return ("dog", "domestic_dog")
    >>> [q] = questions("synonymy", "dog.n.01", [], Toy(), WordNetQAConfig())
    >>> q.qid, q.word, q.context, q.gold
    ('synonymy:dog.n.01', 'dog', None, 'dog.n.01')
    >>> ctx = Context(text="the dog barked", char_span=(4, 7))
    >>> [q.qid for q in questions("definitions", "dog.n.01", [("dog", ctx)], Toy(), WordNetQAConfig())]
    ['definitions:dog.n.01:c0']
    """
    if probe == "definitions":
        return [
            Question(f"definitions:{concept}:c{i}", probe, concept, lemma.replace("_", " "), ctx, concept, 0,
                     (concept,))
            for i, (lemma, ctx) in enumerate(contexts[: cfg.max_contexts])
        ]
    if probe == "synonymy":
        lemma = graph.lemmas(concept)[0]
        return [Question(f"synonymy:{concept}", probe, concept, lemma.replace("_", " "), None, concept, 0, (concept,))]
    up = probe == "hypernymy"
    if cfg.relation:
        paths = relation_paths(graph, concept, cfg.relation, cfg.max_hops)
    else:
        paths = isa_paths(graph, concept, cfg.max_hops, up, cfg.instances)
        if up and graph.pos(concept) == "n":
            paths = {a: p for a, p in paths.items() if graph.depth(a) >= cfg.min_answer_depth}
    if cfg.min_hops > 1:
        paths = {a: p for a, p in paths.items() if len(p) - 1 >= cfg.min_hops}
    answers = _sample_per_hop(paths, cfg.max_answers_per_hop, f"{probe}/{concept}", cfg.seed)
    out = []
    for i, a in enumerate(answers):
        lemma, ctx = contexts[i % min(len(contexts), cfg.max_contexts)]
        out.append(Question(f"{probe}:{concept}:{a}", probe, concept, lemma.replace("_", " "), ctx, a,
                            len(paths[a]) - 1, paths[a]))
    return out


def has_question(concept: str, contexts: list[tuple[str, Context]], graph: WordNetGraph, cfg: WordNetQAConfig) -> bool:
    """Whether ``concept`` gets a question of at least one of ``cfg.probes`` (what ``max_concepts`` counts).

    >>> class Toy:
    ...     def lemmas(self, s): return ("dog",)
    ...     def children(self, s, instances): return []
    ...     def pos(self, s): return "v"
    >>> has_question("dog.n.01", [], Toy(), WordNetQAConfig(probes=("hyponymy",)))
    False
    >>> has_question("dog.n.01", [], Toy(), WordNetQAConfig(probes=("hyponymy", "synonymy")))
    True
    """
    return any(questions(p, concept, contexts, graph, cfg) for p in cfg.probes)


def explain_skipped(probe: str, skipped: dict[str, int], n_concepts: int, cfg: WordNetQAConfig) -> str:
    """One line saying why ``probe`` got no item, from its skip counters.

    >>> explain_skipped("hyponymy", {"concepts_without_question": 3, "too_few_distractors": 27}, 30,
    ...                 WordNetQAConfig())  # doctest: +NORMALIZE_WHITESPACE
    'hyponymy: no item from 30 concepts: 3 without a hyponymy answer within 4 hops; 27 questions without 4 valid
    distractors (the wordnet is too small for unrelated random ones)'
    """
    why = []
    if skipped.get("concepts_without_question"):
        why.append(f"{skipped['concepts_without_question']} without a {probe} answer within {cfg.max_hops} hops")
    for d in cfg.distractors:
        if skipped.get(f"no_{d}_distractor"):
            why.append(f"{skipped[f'no_{d}_distractor']} questions without a valid {d} distractor")
    if skipped.get("too_few_distractors"):
        why.append(f"{skipped['too_few_distractors']} questions without {cfg.n_distractors} valid distractors "
                   "(the wordnet is too small for unrelated random ones)")
    return f"{probe}: no item from {n_concepts} concepts: " + ("; ".join(why) or "none has a usable context")
