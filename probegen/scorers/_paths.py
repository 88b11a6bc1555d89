"""Attention kernels of packed scoring, the masks they take, and the remembered pick between them.

- ``dense``: rows right-padded to the batch's longest, a ``(B, 1, L, L)`` additive mask, the model's
  default attention (SDPA);
- ``flex``: rows concatenated into ONE flat sequence, padded only to a multiple of :data:`BLOCK`, the
  mask a FlexAttention ``BlockMask`` built on the device from one per-token vector, so the kernel
  skips masked blocks. A causal tree mask needs only ``end``, each token's subtree end with every
  row's trie laid out depth-first (prefix tokens: their row's end): ``kv`` is visible from ``q`` iff
  ``kv <= q < end[kv]``. A masked LM's copies need a segment id per token.

The fastest kernel depends on model, device, dtype and torch: ``auto`` measures both once and
remembers the pick in ``<cache_dir>/scoring_paths.json``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ._budget import read_memo, write_memo

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


KERNEL_NAME = "probegen_flex"


@functools.cache
def _compiled(static: bool) -> Any:
    """FlexAttention compiled once per process: static shapes on the CPU, dynamic on the GPU."""
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False if static else None)


def _flex_forward(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: float | None = None,
                  softcap: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """A transformers attention function: compiled FlexAttention under a BlockMask, (B, L, H, D) out.

    Like transformers' ``flex_attention`` implementation, except that on the CPU the kernel is compiled
    for static shapes (inductor's CPU template fails to build for dynamic ones in torch 2.13).
    """
    import torch

    static = query.device.type == "cpu"
    heads, kv_heads = query.shape[1], key.shape[1]
    gqa = heads != kv_heads
    if gqa and heads & (heads - 1):  # the kernel's grouped heads need a power of two: repeat the kv heads
        key = key.repeat_interleave(heads // kv_heads, dim=1)
        value = value.repeat_interleave(heads // kv_heads, dim=1)
        gqa = False

    cap = float(softcap or 0.0)

    def score_mod(score: Any, b: Any, h: Any, q: Any, kv: Any) -> Any:
        return cap * torch.tanh(score / cap)

    out = _compiled(static)(query, key, value, block_mask=attention_mask, scale=scaling, enable_gqa=gqa,
                            score_mod=score_mod if softcap else None)
    return out.transpose(1, 2).contiguous(), None


def register() -> str:
    """Register :func:`_flex_forward` with transformers (once); its implementation name."""
    from transformers import AttentionInterface

    AttentionInterface.register(KERNEL_NAME, _flex_forward)
    return KERNEL_NAME


@functools.cache
def _mask4d() -> type:
    """BlockMask with an ``ndim`` of 4, made once (every mask gets the same class)."""
    from torch.nn.attention.flex_attention import BlockMask

    return type("BlockMask4D", (BlockMask,), {"ndim": 4})


def _block_mask(mask_mod: Callable[..., Any], like: Any) -> Any:
    """The BlockMask of ``mask_mod`` over the length of ``like`` (a 1-D tensor), on its device, with an
    ``ndim`` (4): some models (GPT-2) read that off any attention mask they get."""
    from torch.nn.attention.flex_attention import create_block_mask

    n = int(like.shape[0])
    mask = create_block_mask(mask_mod, 1, None, n, n, device=like.device, BLOCK_SIZE=BLOCK)
    mask.__class__ = _mask4d()
    return mask


def tree_block_mask(end: Any) -> Any:
    """The BlockMask of flat packed rows: ``kv`` visible from ``q`` iff ``kv <= q < end[kv]`` (see the module doc)."""

    def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return (kv <= q) & (q < end[kv])

    return _block_mask(mask_mod, end)


def segment_block_mask(segment: Any) -> Any:
    """The BlockMask of packed bidirectional copies: ``kv`` visible from ``q`` iff they share a segment."""

    def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return segment[q] == segment[kv]

    return _block_mask(mask_mod, segment)


def picks_path() -> Path:
    """``<cache_dir>/scoring_paths.json``."""
    from ..paths import cache_dir

    return cache_dir() / "scoring_paths.json"


def _kernel_name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("not an object of strings")
    return value


def _read(path: Path) -> dict[str, str]:
    return read_memo(path, "scoring-path cache", "measuring the kernels again", _kernel_name)


def remembered(key: str, path: Path | None = None) -> str | None:
    """The kernel remembered for ``key``, if any."""
    return _read(path or picks_path()).get(key)


def remember(key: str, kernel: str, path: Path | None = None) -> None:
    """Store ``kernel`` for ``key``."""
    write_memo(path or picks_path(), key, kernel, _read)


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
