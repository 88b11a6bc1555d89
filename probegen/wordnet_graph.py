"""A networkx view of WordNet that every generator walks instead of calling nltk ad hoc.

Nodes are synset names (``dog.n.01``) carrying ``pos``, ``lemmas``, ``definition``, ``examples``,
``depth`` (min depth from a root) and ``offset``. Edges go hypernym -> hyponym, ``type``
``"hypernym"`` or ``"instance"``. Neighbours are sorted by name (nltk's order is not stable). Built
once (~15 s) and cached as a pickle keyed by the WordNet checksum.
"""

from __future__ import annotations

import logging
import pickle
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, cast

import networkx as nx

from .io import atomic_write
from .paths import cache_dir, set_aside

GRAPH_FORMAT = 4

log = logging.getLogger(__name__)


def build_graph(resource: Any) -> nx.DiGraph:
    """The hypernym -> hyponym DiGraph of a :class:`~probegen.lexicon.LexicalResource` (or an nltk
    reader); other relations are kept per node in ``relations`` (relation -> sorted targets) and
    lemma antonymy in ``antonyms``."""
    from .lexicon.base import LexicalResource
    from .lexicon.wndb import NltkWordNet

    if not isinstance(resource, LexicalResource):
        resource = NltkWordNet(resource)
    g = nx.DiGraph()
    records = sorted(resource.synsets(), key=lambda r: (r.pos, r.order, r.name))
    for r in records:
        rels: dict[str, list[str]] = {}
        for rel, target in r.pointers:
            if rel not in ("hypernym", "instance_hypernym"):
                rels.setdefault(rel, []).append(target)
        g.add_node(
            r.name,
            pos=r.pos,
            lemmas=r.lemmas,
            definition=r.definition,
            examples=r.examples,
            offset=r.order,
            lexname=r.lexname,
            relations={k: tuple(sorted(v)) for k, v in sorted(rels.items())},
            antonyms=r.antonyms,
            ili=r.ili,
        )
    for r in records:
        for rel, target in sorted(r.pointers, key=lambda p: p[1]):
            if rel in ("hypernym", "instance_hypernym") and target in g:
                g.add_edge(target, r.name, type="hypernym" if rel == "hypernym" else "instance")
    check_hierarchy(g, resource.source or resource.label or "the wordnet")
    g.graph["hierarchy_checked"] = True
    nx.set_node_attributes(g, min_depths(g), "depth")
    g.graph["format"] = GRAPH_FORMAT
    return g


def min_depths(g: nx.DiGraph) -> dict[str, int]:
    """Each node's min depth over all hypernym paths (roots have depth 0), by BFS from the roots; a
    node only on a cycle (restrain.v.01 <-> inhibit.v.04) gets its nearest reached relative's + 1.

    >>> g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    >>> min_depths(g)
    {'a': 0, 'b': 1, 'c': 1}
    """
    queue = deque(sorted(n for n in g if g.in_degree(n) == 0))
    depth: dict[str, int] = dict.fromkeys(queue, 0)
    while queue:
        n = queue.popleft()
        for c in sorted(g.successors(n)):
            if c not in depth:
                depth[c] = depth[n] + 1
                queue.append(c)
    missing = sorted(n for n in g if n not in depth)
    while missing:
        for n in missing:
            known = [depth[p] for p in g.predecessors(n) if p in depth]
            if known:
                depth[n] = min(known) + 1
        still = [n for n in missing if n not in depth]
        if len(still) == len(missing):
            depth.update({n: 0 for n in still})
        missing = still
    return depth


#: the one hypernym cycle of Princeton WordNet 3.0 (restrain.v.01 <-> inhibit.v.04; WordNet 3.1 fixed
#: it), named by part of speech and first lemma so that WordNet 3.0 in any format still loads
KNOWN_CYCLES = frozenset({frozenset({("v", "restrain"), ("v", "inhibit")})})


