"""Padding, length-bucketed batching and the machinery shared by the causal and masked LM scorers."""

from __future__ import annotations

import json
import logging
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence, TypeVar

import torch

from . import _budget, _paths, _precision
from .base import Pair, Scorer
from .spans import SpanFeatures

T = TypeVar("T")

# model -> the check of its lower precision against float32 (once per loaded model)
_PRECISION: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()


def pad(seqs: list[list[int]], pad_id: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to a (B, L) id tensor and its 0/1 mask."""
    n = max((len(s) for s in seqs), default=0)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[r, : len(s)] = 1
    return ids.to(device), mask.to(device)


def row_batches(items: list[T], length: Callable[[T], int], max_rows: int, max_tokens: int) -> list[list[T]]:
    """Length-sorted ``items`` cut into batches of at most ``max_rows`` rows and ``max_tokens`` padded tokens.

    Items of length 0 are skipped (nothing to run).
    """
    out: list[list[T]] = []
    cur: list[T] = []
    for it in items:
        n = length(it)
        if n <= 0:
            continue
        if cur and (len(cur) >= max_rows or (len(cur) + 1) * n > max_tokens):
            out.append(cur)
            cur = []
        cur.append(it)
    if cur:
        out.append(cur)
    return out


def flat_batches(items: list[T], length: Callable[[T], int], max_tokens: int) -> list[list[T]]:
    """``items`` (in order) cut into batches whose lengths SUM to at most ``max_tokens`` (no padding:
    the batch runs as one flat sequence); an item longer than ``max_tokens`` runs alone.

    >>> flat_batches([3, 4, 2, 9], lambda n: n, 8)
    [[3, 4], [2], [9]]
    """
    out: list[list[T]] = []
    cur: list[T] = []
    used = 0
    for it in items:
        n = length(it)
        if n <= 0:
            continue
        if cur and used + n > max_tokens:
            out.append(cur)
            cur, used = [], 0
        cur.append(it)
        used += n
    if cur:
        out.append(cur)
    return out


HostBatch = tuple[dict[str, torch.Tensor], Any]


def fed(batches: list[Any], prepare: Callable[[Any], HostBatch], device: torch.device,
        worker: bool) -> Iterator[tuple[Any, dict[str, torch.Tensor], Any]]:
    """Each batch with its tensors on ``device`` (and ``prepare``'s host-side extra), in order.

    ``prepare`` lays a batch out on the host (token ids, positions, masks, gather indices). With
    ``worker`` it runs one batch ahead in a thread, so the host's packing of batch k+1 overlaps the
    device's work on batch k. On CUDA the tensors are pinned (in the worker) and copied without
    blocking the host: a pageable copy would wait for the device to drain its queue.

    >>> list(fed([1, 2], lambda b: ({"x": torch.tensor([b])}, b * 10), torch.device("cpu"), True))
    [(1, {'x': tensor([1])}, 10), (2, {'x': tensor([2])}, 20)]
    """
    cuda = device.type == "cuda"

    def host(batch: Any) -> HostBatch:
        tensors, extra = prepare(batch)
        return ({k: v.pin_memory() for k, v in tensors.items()} if cuda else tensors), extra

    def moved(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {k: v.to(device, non_blocking=cuda) for k, v in tensors.items()}

    if not worker:
        for batch in batches:
            tensors, extra = host(batch)
            yield batch, moved(tensors), extra
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="probegen-feed") as pool:
        pending = pool.submit(host, batches[0]) if batches else None
        for k, batch in enumerate(batches):
            assert pending is not None
            tensors, extra = pending.result()
            pending = pool.submit(host, batches[k + 1]) if k + 1 < len(batches) else None
            yield batch, moved(tensors), extra


def head_plan(at: torch.Tensor, targets: torch.Tensor, n: int, chunk: int) -> dict[str, torch.Tensor]:
    """Host-side gather plan of a head run in chunks of ``chunk`` of ``n`` hidden positions: per chunk
    ``c``, which outputs it fills (``sel{c}``), from which of its rows (``k{c}``), for which target
    tokens (``t{c}``). Built before the batch reaches the device, so the head needs no host sync.

    >>> plan = head_plan(torch.tensor([2, 0, 2]), torch.tensor([7, 8, 9]), 3, 2)
    >>> [plan[k].tolist() for k in ("sel0", "k0", "t0", "sel1", "k1", "t1")]
    [[1], [0], [8], [0, 2], [0, 0], [7, 9]]
    """
    plan: dict[str, torch.Tensor] = {}
    for c, lo in enumerate(range(0, n, chunk)):
        sel = ((at >= lo) & (at < lo + chunk)).nonzero().squeeze(1)
        plan[f"sel{c}"], plan[f"k{c}"], plan[f"t{c}"] = sel, at[sel] - lo, targets[sel]
    return plan


class LMScorer(SpanFeatures, Scorer):
    """What the causal and masked LM scorers share: options, token budget, feeding batches to the device,
    the pick of attention kernel and the check of a lower precision against float32.

    ``option``: the subclass's own (name, value, allowed values), checked between reduction and kernel;
    ``max_batch_tokens``: an int, ``auto`` or None (the device's default); ``kernel``: ``auto``, ``dense`` or
    ``flex`` (``can_flex``: whether flex can run); ``precision``: the dtype recorded (int8: the model's own is
    float32); ``reference``: a float32 scorer factory to check ``precision`` against (None: no check).
    """

    #: pack batches in a worker thread one batch ahead (None: on CUDA only)
    feed_worker: bool | None = None
    #: what a kernel pick runs on (its log line and record) and the unit of a job
    _runs, _unit = "packed scoring", "pairs"

    def __init__(self, name: str, model: Any, tokenizer: Any, option: tuple[str, str, Sequence[str]], *,
                 model_id: str | None = None, reduction: str = "sum", batch_size: int | None = None, cache: Any = None,
                 max_batch_tokens: int | str | None = None, device_map: str | None = None,
                 extra_settings: dict[str, Any] | None = None, kernel: str = "auto", precision: str | None = None,
                 reference: Any = None, can_flex: bool = True) -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        for what, value, allowed in (option, ("kernel", kernel, _paths.KERNELS)):
            if value not in allowed:
                raise ValueError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")
        self._in_device = model.get_input_embeddings().weight.device
        super().__init__(
            name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings,
            device=str(self._in_device), dtype=precision or str(model.dtype).removeprefix("torch."),
            device_map=device_map,
        )
        self.model = model.eval()
        self.tok = tokenizer
        self.reduction = reduction
        self._fixed_rows = batch_size is not None
        self._budget = _budget.Budget(self, max_batch_tokens)
        self.kernel = "flex" if kernel == "flex" and can_flex else "dense"
        self._kernel_record: dict[str, Any] | None = None  # None: ``auto``, picked on the first large job
        if kernel != "auto":
            self._kernel_record = {"kernel": self.kernel, "how": "user"}
            if self.kernel != kernel:
                self._kernel_record["note"] = "no separate MLM head or embeddings module: dense"
        self._job_pairs = 0
        self._reference = reference
        self._precision_record: dict[str, Any] | None = _PRECISION.get(model)

    def _feature_parts(self, max_length: int) -> tuple[Any, Any, int]:
        return self.tok, self.model, max_length

    def stats(self) -> dict[str, Any]:
        """Work counters, where the scores ran, the attention kernel, the budget and the precision check."""
        return {**super().stats(), "kernel": self.kernel, "kernel_pick": self._kernel_record,
                "precision_check": self._precision_record, **self._budget.stats()}

    def _feed(self, batches: list[Any], prepare: Callable[[Any], HostBatch]) -> Iterator[tuple[Any, Any, Any]]:
        """``batches`` with their tensors on the device (:func:`fed`; a worker thread per ``feed_worker``)."""
        worker = self._in_device.type == "cuda" if self.feed_worker is None else self.feed_worker
        return fed(batches, prepare, self._in_device, worker)

    def score_pairs(self, pairs: Sequence[Pair], progress: bool = False) -> dict[Pair, float]:
        """As :meth:`Scorer.score_pairs`, a lower precision first checked against float32 (once per model)."""
        self._job_pairs = len(pairs)
        if self._reference is not None and self._precision_record is None:
            record = _precision.check(self.dtype, list(pairs), self._score_uncached, self._reference)
            record["cpu_bf16"] = _precision.cpu_has_bf16()
            self._reference = None  # the float32 copy is no longer needed
            self._precision_record = _PRECISION[self.model] = record
            if record.get("checked"):
                logging.getLogger(type(self).__module__).info(
                    "%s in %s: its choices agree with float32 on %d of %d units (max |diff| %.3g nats)",
                    self.name, self.dtype, record["agree"], record["units"], record["max_abs_diff"])
        return super().score_pairs(pairs, progress=progress)

    def _pick_kernel(self, n: int, flex_ok: bool, measure: Callable[[], dict[str, Any]]) -> None:
        """``kernel="auto"``: the remembered kernel, else on a job of at least
        :data:`~probegen.scorers._paths.PICK_MIN_PAIRS` units (``n``) the faster one as ``measure()`` finds
        it; smaller jobs, or a model where flex cannot run (``flex_ok``), run ``dense``."""
        key = json.dumps([self.model_id, self.source_settings, self.kind, self.dtype, _budget.device_key(self.device),
                          torch.__version__, "kernel"], sort_keys=True)
        known = _paths.remembered(key)
        if known in ("dense", "flex") and (known == "dense" or flex_ok):
            record: dict[str, Any] = {"kernel": known, "how": "remembered"}
        elif n < _paths.PICK_MIN_PAIRS or not flex_ok or not _paths.flex_available():
            record = {"kernel": "dense", "how": f"not measured (a job of {n} {self._unit})"}
        else:
            record = measure()
            _paths.remember(key, record["kernel"])
        self.kernel = record["kernel"]
        self._kernel_record = record
        logging.getLogger(type(self).__module__).info(
            "%s: %s through the %s attention kernel (%s)", self.name, self._runs, self.kernel,
            ", ".join(f"{k} {v}" for k, v in record.items() if k != "kernel"))

    def _measure(self, differs: Callable[[], str | None], run: Callable[[str], Any], n: int) -> dict[str, Any]:
        """:func:`~probegen.scorers._paths.measure` of both kernels on ``n`` units, within the token budget."""
        self._budget.ensure()
        return _paths.measure(self.name, differs, run, n, self._unit, _budget.is_oom, self._runs)

    def _random_rows(self, budget: int, length: int) -> list[list[int]]:
        """Seeded random token rows of ``length`` filling ``budget`` tokens: a worst case for :meth:`_probe`."""
        n = max(1, budget // length)
        vocab = int(self.model.config.vocab_size)
        return torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(0)).tolist()
