"""CoDA21 accuracy of the bundled models on probegen's builds, beside the paper's Table 2.

Runs ``probegen eval`` (a subprocess, seed 0, CPU) for each model on each built CoDA21 set
(``bench/bench_generate.py`` or ``probegen make coda21`` builds them) and puts the noun and verb
accuracies next to the nearest model of the paper (its Table 2, ``probegen/reference/``) and the
random baseline (the expected accuracy of a random matching, mean of 1/k). Rows go to ``--out``
[bench/results/bench_papers.json] with the machine, commit and date; ``bench/render_figures.py``
renders them into docs/figures/papers.md beside Table 1 (``bench_generate.json``).

    .venv/bin/python bench/bench_papers.py [--models glove-50d] [--sets clean-hard,clean-easy] [--out FILE.json]
    .venv/bin/python bench/bench_papers.py --models glove-50d,minilm-l6   # MiniLM too (about 10 min per set on 2 busy cores)
    .venv/bin/python bench/bench_papers.py --models smollm2-135m   # the causal LM (minutes per set on a CPU)
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import write_result  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
#: the paper's model nearest to each bundled one (size and kind)
NEAREST = {"glove-50d": "fasttext-crawl-300d-2M-subword", "minilm-l6": "paraphrase-MiniLM-L6-v2",
           "smollm2-135m": "gpt2"}


def table2() -> dict[str, dict[str, float]]:
    """The paper's Table 2: {model: {"clean-hard-noun": .31, ...}}."""
    text = resources.files("probegen.reference").joinpath("coda21_table2.csv").read_text(encoding="utf-8")
    return {r["model"]: {k: float(v) for k, v in r.items() if k != "model" and v} for r in csv.DictReader(text.splitlines())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="glove-50d",
                    help="comma-separated bundled models (minilm-l6, smollm2-135m: minutes to tens of minutes per set on 2 cores)")
    ap.add_argument("--sets", default="clean-hard,clean-easy", help="comma-separated CoDA21 variants")
    ap.add_argument("--datasets", default="probegen_out/datasets", help="folder holding coda21-<variant>")
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_papers.json]")
    args = ap.parse_args(argv)
    paper = table2()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_papers-") as tmp:
        for variant in args.sets.split(","):
            ds = REPO / args.datasets / f"coda21-{variant}"
            if not ds.is_dir():
                sys.exit(f"bench_papers: {ds} is not built (run bench/bench_generate.py or probegen make coda21)")
            manifest = json.loads((ds / "manifest.json").read_text(encoding="utf-8"))
            for model in args.models.split(","):
                out = Path(tmp) / f"{model}-{variant}"
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "probegen", "eval", "--model", model, "--dataset", str(ds),
                                "--seed", "0", "--device", "cpu", "--out", str(out)],
                               check=True, cwd=REPO, stdout=subprocess.DEVNULL)
                m = json.loads((out / "results.json").read_text(encoding="utf-8"))["metrics"]
                near = NEAREST.get(model, "-")
                ref = paper.get(near, {})
                rows.append({"model": model, "set": variant,
                             "noun": round(m["noun"]["accuracy"], 3), "verb": round(m["verb"]["accuracy"], 3),
                             "random_noun": round(m["noun"]["random"], 3), "random_verb": round(m["verb"]["random"], 3),
                             "groups": [m["noun"]["groups"], m["verb"]["groups"]],
                             "paper_model": near, "paper_noun": ref.get(f"{variant}-noun"),
                             "paper_verb": ref.get(f"{variant}-verb"), "seconds": round(time.perf_counter() - t, 1)})
                print(rows[-1], flush=True)
    write_result(args.out, "bench_papers", rows,
                 config={"models": args.models.split(","), "sets": args.sets.split(","), "seed": 0, "device": "cpu",
                         "context_scorer": manifest.get("config", {}).get("context_scorer")})


if __name__ == "__main__":
    main()