def check_hierarchy(g: nx.DiGraph, source: str) -> None:
    """Raise a DatasetError naming the first hypernym (or instance) cycle of ``g`` other than WordNet
    3.0's own (:data:`KNOWN_CYCLES`): on a cycle, depths, ancestors and gold answers would be wrong.
    The message walks it in is-a order (``a -> b``: a is a type of b)."""
    from .errors import DatasetError

    def label(n: str) -> str:
        lemmas = g.nodes[n].get("lemmas") or ()
        return f"{n} ({lemmas[0]})" if lemmas else n

    loops = [{n} for n, _ in nx.selfloop_edges(g)]
    for comp in loops + [c for c in nx.strongly_connected_components(g) if len(c) > 1]:
        key = frozenset((g.nodes[n].get("pos"), (g.nodes[n].get("lemmas") or ("",))[0]) for n in comp)
        if key in KNOWN_CYCLES:
            continue
        start = min(comp)
        edges = nx.find_cycle(g.subgraph(comp), source=start)  # hypernym -> hyponym edges
        chain = [v for _, v in reversed(edges)]  # walked upwards: each is a type of the next
        chain.append(chain[0])
        raise DatasetError(f"{source}: the hypernym hierarchy has a cycle (each is a type of the next): "
                           + " -> ".join(label(n) for n in chain) + "; fix the file's hypernym relations")


@dataclass
class WordNetGraph:
    """Read-only helpers over the WordNet DiGraph; every neighbour list is sorted by name."""

    g: nx.DiGraph
    sha256: str = ""

    # ---- node attributes -------------------------------------------------------------------
    def __contains__(self, name: str) -> bool:
        return name in self.g

    def pos(self, s: str) -> str:
        return cast(str, self.g.nodes[s]["pos"])

    def lemmas(self, s: str) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self.g.nodes[s]["lemmas"])

    def definition(self, s: str) -> str:
        return cast(str, self.g.nodes[s]["definition"])

    def examples(self, s: str) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self.g.nodes[s]["examples"])

    def depth(self, s: str) -> int:
        return cast(int, self.g.nodes[s]["depth"])

    def synsets(self, pos: str | None = None) -> list[str]:
        """All synsets (optionally of one POS) in WordNet file order, which is deterministic."""
        nodes = [n for n, d in self.g.nodes(data=True) if pos is None or d["pos"] == pos]
        return sorted(nodes, key=lambda n: (self.g.nodes[n]["pos"], self.g.nodes[n]["offset"]))

    # ---- relations ---------------------------------------------------------------------------
    def children(self, s: str, instances: bool = False) -> list[str]:
        """Direct hyponyms (and instance hyponyms if asked), sorted by name."""
        return sorted(c for c in self.g.successors(s) if instances or self.g.edges[s, c]["type"] == "hypernym")

    def parents(self, s: str, instances: bool = False) -> list[str]:
        """Direct hypernyms (and instance hypernyms if asked), sorted by name."""
        return sorted(p for p in self.g.predecessors(s) if instances or self.g.edges[p, s]["type"] == "hypernym")

    def grandchildren(self, s: str, instances: bool = False) -> list[str]:
        """Hyponyms of hyponyms, deduplicated and sorted (a synset reached twice counts once)."""
        return sorted({gc for c in self.children(s, instances) for gc in self.children(c, instances)})

    def ancestors(self, s: str, max_hops: int, instances: bool = True) -> dict[str, int]:
        """Every ancestor within ``max_hops`` with its shortest distance (1 = parent)."""
        return self._bfs(s, max_hops, lambda n: self.parents(n, instances))

    def descendants(self, s: str, max_hops: int, instances: bool = True) -> dict[str, int]:
        """Every descendant within ``max_hops`` with its shortest distance (1 = child)."""
        return self._bfs(s, max_hops, lambda n: self.children(n, instances))

    @staticmethod
    def _bfs(start: str, max_hops: int, step: Callable[[str], Iterable[str]]) -> dict[str, int]:
        dist: dict[str, int] = {}
        frontier = [start]
        for hop in range(1, max_hops + 1):
            nxt = []
            for n in frontier:
                for m in step(n):
                    if m != start and m not in dist:
                        dist[m] = hop
                        nxt.append(m)
            frontier = sorted(nxt)
        return dict(sorted(dist.items()))

    def related(self, s: str, relation: str) -> list[str]:
        """Direct neighbours of ``s`` by ``relation`` (any of :data:`probegen.lexicon.QUERYABLE`), sorted;
        ``hypernym``/``hyponym`` follow plain hypernymy only, ``antonym`` lifts lemma antonymy to synsets."""
        from .lexicon.base import QUERYABLE

        if relation not in QUERYABLE:
            raise ValueError(f"unknown relation {relation!r}; known: {', '.join(QUERYABLE)}")
        edge = {"hypernym": ("in", "hypernym"), "hyponym": ("out", "hypernym"),
                "instance_hypernym": ("in", "instance"), "instance_hyponym": ("out", "instance")}.get(relation)
        if edge is not None:
            way, kind = edge
            if way == "in":
                return sorted(p for p in self.g.predecessors(s) if self.g.edges[p, s]["type"] == kind)
            return sorted(c for c in self.g.successors(s) if self.g.edges[s, c]["type"] == kind)
        node = self.g.nodes[s]
        if relation == "antonym":
            return sorted({t for _, t, _ in node.get("antonyms", ())})
        return list(node.get("relations", {}).get(relation, ()))

    def siblings(self, s: str) -> list[str]:
        """Other children of any of ``s``'s parents, sorted."""
        out = {c for p in self.parents(s, True) for c in self.children(p, True)}
        out.discard(s)
        return sorted(out)

    def sister_family(self, s: str, depth: int) -> dict[str, int]:
        """WordNetQA's sister family of depth ``depth``: siblings of ``s`` plus their descendants down to
        ``depth - 1`` levels, each with its level below the sibling (0 = the sibling itself)."""
        fam: dict[str, int] = {}
        for sib in self.siblings(s):
            fam.setdefault(sib, 0)
            for d, lvl in self.descendants(sib, depth - 1).items():
                if d not in fam or fam[d] > lvl:
                    fam[d] = lvl
        return dict(sorted(fam.items()))

    def walk(self, roots: Iterable[str]) -> Iterator[str]:
        """Breadth-first walk from ``roots`` in sorted order (each node once)."""
        seen: set[str] = set()
        queue = deque(sorted(roots))
        while queue:
            n = queue.popleft()
            if n in seen:
                continue
            seen.add(n)
            yield n
            queue.extend(self.children(n, True))


