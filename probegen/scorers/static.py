"""Static word-vector scorer: cosine of the mean GloVe vectors of query and candidate.

Texts are lower-cased regex word tokens; a hyphenated or apostrophised token missing from the
vocabulary falls back to its parts; unknown tokens are skipped and counted (``oov_rate``), and a text
with no known word scores 0. Cheaper than a cache lookup, so no score cache by default (which also
keeps ``oov_rate`` over every text); numpy on the CPU whatever ``--device`` says, means and cosines in
float64.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np

from .base import Pair, Scorer, TextEmbedder

_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_PARTS = re.compile(r"[-']")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (underscores of WordNet lemmas count as spaces)."""
    return _WORD.findall(text.lower().replace("_", " "))


class StaticScorer(Scorer, TextEmbedder):
    """Mean-of-word-vectors cosine similarity."""

    kind = "static"
    query_style = "plain"
    default_cache = False

    def __init__(
        self,
        name: str,
        vectors: np.ndarray,
        vocab: Mapping[str, int],
        model_id: str | None = None,
        batch_size: int | None = None,
        cache: Any = None,
        extra_settings: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings,
            device="cpu", dtype=str(vectors.dtype),
        )
        self.vectors = vectors
        self.vocab = vocab
        self.tokens_seen = 0
        self.tokens_oov = 0

    def _extra_settings(self) -> dict[str, Any]:
        return {"pooling": "mean", "tokenizer": "regex-lower", "similarity": "cosine"}

    @property
    def oov_rate(self) -> float:
        """Share of the word tokens seen so far that have no vector (0 before any)."""
        return self.tokens_oov / self.tokens_seen if self.tokens_seen else 0.0

    def stats(self) -> dict[str, Any]:
        """Work counters plus OOV statistics."""
        return {
            **super().stats(),
            "tokens_seen": self.tokens_seen,
            "tokens_oov": self.tokens_oov,
            "oov_rate": round(self.oov_rate, 6),
        }

    def _ids(self, text: str) -> list[int]:
        ids: list[int] = []
        for tok in tokenize(text):
            parts = [tok] if tok in self.vocab else [p for p in _PARTS.split(tok) if p]
            for p in parts:
                self.tokens_seen += 1
                i = self.vocab.get(p)
                if i is None:
                    self.tokens_oov += 1
                else:
                    ids.append(i)
        return ids

    def _mean(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float64)
        for r, t in enumerate(texts):
            ids = self._ids(t)
            if ids:
                out[r] = np.asarray(self.vectors[sorted(ids)], dtype=np.float64).mean(axis=0)
        return out

    def _unit(self, texts: list[str]) -> tuple[np.ndarray, dict[str, int]]:
        """L2-normalised mean vectors of the distinct ``texts`` (zero stays zero: cosine 0), each text's row."""
        unique = list(dict.fromkeys(texts))
        vecs = self._mean(unique)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.where(norms == 0, 1.0, norms), {t: i for i, t in enumerate(unique)}

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """L2-normalised mean word vectors (zero rows for texts with no known word)."""
        vecs, row = self._unit(list(texts))
        return vecs[[row[t] for t in texts]].astype(np.float32)

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        vecs, row = self._unit([q for q, _ in pairs] + [c for _, c in pairs])
        q = vecs[[row[p[0]] for p in pairs]]
        c = vecs[[row[p[1]] for p in pairs]]
        return np.asarray(np.einsum("ij,ij->i", q, c))
