"""Lower precision on the CPU, validated: SmolLM2 in int8 and bfloat16 against float32, speed and choices.

Same model (bundled SmolLM2-135M), same CoDA21 pairs (the demo's set, clean-easy, rendered as
``probegen eval`` renders them: ``--groups`` first groups), same scorer path for every precision:
  float32   the default;
  int8      ``--dtype int8``: the body's Linear layers dynamically quantised to int8 (torch.ao), the
            LM head in float32;
  bfloat16  ``--dtype bfloat16`` (native on CPUs with AVX512-BF16 or AMX; the machine's flags are recorded).
Each precision scores every pair in ``--rounds`` rounds in rotating order (the first call of each is
a warm-up on two queries, not timed); pairs/s use the median round. Choices are compared with
float32 over every unit of the subset (a unit: one context choosing among its group's definitions,
its highest-scoring candidate) and over whole groups (the same one-to-one alignment, probegen's
aligner); the run-time check (:mod:`probegen.scorers._precision`) judges the first 50 units, and
its verdict on these scores is recorded too (the check itself is not re-run here: it would score
those units twice more).

    .venv/bin/python bench/bench_precision_cpu.py [--dataset DIR] [--groups 12] [--rounds 1] [--out FILE.json]

Writes ``--out`` [bench/results/bench_precision_cpu.json] with the machine (CPU flags, load), commit and
date; ``bench/render_figures.py`` renders it into docs/figures/precision_cpu.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

DTYPES = ("float32", "int8", "bfloat16")


def group_agreement(groups, queries, low, ref) -> tuple[int, int]:
    """(groups whose alignment is the same under ``low`` and ``ref`` scores, groups)."""
    import numpy as np

    from probegen.aligner import align

    same, start = 0, 0
    for g in groups:
        k = len(g.items)
        m_low = np.array(low[start : start + k * k]).reshape(k, k)
        m_ref = np.array(ref[start : start + k * k]).reshape(k, k)
        same += int(np.array_equal(align(m_low), align(m_ref)))
        start += k * k
    return same, len(groups)


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark, print the table and write the result; returns the rows."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="probegen_out/datasets/coda21-clean-easy", help="the demo's CoDA21 set")
    ap.add_argument("--groups", type=int, default=12, help="first N groups [default: 12]")
    ap.add_argument("--rounds", type=int, default=1, help="timed rounds per precision [default: 1]")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--kernel", default="auto", help="attention kernel of packed rows (auto|dense|flex)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads [default: torch's]")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import benchlib
    import numpy as np
    import torch
    from bench_gpu import load_groups, rendered

    from probegen.models import load_scorer
    from probegen.scorers import _precision

    if args.threads:
        torch.set_num_threads(args.threads)
    groups, where = load_groups(args.dataset, args.groups)
    queries, cands = rendered(groups)
    pairs = [(q, c) for q, cs in zip(queries, cands) for c in cs]
    sizes = [len(cs) for cs in cands]
    print(f"data: {where}: {len(groups)} groups, {len(queries)} units, {len(pairs)} pairs; "
          f"{torch.get_num_threads()} threads; load {benchlib.machine()['load_avg']}")
    dtypes = [d for d in args.dtypes.split(",") if d]
    scorers = {}
    for d in dtypes:
        s = load_scorer(args.model, device="cpu", dtype=d, cache=False, kernel=args.kernel)
        s._reference = None  # the run-time check's verdict is computed below from these very scores
        s.score(queries[:2], cands[:2])  # warm-up: self-check, kernels
        scorers[d] = s
    times: dict[str, list[float]] = {d: [] for d in dtypes}
    scores: dict[str, np.ndarray] = {}
    loads = []
    for r in range(args.rounds):
        for d in dtypes[r % len(dtypes) :] + dtypes[: r % len(dtypes)]:
            t = time.perf_counter()
            scores[d] = np.asarray(scorers[d]._score_uncached(pairs), dtype=np.float64)
            times[d].append(time.perf_counter() - t)
            loads.append(benchlib.machine()["load_avg"])
            print(f"  {d}: {len(pairs) / times[d][-1]:.2f} pairs/s (round {r + 1})", flush=True)
    ref = scores.get("float32")
    rows = []
    for d in dtypes:
        pps = len(pairs) / statistics.median(times[d])
        row = {"dtype": d, "pairs_per_s": pps, "seconds": statistics.median(times[d]),
               "kernel": scorers[d].stats().get("kernel"), "pairs": len(pairs), "units": len(queries),
               "groups": len(groups)}
        if ref is not None:
            same, n = _precision.agreement(scores[d], ref, sizes)
            g_same, g_n = group_agreement(groups, queries, scores[d], ref)
            first = _precision.first_units(pairs)
            k = sum(len(u) for u in first)
            c_same, c_n = _precision.agreement(scores[d][:k], ref[:k], [len(u) for u in first])
            diff = np.abs(scores[d] - ref)
            row.update(vs_float32=pps / (len(pairs) / statistics.median(times["float32"])),
                       unit_agreement=same / n, units_agree=same, group_agreement=g_same / g_n, groups_agree=g_same,
                       max_abs_diff=float(diff.max()), mean_abs_diff=float(diff.mean()),
                       check_units=c_n, check_agree=c_same,
                       check_verdict="accepted" if c_same / c_n >= _precision.MIN_AGREEMENT else "refused")
        rows.append(row)
        print(f"{d:<9} {pps:7.2f} pairs/s  x{row.get('vs_float32', 1):.2f}  units {row.get('units_agree', '-')}/"
              f"{len(queries)}  groups {row.get('groups_agree', '-')}/{len(groups)}  max|d| "
              f"{row.get('max_abs_diff', 0):.3g}  check: {row.get('check_verdict', '-')}")
    benchlib.write_result(args.out or benchlib.default_out("bench_precision_cpu"), "bench_precision_cpu", rows,
                          config={"dataset": where, "groups": len(groups), "model": args.model, "rounds": args.rounds,
                                  "threads": torch.get_num_threads(), "kernel": args.kernel,
                                  "target": "speed >= 1.5x float32 at >= 96% unit agreement"},
                          load_during=loads)
    return rows


if __name__ == "__main__":
    main()
