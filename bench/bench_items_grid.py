"""Item statistics on real runs (docs/itemstats.md): the bundled models as respondents, `probegen items`
and `probegen subset` on their answers.

Two sets: the WordNetQA release sample (definitions, 40 items, 5 options; 2PL) and the first 30
CoDA21 clean-hard noun groups (`probegen make coda21 --hard --clean --pos noun --context-scorer
first`, `--limit 30`; 3PL, floor 1/k). Respondents: glove-50d and minilm-l6 under `eval` (CoDA21:
both matchings) and `bias --no-controls` (one respondent per condition); with ``--slow`` also
smollm2-135m under every method and variant that applies (minutes to a quarter of an hour per run
on a 2-core CPU). Then `probegen items --pairs` and `probegen subset --size 10` with each method;
their output files (summary.json, respondents.csv, items.csv, pairs.csv, distractors.csv,
predictor.json) -> ``bench/results/bench_items_grid.json``.

    python bench/bench_items_grid.py [--slow] [--work probegen_out/bench/items-grid]
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = benchlib.BENCH_DIR.parent
WNQA = REPO.parent / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"
SMOL = "smollm2-135m"
# (run name, command, model, extra args); a run is slow when its model is SmolLM2
WNQA_RUNS = [
    ("e-glove", "eval", "glove-50d", []), ("e-minilm", "eval", "minilm-l6", []),
    ("e-smol", "eval", SMOL, []), ("e-smol-tok", "eval", SMOL, ["--length-norm", "tokens"]),
    ("e-smol-chars", "eval", SMOL, ["--length-norm", "chars"]), ("e-smol-gen", "eval", SMOL, ["--method", "generate"]),
    ("e-smol-letter", "eval", SMOL, ["--method", "letter"]),
    ("e-smol-letter-rot", "eval", SMOL, ["--method", "letter", "--permutations", "rotations"]),
    ("b-glove", "bias", "glove-50d", ["--no-controls"]), ("b-minilm", "bias", "minilm-l6", ["--no-controls"]),
    ("b-smol", "bias", SMOL, ["--no-controls"]),
]
CODA_RUNS = [
    ("e-glove", "eval", "glove-50d", []), ("e-glove-simple", "eval", "glove-50d", ["--matching", "simple"]),
    ("e-minilm", "eval", "minilm-l6", []), ("e-minilm-simple", "eval", "minilm-l6", ["--matching", "simple"]),
    ("e-smol", "eval", SMOL, []), ("e-smol-simple", "eval", SMOL, ["--matching", "simple"]),
    ("e-smol-mean", "eval", SMOL, ["--reduction", "mean"]), ("e-smol-defas", "eval", SMOL, ["--pattern", "defined-as"]),
    ("e-smol-gen", "eval", SMOL, ["--method", "generate"]), ("e-smol-letter", "eval", SMOL, ["--method", "letter"]),
    ("b-glove", "bias", "glove-50d", ["--no-controls"]), ("b-minilm", "bias", "minilm-l6", ["--no-controls"]),
    ("b-smol", "bias", SMOL, ["--no-controls"]),
]
CODA_MAKE = ["coda21", "--hard", "--clean", "--pos", "noun", "--context-scorer", "first"]
CODA_GROUPS = 30
SUBSET_SIZE = 10


def probegen(*args: str, log: Path) -> None:
    """Run ``probegen ARGS`` (output to ``log``; a failure stops the bench): :func:`benchlib.run_probegen`."""
    benchlib.run_probegen(args, log, "bench_items_grid")


def read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def grid(name: str, dataset: Path, runs: list, irt: str, limit: int | None, slow: bool, work: Path,
         log: Path) -> dict:
    """Every run of ``runs`` on ``dataset``, then items and subsets; the figures of their output files."""
    done, seconds = [], {}
    for run, cmd, model, extra in runs:
        if model == SMOL and not slow:
            continue
        out = work / name / "runs" / run
        t = time.perf_counter()
        probegen(cmd, "--model", model, "--dataset", str(dataset), *extra,
                 *(["--limit", str(limit)] if limit else []), "--out", str(out), log=log)
        seconds[run] = round(time.perf_counter() - t, 1)
        done.append(str(out))
        print(f"bench_items_grid: {name} {run} {seconds[run]:.0f} s", flush=True)
    items = work / name / "items"
    probegen("items", *done, "--out", str(items), "--irt", irt, "--pairs", log=log)
    subsets = []
    for method in ("random", "anchor", "information"):
        out = work / name / f"subset-{method}"
        probegen("subset", str(dataset), "--items", str(items), "--size", str(SUBSET_SIZE), "--method", method,
                 "--out", str(out), log=log)
        subsets.append({"method": method, "size": SUBSET_SIZE,
                        "predictor": json.loads((out / "predictor.json").read_text(encoding="utf-8"))
                        .get("validation")})
    summary = json.loads((items / "summary.json").read_text(encoding="utf-8"))
    flagged = [r for r in read_csv(items / "items.csv") if r.get("flags")]
    pairs = read_csv(items / "pairs.csv")
    suspect = {r.get("item") for r in read_csv(items / "distractors.csv")
               if str(r.get("suspect", "")).lower() in ("true", "1")}
    return {"set": name, "dataset": str(dataset.relative_to(REPO.parent)) if dataset.is_relative_to(REPO.parent)
            else str(dataset), "irt": irt, "limit": limit, "runs": [Path(r).name for r in done],
            "summary": summary, "respondents": read_csv(items / "respondents.csv"), "flagged": flagged,
            "pairs": len(pairs), "pairs_significant": sum(str(p.get("significant_holm", p.get("significant", "")))
                                                           .lower() in ("true", "1") for p in pairs),
            "suspect_items": len(suspect), "subsets": subsets, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slow", action="store_true", help="smollm2-135m under every method and variant too")
    ap.add_argument("--work", type=Path, default=REPO / "probegen_out" / "bench" / "items-grid")
    ap.add_argument("--results", type=Path, default=benchlib.RESULTS_DIR)
    args = ap.parse_args(argv)
    work = args.work
    for sub in ("wordnetqa", "coda21"):
        shutil.rmtree(work / sub, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "bench_items_grid.log"
    log.write_text("", encoding="utf-8")
    coda = work / "sets" / "coda21-clean-hard"
    if not (coda / "manifest.json").is_file():
        probegen("make", *CODA_MAKE, "--out", str(coda), log=log)
    rows = [grid("wordnetqa", WNQA, WNQA_RUNS, "2pl", None, args.slow, work, log),
            grid("coda21", coda, CODA_RUNS, "3pl", CODA_GROUPS, args.slow, work, log)]
    benchlib.write_result(args.results / "bench_items_grid.json", "bench_items_grid", rows,
                          config={"slow": args.slow, "coda21_make": "probegen make " + " ".join(CODA_MAKE),
                                  "coda21_groups": CODA_GROUPS, "subset_size": SUBSET_SIZE})
    return 0


if __name__ == "__main__":
    sys.exit(main())
