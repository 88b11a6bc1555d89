"""Concept filters of a probe spec: which synsets may be a probe's targets (carried by the generators'
configs, so recorded in their manifests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..wordnet_graph import WordNetGraph


@dataclass(frozen=True)
class ConceptFilter:
    """Lexicographer files and a depth range a target synset must satisfy (empty / None: any), and
    (multiple choice only) a floor ``min_semcor`` on its SemCor occurrences.

    >>> class G:  # a two-node toy graph
    ...     g = type("g", (), {"nodes": {"dog.n.01": {"lexname": "noun.animal", "depth": 8},
    ...                                  "run.v.01": {"lexname": "verb.motion", "depth": 0}}})()
    ...     def depth(self, s): return self.g.nodes[s]["depth"]
    >>> f = ConceptFilter(lexfiles=("noun.animal",), min_depth=3)
    >>> f.admits(G(), "dog.n.01"), f.admits(G(), "run.v.01")
    (True, False)
    """

    lexfiles: tuple[str, ...] = ()
    min_depth: int | None = None
    max_depth: int | None = None
    min_semcor: int = 0

    @property
    def active(self) -> bool:
        """Whether the filter excludes anything at all."""
        return bool(self.lexfiles) or self.min_depth is not None or self.max_depth is not None or self.min_semcor > 0

    def admits(self, graph: WordNetGraph, s: str, semcor_count: int | None = None) -> bool:
        """Whether synset ``s`` passes (``semcor_count`` is checked only when given)."""
        if self.lexfiles and graph.g.nodes[s].get("lexname") not in self.lexfiles:
            return False
        d = graph.depth(s)
        if self.min_depth is not None and d < self.min_depth:
            return False
        if self.max_depth is not None and d > self.max_depth:
            return False
        return semcor_count is None or semcor_count >= self.min_semcor

    def to_dict(self) -> dict[str, Any]:
        return {"lexfiles": list(self.lexfiles), "min_depth": self.min_depth, "max_depth": self.max_depth,
                "min_semcor": self.min_semcor}