def _graph_cache_path(sha256: str) -> Path:
    return cache_dir() / f"wordnet_graph-{sha256[:16]}-v{GRAPH_FORMAT}.pickle"


@lru_cache(maxsize=4)
def load_graph(wordnet_path: str | None = None) -> WordNetGraph:
    """The cached graph of a wordnet source string (:mod:`probegen.lexicon.sources`), built on first use;
    a damaged cache file is rebuilt with a warning."""
    from .lexicon.sources import open_resource

    resource = open_resource(wordnet_path)
    sha = resource.sha256
    path = _graph_cache_path(sha) if sha else None  # a resource without a checksum is not cached
    if path is not None and path.exists():
        g = _read_cache(path)
        if g is not None and g.graph.get("format") == GRAPH_FORMAT:
            if not g.graph.get("hierarchy_checked"):  # cached before cycles were checked
                check_hierarchy(g, resource.source or resource.label or "the wordnet")
            return WordNetGraph(g, sha)
    g = build_graph(resource)
    if path is not None:
        with atomic_write(path, "wb") as fh:
            pickle.dump(g, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return WordNetGraph(g, sha)


def _read_cache(path: Path) -> nx.DiGraph | None:
    """The pickled graph, or None (with a warning) if the file is truncated or not our pickle."""
    try:
        with open(path, "rb") as fh:
            g = pickle.load(fh)  # our own cache file, written by load_graph; never user input
        if not isinstance(g, nx.DiGraph):
            raise TypeError(f"holds a {type(g).__name__}, not a graph")
        return g
    except Exception as e:  # noqa: BLE001 - unpickling damaged bytes can raise almost anything
        set_aside(path, "WordNet graph cache", e)
        return None
