"""Position bias and calibration of real runs: cloze, letter under rotations, per set and model.

Each configuration is one real ``probegen eval`` (a subprocess, ``--bootstrap`` replicates, seed 0)
on the WordNetQA release samples in the shared data and, when it has been built, a CoDA21 set;
the ``position`` and ``calibration`` blocks of its ``results.json`` become one row: accuracy, the
selection and gold rates of the first 5 shown positions, RStd, consistency, CircularEval, PriDe
(before -> after, every order averaged and order 0 alone), ECE, Brier and mean confidence. Rows go to
``--out`` [bench/results/bench_position.json] with the machine, commit and date;
``bench/render_figures.py`` renders them into docs/figures/position.md.

    .venv/bin/python bench/bench_position.py                 # the default table (a few minutes on 2 cores)
    .venv/bin/python bench/bench_position.py --quick --out /tmp/p.json   # one small glove-50d run
    .venv/bin/python bench/bench_position.py --letter-limit 40   # the letter rows on all 40 items (slow on CPU)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import write_result  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RELEASE = ("definitions", "hypernymy", "hyponymy", "synonymy")


def release_dir() -> Path | None:
    """The WordNetQA release sample folder of the shared data (None where there is none)."""
    sys.path.insert(0, str(REPO))
    from probegen.paths import shared_data_candidates

    for base in shared_data_candidates():
        if (base / "wordnetqa-release-sample").is_dir():
            return base / "wordnetqa-release-sample"
    return None


def configs(args) -> list[dict]:
    """The runs of the table: (label, model, method, dataset, extra options)."""
    rel = release_dir()
    if rel is None:
        sys.exit("bench_position: the WordNetQA release sample is not in the shared data")

    def release(probe: str) -> str:
        return str(rel / f"{probe}-train-sample.jsonl")

    if args.quick:
        return [{"set": "release hypernymy (first 10)", "model": "glove-50d", "method": "cloze",
                 "dataset": release("hypernymy"), "options": ["--limit", "10"]}]
    out = []
    coda = REPO / args.coda21
    if (coda / "groups.jsonl").exists() or coda.is_dir():
        for model in args.coda21_models.split(","):
            out.append({"set": f"CoDA21 {coda.name.removeprefix('coda21-')}", "model": model, "method": "cloze",
                        "dataset": str(coda), "options": []})
    for probe in RELEASE:
        out.append({"set": f"release {probe} (40)", "model": "glove-50d", "method": "cloze",
                    "dataset": release(probe), "options": []})
    out.append({"set": "release hypernymy (40)", "model": "minilm-l6", "method": "cloze",
                "dataset": release("hypernymy"), "options": []})
    out.append({"set": "release hypernymy (40)", "model": "smollm2-135m", "method": "cloze (summed log-probs)",
                "dataset": release("hypernymy"), "options": []})
    if args.letter_limit:
        n = args.letter_limit
        out.append({"set": f"release hypernymy (first {n})", "model": "smollm2-135m",
                    "method": "letter, 5 rotations", "dataset": release("hypernymy"),
                    "options": ["--method", "letter", "--permutations", "rotations", "--limit", str(n),
                                "--debias-share", "0.2"]})
    return out


def stat(block: dict | None) -> dict | None:
    """A ``{value, ci}`` statistic rounded to 3 digits (None where it was not computed)."""
    if not block or block.get("value") is None:
        return None
    ci = block.get("ci")
    return {"value": round(block["value"], 3), "ci": [round(x, 3) for x in ci] if ci else None}


def row_of(cfg: dict, results: dict, seconds: float) -> dict:
    """One table row from a run's ``results.json``."""
    pos = results["position"]
    cal = next(iter(results["calibration"].values()))  # an eval run has one condition (full; CoDA21: context)
    m = results["metrics"]
    m = m if "accuracy" in m else m["all"]  # CoDA21: mean group accuracy over nouns and verbs
    acc, ci = m["accuracy"], m.get("accuracy_ci")
    positions = pos["positions"][:5]
    pride = pos.get("pride") or {}

    def before_after(block: dict | None) -> list | None:
        if not block or "before" not in block:
            return None
        return [round(block["before"]["value"], 3), round(block["after"]["value"], 3)]

    return {
        "set": cfg["set"], "model": cfg["model"], "method": cfg["method"],
        "rows": pos.get("rows"), "clusters": pos.get("clusters"), "orders": pos.get("orders"),
        "accuracy": {"value": round(acc, 3), "ci": [round(x, 3) for x in ci] if ci else None},
        "selection": [round(p["selection_rate"]["value"], 2) for p in positions],
        "gold": [round(p["gold_rate"]["value"], 2) for p in positions],
        "rstd": stat(pos.get("rstd")), "consistency": stat(pos.get("consistency")),
        "circular": stat(pos.get("circular")),
        "pride": {"all_orders": before_after(pride), "order_0": before_after(pride.get("first_order"))}
        if "before" in pride else None,
        "ece": stat(cal.get("ece")), "brier": stat(cal.get("brier")),
        "mean_confidence": round(cal["mean_confidence"], 3), "seconds": round(seconds, 1),
    }


def run_one(cfg: dict, where: Path, bootstrap: int) -> dict:
    """Run ``probegen eval`` for one configuration and return its row."""
    out = where / f"{cfg['model']}-{len(os.listdir(where))}"
    cmd = [sys.executable, "-m", "probegen", "eval", "--model", cfg["model"], "--dataset", cfg["dataset"],
           "--bootstrap", str(bootstrap), "--seed", "0", "--device", "cpu", "--out", str(out), *cfg["options"]]
    print("$ " + " ".join(cmd[2:]), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t
    return row_of(cfg, json.loads((out / "results.json").read_text(encoding="utf-8")), seconds)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_position.json]")
    ap.add_argument("--bootstrap", type=int, default=1000, help="cluster-bootstrap replicates per run")
    ap.add_argument("--coda21", default="probegen_out/datasets/coda21-clean-hard",
                    help="a built CoDA21 set (skipped when absent)")
    ap.add_argument("--coda21-models", default="glove-50d",
                    help="models run on the CoDA21 set (minilm-l6: about 10 minutes more on 2 busy cores)")
    ap.add_argument("--letter-limit", type=int, default=5,
                    help="items of the letter rows (SmolLM2 under 5 rotations; 0 skips them)")
    ap.add_argument("--quick", action="store_true", help="one small glove-50d run (what the tests run)")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_position-") as tmp:
        for cfg in configs(args):
            rows.append(run_one(cfg, Path(tmp), args.bootstrap))
            r = rows[-1]
            print(f"  accuracy {r['accuracy']['value']:.3f}, selection {r['selection']}, RStd "
                  f"{(r['rstd'] or {}).get('value')}, ECE {(r['ece'] or {}).get('value')} ({r['seconds']} s)")
    write_result(args.out, "bench_position", rows,
                 config={"bootstrap": args.bootstrap, "seed": 0, "device": "cpu", "quick": args.quick,
                         "letter_limit": args.letter_limit, "coda21_models": args.coda21_models.split(",")})


if __name__ == "__main__":
    main()
