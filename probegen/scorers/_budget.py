"""Token budgets sized to the device: the largest batch that fits, found once and remembered.

Like lm-evaluation-harness's ``--batch_size auto``: a probe runs the scorer's own code on a worst-case
batch of ``budget`` tokens, halving on out-of-memory until one fits; the result is remembered per model,
kind, dtype and device in ``<cache_dir>/batch_budgets.json``. A batch that still runs out of memory
while scoring (e.g. a fragmented allocator) halves the budget and retries: slower, never wrong.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..errors import ProbegenError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the first budget tried (tokens per forward pass); halved on every out-of-memory
START_TOKENS = 1 << 17
#: budgets below this are not worth running on a GPU
FLOOR_TOKENS = 256


def is_oom(e: BaseException) -> bool:
    """Whether ``e`` is a device out-of-memory error (CUDA, MPS or a CPU allocation failure)."""
    import torch

    oom = isinstance(e, RuntimeError) and "out of memory" in str(e).lower()
    return isinstance(e, torch.cuda.OutOfMemoryError) or oom


def free_memory(device: str) -> None:
    """Return cached blocks to the device after an out-of-memory error."""
    import gc

    import torch

    gc.collect()
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()


def device_key(device: str) -> str:
    """A stable description of ``device`` for remembered budgets (GPU name and memory, not just an index).

    >>> device_key("cpu")
    'cpu'
    """
    if device.startswith("cuda"):
        import torch

        props = torch.cuda.get_device_properties(device)
        return f"{props.name}|{props.total_memory // 2**20}MiB"
    return device


def budget_path() -> Path:
    """``<cache_dir>/batch_budgets.json``."""
    from ..paths import cache_dir

    return cache_dir() / "batch_budgets.json"


def read_memo(path: Path, what: str, then: str, value: Callable[[Any], T]) -> dict[str, T]:
    """The JSON object at ``path``, each value through ``value``: empty if the file is missing, and empty
    (the file set aside with one warning: ``what`` it is, what the run does ``then``) if it is damaged."""
    from ..paths import set_aside

    try:
        raw = path.read_bytes()
    except OSError:
        return {}  # missing (or unreadable): measure again
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"holds a JSON {type(data).__name__}, not an object")
        return {k: value(v) for k, v in data.items()}
    except (TypeError, ValueError) as e:  # not UTF-8, not JSON, or a value ``value`` refuses
        set_aside(path, what, e, then=then)
        return {}


def write_memo(path: Path, key: str, value: Any, read: Callable[[Path], dict[str, Any]]) -> None:
    """Store ``value`` for ``key`` in the JSON object at ``path`` (``read``: its reader); an atomic rewrite,
    where a lost race only costs measuring again later."""
    from ..io import atomic_write, json_text

    data = read(path)
    data[key] = value
    with atomic_write(path) as fh:
        fh.write(json_text(data, indent=1))


def _read(path: Path) -> dict[str, int]:
    return read_memo(path, "batch-budget cache", "searching budgets again", int)


def remembered(key: str, path: Path | None = None) -> int | None:
    """The budget stored for ``key``, if any."""
    return _read(path or budget_path()).get(key)


def remember(key: str, budget: int, path: Path | None = None) -> None:
    """Store ``budget`` for ``key``."""
    write_memo(path or budget_path(), key, int(budget), _read)


def search(probe: Callable[[int], Any], device: str, start: int = START_TOKENS, floor: int = FLOOR_TOKENS) -> int:
    """The largest ``start / 2**i`` token budget that ``probe(budget)`` runs without running out of memory.

    >>> def probe(budget):
    ...     if budget > 5000:
    ...         raise RuntimeError("CUDA out of memory")
    >>> search(probe, "cpu", start=1 << 14)
    4096
    """
    budget = start
    while True:
        try:
            probe(budget)
            return budget
        except Exception as e:
            if not is_oom(e):
                raise
            free_memory(device)
            log.info("a %d-token batch does not fit on %s; trying %d", budget, device, budget // 2)
            budget //= 2
            if budget < floor:
                raise ProbegenError(
                    f"not even a {floor}-token batch fits in the memory of {device}; use a smaller --dtype, "
                    "--device-map auto or another device"
                ) from None


class Budget:
    """A scorer's token budget: its CPU default, a user's ``max_batch_tokens``, or ``auto`` (searched once
    per model and device, then remembered), with out-of-memory back-off while scoring. The scorer provides
    ``device``, ``max_batch_tokens``, ``batch_size``, ``default_batch_size``, ``_fixed_rows`` (the user set the
    rows), ``budget_method()`` (what else changes memory per token) and ``_probe(budget)`` (a worst-case batch).
    """

    def __init__(self, scorer: Any, max_batch_tokens: int | str | None) -> None:
        self.scorer = scorer
        if max_batch_tokens is None:
            max_batch_tokens = "auto" if scorer.device.startswith("cuda") else None
        self.pending = max_batch_tokens == "auto"
        self.how = "auto (pending)" if self.pending else ("default" if max_batch_tokens is None else "user")
        if isinstance(max_batch_tokens, int):
            scorer.max_batch_tokens = max_batch_tokens
        self.key = ""

    def stats(self) -> dict[str, Any]:
        """The budget in use and where it came from (``default``, ``user``, ``auto (searched|remembered)``)."""
        return {"max_batch_tokens": self.scorer.max_batch_tokens, "batch_rows": self.scorer.batch_size,
                "budget": self.how}

    def _apply(self, budget: int) -> None:
        s = self.scorer
        s.max_batch_tokens = budget
        if not s._fixed_rows:  # rows of ~32 tokens at least: the token budget, not the row cap, binds
            s.batch_size = max(s.default_batch_size, budget // 32)

    def ensure(self) -> None:
        """Size the budget to the device once (a no-op unless ``auto``)."""
        if not self.pending:
            return
        self.pending = False
        import torch

        s = self.scorer
        # what changes memory per token: model, dtype, scoring method, row length, GPU, torch
        self.key = json.dumps(
            [s.model_id, s.source_settings, s.kind, s.dtype, s.budget_method(), device_key(s.device),
             torch.__version__],
            sort_keys=True,
        )
        saved = (s.max_batch_tokens, s.batch_size)

        def probe(budget: int) -> None:
            self._apply(budget)
            try:
                s._probe(budget)
            finally:
                s.max_batch_tokens, s.batch_size = saved

        budget, how = remembered(self.key), "remembered"
        if budget is None:
            budget, how = search(probe, s.device, START_TOKENS), "searched"  # START_TOKENS read now: benches lower it
            remember(self.key, budget)
        self._apply(budget)
        self.how = f"auto ({how})"
        log.info("%s on %s: batches of up to %d tokens (%s)", s.name, s.device, budget, how)

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()``; on out-of-memory, halve the budget (and remember that) and retry."""
        while True:
            try:
                return fn()
            except Exception as e:
                s = self.scorer
                if not is_oom(e) or s.max_batch_tokens // 2 < FLOOR_TOKENS:
                    raise
                free_memory(s.device)
                self._apply(s.max_batch_tokens // 2)
                self.how += " (halved after out-of-memory)"
                log.warning("%s ran out of memory on %s; retrying with %d-token batches", s.name, s.device,
                            s.max_batch_tokens)
                if self.key:
                    remember(self.key, s.max_batch_tokens)
