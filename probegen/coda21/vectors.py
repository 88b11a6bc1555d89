"""Definition embeddings for grouping, computed once per embedder and WordNet and cached."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, cast

import numpy as np

from ..io import atomic_write, sha256_text
from ..paths import cache_dir, set_aside

if TYPE_CHECKING:
    from ..runner import Runner
    from ..wordnet_graph import WordNetGraph


def definition_vectors(
    graph: WordNetGraph, names: list[str], embedder: str, wordnet_sha: str, progress: bool = False, *, runner: Runner
) -> Callable[[list[str]], np.ndarray]:
    """A lookup from synset names to L2-normalised embeddings of their definitions, all embedded in
    one batch (grouping re-clusters the same synsets many times)."""
    key = sha256_text("\n".join([embedder, wordnet_sha, *names]))[:16]
    path = cache_dir() / "vectors" / f"definitions-{embedder.replace('/', '_')}-{key}.npy"
    # rank 0 reads (or computes and writes) the cache and hands the matrix to the others; every
    # rank takes the same branch, so loading (which synchronises ranks) stays symmetric
    mat = runner.share(_read_cache(path, len(names)) if runner.is_main else None)
    if mat is None:
        scorer = runner.load_scorer(embedder)
        from ..scorers.base import TextEmbedder

        if not isinstance(scorer, TextEmbedder):
            raise ValueError(f"--embedder {embedder!r} is a {scorer.kind} model and cannot embed text")
        if runner.is_main:
            mat = np.asarray(scorer.embed([graph.definition(n) for n in names], progress=progress), dtype=np.float32)
            with atomic_write(path, "wb") as fh:
                np.save(fh, mat)
        mat = runner.share(mat)
    assert mat is not None  # rank 0's matrix, on every rank
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    mat = mat / np.where(norms == 0, 1.0, norms)
    row = {n: i for i, n in enumerate(names)}

    def lookup(sub: list[str]) -> np.ndarray:
        return mat[[row[n] for n in sub]].astype(np.float64)

    return lookup


def _read_cache(path: Path, rows: int) -> np.ndarray | None:
    """The cached matrix, or None if missing or damaged (set aside with one warning)."""
    if not path.exists():
        return None
    try:
        mat = np.load(path, allow_pickle=False)
        if mat.ndim != 2 or mat.shape[0] != rows or not np.isfinite(mat).all():
            raise ValueError(f"holds a {mat.shape} array, not {rows} finite rows")
        return cast(np.ndarray, mat)
    except Exception as e:  # noqa: BLE001 - a damaged .npy raises ValueError, EOFError, OSError, ...
        set_aside(path, "definition-vector cache", e)
        return None
