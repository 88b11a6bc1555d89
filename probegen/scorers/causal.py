"""Causal LM scorer: log P(candidate | query), with each query prefix encoded once.

Boundary handling follows lm-evaluation-harness: trailing whitespace of the query moves to the
continuation (one space is inserted when neither side has whitespace at the boundary); the model
input is ``enc(context) + enc(context + continuation)[len(enc(context)):]``.

Strategy ``packed`` (default) makes each query and all its candidates ONE row, ``prefix + trie of
candidate tokens``, with a tree attention mask and positions continuing from the prefix: the prefix
runs once, shared leading tokens are shared, nothing is padded per candidate; ``full`` scores every
pair as its own sequence. The LM head and log-softmax run only at scored positions, in float32 chunks
(``bench/bench_causal.py``, ``bench/bench_gpu.py``). ``packed`` is checked against ``full`` once per
loaded model on the first real pairs, within :func:`rounding_tolerance`; a model that fails (e.g. one
that ignores custom 4D masks) is scored with full sequences, logged and recorded in ``stats()["self_check"]``.
Budget, kernel pick and precision check: :class:`~probegen.scorers._batch.LMScorer`.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Sequence, cast

import numpy as np
import torch

from . import _paths
from ._batch import HostBatch, LMScorer, flat_batches, head_plan, pad, row_batches
from .base import Pair, boundary_split

log = logging.getLogger(__name__)

#: ``packed``: each query and all its candidates in one sequence with a tree attention mask;
#: ``full``: every pair as a full sequence
STRATEGIES = ("packed", "full")

# model -> {strategy: self-check record}, keyed weakly: it lives and dies with the runner's loaded model
_CHECKED: "weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]]]" = weakref.WeakKeyDictionary()

Encoded = Sequence[tuple[tuple[int, ...], tuple[int, ...]]]


def rounding_tolerance(dtype: str, n_tokens: int) -> float:
    """Largest |fast - full| difference (nats) of a summed log-prob over ``n_tokens`` that counts as rounding.

    float32: 1e-3 (observed: ~1e-5). Lower precisions: 1e-3 plus 8 machine epsilons per scored token,
    several times the packed-vs-full differences seen in bfloat16 (up to 0.22 nats per pair), far below
    what a broken mask does (nats per token).

    >>> rounding_tolerance("float32", 20)
    0.001
    >>> rounding_tolerance("bfloat16", 10)
    0.626
    >>> rounding_tolerance("int8", 10)
    0.626
    """
    if dtype == "float32":
        return 1e-3
    # int8: dynamic per-batch activation scales, about bfloat16's 8 bits
    eps = 2.0**-7 if dtype == "int8" else float(torch.finfo(getattr(torch, dtype)).eps)
    return round(1e-3 + 8 * eps * n_tokens, 6)


class CausalScorer(LMScorer):
    """log P(candidate | query) under a causal LM; ``reduction`` is ``sum`` (default) or ``mean``."""

    kind = "causal"
    #: token budget of one forward pass (rows x padded length) on CPU; on CUDA sized to the GPU
    max_batch_tokens = 2048
    #: longest packed row (prefix + candidate tokens); more candidates go to further rows
    max_row_tokens = 768
    #: real pairs compared between the fast strategy and full sequences, once per model
    self_check_pairs = 8
    #: real pairs timed per kernel when ``kernel="auto"`` measures them
    pick_pairs = 64
    #: scored positions per LM-head chunk (float32 logits of chunk x vocabulary at a time)
    head_chunk = 512

    def __init__(self, name: str, model: Any, tokenizer: Any, *, strategy: str = "packed", prefix_reuse: bool = True,
                 **options: Any) -> None:
        """``options``: :class:`~probegen.scorers._batch.LMScorer`'s (``model_id``, ``reduction``, ``kernel``, ...)."""
        super().__init__(name, model, tokenizer, ("strategy", strategy, STRATEGIES), **options)
        # how pairs are computed; all give the same scores (up to float rounding), so it is not a setting
        self.strategy = strategy if prefix_reuse else "full"
        self._head = model.get_output_embeddings()
        self._head_w32: torch.Tensor | None = None
        self._base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
        self._softcap = getattr(model.config, "final_logit_softcapping", None)
        self._bos = self._detect_bos()
        self._dummy = next(
            t for t in (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id, 0) if t is not None
        )
        self._max_len = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        self._enc_cache: dict[str, list[int]] = {}
        self._check_record: dict[str, Any] | None = _CHECKED.get(model, {}).get(self.strategy)
        self._checked = self.strategy == "full" or self._check_record is not None
        if self._check_record is not None and not self._check_record["passed"]:
            self.strategy = "full"

    @property
    def prefix_reuse(self) -> bool:
        """Whether query prefixes are computed once per query (False: full sequences)."""
        return self.strategy != "full"

    def _extra_settings(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "boundary": "lm-eval"}

    def budget_method(self) -> str:
        """What besides model, dtype and device sets the memory of a token budget."""
        kernel = "" if self.strategy == "full" or self.kernel == "dense" else f"|{self.kernel}"
        return f"{self.strategy}|rows<={self.max_row_tokens}{kernel}"

    def stats(self) -> dict[str, Any]:
        """As :meth:`LMScorer.stats`, with the strategy and its self-check."""
        return {**super().stats(), "strategy": self.strategy, "kernel": self.kernel if self.strategy == "packed"
                else None, "self_check": self._check_record}

    def _detect_bos(self) -> int | None:
        """The BOS id if the tokenizer prepends one by default (Llama-2 style), else None."""
        bos = self.tok.bos_token_id
        if bos is None:
            return None
        ids = self.tok("hello").input_ids
        return bos if ids and ids[0] == bos else None

    def _enc(self, text: str) -> list[int]:
        ids = self._enc_cache.get(text)
        if ids is None:
            ids = self.tok(text, add_special_tokens=False).input_ids
            if len(self._enc_cache) > 100_000:
                self._enc_cache.clear()
            self._enc_cache[text] = ids
        return ids

    def encode_pair(self, query: str, candidate: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(context token ids, continuation token ids) exactly as they are scored."""
        ctx, cont = boundary_split(query, candidate)
        ctx_ids = self._enc(ctx)
        whole = self._enc(ctx + cont)
        cont_ids = whole[len(ctx_ids) :]
        if not cont_ids:
            raise ValueError(f"candidate {candidate!r} has no tokens")
        prefix = ([self._bos] if self._bos is not None else []) + ctx_ids
        if not prefix:  # nothing to condition the first token on (lm-eval uses EOT here)
            prefix = [self._dummy]
        room = self._max_len - len(cont_ids)
        if len(prefix) > room:  # left-truncate the context, as lm-eval does
            prefix = prefix[len(prefix) - max(room, 1) :]
        return tuple(prefix), tuple(cont_ids)

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """LM-head logits of hidden states (N, H), computed and accumulated in float32 (a half-precision
        head's weights are widened once), with the model's final soft-capping if any."""
        w = self._head.weight
        if w.dtype == torch.float32:
            logits = self._head(hidden.float())
        else:
            if self._head_w32 is None:
                self._head_w32 = w.float()
            bias = getattr(self._head, "bias", None)
            logits = torch.nn.functional.linear(hidden.float(), self._head_w32, None if bias is None else bias.float())
        if self._softcap:
            logits = torch.tanh(logits / self._softcap) * self._softcap
        return cast(torch.Tensor, logits)

    def _logprobs_at(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log P(targets[j]) from hidden states (N, H): the head and log-softmax ``head_chunk`` rows at a time."""
        at = torch.arange(hidden.shape[0])
        plan = head_plan(at, targets.cpu(), hidden.shape[0], self.head_chunk)
        return self._planned_logprobs(hidden, {k: v.to(hidden.device) for k, v in plan.items()}, at.shape[0])

    def _planned_logprobs(self, hidden: torch.Tensor, plan: dict[str, torch.Tensor], m: int) -> torch.Tensor:
        """The ``m`` log-probs of a :func:`~probegen.scorers._batch.head_plan` already on the device."""
        out = torch.empty(m, dtype=torch.float32, device=hidden.device)
        for c, lo in enumerate(range(0, hidden.shape[0], self.head_chunk)):
            logits = self._logits(hidden[lo : lo + self.head_chunk])
            k = plan[f"k{c}"]
            out[plan[f"sel{c}"]] = logits[k, plan[f"t{c}"]] - torch.logsumexp(logits, dim=-1)[k]
        return out

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        encoded = [self.encode_pair(q, c) for q, c in pairs]
        if not self._checked:
            self._self_check(encoded[: self.self_check_pairs])
        if self._kernel_record is None and self.strategy == "packed":
            self._pick_kernel(self._job_pairs, True, lambda: self._measure_kernels(encoded[: self.pick_pairs]))
        self._budget.ensure()
        totals = self._budget.run(lambda: self._run(self.strategy, encoded))
        mean = self.reduction == "mean"
        return np.array([t / len(c) if mean else t for t, (_, c) in zip(totals, encoded)], dtype=np.float64)

    def _run(self, strategy: str, encoded: Encoded, kernel: str | None = None) -> list[float]:
        if strategy == "full":
            return self._full_scores(encoded)
        return self._flex_scores(encoded) if (kernel or self.kernel) == "flex" else self._packed_scores(encoded)

    def _measure_kernels(self, sample: Encoded) -> dict[str, Any]:
        """Time both kernels on ``sample``; flex counts only if it matches full sequences within rounding."""
        check = sample[: self.self_check_pairs]

        def differs() -> str | None:
            diff, tol = self._off_full(check, self._run("packed", check, "flex"))
            return None if np.all(diff <= tol) else "fails the self-check"

        return self._measure(differs, lambda k: self._run("packed", sample, k), len(sample))

    def _off_full(self, encoded: Encoded, fast: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """|``fast`` - full-sequence scores| of ``encoded``, and the dtype's rounding tolerance of each."""
        diff = np.abs(np.array(fast) - np.array(self._full_scores(encoded)))
        return diff, np.array([rounding_tolerance(self.dtype, len(c)) for _, c in encoded])

    def _self_check(self, encoded: Encoded) -> None:
        """Prefix sharing relies on the model honouring custom 4D masks and position ids: compare it once
        per model with full sequences on real pairs, and fall back to them (logged, recorded) if it differs."""
        self._checked = True
        record: dict[str, Any] = {"strategy": self.strategy, "pairs": len(encoded), "dtype": self.dtype}
        try:
            fast = self._run(self.strategy, encoded)
        except Exception as e:  # e.g. an architecture without 4D attention masks
            record.update(passed=False, reason=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        else:
            diff, tol = self._off_full(encoded, fast)
            worst = int(np.argmax(diff / tol))
            record.update(
                passed=bool(np.all(diff <= tol)),
                max_abs_diff=float(f"{diff.max():.3g}"),
                tolerance_at_worst=float(tol[worst]),
                worst_ratio=float(f"{diff[worst] / tol[worst]:.3g}"),
            )
            if not record["passed"]:
                record["reason"] = f"differs from full sequences by {diff[worst]:.3g} > {tol[worst]:.3g} nats"
        if not record["passed"]:
            record["fallback"] = "full"
            log.warning("%s scoring of %s fails its self-check (%s); scoring full sequences instead",
                        self.strategy, self.name, record["reason"])
        _CHECKED.setdefault(self.model, {})[self.strategy] = record
        self._check_record = record
        if not record["passed"]:
            self.strategy = "full"

    def _probe(self, budget: int) -> None:
        """Run the current strategy on a worst-case batch of ``budget`` tokens: long rows, every position scored."""
        toks = self._random_rows(budget, min(self.max_row_tokens, self._max_len))
        self._run(self.strategy, [((t[0],), tuple(t[1:])) for t in toks])

    @torch.inference_mode()
    def _packed_scores(self, encoded: Encoded) -> list[float]:
        """Summed continuation log-probs, each query and its candidates packed into one row (see the module
        doc) run through the dense kernel: rows padded, a (B, 1, L, L) tree mask; the LM head once per position."""
        rows = self._rows(encoded)
        rows.sort(key=lambda r: r.length)
        dtype = self._head.weight.dtype
        parts: list[tuple[list[int], torch.Tensor]] = []
        batches = row_batches(rows, lambda r: r.length, self.batch_size, self.max_batch_tokens)
        for _, t, items in self._feed(batches, self._dense_batch):
            mask4d = torch.zeros(t["allowed"].shape[:1] + (1,) + t["allowed"].shape[1:], dtype=dtype,
                                 device=t["allowed"].device)
            mask4d.masked_fill_(~t["allowed"][:, None], torch.finfo(dtype).min)
            h = self._base(input_ids=t["ids"], attention_mask=mask4d, position_ids=t["pos"], use_cache=False
                           ).last_hidden_state
            parts.append((items, self._planned_logprobs(h[t["rows"], t["cols"]], t, len(items))))
        return _summed(parts, len(encoded))

    def _dense_batch(self, batch: list["_Row"]) -> HostBatch:
        """Host tensors of a padded packed batch (ids, positions, tree mask, scored cells, head plan), items."""
        L = max(r.length for r in batch)
        ids = torch.full((len(batch), L), self._dummy, dtype=torch.long)
        pos = torch.zeros((len(batch), L), dtype=torch.long)
        allowed = torch.zeros((len(batch), L, L), dtype=torch.bool)
        allowed[:, torch.arange(L), torch.arange(L)] = True  # padding attends to itself: no NaN rows
        for b, r in enumerate(batch):
            ids[b, : r.length] = torch.tensor(r.tokens)
            pos[b, : r.length] = torch.tensor(r.positions)
            allowed[b, : r.length, : r.length] = torch.from_numpy(r.mask)
        # every (row, position) that predicts something, once; then each candidate's targets
        at = sorted({(b, p) for b, r in enumerate(batch) for p, _, _ in r.targets})
        index = {bp: k for k, bp in enumerate(at)}
        flat = [(index[(b, p)], tok, item) for b, r in enumerate(batch) for p, tok, item in r.targets]
        plan = head_plan(torch.tensor([f[0] for f in flat]), torch.tensor([f[1] for f in flat]), len(at),
                         self.head_chunk)
        tensors = {"ids": ids, "pos": pos, "allowed": allowed, "rows": torch.tensor([b for b, _ in at]),
                   "cols": torch.tensor([p for _, p in at]), **plan}
        return tensors, [f[2] for f in flat]

    def _rows(self, encoded: Encoded, depth_first: bool = False) -> list["_Row"]:
        """Packed rows of ``encoded``: one prefix and a trie of its candidates each; ``depth_first``
        lays every trie out in depth-first order (candidates sorted), as the flex kernel's mask needs."""
        rows_of: dict[tuple[int, ...], list[int]] = {}
        for i, (p, _) in enumerate(encoded):
            rows_of.setdefault(p, []).append(i)
        rows = []
        for prefix, items in rows_of.items():
            if depth_first:
                items = sorted(items, key=lambda i: encoded[i][1])
            rows.extend(_pack_rows(prefix, items, encoded, self.max_row_tokens))
        return rows

    @torch.inference_mode()
    def _flex_scores(self, encoded: Encoded) -> list[float]:
        """As :meth:`_packed_scores`, through the flex kernel: a batch's rows as one flat sequence without
        padding, the tree mask built on the device (:func:`probegen.scorers._paths.tree_block_mask`)."""
        rows = self._rows(encoded, depth_first=True)
        parts: list[tuple[list[int], torch.Tensor]] = []
        for _, t, items in self._feed(flat_batches(rows, lambda r: r.length, self.max_batch_tokens), self._flex_batch):
            mask = _paths.tree_block_mask(t["end"])
            with _paths.attention(self.model, _paths.register()):
                h = self._base(input_ids=t["ids"][None], attention_mask=mask, position_ids=t["pos"][None],
                               use_cache=False).last_hidden_state[0]
            parts.append((items, self._planned_logprobs(h[t["uniq"]], t, len(items))))
        return _summed(parts, len(encoded))

    def _flex_batch(self, batch: list["_Row"]) -> HostBatch:
        """Host tensors of one flat batch: ids, positions, subtree ends, scored positions (``uniq``), head plan."""
        size = _paths.padded_length(sum(r.length for r in batch), self._in_device.type)
        ids = torch.full((size,), self._dummy, dtype=torch.long)
        pos = torch.zeros(size, dtype=torch.long)
        end = torch.arange(1, size + 1)  # padding sees only itself
        at, tgt, items, start = [], [], [], 0
        for r in batch:
            ids[start : start + r.length] = torch.tensor(r.tokens)
            pos[start : start + r.length] = torch.tensor(r.positions)
            end[start : start + r.length] = torch.tensor(r.ends()) + start
            for p, tok, item in r.targets:
                at.append(start + p)
                tgt.append(tok)
                items.append(item)
            start += r.length
        uniq, k = torch.unique(torch.tensor(at), return_inverse=True)
        plan = head_plan(k, torch.tensor(tgt), uniq.shape[0], self.head_chunk)
        return {"ids": ids, "pos": pos, "end": end, "uniq": uniq, **plan}, items

    def _full_scores(self, encoded: Encoded) -> list[float]:
        """Summed continuation log-probs from full sequences (no prefix reuse): the reference path."""
        return self._sequence_sums([list(p) + list(c) for p, c in encoded], [len(p) for p, _ in encoded])

    def sequence_logprob(self, texts: Sequence[str]) -> np.ndarray:
        """Total log-prob of each whole text (first token conditioned on BOS if used, else unscored)."""
        seqs = [([self._bos] if self._bos is not None else []) + self._enc(t) for t in texts]
        return np.array(self._sequence_sums(seqs, [1] * len(seqs)), dtype=np.float64)

    @torch.inference_mode()
    def _sequence_sums(self, seqs: list[list[int]], first: list[int]) -> list[float]:
        """Summed log-probs of the tokens ``seqs[i][first[i]:]``, each sequence one padded row (0.0: none)."""
        totals = [0.0] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        for batch in row_batches(order, lambda i: len(seqs[i]) - 1, self.batch_size, self.max_batch_tokens):
            ids, mask = pad([seqs[i][:-1] for i in batch], self._dummy, self._in_device)
            h = self._base(input_ids=ids, attention_mask=mask).last_hidden_state
            sel = torch.zeros(mask.shape, dtype=torch.bool)  # the positions predicting scored tokens
            for r, i in enumerate(batch):
                sel[r, first[i] - 1 : len(seqs[i]) - 1] = True
            tgt, _ = pad([seqs[i][1:] for i in batch], 0, "cpu")
            for i, v in zip(batch, _row_sums(self._logprobs_at(h[sel.to(h.device)], tgt[sel]), sel)):
                totals[i] = v
        return totals


def _summed(parts: list[tuple[list[int], torch.Tensor]], n: int) -> list[float]:
    """Per item, the sum of its targets' log-probs over the batches' ``(items, log-probs)``: one copy
    off the device at the end (not one sync per batch), added in the batches' order."""
    totals = [0.0] * n
    if parts:
        values = torch.cat([lp for _, lp in parts]).tolist()
        for item, v in zip((i for items, _ in parts for i in items), values):
            totals[item] += v
    return totals


def _row_sums(logprobs: torch.Tensor, sel: torch.Tensor) -> list[float]:
    """Per-row sums of ``logprobs``, the values at the True cells of ``sel`` (row-major)."""
    sel = sel.cpu()
    rows = torch.arange(sel.shape[0])[:, None].expand_as(sel)[sel]
    sums = torch.zeros(sel.shape[0], dtype=torch.float64).index_add_(0, rows, logprobs.double().cpu())
    return sums.tolist()


class _Row:
    """One packed sequence: a prefix followed by a trie of candidate input tokens."""

    __slots__ = ("tokens", "positions", "parents", "targets", "n_prefix")

    def __init__(self, prefix: tuple[int, ...]) -> None:
        self.tokens = list(prefix)
        self.positions = list(range(len(prefix)))
        self.parents: list[int] = []  # per trie node: index of its parent row position
        self.targets: list[tuple[int, int, int]] = []  # (position predicting, target token, item)
        self.n_prefix = len(prefix)

    @property
    def length(self) -> int:
        return len(self.tokens)

    @property
    def mask(self) -> np.ndarray:
        """The (L, L) tree mask of the dense kernel: a node sees the prefix, its ancestors and itself."""
        n_prefix, L = self.n_prefix, self.length
        m = np.tril(np.ones((L, L), dtype=bool))
        m[n_prefix:, n_prefix:] = False
        for k, parent in enumerate(self.parents):
            node = n_prefix + k
            if parent >= n_prefix:
                m[node, n_prefix:node] = m[parent, n_prefix:node]
            m[node, node] = True
        return m

    def ends(self) -> list[int]:
        """Per position, the exclusive end of its subtree (prefix positions: the row's end): with the
        trie in depth-first order, ``kv`` is visible from ``q`` iff ``kv <= q < ends[kv]``."""
        n_prefix, L = self.n_prefix, self.length
        end = [L] * n_prefix + list(range(n_prefix + 1, L + 1))
        for k in range(len(self.parents) - 1, -1, -1):
            parent = self.parents[k]
            if parent >= n_prefix:
                end[parent] = max(end[parent], end[n_prefix + k])
        return end


def _pack_rows(prefix: tuple[int, ...], items: list[int], encoded: Encoded, max_tokens: int) -> list[_Row]:
    """Pack the candidates (``items``) of one prefix into rows of at most ``max_tokens`` tokens."""
    n_prefix = len(prefix)
    rows: list[_Row] = []
    row: _Row | None = None
    children: dict[tuple[int, int], int] = {}
    for item in items:
        cont = encoded[item][1]
        if row is None or (row.length + len(cont) - 1 > max_tokens and row.targets):
            row = _Row(prefix)
            rows.append(row)
            children = {}
        parent = n_prefix - 1  # the last prefix position predicts the first candidate token
        row.targets.append((parent, cont[0], item))
        for t in range(len(cont) - 1):
            key = (parent, cont[t])
            node = children.get(key)
            if node is None:
                node = row.length
                children[key] = node
                row.tokens.append(cont[t])
                row.positions.append(row.positions[parent] + 1)
                row.parents.append(parent)
            row.targets.append((node, cont[t + 1], item))
            parent = node
    return rows
