"""Causal LM scorer: log P(candidate | query), with each query prefix encoded once.

Boundary handling follows lm-evaluation-harness: trailing whitespace of the query moves to the
start of the continuation (and one space is inserted when neither side has whitespace at the
boundary); the model input is ``enc(context) + enc(context + continuation)[len(enc(context)):]``.

Where the speed comes from (measured by ``bench/bench_causal.py`` and ``bench/bench_gpu.py``):

- **LM head only at scored positions.** The head (hidden x vocabulary: the largest matrix of a
  small LM) and the log-softmax run only at the positions whose next token is scored, never over
  the context, in every strategy.
- **Prefix reuse** (strategy ``packed``, the default): each query and all its candidates form ONE
  sequence, ``prefix + trie of candidate tokens``, with a tree attention mask (a candidate token
  sees the prefix and its own earlier tokens) and positions continuing from the prefix. The
  prefix runs once, candidates sharing leading tokens share them, there is no per-candidate
  padding, and rows of many queries are batched. ``full`` scores every pair as its own sequence.
  (A third strategy, a KV cache of each prefix expanded over its candidates, was the slowest on
  both CPU and an H100 and was removed.)

``packed`` equals the full-sequence score up to float rounding: this is tested, and checked once
per loaded model at run time on the first real pairs scored, with a tolerance derived from the
dtype (:func:`rounding_tolerance`; bfloat16 rounding alone moves a summed log-prob by tenths of a
nat). A model that fails the check (e.g. one that ignores custom 4D masks) is scored with full
sequences; the fallback is logged as a warning and recorded in ``stats()["self_check"]``.

Batches are cut by a token budget (``max_batch_tokens``): a fixed default on CPU; on CUDA the
largest that fits, found once per model and GPU (:mod:`probegen.scorers._budget`).

Packed rows run through one of two attention kernels (``kernel``, :mod:`probegen.scorers._paths`):
``dense`` (rows padded to the batch's longest, a ``(B, 1, L, L)`` mask) or ``flex`` (the rows of
a batch concatenated into one flat sequence without padding, the tree mask a FlexAttention
``BlockMask`` built on the device from one per-token vector). ``auto`` (the default) measures
both once on a large job, after the faster one passes the self-check, and remembers the pick
per model, dtype, device and torch; the log and ``stats()["kernel"]`` say which ran. The LM head
and log-softmax run in float32 over chunks of the scored positions.

A precision below float32 on the CPU (``int8``, ``bfloat16``, ``float16``) is validated before a
job is scored (:mod:`probegen.scorers._precision`): the first units' choices against float32.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Callable, Iterator, Sequence, cast

import numpy as np
import torch

from . import _budget, _paths, _precision
from ._batch import HostBatch, fed, flat_batches, head_plan, pad, row_batches
from .base import Pair, Scorer, boundary_split
from .spans import SpanFeatures

log = logging.getLogger(__name__)

#: ``packed``: each query and all its candidates in one sequence with a tree attention mask
#: (candidates sharing leading tokens share them); ``full``: every pair as a full sequence.
STRATEGIES = ("packed", "full")

# model -> {strategy: self-check record} (checked once per loaded model). It stays global: keyed weakly by the
# model object, it lives and dies with the runner's loaded model (a second runner's model is checked afresh)
_CHECKED: "weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]]]" = weakref.WeakKeyDictionary()
# model -> the check of its lower precision against float32 (once per loaded model)
_PRECISION: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()

Encoded = Sequence[tuple[tuple[int, ...], tuple[int, ...]]]


def rounding_tolerance(dtype: str, n_tokens: int) -> float:
    """Largest |fast - full| difference (nats) of a summed log-prob over ``n_tokens`` that counts as rounding.

    float32: 1e-3 (observed differences are ~1e-5). Half precision: 1e-3 plus 8 machine epsilons
    per scored token (bfloat16: 0.0625 nats per token, float16: 0.0078), several times the
    differences seen between packed and full sequences in bfloat16 (up to 0.22 nats per pair),
    yet far below what a broken mask does (several nats per token of a trained model).

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


