"""The one scorer protocol, with batching, the persistent cache and progress written once.

Backends subclass :class:`Scorer` and implement :meth:`Scorer._score_uncached` and
:meth:`Scorer._extra_settings`. Only pairs missing from the score cache reach the backend, chunk by
chunk, each chunk cached as soon as it is computed (a killed run resumes) after checking it is
finite (else :class:`~probegen.errors.NonFiniteScore`). Cache keys leave out the device and device
map (rounding-level effects) but keep the dtype (see :mod:`probegen.models`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .. import distributed as dist
from ..core import PairScorer
from ..errors import NonFiniteScore
from ..progress import progress_bar
from ..score_cache import ScoreCache, make_key

Pair = tuple[str, str]
CacheArg = bool | str | Path | ScoreCache | None


class Scorer(PairScorer):
    """Scores (query, candidate) pairs; higher = better match (the core's :class:`~probegen.core.PairScorer`).

    ``kind``: see :data:`probegen.scorers.KINDS`; ``query_style``: ``pattern`` (the context with the nonce
    and a pattern, for LMs) or ``plain`` (the context without the target); ``model_id``: the model identity
    in settings and cache keys (``name``: as the user gave it).
    """

    kind: str = ""
    query_style: str = "pattern"
    #: bump when a backend's scoring method changes, so old cached scores are not reused
    version: int = 1
    #: pairs handed to the backend (and committed to the cache) at a time
    chunk_pairs: int = 256
    default_batch_size: int = 32
    default_cache: bool = True
    #: settings recorded in results but left out of cache keys: they change scores only by rounding
    NOT_IN_CACHE_KEY = ("device", "device_map")

    def __init__(
        self,
        name: str,
        model_id: str | None = None,
        batch_size: int | None = None,
        cache: CacheArg = None,
        extra_settings: dict[str, Any] | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        device_map: str | None = None,
    ) -> None:
        self.name = name
        self.model_id = model_id or name
        self.device = device
        self.dtype = dtype
        self.device_map = device_map
        # where the weights came from (package version, file fingerprint): part of every cache key
        self.source_settings = dict(extra_settings or {})
        self.batch_size = int(batch_size or self.default_batch_size)
        cache = self.default_cache if cache is None else cache
        if isinstance(cache, bool):
            self._cache: ScoreCache | None = ScoreCache() if cache else None
        else:
            self._cache = cache if isinstance(cache, ScoreCache) else ScoreCache(cache)
        self.counters = {"pairs_computed": 0, "pairs_cached": 0, "backend_calls": 0}

    def _extra_settings(self) -> dict[str, Any]:
        """Backend settings that change scores (reduction, dtype, ...)."""
        return {}

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        """Scores of ``pairs`` (pairs sharing a query arrive adjacent), as float64."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """How scores are made (model, method, dtype, device); recorded in results."""
        out = {
            "model": self.model_id,
            "kind": self.kind,
            "version": self.version,
            **self.source_settings,
            "dtype": self.dtype,
            **self._extra_settings(),
            "device": self.device,
        }
        if self.device_map is not None:
            out["device_map"] = self.device_map
        return out

    def cache_settings(self) -> dict[str, Any]:
        """The settings that are part of every cache key: all but the device and device map."""
        return {k: v for k, v in self.settings().items() if k not in self.NOT_IN_CACHE_KEY}

    def stats(self) -> dict[str, Any]:
        """Counters of this scorer's work (pairs computed vs. served from the cache), and where it ran."""
        return {**self.counters, "device": self.device, "dtype": self.dtype}

    def score(self, queries: Sequence[str], candidates: Sequence[Sequence[str]],
              progress: bool = False) -> list[np.ndarray]:
        """For each query i, a float64 array of scores for ``candidates[i]`` (higher = better match)."""
        if len(queries) != len(candidates):
            raise ValueError(f"{len(queries)} queries but {len(candidates)} candidate lists")
        # unique pairs, grouped by query so a backend can reuse each query's prefix
        grouped: dict[str, dict[str, None]] = {}
        for q, cands in zip(queries, candidates):
            grouped.setdefault(q, {}).update(dict.fromkeys(cands))
        pairs = [(q, c) for q, cands in grouped.items() for c in cands]
        values = self.score_pairs(pairs, progress=progress)
        return [np.array([values[(q, c)] for c in cands], dtype=np.float64) for q, cands in zip(queries, candidates)]

    def score_pairs(self, pairs: Sequence[Pair], progress: bool = False) -> dict[Pair, float]:
        """Scores of unique (query, candidate) ``pairs`` (pairs of one query adjacent), cached or computed."""
        return self._cached(list(dict.fromkeys(pairs)), self._score_uncached, namespace="score", progress=progress)

    def score_matrix(self, queries: Sequence[str], candidates_shared: Sequence[str],
                     progress: bool = False) -> np.ndarray:
        """Every query against the same candidate list: an ``len(queries) x len(candidates)`` matrix."""
        rows = self.score(queries, [list(candidates_shared)] * len(queries), progress=progress)
        return np.stack(rows) if rows else np.zeros((0, len(candidates_shared)))

    def close(self) -> None:
        """Close the score cache connection."""
        if self._cache is not None:
            self._cache.close()

    def _cached(
        self,
        pairs: list[Pair],
        compute: Callable[[list[Pair]], np.ndarray],
        namespace: str = "score",
        progress: bool = False,
    ) -> dict[Pair, float]:
        """Values of unique ``pairs``: from the cache where present, else ``compute``d chunk by chunk
        (``namespace`` separates different functions of the same model, e.g. span log-probs)."""
        settings = self.cache_settings()
        if namespace != "score":
            settings = {**settings, "fn": namespace}
        out: dict[Pair, float] = {}
        keys: dict[Pair, str] = {}
        # under torchrun only rank 0 touches the cache; every rank then works from its view, so
        # all ranks cut the same chunks even while rank 0 is still writing the last ones
        main = dist.is_main()
        if self._cache is not None and main:
            keys = {p: make_key(self.model_id, settings, p[0], p[1]) for p in pairs}
            hits = self._cache.get_many(keys.values())
            # an infinity from an older version is recomputed
            out = {p: hits[k] for p, k in keys.items() if k in hits and math.isfinite(hits[k])}
        if dist.active():
            out = dict(dist.all_gather(out if main else None)[0])
        missing = [p for p in pairs if p not in out]
        self.counters["pairs_cached"] += len(out)
        if not missing:
            return out
        chunks = _chunks_by_query(missing, self.chunk_pairs)
        world, rank = dist.world_size(), dist.rank()
        bar = progress_bar(total=len(missing), desc=f"scoring with {self.name}", unit="pair",
                           disable=not (progress and main))
        try:
            # one round = one chunk per rank; the cache is committed every round, so a killed run resumes
            for start in range(0, len(chunks), world):
                mine = start + rank
                vals = None
                if mine < len(chunks):
                    vals = np.asarray(compute(chunks[mine]), dtype=np.float64)
                    if vals.shape != (len(chunks[mine]),):
                        raise RuntimeError(f"backend returned {vals.shape} scores for {len(chunks[mine])} pairs")
                gathered = dist.all_gather(vals) if world > 1 else [vals]
                for i, got in enumerate(gathered):
                    if got is None:
                        continue
                    chunk = chunks[start + i]
                    self._check_finite(chunk, got)
                    # counted over all ranks, so stats are those of a single-process run
                    self.counters["backend_calls"] += 1
                    self.counters["pairs_computed"] += len(chunk)
                    out.update(zip(chunk, got.tolist()))
                    if self._cache is not None and main:
                        self._cache.put_many((keys[p], v) for p, v in zip(chunk, got.tolist()))
                    bar.update(len(chunk))
        finally:
            bar.close()
        return out

    def _check_finite(self, pairs: list[Pair], values: np.ndarray) -> None:
        """Raise NonFiniteScore (naming the model and the first bad pair) unless all ``values`` are finite."""
        bad = np.flatnonzero(~np.isfinite(values))
        if not len(bad):
            return
        q, c = pairs[bad[0]]
        more = f" (and {len(bad) - 1} more pair(s) of this chunk)" if len(bad) > 1 else ""
        dtype = self.settings().get("dtype")
        hint = f"; the model ran in {dtype}, try --dtype float32" if dtype in ("float16", "bfloat16") else ""
        raise NonFiniteScore(
            f"{self.name} gave a non-finite score ({values[bad[0]]}) for query {_short(q)} and "
            f"candidate {_short(c)}{more}{hint}; nothing of this chunk was cached"
        )


def _short(text: str, n: int = 80) -> str:
    """``repr`` of ``text``, cut in the middle if longer than ``n`` characters (for one-line errors)."""
    return repr(text) if len(text) <= n else repr(text[: n // 2] + " ... " + text[-n // 2 :])


def boundary_split(query: str, candidate: str) -> tuple[str, str]:
    """(context, continuation) after the lm-evaluation-harness whitespace move: trailing whitespace of the query
    moves to the continuation; with whitespace on neither side, one space is inserted before the continuation."""
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


class TextEmbedder(ABC):
    """A scorer that embeds texts as vectors (embedding and static models): what CoDA21's context
    selection by definition similarity (``--embedder``) needs."""

    @abstractmethod
    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """One vector per text."""


def run_note(stats: dict[str, Any]) -> str | None:
    """One line of a scorer's ``stats()``: the path its scores took (strategy, attention kernel and why)
    and the check of a lower precision; None for scorers without them.

    >>> run_note({"strategy": "packed", "kernel": "flex", "kernel_pick": {"kernel": "flex", "how": "remembered"}})
    'packed scoring, flex attention kernel (remembered)'
    >>> run_note({"kernel": "dense", "kernel_pick": {"kernel": "dense", "how": "user"},
    ...           "precision_check": {"checked": True, "dtype": "int8", "agree": 49, "units": 50, "max_abs_diff": 0.4}})
    'dense attention kernel (user); int8 agrees with float32 on 49 of 50 units (max |diff| 0.4 nats)'
    """
    parts = []
    if stats.get("strategy") == "full":
        parts.append("full sequences" + (" (packed failed its self-check)" if stats.get("self_check") else ""))
    elif stats.get("kernel"):
        how = (stats.get("kernel_pick") or {}).get("how", "")
        lead = f"{stats['strategy']} scoring, " if stats.get("strategy") else ""
        parts.append(f"{lead}{stats['kernel']} attention kernel" + (f" ({how})" if how else ""))
    check = stats.get("precision_check")
    if check and check.get("checked"):
        parts.append(f"{check['dtype']} agrees with float32 on {check['agree']} of {check['units']} units "
                     f"(max |diff| {check['max_abs_diff']} nats)")
    return "; ".join(parts) or None
