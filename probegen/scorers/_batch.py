"""Padding and length-bucketed batching shared by the torch backends."""

from __future__ import annotations

from typing import Any, Callable

import torch


def pad(seqs: list[list[int]], pad_id: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to a (B, L) id tensor and its 0/1 mask."""
    n = max((len(s) for s in seqs), default=0)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[r, : len(s)] = 1
    return ids.to(device), mask.to(device)


def row_batches(items: list, length: Callable[[Any], int], max_rows: int, max_tokens: int) -> list[list]:
    """Length-sorted ``items`` cut into batches of at most ``max_rows`` rows and ``max_tokens`` padded tokens.

    Items of length 0 are skipped (nothing to run).
    """
    out: list[list] = []
    cur: list = []
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


def flat_batches(items: list, length: Callable[[Any], int], max_tokens: int) -> list[list]:
    """``items`` (in order) cut into batches whose lengths SUM to at most ``max_tokens`` (no padding:
    the batch runs as one flat sequence); an item longer than ``max_tokens`` runs alone.

    >>> flat_batches([3, 4, 2, 9], lambda n: n, 8)
    [[3, 4], [2], [9]]
    """
    out: list[list] = []
    cur: list = []
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
