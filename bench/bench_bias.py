"""Partial-input bias measured (docs/bias.md): the WordNetQA release samples and the trained method.

- ``release``: `probegen eval` and `probegen bias --bootstrap 200` with minilm-l6 on the four 40-row
  release samples in ../shared/data/wordnetqa-release-sample/, read unchanged;
- ``trained``: `probegen make wic` / `make wsd` (the sizes of docs/bias.md) and `probegen bias`
  with its trained method (frozen minilm-l6 features, 3 seeds).

Each writes ``bench/results/bench_bias_<part>.json``.

    python bench/bench_bias.py [--parts release,trained] [--work probegen_out/bench/bias]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = benchlib.BENCH_DIR.parent
SAMPLES = REPO.parent / "shared" / "data" / "wordnetqa-release-sample"
PROBES = ("definitions", "hypernymy", "hyponymy", "synonymy")
MODEL = "minilm-l6"
MAKE = {"wic": ["wic", "--max-pairs", "1600", "--max-tokens", "40"],
        "wsd": ["wsd", "--max-items", "1200", "--max-tokens", "40"]}


def probegen(*args: str, log: Path) -> None:
    """Run ``probegen ARGS`` (output to ``log``; a failure stops the bench): :func:`benchlib.run_probegen`."""
    benchlib.run_probegen(args, log, "bench_bias")


def summary(results: Path) -> dict:
    """The figures of a bias run's results.json: accuracy per ablation with CIs, the gap, the ratios."""
    d = json.loads(results.read_text(encoding="utf-8"))
    ds = d["datasets"][0]
    if "all" not in ds:  # the trained method: accuracies as mean/SD over seeds, ratios with seed SDs
        keep = ("name", "task", "n_train", "n_test", "n_test_units", "conditions", "ratios", "side", "paper")
        return {**{k: ds.get(k) for k in keep}, "gap": (ds.get("bootstrap") or {}).get("gap")}
    a = ds["all"]
    return {"name": ds["name"], "n_items": ds.get("n_items"), "ablations": a.get("ablations"), "gap": a.get("gap"),
            "ratios": a.get("ratios"), "seeds": a.get("seeds"), "side": a.get("side"),
            "extra": {k: a[k] for k in a if k not in ("ablations", "gap", "ratios", "bootstrap")}}


def release(work: Path, log: Path) -> list[dict]:
    rows = []
    for probe in PROBES:
        src = SAMPLES / f"{probe}-train-sample.jsonl"
        t = time.perf_counter()
        probegen("eval", "--model", MODEL, "--dataset", str(src), "--out", str(work / f"eval-{probe}"), log=log)
        probegen("bias", "--model", MODEL, "--dataset", str(src), "--bootstrap", "200",
                 "--out", str(work / f"bias-{probe}"), log=log)
        ev = json.loads((work / f"eval-{probe}" / "results.json").read_text(encoding="utf-8"))
        rows.append({"probe": probe, "file": src.name, "eval_accuracy": find_accuracy(ev),
                     **summary(work / f"bias-{probe}" / "results.json"),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(f"bench_bias: {probe} done", flush=True)
    return rows


def find_accuracy(ev: dict) -> float | None:
    """The accuracy of an eval results.json (``metrics.accuracy``)."""
    x = (ev.get("metrics") or {}).get("accuracy")
    return float(x) if isinstance(x, (int, float)) else None


def trained(work: Path, log: Path) -> list[dict]:
    rows = []
    for name, make in MAKE.items():
        t = time.perf_counter()
        data = work / "datasets"
        probegen("make", *make, "--out", str(data / f"{name}-semcor"), log=log)
        probegen("bias", "--model", MODEL, "--dataset", str(data / f"{name}-semcor"),
                 "--out", str(work / f"bias-{name}"), log=log)
        rows.append({"set": f"{name}-semcor", **summary(work / f"bias-{name}" / "results.json"),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(f"bench_bias: {name} done", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = benchlib.work_parser(__doc__, "bias")
    ap.add_argument("--parts", default="release,trained")
    args = ap.parse_args(argv)
    log = benchlib.fresh_dir(args.work) / "bench_bias.log"
    for part in args.parts.split(","):
        fn = {"release": release, "trained": trained}[part]
        rows = fn(args.work, log)
        benchlib.write_result(args.results / f"bench_bias_{part}.json", "bench_bias", rows,
                              config={"model": MODEL, "part": part,
                                      "make": {k: "probegen make " + " ".join(v) for k, v in MAKE.items()}
                                      if part == "trained" else None,
                                      "bootstrap": 200 if part == "release" else None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
