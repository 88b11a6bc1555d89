"""The built-in specs of docs/designing.md built and scored: size and leaks (`probegen stats`), minilm-l6 accuracy.

Each spec is built with `probegen make spec NAME` (coda21-3hops with the first usable SemCor context:
scoring its candidate contexts with SmolLM2 would take hours on a CPU), `probegen stats` gives its
size and leak rate, and `probegen eval --model minilm-l6` its accuracy beside a random matching /
guess -> ``bench/results/bench_specs.json``.

    python bench/bench_specs.py [--specs coda21-3hops,coda21-part-meronyms,verb-entailment-mc]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = benchlib.BENCH_DIR.parent
MODEL = "minilm-l6"
SPECS = {"coda21-3hops": ["--set", "contexts.scorer=first"], "coda21-part-meronyms": [], "verb-entailment-mc": []}


def probegen(*args: str, log: Path) -> str:
    """Run ``probegen ARGS`` in this Python; its stdout (also appended to ``log``); a failure stops the bench."""
    r = subprocess.run([sys.executable, "-m", "probegen", *args], capture_output=True, text=True, cwd=REPO)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ probegen {' '.join(args)}\n{r.stdout}{r.stderr}")
    if r.returncode:
        sys.exit(f"bench_specs: `probegen {' '.join(args)}` failed (exit {r.returncode}); see {log}")
    return r.stdout


def accuracies(metrics: dict) -> dict[str, dict]:
    """Accuracy (and random) overall and per part of speech, from an eval's ``metrics``."""
    out = {}
    for key, m in metrics.items():
        if isinstance(m, dict) and isinstance(m.get("accuracy"), (int, float)):
            out[key] = {"accuracy": m["accuracy"], "random": m.get("random"), "units": m.get("groups", m.get("n"))}
    if isinstance(metrics.get("accuracy"), (int, float)):
        out["all"] = {"accuracy": metrics["accuracy"], "random": metrics.get("random"),
                      "strict": metrics.get("strict_accuracy")}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = benchlib.work_parser(__doc__, "specs")
    ap.add_argument("--specs", default=",".join(SPECS))
    args = ap.parse_args(argv)
    log = benchlib.fresh_dir(args.work) / "bench_specs.log"
    rows = []
    for name in args.specs.split(","):
        t = time.perf_counter()
        data = args.work / "sets" / name
        probegen("make", "spec", name, *SPECS[name], "--out", str(data), log=log)
        stats = probegen("stats", str(data), log=log)
        run = args.work / "runs" / name
        probegen("eval", "--model", MODEL, "--dataset", str(data), "--out", str(run), log=log)
        res = json.loads((run / "results.json").read_text(encoding="utf-8"))
        rows.append({"spec": name, "options": " ".join(SPECS[name]), "kind": res.get("dataset", {}).get("kind"),
                     "stats": stats.strip().splitlines()[1:], "accuracy": accuracies(res.get("metrics", {})),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(f"bench_specs: {name} done in {rows[-1]['seconds']:.0f} s", flush=True)
    benchlib.write_result(args.results / "bench_specs.json", "bench_specs", rows, config={"model": MODEL})
    return 0


if __name__ == "__main__":
    sys.exit(main())
