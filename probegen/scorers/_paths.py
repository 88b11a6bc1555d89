"""Attention kernels of packed scoring, the masks they take, and the remembered pick between them.

Two kernels run the same packed rows:

- ``dense``: rows right-padded to the batch's longest, a ``(B, 1, L, L)`` additive mask per batch,
  the model's default attention (SDPA);
- ``flex``: rows concatenated into ONE flat sequence with no padding (only up to a multiple of
  :data:`BLOCK` tokens), the mask a FlexAttention ``BlockMask``
  (:mod:`torch.nn.attention.flex_attention`, transformers' ``flex_attention`` implementation)
  built on the device from one small per-token vector, so the kernel skips masked blocks.

A causal tree mask (a candidate token sees its prefix and its own earlier tokens) needs only
``end``: the exclusive end of each token's subtree when the tokens of every row are laid out in
depth-first order (prefix tokens: the end of their row). Key ``kv`` is visible from query ``q``
exactly when ``kv <= q < end[kv]``: inside one row, causal along the prefix, and ancestors-or-self
inside the candidate trie. A masked LM's packed copies need a segment id per token.

Which kernel is fastest depends on the model, device, dtype and torch, so the default measures
both once (after the faster one passes the scorer's self-check) and remembers the pick in
``<cache_dir>/scoring_paths.json``, like :mod:`probegen.scorers._budget` remembers token budgets.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterator

log = logging.getLogger(__name__)

#: attention kernels of packed scoring (``auto``: the measured, remembered pick)
KERNELS = ("auto", "dense", "flex")
#: FlexAttention's block size; flat sequences are padded to a multiple of it (fewer compiled shapes)
BLOCK = 128
#: a job needs this many pairs before ``auto`` measures the kernels (a first flex call compiles: a
#: minute on a loaded CPU); smaller jobs take the remembered pick, else ``dense``
PICK_MIN_PAIRS = 10_000


def flex_available() -> bool:
    """Whether this torch has FlexAttention (torch >= 2.5)."""
    try:
        from torch.nn.attention.flex_attention import create_block_mask  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def attention(model: Any, impl: str) -> Iterator[None]:
    """Run ``model``'s attention layers with transformers implementation ``impl`` inside the block."""
    configs = [model.config, *[getattr(model.config, k) for k in ("text_config", "decoder") if
                                hasattr(model.config, k)]]
    old = [getattr(c, "_attn_implementation", None) for c in configs]
    for c in configs:
        c._attn_implementation = impl
    try:
        yield
    finally:
        for c, o in zip(configs, old):
            c._attn_implementation = o


