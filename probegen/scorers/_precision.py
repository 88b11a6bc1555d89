"""A lower precision validated at run time, never assumed: its decisions against float32 on the first units.

``--dtype int8`` (torch.ao dynamic quantisation of the Linear layers), ``bfloat16`` or ``float16`` on
the CPU move scores by tenths of a nat. Before a job, its first :data:`UNITS` units (queries with two or
more candidates) are scored in both precisions; the precision is refused, in one line with the measured
agreement, when fewer than :data:`MIN_AGREEMENT` choose the same candidate. Once per loaded model.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ProbegenError

Pair = tuple[str, str]

#: units compared (the first ones of the first job)
UNITS = 50
#: the share of units that must choose the same candidate as float32
MIN_AGREEMENT = 0.96


def first_units(pairs: Sequence[Pair], n: int = UNITS) -> list[list[Pair]]:
    """The first ``n`` queries with two or more candidates among ``pairs``, each as its list of pairs.

    >>> first_units([("q1", "a"), ("q1", "b"), ("q2", "a"), ("q3", "a"), ("q3", "c")], 5)
    [[('q1', 'a'), ('q1', 'b')], [('q3', 'a'), ('q3', 'c')]]
    """
    by_query: dict[str, list[Pair]] = {}
    for p in pairs:
        by_query.setdefault(p[0], []).append(p)
    return [ps for ps in by_query.values() if len(ps) >= 2][:n]


def agreement(low: np.ndarray, ref: np.ndarray, sizes: Sequence[int]) -> tuple[int, int]:
    """(units whose highest-scoring candidate is the same in ``low`` and ``ref``, units); the scores
    are the units' candidates concatenated, ``sizes`` candidates a unit.

    >>> agreement(np.array([1.0, 2, 5, 3]), np.array([1.0, 3, 2, 5]), [2, 2])
    (1, 2)
    """
    ends = np.cumsum([0, *sizes])
    same = sum(int(np.argmax(low[a:b]) == np.argmax(ref[a:b])) for a, b in zip(ends, ends[1:]))
    return same, len(sizes)


def check(dtype: str, pairs: Sequence[Pair], score_low: Callable[[list[Pair]], np.ndarray],
          reference: Callable[[], Any], units: int = UNITS, threshold: float = MIN_AGREEMENT) -> dict[str, Any]:
    """The record (``units``, ``agree``, ``agreement``, ``max_abs_diff``, ...) of ``dtype``'s choices (``score_low``)
    against float32's (``reference()``: a scorer) on the first ``units`` units of ``pairs``; ProbegenError when
    the agreement is below ``threshold``."""
    chosen = first_units(pairs, units)
    record: dict[str, Any] = {"dtype": dtype, "against": "float32", "units": len(chosen), "threshold": threshold}
    if not chosen:
        record["checked"] = False
        return record
    flat = [p for unit in chosen for p in unit]
    low = np.asarray(score_low(flat), dtype=np.float64)
    ref_scorer = reference()
    ref = np.asarray(ref_scorer._score_uncached(flat), dtype=np.float64)
    same, n = agreement(low, ref, [len(u) for u in chosen])
    diff = np.abs(low - ref)
    record.update(checked=True, agree=same, agreement=round(same / n, 4), max_abs_diff=float(f"{diff.max():.3g}"),
                  mean_abs_diff=float(f"{diff.mean():.3g}"))
    if same / n < threshold:
        raise ProbegenError(
            f"--dtype {dtype} refused: its choices agree with float32 on {same} of {n} units ({same / n:.1%}), below "
            f"the {threshold:.0%} required (mean |diff| {diff.mean():.3g} nats); use --dtype float32")
    return record


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX), per /proc/cpuinfo (Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            flags = fh.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
