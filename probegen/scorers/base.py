"""The one scorer protocol, with batching, the persistent cache and progress written once.

Backends subclass :class:`Scorer` and implement :meth:`Scorer._score_uncached` (scores of a list
of (query, candidate) pairs) and :meth:`Scorer._extra_settings`. :meth:`Scorer.score` looks every
pair up in the score cache, hands only the missing ones to the backend chunk by chunk, writes
each chunk to the cache as soon as it is computed (a killed run resumes) and assembles the result.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..score_cache import ScoreCache, make_key

Pair = tuple[str, str]
CacheArg = bool | str | Path | ScoreCache | None


class Scorer:
    """Scores (query, candidate) pairs; higher = better match.

    Attributes:
        name: the model name as given by the user.
        kind: ``causal`` | ``masked`` | ``embedding`` | ``static``.
        query_style: ``pattern`` (query = context with the nonce + a pattern, for LMs) or
            ``plain`` (query = context with the target removed, for embedding/static models).
        model_id: the canonical model identity recorded in settings and cache keys.
    """

    kind: str = ""
    query_style: str = "pattern"
    #: bump when a backend's scoring method changes, so old cached scores are not reused
    version: int = 1
    #: pairs handed to the backend (and committed to the cache) at a time
    chunk_pairs: int = 256
    default_batch_size: int = 32
    default_cache: bool = True

    def __init__(
        self,
        name: str,
        model_id: str | None = None,
        batch_size: int | None = None,
        cache: CacheArg = None,
        extra_settings: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.model_id = model_id or name
        # where the weights came from (package version, file fingerprint): part of every cache key
        self.source_settings = dict(extra_settings or {})
        self.batch_size = int(batch_size or self.default_batch_size)
        if cache is None:
            cache = self.default_cache
        if cache is True:
            self._cache: ScoreCache | None = ScoreCache()
        elif cache is False:
            self._cache = None
        elif isinstance(cache, ScoreCache):
            self._cache = cache
        else:
            self._cache = ScoreCache(cache)
        self.counters = {"pairs_computed": 0, "pairs_cached": 0, "backend_calls": 0}

    # ---- to implement -------------------------------------------------------------------------
    def _extra_settings(self) -> dict[str, Any]:
        """Backend settings that change scores (reduction, dtype, ...)."""
        return {}

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        """Scores of ``pairs`` (pairs sharing a query arrive adjacent), as float64."""
        raise NotImplementedError

    # ---- public API ---------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """Everything that changes scores; recorded in results and part of the cache key."""
        return {
            "model": self.model_id,
            "kind": self.kind,
            "version": self.version,
            **self.source_settings,
            **self._extra_settings(),
        }

    def stats(self) -> dict[str, Any]:
        """Counters of this scorer's work (pairs computed vs. served from the cache)."""
        return dict(self.counters)

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[str]], progress: bool = False) -> list[np.ndarray]:
        """For each query i, a float64 array of scores for ``candidates[i]`` (higher = better match)."""
        if len(queries) != len(candidates):
            raise ValueError(f"{len(queries)} queries but {len(candidates)} candidate lists")
        # unique pairs, grouped by query so a backend can reuse each query's prefix
        grouped: dict[str, dict[str, None]] = {}
        for q, cands in zip(queries, candidates):
            slot = grouped.setdefault(q, {})
            for c in cands:
                slot.setdefault(c, None)
        pairs = [(q, c) for q, cands in grouped.items() for c in cands]
        values = self._cached(pairs, self._score_uncached, namespace="score", progress=progress)
        return [np.array([values[(q, c)] for c in cands], dtype=np.float64) for q, cands in zip(queries, candidates)]

    def score_matrix(self, queries: Sequence[str], candidates_shared: Sequence[str], progress: bool = False) -> np.ndarray:
        """Every query against the same candidate list: an ``len(queries) x len(candidates)`` matrix."""
        rows = self.score(queries, [list(candidates_shared)] * len(queries), progress=progress)
        return np.stack(rows) if rows else np.zeros((0, len(candidates_shared)))

    def close(self) -> None:
        """Close the score cache connection."""
        if self._cache is not None:
            self._cache.close()

    # ---- shared machinery ---------------------------------------------------------------------
    def _cached(
        self,
        pairs: list[Pair],
        compute: Callable[[list[Pair]], np.ndarray],
        namespace: str = "score",
        progress: bool = False,
    ) -> dict[Pair, float]:
        """Values of unique ``pairs``: from the cache where present, else ``compute``d chunk by chunk.

        ``namespace`` separates different functions of the same model (e.g. span log-probs).
        """
        settings = self.settings()
        if namespace != "score":
            settings = {**settings, "fn": namespace}
        out: dict[Pair, float] = {}
        keys: dict[Pair, str] = {}
        if self._cache is not None:
            keys = {p: make_key(self.model_id, settings, p[0], p[1]) for p in pairs}
            hits = self._cache.get_many(keys.values())
            for p, k in keys.items():
                if k in hits:
                    out[p] = hits[k]
        missing = [p for p in pairs if p not in out]
        self.counters["pairs_cached"] += len(out)
        if not missing:
            return out
        bar = _progress_bar(len(missing), f"scoring with {self.name}", progress)
        try:
            for chunk in _chunks_by_query(missing, self.chunk_pairs):
                vals = np.asarray(compute(chunk), dtype=np.float64)
                if vals.shape != (len(chunk),):
                    raise RuntimeError(f"backend returned {vals.shape} scores for {len(chunk)} pairs")
                self.counters["backend_calls"] += 1
                self.counters["pairs_computed"] += len(chunk)
                out.update(zip(chunk, vals.tolist()))
                if self._cache is not None:
                    self._cache.put_many((keys[p], v) for p, v in zip(chunk, vals.tolist()))
                bar.update(len(chunk))
        finally:
            bar.close()
        return out


def boundary_split(query: str, candidate: str) -> tuple[str, str]:
    """(context, continuation) after the lm-evaluation-harness whitespace move.

    Trailing whitespace of the query moves to the start of the continuation; when neither side
    has whitespace at the boundary, one space is inserted before the continuation.
    """
    n = len(query) - len(query.rstrip())
    if n:
        return query[:-n], query[-n:] + candidate
    if query and candidate and not candidate[0].isspace():
        return query, " " + candidate
    return query, candidate


def _chunks_by_query(pairs: list[Pair], size: int) -> list[list[Pair]]:
    """Split ``pairs`` into chunks of about ``size``, cutting between queries where possible."""
    chunks: list[list[Pair]] = []
    cur: list[Pair] = []
    for i, p in enumerate(pairs):
        cur.append(p)
        nxt = pairs[i + 1][0] if i + 1 < len(pairs) else None
        # close at a query boundary once full; split a very long run of one query at 2x size
        if (len(cur) >= size and nxt != p[0]) or len(cur) >= 2 * size:
            chunks.append(cur)
            cur = []
    if cur:
        chunks.append(cur)
    return chunks


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, desc: str, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="pair", file=sys.stderr, dynamic_ncols=True, leave=False)
