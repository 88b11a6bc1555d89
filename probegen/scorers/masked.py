"""Masked LM scorer: pseudo-log-likelihood of the candidate given the query.

score = sum over candidate tokens i of log P(d_i | query, d_-i): the input is
``[CLS] query candidate [SEP]`` (the model's own special tokens), and one copy per candidate
token has that token masked; all copies of all pairs are batched together. ``reduction="mean"``
divides by the number of candidate tokens.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import torch

from .base import Pair, Scorer, boundary_split
from ._batch import pad, row_batches


class MaskedScorer(Scorer):
    """Pseudo-log-likelihood scorer for masked LMs (BERT, RoBERTa, ...)."""

    kind = "masked"
    query_style = "pattern"
    version = 1
    default_batch_size = 32
    max_batch_tokens = 4096

    def __init__(
        self,
        name: str,
        model: Any,
        tokenizer: Any,
        model_id: str | None = None,
        reduction: str = "sum",
        dtype: str = "float32",
        batch_size: int | None = None,
        cache: Any = None,
        extra_settings: dict[str, Any] | None = None,
    ) -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        super().__init__(name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings)
        if tokenizer.mask_token_id is None:
            raise ValueError(f"{name}: the tokenizer has no mask token, so this is not a masked LM")
        self.model = model.eval()
        self.tok = tokenizer
        self.reduction = reduction
        self.dtype = dtype
        self._max_len = min(int(getattr(tokenizer, "model_max_length", 512) or 512), 512)
        # apply the MLM head only at masked positions when the head is a separate module
        head = getattr(model, "cls", None)
        self._head = head if head is not None else getattr(model, "lm_head", None)
        self._base = model.base_model if self._head is not None else None
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._front, self._back = self._specials()

    def _extra_settings(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "dtype": self.dtype, "method": "pll"}

    def _specials(self) -> tuple[list[int], list[int]]:
        """The special tokens the tokenizer puts before and after a single text (e.g. [CLS], [SEP])."""
        with_sp = self.tok("hello", add_special_tokens=True).input_ids
        inner = self.tok("hello", add_special_tokens=False).input_ids
        for off in range(len(with_sp) - len(inner) + 1):
            if with_sp[off : off + len(inner)] == inner:
                return with_sp[:off], with_sp[off + len(inner) :]
        raise ValueError("cannot locate the tokenizer's special tokens")

    def encode_pair(self, query: str, candidate: str) -> tuple[list[int], int, int]:
        """(input ids with special tokens, start and end of the candidate's tokens)."""
        ctx, cont = boundary_split(query, candidate)
        ctx_ids = self.tok(ctx, add_special_tokens=False).input_ids
        whole = self.tok(ctx + cont, add_special_tokens=False).input_ids
        cont_ids = whole[len(ctx_ids) :]
        if not cont_ids:
            raise ValueError(f"candidate {candidate!r} has no tokens")
        room = self._max_len - len(self._front) - len(self._back) - len(cont_ids)
        ctx_ids = ctx_ids[max(0, len(ctx_ids) - max(room, 0)) :]  # left-truncate long queries
        start = len(self._front) + len(ctx_ids)
        return self._front + ctx_ids + cont_ids + self._back, start, start + len(cont_ids)

    @torch.inference_mode()
    def _masked_logprobs(self, jobs: list[tuple[list[int], list[int]]]) -> list[list[float]]:
        """For each (ids, positions to mask), the log-prob of the original token at each masked
        position when ``positions`` are masked together in one copy."""
        out: list[list[float]] = [[] for _ in jobs]
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][0]))
        for batch in row_batches(order, lambda j: len(jobs[j][0]), self.batch_size, self.max_batch_tokens):
            seqs = []
            for j in batch:
                ids, pos = jobs[j]
                masked = list(ids)
                for p in pos:
                    masked[p] = self.tok.mask_token_id
                seqs.append(masked)
            inp, mask = pad(seqs, self._pad_id, "cpu")
            rows = torch.tensor([r for r, j in enumerate(batch) for _ in jobs[j][1]], dtype=torch.long)
            cols = torch.tensor([p for j in batch for p in jobs[j][1]], dtype=torch.long)
            tgt = torch.tensor([jobs[j][0][p] for j in batch for p in jobs[j][1]], dtype=torch.long)
            if self._head is not None:
                h = self._base(input_ids=inp, attention_mask=mask).last_hidden_state
                logits = self._head(h[rows, cols]).float()
            else:
                logits = self.model(input_ids=inp, attention_mask=mask).logits[rows, cols].float()
            lp = (logits.gather(1, tgt[:, None]).squeeze(1) - torch.logsumexp(logits, -1)).tolist()
            k = 0
            for j in batch:
                n = len(jobs[j][1])
                out[j] = lp[k : k + n]
                k += n
        return out

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        jobs, owner = [], []
        for i, (q, c) in enumerate(pairs):
            ids, s, e = self.encode_pair(q, c)
            for p in range(s, e):  # one copy per candidate token, that token masked
                jobs.append((ids, [p]))
                owner.append(i)
        totals = np.zeros(len(pairs))
        counts = np.zeros(len(pairs))
        for i, lp in zip(owner, self._masked_logprobs(jobs)):
            totals[i] += lp[0]
            counts[i] += 1
        return totals / counts if self.reduction == "mean" else totals

    # ---- SemCor context choice ----------------------------------------------------------------
    def span_logprobs(self, items: Sequence[tuple[Sequence[str], tuple[int, int]]], progress: bool = False) -> np.ndarray:
        """For each (words, (start, end)): the mean log-prob of the word pieces of
        ``words[start:end]`` when all of them are masked together (CoDA21's context criterion)."""
        keyed = [(json.dumps(list(w), ensure_ascii=False), f"{s}:{e}") for w, (s, e) in items]
        values = self._cached(list(dict.fromkeys(keyed)), self._spans_uncached, namespace="span", progress=progress)
        return np.array([values[k] for k in keyed], dtype=np.float64)

    def span_logprob(self, words: Sequence[str], span: tuple[int, int]) -> float:
        """Mean log-prob of the masked pieces of ``words[span[0]:span[1]]`` (see :meth:`span_logprobs`)."""
        return float(self.span_logprobs([(words, span)])[0])

    def _spans_uncached(self, pairs: list[Pair]) -> np.ndarray:
        jobs = []
        for words_json, span in pairs:
            words = json.loads(words_json)
            s, e = (int(x) for x in span.split(":"))
            if not 0 <= s < e <= len(words):
                raise ValueError(f"span {s}:{e} outside a {len(words)}-word sentence")
            enc = self.tok(words, is_split_into_words=True, truncation=True, max_length=self._max_len)
            pos = [p for p, w in enumerate(enc.word_ids()) if w is not None and s <= w < e]
            if not pos:
                raise ValueError(f"span {s}:{e} of {words!r} has no word pieces (truncated?)")
            jobs.append((list(enc.input_ids), pos))
        return np.array([float(np.mean(lp)) for lp in self._masked_logprobs(jobs)], dtype=np.float64)
