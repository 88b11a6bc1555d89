"""Masked LM scorer: pseudo-log-likelihood of the candidate given the query.

``pll="original"`` (default; Salazar et al. 2020, as in the CoDA21 paper): score = sum over
candidate tokens i of log P(d_i | query, d_-i). The input is ``[CLS] query candidate [SEP]`` (the
model's own special tokens), and one copy per candidate token has that token masked.

``pll="word-l2r"`` (PLL-word-l2r, Kauf & Ivanova 2023; minicons ``PLL_metric="within_word_l2r"``):
the copy scoring token i also masks the later tokens of the same word, so a word split into
pieces cannot be read off its own later pieces (the original PLL inflates scores of rare,
multi-piece words). Words are the tokenizer's pre-tokenisation words (``word_ids()``).

All copies of all pairs are batched together by a token budget (a CPU default; on CUDA the
largest that fits, see :mod:`probegen.scorers._budget`), and the MLM head runs only at the
scored positions. ``reduction="mean"`` divides by the number of candidate tokens.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import torch

from ..core import PairScorer
from . import _budget
from ._batch import pad, row_batches
from .base import Pair, Scorer, boundary_split
from .spans import SpanFeatures

#: PLL variants: option name -> the ``method`` recorded in settings (and cache keys)
PLL_METHODS = {"original": "pll", "word-l2r": "pll-word-l2r"}

#: (input ids, positions replaced by [MASK], positions whose original token is scored)
Job = tuple[list[int], list[int], list[int]]


class MaskedScorer(SpanFeatures, Scorer):
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
        batch_size: int | None = None,
        cache: Any = None,
        pll: str = "original",
        max_batch_tokens: int | str | None = None,
        device_map: str | None = None,
        extra_settings: dict[str, Any] | None = None,
    ) -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        if pll not in PLL_METHODS:
            raise ValueError(f"pll must be one of {', '.join(PLL_METHODS)}, not {pll!r}")
        self._in_device = model.get_input_embeddings().weight.device
        super().__init__(
            name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings,
            device=str(self._in_device), dtype=str(model.dtype).removeprefix("torch."), device_map=device_map,
        )
        if tokenizer.mask_token_id is None:
            raise ValueError(f"{name}: the tokenizer has no mask token, so this is not a masked LM")
        self.model = model.eval()
        self.tok = tokenizer
        self.reduction = reduction
        self.pll = pll
        self._fixed_rows = batch_size is not None
        self._max_len = min(int(getattr(tokenizer, "model_max_length", 512) or 512), 512)
        # apply the MLM head only at masked positions when the head is a separate module
        head = getattr(model, "cls", None)
        self._head: Any = head if head is not None else getattr(model, "lm_head", None)
        self._base: Any = model.base_model if self._head is not None else None
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._front, self._back = self._specials()
        self._budget = _budget.Budget(self, max_batch_tokens)

    def _extra_settings(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "method": PLL_METHODS[self.pll]}

    def _feature_parts(self, max_length: int) -> tuple[Any, Any, int]:
        return self.tok, self.model, max_length

    def budget_method(self) -> str:
        """What besides model, dtype and device sets the memory of a token budget."""
        return f"{self.pll}|len<={self._max_len}"

    def stats(self) -> dict[str, Any]:
        """Work counters, where the scores ran and the batch budget."""
        return {**super().stats(), **self._budget.stats()}

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
        self._budget.ensure()
        return self._budget.run(lambda: self._run_jobs(jobs))

    @torch.inference_mode()
    def _run_jobs(self, jobs: list[Job]) -> list[list[float]]:
        out: list[list[float]] = [[] for _ in jobs]
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][0]))
        device = self._in_device
        for batch in row_batches(order, lambda j: len(jobs[j][0]), self.batch_size, self.max_batch_tokens):
            seqs = []
            for j in batch:
                ids, masked_at, _ = jobs[j]
                masked = list(ids)
                for p in masked_at:
                    masked[p] = self.tok.mask_token_id
                seqs.append(masked)
            inp, mask = pad(seqs, self._pad_id, device)
            rows = torch.tensor([r for r, j in enumerate(batch) for _ in jobs[j][2]], dtype=torch.long)
            cols = torch.tensor([p for j in batch for p in jobs[j][2]], dtype=torch.long)
            tgt = torch.tensor([jobs[j][0][p] for j in batch for p in jobs[j][2]], dtype=torch.long)
            if self._head is not None:
                h = self._base(input_ids=inp, attention_mask=mask).last_hidden_state
                logits = self._head(h[rows.to(h.device), cols.to(h.device)]).float()
            else:
                logits = self.model(input_ids=inp, attention_mask=mask).logits
                logits = logits[rows.to(logits.device), cols.to(logits.device)].float()
            tgt = tgt.to(logits.device)
            lp = (logits.gather(1, tgt[:, None]).squeeze(1) - torch.logsumexp(logits, -1)).tolist()
            k = 0
            for j in batch:
                n = len(jobs[j][2])
                out[j] = lp[k : k + n]
                k += n
        return out

    def _probe(self, budget: int) -> None:
        """Score a worst-case synthetic batch of ``budget`` tokens: rows of the longest input."""
        length = self._max_len
        vocab = int(self.model.config.vocab_size)
        n = max(1, budget // length)
        toks = torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(0)).tolist()
        self._run_jobs([(t, [length // 2], [length // 2]) for t in toks])

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

    # ---- SemCor context choice ----------------------------------------------------------------
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
        """Mean span log-probs of unique (words JSON, ``"start:end"``) pairs (see
        :meth:`MaskedScorer.span_logprobs`)."""
        s = self.scorer
        return s._cached(list(dict.fromkeys(pairs)), s._spans_uncached, namespace="span", progress=progress)
