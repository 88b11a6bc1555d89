"""Definition embeddings for grouping, computed once per embedder and WordNet and cached."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..io import atomic_write, sha256_text
from ..paths import cache_dir


def definition_vectors(
    graph, names: list[str], embedder: str, wordnet_sha: str, progress: bool = False
) -> Callable[[list[str]], np.ndarray]:
    """A lookup from synset names to L2-normalised embeddings of their definitions.

    All ``names`` are embedded in one batch (or read from the cache); the lookup then costs
    nothing, which matters because grouping re-clusters the same synsets many times.
    """
    key = sha256_text("\n".join([embedder, wordnet_sha, *names]))[:16]
    path = cache_dir() / "vectors" / f"definitions-{embedder.replace('/', '_')}-{key}.npy"
    if path.exists():
        mat = np.load(path)
    else:
        from ..models import load_scorer

        scorer = load_scorer(embedder)
        if not hasattr(scorer, "embed"):
            raise ValueError(f"--embedder {embedder!r} is a {scorer.kind} model and cannot embed text")
        mat = np.asarray(scorer.embed([graph.definition(n) for n in names], progress=progress), dtype=np.float32)
        with atomic_write(path, "wb") as fh:
            np.save(fh, mat)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    mat = mat / np.where(norms == 0, 1.0, norms)
    row = {n: i for i, n in enumerate(names)}

    def lookup(sub: list[str]) -> np.ndarray:
        return mat[[row[n] for n in sub]].astype(np.float64)

    return lookup