class CausalScorer(SpanFeatures, Scorer):
    """log P(candidate | query) under a causal LM; ``reduction`` is ``sum`` (default) or ``mean``."""

    kind = "causal"
    query_style = "pattern"
    version = 1
    default_batch_size = 32
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
    #: pack batches in a worker thread one batch ahead (None: on CUDA only)
    feed_worker: bool | None = None

    def __init__(
        self,
        name: str,
        model: Any,
        tokenizer: Any,
        model_id: str | None = None,
        reduction: str = "sum",
        batch_size: int | None = None,
        cache: Any = None,
        prefix_reuse: bool = True,
        strategy: str = "packed",
        max_batch_tokens: int | str | None = None,
        device_map: str | None = None,
        extra_settings: dict[str, Any] | None = None,
        kernel: str = "auto",
        precision: str | None = None,
        reference: Any = None,
    ) -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        if kernel not in _paths.KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(_paths.KERNELS)}, not {kernel!r}")
        self._in_device = model.get_input_embeddings().weight.device
        super().__init__(
            name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings,
            device=str(self._in_device), dtype=precision or str(model.dtype).removeprefix("torch."),
            device_map=device_map,
        )
        self.model = model.eval()
        self.tok = tokenizer
        self.reduction = reduction
        # how pairs are computed; all give the same scores (up to float rounding), so it is not a setting
        self.strategy = strategy if prefix_reuse else "full"
        self._head = model.get_output_embeddings()
        self._base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
        self._softcap = getattr(model.config, "final_logit_softcapping", None)
        self._bos = self._detect_bos()
        self._dummy = next(
            t for t in (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id, 0) if t is not None
        )
        self._max_len = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        self._enc_cache: dict[str, list[int]] = {}
        self._fixed_rows = batch_size is not None
        self._budget = _budget.Budget(self, max_batch_tokens)
        self._check_record: dict[str, Any] | None = None
        self._checked = self.strategy == "full"
        self._init_paths(kernel, reference)
        known = _CHECKED.get(model, {}).get(self.strategy)
        if known is not None:
            self._checked = True
            self._check_record = known
            if not known["passed"]:
                self.strategy = "full"

    def _init_paths(self, kernel: str, reference: Any) -> None:
        """The attention kernel (``auto``: picked on the first large job) and the pending check of a
        lower precision against float32 (``reference``: a float32 scorer factory; None: nothing to check)."""
        self.kernel = "dense" if kernel == "auto" else kernel
        self._kernel_record: dict[str, Any] | None = None if kernel == "auto" else {"kernel": kernel, "how": "user"}
        self._job_pairs = 0
        self._head_w32: torch.Tensor | None = None
        self._reference = reference
        self._precision_record: dict[str, Any] | None = _PRECISION.get(self.model)

    def _feature_parts(self, max_length: int) -> tuple[Any, Any, int]:
        return self.tok, self.model, max_length

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
        """Work counters, where and how the scores ran: strategy, attention kernel, self-check, batch
        budget, and the check of a lower precision."""
        return {
            **super().stats(),
            "strategy": self.strategy,
            "kernel": self.kernel if self.strategy == "packed" else None,
            "kernel_pick": self._kernel_record,
            "self_check": self._check_record,
            "precision_check": self._precision_record,
            **self._budget.stats(),
        }

    # ---- tokenisation -------------------------------------------------------------------------
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

    # ---- scoring --------------------------------------------------------------------------------
    def _reduce(self, total: float, n: int) -> float:
        return total / n if self.reduction == "mean" else total

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
        """log P(target) from hidden states (N, H): LM head only where needed, no full log_softmax copy."""
        return self._position_logprobs(hidden, torch.arange(hidden.shape[0]), targets)

    def _position_logprobs(self, hidden: torch.Tensor, at: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log P(targets[j]) at position ``at[j]`` of hidden states (N, H), with the head and the
        log-softmax run once per position, ``head_chunk`` positions at a time (float32)."""
        plan = head_plan(at.cpu(), targets.cpu(), hidden.shape[0], self.head_chunk)
        return self._planned_logprobs(hidden, {k: v.to(hidden.device) for k, v in plan.items()}, at.shape[0])

    def _planned_logprobs(self, hidden: torch.Tensor, plan: dict[str, torch.Tensor], m: int) -> torch.Tensor:
        """The ``m`` log-probs of a :func:`~probegen.scorers._batch.head_plan` already on the device."""
        out = torch.empty(m, dtype=torch.float32, device=hidden.device)
        for c, lo in enumerate(range(0, hidden.shape[0], self.head_chunk)):
            logits = self._logits(hidden[lo : lo + self.head_chunk])
            k = plan[f"k{c}"]
            out[plan[f"sel{c}"]] = logits[k, plan[f"t{c}"]] - torch.logsumexp(logits, dim=-1)[k]
        return out

    def _feed(self, batches: list[Any], prepare: Callable[[Any], HostBatch]) -> Iterator[tuple[Any, Any, Any]]:
        """``batches`` with their tensors on the device; packed one batch ahead in a worker thread on CUDA
        (``feed_worker``; None: only there, where the host's packing would otherwise stall the device)."""
        worker = self._in_device.type == "cuda" if self.feed_worker is None else self.feed_worker
        return fed(batches, prepare, self._in_device, worker)

    def score_pairs(self, pairs: Sequence[Pair], progress: bool = False) -> dict[Pair, float]:
        """As :meth:`Scorer.score_pairs`; a lower precision is first checked against float32 on the job's
        first units (once per model), and the job's size tells whether measuring the kernels pays."""
        self._job_pairs = len(pairs)
        if self._reference is not None and self._precision_record is None:
            self._check_precision(list(pairs))
        return super().score_pairs(pairs, progress=progress)

    def _check_precision(self, pairs: list[Pair]) -> None:
        """Refuse this scorer's precision if its choices disagree with float32's too often."""
        record = _precision.check(self.dtype, pairs, self._score_uncached, self._reference)
        record["cpu_bf16"] = _precision.cpu_has_bf16()
        self._reference = None  # the float32 copy is no longer needed
        self._precision_record = _PRECISION[self.model] = record
        if record.get("checked"):
            log.info("%s in %s: its choices agree with float32 on %d of %d units (max |diff| %.3g nats)",
                     self.name, self.dtype, record["agree"], record["units"], record["max_abs_diff"])

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        encoded = [self.encode_pair(q, c) for q, c in pairs]
        if not self._checked:
            self._self_check(encoded[: self.self_check_pairs])
        if self._kernel_record is None and self.strategy == "packed":
            self._pick_kernel(encoded)
        self._budget.ensure()
        totals = self._budget.run(lambda: self._run(self.strategy, encoded))
        return np.array([self._reduce(t, len(c)) for t, (_, c) in zip(totals, encoded)], dtype=np.float64)

    def _run(self, strategy: str, encoded: Encoded, kernel: str | None = None) -> list[float]:
        if strategy == "full":
            return self._full_scores(encoded)
        return self._flex_scores(encoded) if (kernel or self.kernel) == "flex" else self._packed_scores(encoded)

    def _pick_key(self) -> str:
        import json

        return json.dumps([self.model_id, self.source_settings, self.kind, self.dtype, _budget.device_key(self.device),
                           torch.__version__, "kernel"], sort_keys=True)

    def _pick_kernel(self, encoded: Encoded) -> None:
        """``kernel="auto"``: the remembered kernel, else (on a job large enough to pay for it) the faster
        of ``dense`` and ``flex`` on real pairs, once flex matches full sequences; small jobs run ``dense``."""
        key = self._pick_key()
        known = _paths.remembered(key)
        if known in _paths.KERNELS[1:]:
            record: dict[str, Any] = {"kernel": known, "how": "remembered"}
        elif self._job_pairs < _paths.PICK_MIN_PAIRS or not _paths.flex_available():
            record = {"kernel": "dense", "how": f"not measured (a job of {self._job_pairs} pairs)"}
        else:
            record = self._measure_kernels(encoded[: self.pick_pairs])
            _paths.remember(key, record["kernel"])
        self.kernel = record["kernel"]
        self._kernel_record = record
        log.info("%s: packed scoring through the %s attention kernel (%s)", self.name, self.kernel,
                 ", ".join(f"{k} {v}" for k, v in record.items() if k != "kernel"))

    def _measure_kernels(self, sample: Encoded) -> dict[str, Any]:
        """Time ``dense`` and ``flex`` on ``sample`` (after a warm-up that compiles); flex counts only if it
        matches full sequences within the dtype's rounding."""
        check = sample[: self.self_check_pairs]
        self._budget.ensure()

        def differs() -> str | None:
            fast = np.array(self._run("packed", check, "flex"))
            slow = np.array(self._full_scores(check))
            tol = np.array([rounding_tolerance(self.dtype, len(c)) for _, c in check])
            return None if np.all(np.abs(fast - slow) <= tol) else "fails the self-check"

        return _paths.measure(self.name, differs, lambda k: self._run("packed", sample, k), len(sample), "pairs",
                              _budget.is_oom)

    def _self_check(self, encoded: Encoded) -> None:
        """Prefix sharing relies on the model honouring custom 4D masks and position ids: compare
        it once per model with full-sequence scores on real pairs, within the dtype's rounding
        tolerance, and fall back to full sequences (logged and recorded) if it disagrees."""
        self._checked = True
        record: dict[str, Any] = {"strategy": self.strategy, "pairs": len(encoded), "dtype": self.dtype}
        try:
            fast = np.array(self._run(self.strategy, encoded))
        except Exception as e:  # e.g. an architecture without 4D attention masks
            record.update(passed=False, reason=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        else:
            slow = np.array(self._full_scores(encoded))
            diff = np.abs(fast - slow)
            tol = np.array([rounding_tolerance(self.dtype, len(c)) for _, c in encoded])
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
        """Run the current strategy on a worst-case synthetic batch of ``budget`` tokens: rows of
        ``max_row_tokens`` in which every position is scored (the largest attention and logits)."""
        length = min(self.max_row_tokens, self._max_len)
        n = max(1, budget // length)
        vocab = int(self.model.config.vocab_size)
        toks = torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(0)).tolist()
        self._run(self.strategy, [((t[0],), tuple(t[1:])) for t in toks])

    @torch.inference_mode()
    def _packed_scores(self, encoded: Encoded) -> list[float]:
        """Summed continuation log-probs; each query and its candidates packed into one sequence.

        A row is ``prefix + trie of the candidates' input tokens``: a candidate token attends to
        the whole prefix and to its own earlier tokens only (tree attention mask), with positions
        continuing from the prefix, so every score equals the full-sequence one. The prefix runs
        once, candidates sharing leading tokens share them, there is no per-candidate padding,
        and the LM head runs once per distinct position.
        """
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
        """Host tensors of one padded packed batch: ids, positions, the (B, L, L) tree mask, the scored
        positions (``rows``, ``cols``: each once) and the head's plan; and each target's item."""
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
        """As :meth:`_packed_scores`, through FlexAttention: the rows of a batch concatenated into one
        flat sequence without padding (up to a multiple of the kernel's block), the tree mask a
        BlockMask built on the device from one vector (:func:`probegen.scorers._paths.tree_block_mask`)."""
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
        """Host tensors of one flat batch: ids, positions and subtree ends (the BlockMask's vector, built
        into a mask on the device), the scored positions once (``uniq``) and the head's plan."""
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

    @torch.inference_mode()
    def _full_scores(self, encoded: Encoded) -> list[float]:
        """Summed continuation log-probs from full sequences (no prefix reuse): the reference path."""
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]) + len(encoded[i][1]))
        totals = [0.0] * len(encoded)
        seq_len = lambda i: len(encoded[i][0]) + len(encoded[i][1]) - 1  # noqa: E731
        for batch in row_batches(order, seq_len, self.batch_size, self.max_batch_tokens):
            seqs = [list(encoded[i][0]) + list(encoded[i][1]) for i in batch]
            ids, mask = pad([s[:-1] for s in seqs], self._dummy, self._in_device)
            h = self._base(input_ids=ids, attention_mask=mask).last_hidden_state
            # positions predicting continuation tokens: [len(prefix)-1, len(seq)-2]
            sel = torch.zeros(mask.shape, dtype=torch.bool)
            for r, i in enumerate(batch):
                p, c = encoded[i]
                sel[r, len(p) - 1 : len(p) - 1 + len(c)] = True
            tgt, _ = pad([s[1:] for s in seqs], 0, "cpu")
            totals_b = _row_sums(self._logprobs_at(h[sel.to(h.device)], tgt[sel]), sel)
            for i, v in zip(batch, totals_b):
                totals[i] = v
        return totals

    @torch.inference_mode()
    def sequence_logprob(self, texts: Sequence[str]) -> np.ndarray:
        """Total log-prob of each whole text (first token conditioned on BOS if used, else unscored)."""
        seqs = [([self._bos] if self._bos is not None else []) + self._enc(t) for t in texts]
        out = np.zeros(len(seqs), dtype=np.float64)
        order = [i for i in sorted(range(len(seqs)), key=lambda i: len(seqs[i])) if len(seqs[i]) > 1]
        for batch in row_batches(order, lambda i: len(seqs[i]) - 1, self.batch_size, self.max_batch_tokens):
            ids, mask = pad([seqs[i][:-1] for i in batch], self._dummy, self._in_device)
            h = self._base(input_ids=ids, attention_mask=mask).last_hidden_state
            tgt, _ = pad([seqs[i][1:] for i in batch], 0, "cpu")
            valid = mask.bool().cpu()
            out[batch] = _row_sums(self._logprobs_at(h[valid.to(h.device)], tgt[valid]), valid)
        return out


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


