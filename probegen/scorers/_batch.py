"""Padding and length-bucketed batching shared by the torch backends."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, TypeVar

import torch

T = TypeVar("T")


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
