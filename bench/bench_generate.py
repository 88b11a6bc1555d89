"""Time CoDA21 generation for every variant and POS, and compare counts with the paper's Table 1.

One run, one process: the first variant pays for building the caches (WordNet graph, SemCor
index, definition embeddings, context scores); the rest show the warm-cache cost. Run:

    .venv/bin/python bench/bench_generate.py [--context-scorer smollm2-135m|first] [--datasets DIR] [--out FILE.json]

The table (counts, the paper's, ratios, build seconds) goes to ``--out`` [bench/results/bench_generate.json]
with the machine, commit and date; ``bench/render_figures.py`` renders it into docs/figures/papers.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import write_result  # noqa: E402

from probegen.coda21 import dataset as D  # noqa: E402
from probegen.coda21.config import Coda21Config  # noqa: E402
from probegen.coda21.reference import table1  # noqa: E402
from probegen.runner import Runner  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--context-scorer", default="smollm2-135m")
    ap.add_argument("--datasets", default="probegen_out/datasets", help="folder the built datasets are written to")
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_generate.json]")
    ap.add_argument("--variants", default="clean-hard,clean-easy,noisy-hard,noisy-easy")
    args = ap.parse_args()
    ref = table1()
    runner = Runner(log=lambda m: print("  " + m, file=sys.stderr))
    rows = []
    for variant in args.variants.split(","):
        clean, easy = variant.split("-")
        cfg = Coda21Config(easy=easy == "easy", clean=clean == "clean", context_scorer=args.context_scorer)
        t = time.perf_counter()
        ds = D.build(cfg, progress=True, log=lambda m: print("  " + m, file=sys.stderr), runner=runner)
        dt = time.perf_counter() - t
        D.write(ds, Path(args.datasets) / f"coda21-{variant}")
        c = D.counts(ds.groups)
        for pos in ("n", "v"):
            r = ref[(variant, pos)]
            rows.append((variant, pos, c[pos]["groups"], r["groups"], c[pos]["unique_synsets"], r["unique_synsets"], dt))
    print(f"{'variant':<11} {'pos':<3} {'groups':>6} {'paper':>6} {'ratio':>6} {'synsets':>8} {'paper':>6} {'ratio':>6} {'build s':>8}")
    for v, p, g, rg, s, rs, dt in rows:
        print(f"{v:<11} {p:<3} {g:>6} {rg:>6} {g / rg:>6.2f} {s:>8} {rs:>6} {s / rs:>6.2f} {dt:>8.1f}")
    table = [{"variant": v, "pos": {"n": "noun", "v": "verb"}[p], "groups": g, "paper_groups": rg,
              "synsets": s, "paper_synsets": rs, "build_s": round(dt, 1)} for v, p, g, rg, s, rs, dt in rows]
    write_result(args.out, "bench_generate", table,
                 config={"context_scorer": args.context_scorer, "variants": args.variants.split(","), "seed": cfg.seed})


if __name__ == "__main__":
    main()