# ---- helpers ------------------------------------------------------------------------------------
class _Row:
    """One packed sequence: a prefix followed by a trie of candidate input tokens."""

    __slots__ = ("tokens", "positions", "parents", "targets", "n_prefix", "_mask")

    def __init__(self, prefix: tuple[int, ...]) -> None:
        self.tokens = list(prefix)
        self.positions = list(range(len(prefix)))
        self.parents: list[int] = []  # per trie node: index of its parent row position
        self.targets: list[tuple[int, int, int]] = []  # (position predicting, target token, item)
        self.n_prefix = len(prefix)
        self._mask: np.ndarray | None = None

    @property
    def length(self) -> int:
        return len(self.tokens)

    @property
    def mask(self) -> np.ndarray:
        """The (L, L) tree mask of the dense kernel: a node sees the prefix, its ancestors and itself."""
        if self._mask is None:
            n_prefix, L = self.n_prefix, self.length
            m = np.tril(np.ones((L, L), dtype=bool))
            m[n_prefix:, n_prefix:] = False
            for k, parent in enumerate(self.parents):
                node = n_prefix + k
                if parent >= n_prefix:
                    m[node, n_prefix:node] = m[parent, n_prefix:node]
                m[node, node] = True
            self._mask = m
        return self._mask

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
