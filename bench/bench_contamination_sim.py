"""The contamination test on simulated forms (docs/contamination.md): false-positive rate and power.

Forms of 60 units of 3 items; unit difficulties N(0.3, 1) on the logit scale; each form with its own
offset N(0, tau) (form-to-form spread); one-sided alpha 0.05. Per (fresh forms, tau): the share of
unexposed seen forms flagged (``--sims`` checks), and the share flagged when the seen form is raised
by ``--shift`` logits (``--power-sims`` checks). tests/test_contamination.py checks the gap test with it.

    python bench/bench_contamination_sim.py [--sims 2000] [--power-sims 500] [--shift 0.8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from probegen.diagnostics.contamination import form_accuracy, gap_test  # noqa: E402

UNITS, ITEMS, MEAN = 60, 3, 0.3


def sim_form(rng: np.random.Generator, shift: float, tau: float) -> dict:
    """One form: UNITS units of ITEMS items; its own logit offset ~ N(0, tau) plus ``shift``."""
    offset = rng.normal(0.0, tau) + shift
    p = 1 / (1 + np.exp(-(rng.normal(MEAN, 1.0, UNITS) + offset)))
    right = rng.binomial(ITEMS, p)
    return {f"u{i}": (float(right[i]), float(ITEMS)) for i in range(UNITS)}


def flag_rate(fresh: int, tau: float, shift: float, sims: int, seed: int) -> float:
    """Share of ``sims`` checks (seen form shifted by ``shift``) that the gap test flags."""
    rng = np.random.default_rng(seed)
    flags = 0
    for _ in range(sims):
        forms = [form_accuracy(sim_form(rng, shift if j == 0 else 0.0, tau))[:2] for j in range(fresh + 1)]
        flags += gap_test(forms[0], forms[1:])["flagged"]
    return flags / sims


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=2000, help="checks per row for the false-positive rate")
    ap.add_argument("--power-sims", type=int, default=500, help="checks per row for the flag rate under a shift")
    ap.add_argument("--shift", type=float, default=0.8, help="the planted exposure, in logits")
    ap.add_argument("--results", type=Path, default=benchlib.RESULTS_DIR)
    args = ap.parse_args(argv)
    rows = []
    t = time.perf_counter()
    for fresh in (2, 3, 5):
        for tau in (0.0, 0.1, 0.3):
            rows.append({"fresh": fresh, "tau": tau, "false_positive": flag_rate(fresh, tau, 0.0, args.sims, 11),
                         "flag_rate_shift": flag_rate(fresh, tau, args.shift, args.power_sims, 12)})
            print(rows[-1], flush=True)
    benchlib.write_result(args.results / "bench_contamination_sim.json", "bench_contamination_sim", rows,
                          config={"units": UNITS, "items": ITEMS, "mean_logit": MEAN, "alpha": 0.05,
                                  "sims": args.sims, "power_sims": args.power_sims, "shift": args.shift,
                                  "seconds": round(time.perf_counter() - t, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
