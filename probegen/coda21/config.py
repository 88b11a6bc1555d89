"""Configuration of a CoDA21 generation run (a small dataclass, recorded in the manifest)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..spec.concepts import ConceptFilter

POS_CODES = {"noun": "n", "verb": "v"}
#: what the shared synset is called, per (member relation, hops), for the hyponym tree
ANCESTOR_NAMES = {1: "parent", 2: "grandparent", 3: "great-grandparent", 4: "great-great-grandparent"}
MAX_HOPS = 4


@dataclass(frozen=True)
class Coda21Config:
    """Everything that decides which groups and contexts a CoDA21 dataset gets."""

    easy: bool = False  # easy: grandchildren of a grandparent; hard: children of a parent
    clean: bool = True  # clean: only synsets with >= min_clean_contexts SemCor contexts
    pos: tuple[str, ...] = ("n", "v")
    k_min: int = 5
    k_max: int = 10
    max_similarity: float = 0.8
    min_clean_contexts: int = 5
    embedder: str = "minilm-l6"
    context_scorer: str = "smollm2-135m"
    max_contexts: int = 10  # contexts scored per synset (first N in SemCor order)
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # probe specs (probegen.spec): members reached from the shared synset by ``members`` at exactly
    # ``hops`` steps (0: 2 if easy else 1), a variant name, and a filter on the members
    members: str = "hyponym"
    hops: int = 0
    name: str = ""
    concepts: ConceptFilter | None = None

    @property
    def n_hops(self) -> int:
        """Steps from the shared synset to the members (hard 1, easy 2, unless ``hops`` is set)."""
        return self.hops or (2 if self.easy else 1)

    @property
    def variant(self) -> str:
        return self.name or f"{'clean' if self.clean else 'noisy'}-{'easy' if self.easy else 'hard'}"

    @property
    def relation(self) -> str:
        """What the group's shared synset is to its members: parent, grandparent, ... for the
        hyponym tree; else the inverse relation's name (``part_holonym`` of part meronyms)."""
        if self.members == "hyponym":
            return ANCESTOR_NAMES[self.n_hops]
        inverse = self.members.replace("meronym", "HOLO").replace("holonym", "meronym").replace("HOLO", "holonym")
        inverse = {"instance_hyponym": "instance_hypernym", "hypernym": "hyponym"}.get(inverse, inverse)
        return inverse if self.n_hops == 1 else f"{inverse}^{self.n_hops}"

    @property
    def min_contexts(self) -> int:
        return self.min_clean_contexts if self.clean else 1

    def validate(self) -> None:
        from ..errors import ProbegenError

        if not 2 <= self.k_min <= self.k_max:
            raise ProbegenError(f"need 2 <= --k-min <= --k-max, got {self.k_min} and {self.k_max}")
        if self.k_max > 30:
            raise ProbegenError(f"--k-max {self.k_max} is too large (at most 30)")
        if not -1.0 <= self.max_similarity <= 1.0:
            raise ProbegenError(f"--max-similarity must lie in [-1, 1], got {self.max_similarity}")
        if self.max_contexts < 1:
            raise ProbegenError("--max-contexts must be at least 1")
        bad = set(self.pos) - set(POS_CODES.values())
        if bad or not self.pos:
            raise ProbegenError(f"unknown part of speech {sorted(bad)}; use noun, verb or both")
        from ..lexicon.base import QUERYABLE

        if self.members not in QUERYABLE:
            raise ProbegenError(f"unknown member relation {self.members!r}; use one of {', '.join(QUERYABLE)}")
        if not 0 <= self.hops <= MAX_HOPS:
            raise ProbegenError(f"hops must lie in 1..{MAX_HOPS}, got {self.hops}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # the spec fields appear only when set, so `make coda21` manifests stay as they were
        for key, default in (("members", "hyponym"), ("hops", 0), ("name", ""), ("concepts", None)):
            if d[key] == default:
                del d[key]
        if self.concepts is not None:
            d["concepts"] = self.concepts.to_dict()
        d["pos"] = list(self.pos)
        d["variant"] = self.variant
        d["relation"] = self.relation
        return d
