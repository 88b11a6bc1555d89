"""Sentence-embedding scorer: cosine(embed(query), embed(candidate)).

The model runs on its device in its dtype (``load_scorer(..., device=, dtype=)``); embeddings
come back as float32 and cosines are computed in float64 on the CPU.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import Pair, Scorer, TextEmbedder
from .spans import SpanFeatures


class EmbeddingScorer(SpanFeatures, Scorer, TextEmbedder):
    """Cosine similarity of L2-normalised sentence-transformers embeddings."""

    kind = "embedding"
    query_style = "plain"
    default_batch_size = 64

    def __init__(
        self,
        name: str,
        model: Any,
        model_id: str | None = None,
        batch_size: int | None = None,
        cache: Any = None,
        device_map: str | None = None,
        extra_settings: dict[str, Any] | None = None,
    ) -> None:
        device = str(model.device)
        if batch_size is None and device.startswith("cuda"):
            batch_size = 512  # short texts: a GPU needs wide batches to be busy
        dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        super().__init__(
            name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings,
            device=device, dtype=dtype, device_map=device_map,
        )
        self.model = model
        # text -> unit vector: a pair chunk repeats the same definitions, so each text is encoded once
        self._vectors: dict[str, np.ndarray] = {}

    def _extra_settings(self) -> dict[str, Any]:
        return {"similarity": "cosine"}

    def _feature_parts(self, max_length: int) -> tuple[Any, Any, int]:
        # the transformer under the pooling: token vectors, not the sentence embedding
        st = self.model
        return st.tokenizer, st[0].auto_model, min(max_length, st.max_seq_length or max_length)

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text (each unique text encoded once)."""
        texts = list(texts)
        if not texts:
            dim = self.model.get_sentence_embedding_dimension() or 0
            return np.zeros((0, dim), dtype=np.float32)
        new = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if new:
            vecs = self._encode(new, progress).float().cpu().numpy()
            if len(self._vectors) + len(new) > 200_000:  # bound memory on huge runs
                self._vectors.clear()
            self._vectors.update(zip(new, vecs))
        return np.stack([self._vectors[t] for t in texts])

    def _encode(self, texts: list[str], progress: bool) -> Any:
        """sentence-transformers' ``encode`` in one call, with probegen's progress bar (counted by a forward
        hook), not its own, whose ``\r`` redraws pile up into one line of a log."""
        def encode() -> Any:
            return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_tensor=True,  # numpy has no bfloat16: convert after .float()
                                     show_progress_bar=False)

        if not progress:
            return encode()
        from ..progress import progress_bar

        bar = progress_bar(total=len(texts), desc=f"embedding with {self.name}", unit="text")

        def count(_module: Any, _args: Any, out: Any) -> None:
            emb = out.get("sentence_embedding") if hasattr(out, "get") else None  # a dict or a BatchEncoding
            if emb is not None:
                bar.update(min(int(emb.shape[0]), len(texts) - bar.n))

        handle = self.model.register_forward_hook(count)
        try:
            vecs = encode()
            bar.update(len(texts) - bar.n)  # a version that bypasses the hook still ends at 100%
            return vecs
        finally:
            handle.remove()
            bar.close()

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        texts = list(dict.fromkeys([q for q, _ in pairs] + [c for _, c in pairs]))
        vecs = self.embed(texts).astype(np.float64)
        row = {t: i for i, t in enumerate(texts)}
        q = vecs[[row[p[0]] for p in pairs]]
        c = vecs[[row[p[1]] for p in pairs]]
        return np.asarray(np.einsum("ij,ij->i", q, c))
