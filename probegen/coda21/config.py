"""Configuration of a CoDA21 generation run (a small dataclass, recorded in the manifest)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

POS_CODES = {"noun": "n", "verb": "v"}


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
    extra: dict = field(default_factory=dict)

    @property
    def variant(self) -> str:
        return f"{'clean' if self.clean else 'noisy'}-{'easy' if self.easy else 'hard'}"

    @property
    def relation(self) -> str:
        return "grandparent" if self.easy else "parent"

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

    def to_dict(self) -> dict:
        d = asdict(self)
        d["pos"] = list(self.pos)
        d["variant"] = self.variant
        d["relation"] = self.relation
        return d
