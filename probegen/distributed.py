"""Data-parallel scoring on torch.distributed: many GPUs, many nodes, or CPU processes.

Start any command under ``torchrun`` (or ``accelerate launch``): rank ``r`` computes chunks
``r, r + W, ...`` of the chunks one process would use and every rank receives every value, so results
equal a single-process run. Only rank 0 writes outputs and shows progress. NCCL with CUDA, else gloo.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence


def env_world_size() -> int:
    """``WORLD_SIZE`` from the launcher's environment (1 when not launched by one).

    >>> import os; os.environ.pop("WORLD_SIZE", None); env_world_size()
    1
    """
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def local_rank() -> int:
    """This process's index on its node (``LOCAL_RANK``; 0 when not launched)."""
    try:
        return int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        return 0


def _dist() -> Any:
    import torch.distributed as dist

    return dist if dist.is_available() else None


def active() -> bool:
    """True when this process is one of several in an initialised process group."""
    dist = _dist()
    return bool(dist is not None and dist.is_initialized() and dist.get_world_size() > 1)


def rank() -> int:
    """This process's global rank (0 without a process group)."""
    return _dist().get_rank() if active() else 0


def world_size() -> int:
    """Number of processes sharing the work (1 without a process group)."""
    return _dist().get_world_size() if active() else 1


def is_main() -> bool:
    """True on the process that writes caches, results and reports (rank 0)."""
    return rank() == 0


def init_from_env() -> bool:
    """Join the launcher's process group if there is one and none is yet; True when this call created it
    (the caller, a :class:`~probegen.runner.Runner`, then owns it and leaves it with :func:`shutdown`).
    With CUDA: NCCL, this process pinned to ``cuda:LOCAL_RANK``."""
    if env_world_size() <= 1:
        return False
    dist = _dist()
    if dist is None:
        from .errors import ProbegenError

        raise ProbegenError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    if dist.is_initialized():
        return False  # joined already (by an earlier runner, or the caller's own code): not ours to leave
    import torch

    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank())
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return True


def default_device() -> str | None:
    """The CUDA device this rank should use under a launcher (``cuda:LOCAL_RANK``), else None."""
    if env_world_size() > 1:
        import torch

        if torch.cuda.is_available():
            return f"cuda:{local_rank()}"
    return None


def all_gather(obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order, on every rank (``[obj]`` without a process group)."""
    if not active():
        return [obj]
    out: list[Any] = [None] * world_size()
    _dist().all_gather_object(out, obj)
    return out


def barrier() -> None:
    """Wait for every rank (no-op without a process group)."""
    if active():
        _dist().barrier()


@contextmanager
def main_first() -> Iterator[None]:
    """Run the body on rank 0 first, then on the others, which find its work (e.g. a converted model) done."""
    if active() and not is_main():
        barrier()
    try:
        yield
    finally:
        if active() and is_main():
            barrier()


def shutdown() -> None:
    """Leave the process group (called by whoever created it: :meth:`probegen.runner.Runner.close`)."""
    dist = _dist()
    if dist is not None and dist.is_initialized():
        dist.destroy_process_group()


def describe() -> dict[str, Any]:
    """What ran, for results.json: the number of processes and the backend."""
    if not active():
        return {"processes": 1, "backend": None}
    return {"processes": world_size(), "backend": _dist().get_backend()}


def shard_map(tasks: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
    """``fn`` of every task, rank r computing tasks r, r + W, r + 2W, ...; every rank receives every result,
    in task order, so the results equal a single-process run (``[fn(t) for t in tasks]`` without a group).

    >>> shard_map([1, 2, 3], lambda x: x * 10)
    [10, 20, 30]
    """
    if not active():
        return [fn(t) for t in tasks]
    mine = {i: fn(tasks[i]) for i in range(rank(), len(tasks), world_size())}
    merged = {i: v for part in all_gather(mine) for i, v in part.items()}
    return [merged[i] for i in range(len(tasks))]
