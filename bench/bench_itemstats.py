"""IRT fitters compared on simulated data (docs/itemstats.md): parameter recovery and time.

probegen's own marginal-likelihood fit (probegen.itemstats.irt) against girth 0.8.0's MML estimators
(``pip install girth==0.8.0``; not a dependency). Run: ``python bench/bench_itemstats.py [--big]``;
``--big`` also times probegen's 2PL on 100 x 20,000 and 20 x 200,000.
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np
from scipy.stats import pearsonr

from probegen.itemstats.irt import fit, simulate


def _girth(y: np.ndarray, model: str) -> tuple[np.ndarray, np.ndarray]:
    import girth

    data = girth.tag_missing_data(np.where(np.isnan(y), 9, y).T.astype(int), [0, 1])
    if model == "1pl":
        r = girth.onepl_mml(data)
        return np.full(y.shape[1], r["Discrimination"]), r["Difficulty"]
    r = (girth.twopl_mml if model == "2pl" else girth.threepl_mml)(data)
    return r["Discrimination"], r["Difficulty"]


def compare(n_resp: int, model: str, missing: float) -> list[str]:
    s = simulate(n_resp, 500, model, k=4, missing=missing, seed=1)
    rows = []
    for name, run in (("probegen", lambda: fit(s["y"], s["k"], model)), ("girth", lambda: _girth(s["y"], model))):
        t = time.perf_counter()
        try:
            out = run()
        except Exception as e:  # noqa: BLE001 (a library that cannot fit this case is a row of the table)
            rows.append(f"| {name} | {model} | {n_resp} | {missing:.0%} | failed: {type(e).__name__} | | |")
            continue
        dt = time.perf_counter() - t
        a, b = (out.a, out.b) if hasattr(out, "a") else out
        ok = np.isfinite(a) & np.isfinite(b)
        rb = pearsonr(s["b"][ok], b[ok])[0]
        ra = pearsonr(s["a"][ok], a[ok])[0] if model != "1pl" else float("nan")
        rows.append(f"| {name} | {model} | {n_resp} | {missing:.0%} | {rb:.3f} | {ra:.3f} | {dt:.1f} |")
    return rows


def big() -> None:
    for n_resp, n_items in ((100, 20_000), (20, 200_000)):
        s = simulate(n_resp, n_items, "2pl", seed=2)
        tracemalloc.start()
        t = time.perf_counter()
        f = fit(s["y"], s["k"], "2pl")
        dt = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"2PL {n_resp} x {n_items}: {dt:.1f} s, numpy peak {peak / 2**20:.0f} MiB, "
              f"r(b) {pearsonr(s['b'], f.b)[0]:.3f}")


if __name__ == "__main__":
    print("| fitter | model | respondents | missing | r(b) | r(a) | seconds |\n|---|---|---|---|---|---|---|")
    for model in ("1pl", "2pl", "3pl"):
        for n in (20, 100):
            for miss in (0.0, 0.1):
                print("\n".join(compare(n, model, miss)), flush=True)
    if "--big" in sys.argv:
        big()
