"""Forming CoDA21 groups: sets of 5..10 mutually dissimilar co-hyponyms (the paper's procedure).

Over the parent synsets in a fixed order, candidates are its unused children (hard) or
grandchildren (easy) with contexts; their definition embeddings are clustered with complete
linkage (a cluster's height is its largest within-cluster cosine similarity). The largest valid
cluster (``k_min..k_max`` members, height <= ``max_similarity``) is taken, and again, until none is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

from ..wordnet_graph import WordNetGraph
from .config import Coda21Config


@dataclass(frozen=True)
class SynsetGroup:
    """One group before contexts are chosen: the shared ancestor and its member synsets."""

    ancestor: str
    relation: str  # "parent" | "grandparent" | ... (Coda21Config.relation)
    pos: str
    members: tuple[str, ...]


def best_cluster(vectors: np.ndarray, k_min: int, k_max: int, max_similarity: float) -> list[int] | None:
    """Indices of the largest complete-link cluster with k_min..k_max members and no pair more similar
    than ``max_similarity`` (None if none); ties: the lower maximum similarity, then the first formed.

    >>> v = np.eye(6)  # six orthogonal definitions: all similarities 0
    >>> best_cluster(v, 5, 10, 0.8)
    [0, 1, 2, 3, 4, 5]
    """
    n = len(vectors)
    if n < k_min:
        return None
    sim = np.clip(vectors @ vectors.T, -1.0, 1.0)
    # linkage needs non-negative "distances": shift similarities by +1 (monotone, so the
    # complete-link tree is unchanged) and compare heights with max_similarity + 1
    dist = 1.0 + sim
    np.fill_diagonal(dist, 0.0)
    dist = (dist + dist.T) / 2  # exact symmetry for squareform
    z = linkage(squareform(dist, checks=False), method="complete")
    members: list[list[int]] = [[i] for i in range(n)]
    best: tuple[int, float, int] | None = None  # (-size, height, order)
    for step, (a, b, height, count) in enumerate(z):
        merged = members[int(a)] + members[int(b)]
        members.append(merged)
        if k_min <= count <= k_max and height <= max_similarity + 1.0 + 1e-9:
            key = (-int(count), float(height), step)
            if best is None or key < best:
                best = key
    if best is None:
        return None
    return sorted(members[n + best[2]])


def candidates_for(graph: WordNetGraph, ancestor: str, easy: bool, relation: str = "hyponym",
                   hops: int = 0) -> list[str]:
    """The ancestor's children (hard) or grandchildren (easy), sorted by name; with ``relation`` and
    ``hops`` set, the synsets reached by a walk of ``hops`` steps of ``relation``."""
    hops = hops or (2 if easy else 1)
    if relation == "hyponym" and hops <= 2:  # the paper's variants, exactly as before
        return graph.grandchildren(ancestor) if hops == 2 else graph.children(ancestor)
    step = graph.children if relation == "hyponym" else (lambda n: graph.related(n, relation))
    frontier = {ancestor}
    for _ in range(hops):
        frontier = {m for n in sorted(frontier) for m in step(n)}
    frontier.discard(ancestor)
    return sorted(frontier)


def form_groups(
    graph: WordNetGraph,
    pool: set[str],
    pos: str,
    cfg: Coda21Config,
    vectors: Callable[[list[str]], np.ndarray],
    ancestors: Iterable[str] | None = None,
    progress: bool = False,
) -> list[SynsetGroup]:
    """All groups of one part of speech from the eligible ``pool`` (a synset in at most one group)."""
    if cfg.concepts is not None:  # a spec's filter on the members (lexicographer file, depth)
        pool = {s for s in pool if cfg.concepts.admits(graph, s)}
    used: set[str] = set()
    groups: list[SynsetGroup] = []
    order = list(ancestors) if ancestors is not None else graph.synsets(pos)
    it = order
    if progress:
        from ..progress import progress_bar

        it = progress_bar(order, desc=f"grouping {pos} ({cfg.variant})", unit="synset")
    for anc in it:
        cands = [c for c in candidates_for(graph, anc, cfg.easy, cfg.members, cfg.hops) if c in pool and c not in used]
        while len(cands) >= cfg.k_min:
            vecs = vectors(cands)
            picked = best_cluster(vecs, cfg.k_min, cfg.k_max, cfg.max_similarity)
            if picked is None:
                break
            members = tuple(cands[i] for i in picked)
            groups.append(SynsetGroup(anc, cfg.relation, pos, members))
            used.update(members)
            cands = [c for c in cands if c not in used]
    return groups
