"""Masked LM scorer: pseudo-log-likelihood of the candidate given the query.

``pll="original"`` (default; Salazar et al. 2020, as in the CoDA21 paper): the sum over candidate
tokens i of log P(d_i | query, d_-i), the input ``[CLS] query candidate [SEP]`` (the model's own
special tokens) copied once per candidate token with that token masked. ``pll="word-l2r"``
(Kauf & Ivanova 2023; minicons ``within_word_l2r``) also masks the later tokens of the same word
(the tokenizer's ``word_ids()``), so a multi-piece word cannot be read off its own later pieces.
All copies of all pairs are batched together, the MLM head runs only at the scored positions, and
``reduction="mean"`` divides by the number of candidate tokens. Budget, attention kernel (``flex``:
each copy attending only to itself in one flat sequence) and precision check:
:class:`~probegen.scorers._batch.LMScorer`.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import torch

from ..core import PairScorer
from . import _paths
from ._batch import HostBatch, LMScorer, flat_batches, pad, row_batches
from .base import Pair, boundary_split

#: PLL variants: option name -> the ``method`` recorded in settings (and cache keys)
PLL_METHODS = {"original": "pll", "word-l2r": "pll-word-l2r"}

#: (input ids, positions replaced by [MASK], positions whose original token is scored)
Job = tuple[list[int], list[int], list[int]]


class MaskedScorer(LMScorer):
    """Pseudo-log-likelihood scorer for masked LMs (BERT, RoBERTa, ...)."""

    kind = "masked"
    max_batch_tokens = 4096
    _runs, _unit = "masked copies", "copies"

    def __init__(self, name: str, model: Any, tokenizer: Any, *, pll: str = "original", **options: Any) -> None:
        """``options``: :class:`~probegen.scorers._batch.LMScorer`'s (``model_id``, ``reduction``, ``kernel``, ...)."""
        # the MLM head applied only at masked positions, when it is a separate module
        head = getattr(model, "cls", None)
        self._head: Any = head if head is not None else getattr(model, "lm_head", None)
        self._base: Any = model.base_model if self._head is not None else None
        emb: Any = getattr(self._base, "embeddings", None)
        super().__init__(name, model, tokenizer, ("pll", pll, tuple(PLL_METHODS)),
                         can_flex=self._head is not None and emb is not None, **options)
        if tokenizer.mask_token_id is None:
            raise ValueError(f"{name}: the tokenizer has no mask token, so this is not a masked LM")
        self.pll = pll
        self._max_len = min(int(getattr(tokenizer, "model_max_length", 512) or 512), 512)
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._front, self._back = self._specials()
        # RoBERTa-style embeddings count positions from padding_idx + 1
        pad_idx = getattr(emb, "padding_idx", None)
        self._pos_offset = int(pad_idx) + 1 if pad_idx is not None else 0

    def _extra_settings(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "method": PLL_METHODS[self.pll]}

    def budget_method(self) -> str:
        """What besides model, dtype and device sets the memory of a token budget."""
        return f"{self.pll}|len<={self._max_len}" + ("|flex" if self.kernel == "flex" else "")

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
        ids, start, end, _ = self._encode(query, candidate)
        return ids, start, end

    def _encode(self, query: str, candidate: str) -> tuple[list[int], int, int, list[int | None]]:
        """:meth:`encode_pair` plus the word index of each candidate token."""
        ctx, cont = boundary_split(query, candidate)
        ctx_ids = self.tok(ctx, add_special_tokens=False).input_ids
        enc = self.tok(ctx + cont, add_special_tokens=False)
        whole = enc.input_ids
        cont_ids = whole[len(ctx_ids) :]
        words = enc.word_ids()[len(ctx_ids) :]
        if not cont_ids:
            raise ValueError(f"candidate {candidate!r} has no tokens")
        room = self._max_len - len(self._front) - len(self._back) - len(cont_ids)
        ctx_ids = ctx_ids[max(0, len(ctx_ids) - max(room, 0)) :]  # left-truncate long queries
        start = len(self._front) + len(ctx_ids)
        return self._front + ctx_ids + cont_ids + self._back, start, start + len(cont_ids), words

    def _pll_jobs(self, query: str, candidate: str) -> list[Job]:
        """One masked copy per candidate token: that token masked (and, for ``word-l2r``, the
        later tokens of its word), its original token scored."""
        ids, start, end, words = self._encode(query, candidate)
        jobs = []
        for p in range(start, end):
            masked = [p]
            if self.pll == "word-l2r" and words[p - start] is not None:
                masked += [q for q in range(p + 1, end) if words[q - start] == words[p - start]]
            jobs.append((ids, masked, [p]))
        return jobs

    def _masked_logprobs(self, jobs: list[Job]) -> list[list[float]]:
        """For each (ids, masked positions, scored positions), the log-prob of the original token
        at each scored position when the masked positions are masked together in one copy."""
        if self._kernel_record is None:
            self._pick_kernel(len(jobs), self._head is not None, lambda: self._measure_kernels(jobs[:256]))
        self._budget.ensure()
        return self._budget.run(lambda: self._run_jobs(jobs))

    def _measure_kernels(self, sample: list[Job]) -> dict[str, Any]:
        """Time both kernels on ``sample``; flex counts only if it matches dense within float rounding."""

        def differs() -> str | None:
            fast = np.concatenate(self._run_jobs(sample[:16], "flex"))
            slow = np.concatenate(self._run_jobs(sample[:16], "dense"))
            return None if np.allclose(fast, slow, atol=_tolerance(self.dtype), rtol=0) else "differs from dense"

        return self._measure(differs, lambda k: self._run_jobs(sample, k), len(sample))

    def _run_jobs(self, jobs: list[Job], kernel: str | None = None) -> list[list[float]]:
        return self._flex_jobs(jobs) if (kernel or self.kernel) == "flex" else self._dense_jobs(jobs)

    def _masked_ids(self, job: Job) -> list[int]:
        return [self.tok.mask_token_id if p in job[1] else t for p, t in enumerate(job[0])]

    @torch.inference_mode()
    def _flex_jobs(self, jobs: list[Job]) -> list[list[float]]:
        """As :meth:`_dense_jobs`, a batch's copies as one flat sequence without padding, each copy attending
        only to itself (a segment id per token), its positions restarting at the model's first position."""
        parts: list[tuple[list[int], torch.Tensor]] = []
        batches = flat_batches(list(range(len(jobs))), lambda j: len(jobs[j][0]), self.max_batch_tokens)
        for batch, t, _ in self._feed(batches, lambda batch: self._flex_batch(jobs, batch)):
            mask = _paths.segment_block_mask(t["seg"])
            with _paths.attention(self.model, _paths.register()):
                h = self._base(input_ids=t["ids"][None], attention_mask=mask, position_ids=t["pos"][None],
                               token_type_ids=torch.zeros_like(t["ids"])[None]).last_hidden_state[0]
            logits = self._head(h[t["at"]]).float()
            parts.append((batch, logits.gather(1, t["tgt"][:, None]).squeeze(1) - torch.logsumexp(logits, -1)))
        return _split(parts, jobs)

    def _flex_batch(self, jobs: list[Job], batch: list[int]) -> HostBatch:
        """Host tensors of one flat batch of copies: ids, positions, segment ids, scored positions and tokens."""
        size = _paths.padded_length(sum(len(jobs[j][0]) for j in batch), self._in_device.type)
        ids = torch.full((size,), self._pad_id, dtype=torch.long)
        pos = torch.full((size,), self._pos_offset, dtype=torch.long)
        seg = torch.arange(size) + len(batch)  # padding: a segment of its own
        at: list[int] = []
        tgt: list[int] = []
        start = 0
        for s, j in enumerate(batch):
            length = len(jobs[j][0])
            ids[start : start + length] = torch.tensor(self._masked_ids(jobs[j]))
            pos[start : start + length] = torch.arange(length) + self._pos_offset
            seg[start : start + length] = s
            at.extend(start + p for p in jobs[j][2])
            tgt.extend(jobs[j][0][p] for p in jobs[j][2])
            start += length
        return {"ids": ids, "pos": pos, "seg": seg, "at": torch.tensor(at), "tgt": torch.tensor(tgt)}, None

    @torch.inference_mode()
    def _dense_jobs(self, jobs: list[Job]) -> list[list[float]]:
        parts: list[tuple[list[int], torch.Tensor]] = []
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][0]))
        batches = row_batches(order, lambda j: len(jobs[j][0]), self.batch_size, self.max_batch_tokens)
        for batch, t, _ in self._feed(batches, lambda batch: self._dense_batch(jobs, batch)):
            if self._head is not None:
                h = self._base(input_ids=t["ids"], attention_mask=t["mask"]).last_hidden_state
                logits = self._head(h[t["rows"], t["cols"]]).float()
            else:
                logits = self.model(input_ids=t["ids"], attention_mask=t["mask"]).logits
                logits = logits[t["rows"], t["cols"]].float()
            parts.append((batch, logits.gather(1, t["tgt"][:, None]).squeeze(1) - torch.logsumexp(logits, -1)))
        return _split(parts, jobs)

    def _dense_batch(self, jobs: list[Job], batch: list[int]) -> HostBatch:
        """Host tensors of one padded batch of copies: ids, mask, the scored (row, column) cells and tokens."""
        ids, mask = pad([self._masked_ids(jobs[j]) for j in batch], self._pad_id, "cpu")
        rows = torch.tensor([r for r, j in enumerate(batch) for _ in jobs[j][2]], dtype=torch.long)
        cols = torch.tensor([p for j in batch for p in jobs[j][2]], dtype=torch.long)
        tgt = torch.tensor([jobs[j][0][p] for j in batch for p in jobs[j][2]], dtype=torch.long)
        return {"ids": ids, "mask": mask, "rows": rows, "cols": cols, "tgt": tgt}, None

    def _probe(self, budget: int) -> None:
        """Score a worst-case synthetic batch of ``budget`` tokens: rows of the longest input."""
        length = self._max_len
        self._run_jobs([(t, [length // 2], [length // 2]) for t in self._random_rows(budget, length)])

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        jobs: list[Job] = []
        owner: list[int] = []
        for i, (q, c) in enumerate(pairs):
            mine = self._pll_jobs(q, c)
            jobs.extend(mine)
            owner.extend([i] * len(mine))
        totals = np.zeros(len(pairs))
        counts = np.zeros(len(pairs))
        for i, lp in zip(owner, self._masked_logprobs(jobs)):
            totals[i] += lp[0]
            counts[i] += 1
        return totals / counts if self.reduction == "mean" else totals

    def span_logprobs(self, items: Sequence[tuple[Sequence[str], tuple[int, int]]],
                      progress: bool = False) -> np.ndarray:
        """For each (words, (start, end)): the mean log-prob of the word pieces of
        ``words[start:end]`` when all of them are masked together (CoDA21's context criterion)."""
        keyed = [(json.dumps(list(w), ensure_ascii=False), f"{s}:{e}") for w, (s, e) in items]
        values = self.span_requests().score_pairs(keyed, progress=progress)
        return np.array([values[k] for k in keyed], dtype=np.float64)

    def span_requests(self) -> "SpanRequests":
        """This criterion as (query, candidate) requests for :mod:`probegen.core`: query = the
        words as JSON, candidate = ``"start:end"`` (cached apart from ordinary scores)."""
        return SpanRequests(self)

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
            jobs.append((list(enc.input_ids), pos, pos))
        return np.array([float(np.mean(lp)) for lp in self._masked_logprobs(jobs)], dtype=np.float64)


class SpanRequests(PairScorer):
    """A masked scorer's span criterion behind the core's pair protocol (:class:`~probegen.core.PairScorer`)."""

    def __init__(self, scorer: MaskedScorer) -> None:
        self.scorer = scorer
        self.name = scorer.name
        self.kind = scorer.kind

    def score_pairs(self, pairs: Sequence[Pair], progress: bool = False) -> dict[Pair, float]:
        """Mean span log-probs of unique (words JSON, ``"start:end"``) pairs (:meth:`MaskedScorer.span_logprobs`)."""
        s = self.scorer
        return s._cached(list(dict.fromkeys(pairs)), s._spans_uncached, namespace="span", progress=progress)


def _split(parts: list[tuple[list[int], torch.Tensor]], jobs: list[Job]) -> list[list[float]]:
    """Per job, its scored positions' log-probs from the batches' ``(jobs, log-probs)``: one copy off the
    device at the end, not one sync per batch."""
    out: list[list[float]] = [[] for _ in jobs]
    values = torch.cat([lp for _, lp in parts]).tolist() if parts else []
    k = 0
    for j in (j for batch, _ in parts for j in batch):
        n = len(jobs[j][2])
        out[j] = values[k : k + n]
        k += n
    return out


def _tolerance(dtype: str) -> float:
    """Largest |flex - dense| difference (nats) of one masked token's log-prob that counts as rounding.

    >>> _tolerance("float32")
    0.001
    """
    return 1e-3 if dtype == "float32" else 0.1
