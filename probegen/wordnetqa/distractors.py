"""Graded distractors for WordNetQA questions, and the rule that none is also a correct answer.

Types, each with its distance from the concept ``c``: ``random`` (any synset of its POS),
``sister`` (siblings at distance 1 and their descendants at 2, 3, ...), ``isa_down`` / ``isa_up``
(descendants / ancestors at 1..max_hops: hypernymy takes descendants, hyponymy ancestors,
definitions and synonymy both).

A candidate is rejected (:meth:`Relations.valid`) if it is the concept or the gold, shares a lemma
with either, renders to the gold's text, or is another valid answer: any ancestor (hypernymy) or
descendant (hyponymy) of ``c``, a synset with the same gloss (definitions), or for a relation probe
any relative of ``c`` or of its ancestors by that relation (relations are inherited), and ``c``'s
ancestors themselves (troponymy implies entailment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    from ..wordnet_graph import WordNetGraph


def norm_lemma(lemma: str) -> str:
    """Case- and separator-insensitive lemma form: ``Domestic_Dog`` -> ``domestic dog``."""
    return lemma.replace("_", " ").replace("-", " ").lower()


class Relations:
    """Memoised relations over the WordNet graph that validity checks need many times."""

    def __init__(self, graph: WordNetGraph, instances: bool = False, relation: str = "") -> None:
        self.graph = graph
        self.instances = instances
        self.relation = relation  # a relation probe's relation ("" for the four WordNetQA probes)
        self._rel: dict[str, frozenset[str]] = {}
        self._inherited: dict[str, frozenset[str]] = {}
        self._anc: dict[str, frozenset[str]] = {}
        self._lem: dict[str, frozenset[str]] = {}
        self._pool: dict[str, list[str]] = {}
        self._buckets: dict[str, dict[tuple[int, bool], list[str]]] = {}

    def lemma_set(self, s: str) -> frozenset[str]:
        got = self._lem.get(s)
        if got is None:
            got = self._lem[s] = frozenset(norm_lemma(x) for x in self.graph.lemmas(s))
        return got

    def all_ancestors(self, s: str) -> frozenset[str]:
        """Every ancestor at any distance, following instance links too (for validity only)."""
        got = self._anc.get(s)
        if got is not None:
            return got
        # breadth-first with a seen set: WordNet 3.0's verb hierarchy has hypernym cycles
        seen: set[str] = set()
        frontier = [s]
        while frontier:
            nxt = []
            for n in frontier:
                for p in self.graph.parents(n, True):
                    if p not in seen:
                        seen.add(p)
                        nxt.append(p)
            frontier = nxt
        seen.discard(s)  # a concept on a cycle is not its own ancestor for our purposes
        self._anc[s] = frozenset(seen)
        return self._anc[s]

    def relatives(self, s: str) -> frozenset[str]:
        """Every synset reachable from ``s`` by ``self.relation`` in one or more steps."""
        got = self._rel.get(s)
        if got is None:
            seen: set[str] = set()
            frontier = [s]
            while frontier:
                frontier = [m for n in frontier for m in self.graph.related(n, self.relation) if m not in seen]
                seen.update(frontier)
            seen.discard(s)
            got = self._rel[s] = frozenset(seen)
        return got

    def inherited(self, s: str) -> frozenset[str]:
        """Relatives of ``s`` and of its ancestors, and the ancestors: no relation probe's distractor."""
        got = self._inherited.get(s)
        if got is None:
            anc = self.all_ancestors(s)
            got = self._inherited[s] = frozenset(anc).union(self.relatives(s), *(self.relatives(a) for a in anc))
        return got

    def pool(self, pos: str) -> list[str]:
        """Every synset of a part of speech, in WordNet file order (the random pool)."""
        if pos not in self._pool:
            self._pool[pos] = self.graph.synsets(pos)
        return self._pool[pos]

    def generality(self, s: str) -> tuple[int, bool]:
        """(depth capped at 12, has hyponyms): how general a concept is."""
        return min(self.graph.depth(s), 12), bool(self.graph.children(s, self.instances))

    def matched_pool(self, gold: str, min_size: int = 200) -> list[str]:
        """Random-distractor pool of the gold's depth and leaf/inner status (the whole pool below
        ``min_size``): else random leaves give a general ISA gold away to a choice-only classifier."""
        pos = self.graph.pos(gold)
        if pos not in self._buckets:
            b: dict[tuple[int, bool], list[str]] = {}
            for x in self.pool(pos):
                b.setdefault(self.generality(x), []).append(x)
            self._buckets[pos] = b
        got = self._buckets[pos].get(self.generality(gold), [])
        return got if len(got) >= min_size else self.pool(pos)

    # ---- typed candidates ---------------------------------------------------------------------
    def candidates(self, probe: str, concept: str, dtype: str, max_hops: int,
                   sister_depth: int) -> dict[str, tuple[str, int]]:
        """``{synset: (type, distance)}`` of one distractor family (``sister`` or ``isa``)."""
        g = self.graph
        if dtype == "sister":
            return {x: ("sister", lvl + 1) for x, lvl in g.sister_family(concept, sister_depth).items()}
        if dtype != "isa":
            raise ValueError(f"no candidate family {dtype!r}")
        out: dict[str, tuple[str, int]] = {}
        if probe != "hyponymy":
            out.update((x, ("isa_down", d)) for x, d in g.descendants(concept, max_hops, self.instances).items())
        if probe != "hypernymy":
            out.update((x, ("isa_up", d)) for x, d in g.ancestors(concept, max_hops, self.instances).items())
        return dict(sorted(out.items()))

    # ---- the validity rule ----------------------------------------------------------------------
    def valid(self, probe: str, concept: str, gold: str, x: str, render: Callable[[str], str]) -> bool:
        """Whether ``x`` may be a distractor of a ``probe`` question about ``concept`` with answer ``gold``
        (``render``: synset -> the probe's choice text)."""
        if x == concept or x == gold:
            return False
        lx = self.lemma_set(x)
        if lx & self.lemma_set(gold) or lx & self.lemma_set(concept):
            return False
        if probe == "hypernymy" and x in self.all_ancestors(concept):
            return False
        if probe == "hyponymy" and concept in self.all_ancestors(x):
            return False
        if (self.relation and probe not in ("definitions", "hypernymy", "hyponymy", "synonymy")
                and x in self.inherited(concept)):
            return False
        if probe == "definitions" and _same_text(self.graph.definition(x), self.graph.definition(gold)):
            return False
        return not _same_text(render(x), render(gold))


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def sample(
    rel: Relations,
    probe: str,
    concept: str,
    gold: str,
    dtype: str,
    typed: dict[str, tuple[str, int]],
    related: set[str] | frozenset[str],
    n: int,
    rng: np.random.Generator,
    render: Callable[[str], str],
    max_random_tries: int = 2000,
) -> list[tuple[str, str, int | None]]:
    """``n`` distractors ``(synset, type, distance)`` for one item of perturbation ``dtype``: the family's
    valid members first (seeded), the rest random (never in ``related``); fewer only if the pool runs out."""
    chosen: list[tuple[str, str, int | None]] = []
    texts = {_key(render(gold))}

    def take(x: str, t: str, d: int | None) -> None:
        k = _key(render(x))
        if k not in texts:
            texts.add(k)
            chosen.append((x, t, d))

    if dtype != "random":
        names = list(typed)
        for i in rng.permutation(len(names)):
            if len(chosen) >= n:
                break
            x = names[int(i)]
            if rel.valid(probe, concept, gold, x, render):
                take(x, *typed[x])
    pool = rel.matched_pool(gold)
    taken = {c[0] for c in chosen}
    for _ in range(max_random_tries):
        if len(chosen) >= n:
            break
        x = pool[int(rng.integers(len(pool)))]
        if x not in taken and x not in related and rel.valid(probe, concept, gold, x, render):
            taken.add(x)
            take(x, "random", None)
    return chosen


def _key(text: str) -> str:
    return " ".join(text.lower().split())