def padded_length(n: int, device: str = "cuda") -> int:
    """``n`` rounded up to a multiple of :data:`BLOCK`; on the CPU to :data:`BLOCK` times a power of two
    (its kernel is compiled for static shapes, one per length: few lengths, few compilations).

    >>> padded_length(1), padded_length(128), padded_length(129), padded_length(390), padded_length(390, "cpu")
    (128, 128, 256, 512, 512)
    >>> padded_length(640, "cpu")
    1024
    """
    blocks = -(-max(n, 1) // BLOCK)
    if device == "cpu":
        blocks = 1 << (blocks - 1).bit_length()
    return blocks * BLOCK


_COMPILED: dict[bool, Any] = {}
KERNEL_NAME = "probegen_flex"


def _flex_forward(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: float | None = None,
                  softcap: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """A transformers attention function: compiled FlexAttention under a BlockMask, (B, L, H, D) out.

    Like transformers' ``flex_attention`` implementation, except that on the CPU the kernel is compiled
    for static shapes (inductor's CPU template fails to build for dynamic ones in torch 2.13).
    """
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    static = query.device.type == "cpu"
    if static not in _COMPILED:
        _COMPILED[static] = torch.compile(flex_attention, dynamic=False if static else None)
    heads, kv_heads = query.shape[1], key.shape[1]
    gqa = heads != kv_heads
    if gqa and heads & (heads - 1):  # the kernel's grouped heads need a power of two: repeat the kv heads
        key = key.repeat_interleave(heads // kv_heads, dim=1)
        value = value.repeat_interleave(heads // kv_heads, dim=1)
        gqa = False

    cap = float(softcap or 0.0)

    def score_mod(score: Any, b: Any, h: Any, q: Any, kv: Any) -> Any:
        return cap * torch.tanh(score / cap)

    out = _COMPILED[static](query, key, value, block_mask=attention_mask, scale=scaling, enable_gqa=gqa,
                            score_mod=score_mod if softcap else None)
    return out.transpose(1, 2).contiguous(), None


def register() -> str:
    """Register :func:`_flex_forward` with transformers (once); its implementation name."""
    from transformers import AttentionInterface

    AttentionInterface.register(KERNEL_NAME, _flex_forward)
    return KERNEL_NAME


_MASK4D: list[type] = []


def _four_d(mask: Any) -> Any:
    """``mask`` with an ``ndim`` (4), which some models (GPT-2) read off any attention mask they get."""
    if not _MASK4D:
        from torch.nn.attention.flex_attention import BlockMask

        _MASK4D.append(type("BlockMask4D", (BlockMask,), {"ndim": 4}))
    mask.__class__ = _MASK4D[0]
    return mask


def tree_block_mask(end: Any) -> Any:
    """The BlockMask of flat packed rows: ``kv`` visible from ``q`` iff ``kv <= q < end[kv]``.

    ``end`` is a 1-D long tensor on the device (one entry per token, see the module docstring).
    """
    from torch.nn.attention.flex_attention import create_block_mask

    def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return (kv <= q) & (q < end[kv])

    n = int(end.shape[0])
    return _four_d(create_block_mask(mask_mod, 1, None, n, n, device=end.device, BLOCK_SIZE=BLOCK))


def segment_block_mask(segment: Any) -> Any:
    """The BlockMask of packed bidirectional copies: ``kv`` visible from ``q`` iff they share a segment."""
    from torch.nn.attention.flex_attention import create_block_mask

    def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return segment[q] == segment[kv]

    n = int(segment.shape[0])
    return _four_d(create_block_mask(mask_mod, 1, None, n, n, device=segment.device, BLOCK_SIZE=BLOCK))


# ---- the remembered pick ------------------------------------------------------------------------------
def picks_path() -> Path:
    """``<cache_dir>/scoring_paths.json``."""
    from ..paths import cache_dir

    return cache_dir() / "scoring_paths.json"


def _read(path: Path) -> dict[str, str]:
    """The remembered picks (none if the file is missing; a damaged file is set aside with one warning)."""
    from ..paths import set_aside

    try:
        raw = path.read_bytes()
    except OSError:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise ValueError("not an object of strings")
        return data
    except ValueError as e:
        set_aside(path, "scoring-path cache", e, then="measuring the kernels again")
        return {}


def remembered(key: str, path: Path | None = None) -> str | None:
    """The kernel remembered for ``key``, if any."""
    return _read(path or picks_path()).get(key)


def remember(key: str, kernel: str, path: Path | None = None) -> None:
    """Store ``kernel`` for ``key`` (atomic rewrite)."""
    from ..io import atomic_write, json_text

    path = path or picks_path()
    data = _read(path)
    data[key] = kernel
    with atomic_write(path) as fh:
        fh.write(json_text(data, indent=1))


def race(runs: dict[str, Callable[[], Any]], rounds: int = 3) -> dict[str, float]:
    """Seconds of the fastest call of each of ``runs`` over ``rounds`` rounds in rotating order, after
    one warm-up call each (compilation), so that a noisy machine slows all of them alike.

    >>> sorted(race({"a": lambda: None, "b": lambda: None}, rounds=2))
    ['a', 'b']
    """
    for fn in runs.values():
        fn()
    names = list(runs)
    best = {n: float("inf") for n in names}
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            t = time.perf_counter()
            runs[n]()
            best[n] = min(best[n], time.perf_counter() - t)
    return best


def fastest(times: dict[str, float]) -> str:
    """The kernel with the least time.

    >>> fastest({"dense": 2.0, "flex": 1.5})
    'flex'
    """
    return min(times, key=lambda k: times[k])


def measure(name: str, check: Callable[[], str | None], run: Callable[[str], Any], n: int, unit: str,
            is_oom: Callable[[BaseException], bool], what: str = "packed scoring") -> dict[str, Any]:
    """The record of one kernel measurement: ``check()`` (flex against the reference; a reason when it
    differs, None when it agrees), then :func:`race` of ``run(kernel)`` for both kernels over ``n`` ``unit``.
    A flex kernel that fails to build or run leaves ``what`` on ``dense`` (an out-of-memory error is raised:
    the caller's budget handles it).

    >>> measure("m", lambda: "differs", lambda k: None, 4, "pairs", lambda e: False)
    {'kernel': 'dense', 'how': 'measured', 'flex': 'differs'}
    >>> measure("m", lambda: None, lambda k: None, 4, "pairs", lambda e: False)["how"]
    'measured'
    """
    import functools

    try:
        problem = check()
        if problem:
            return {"kernel": "dense", "how": "measured", "flex": problem}
        times = race({k: functools.partial(run, k) for k in ("flex", "dense")})
    except Exception as e:  # no flex support in this architecture, or its kernel does not build here
        if is_oom(e):
            raise
        log.warning("%s: the flex attention kernel fails here (%s); %s stays dense", name,
                    f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200], what)
        return {"kernel": "dense", "how": "measured", "flex": f"fails: {type(e).__name__}"}
    speeds = {f"{k}_{unit}_per_s": round(n / t, 1) for k, t in times.items()}
    return {"kernel": fastest(times), "how": "measured", **speeds}
