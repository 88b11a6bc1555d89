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


def compare(n_resp: int, model: str, missing: float, n_items: int = 500) -> list[str]:
    s = simulate(n_resp, n_items, model, k=4, missing=missing, seed=1)
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
        rows.append(f"| {name} | {model} | {n_resp} x {n_items} | {missing:.0%} | {rb:.3f} | {ra:.3f} | {dt:.1f} |")
    return rows


def recovery(seeds: int = 8) -> None:
    """Mean (min) over seeds of r(true, fitted) with 10 planted mis-keyed items (moderate difficulty)."""
    from probegen.itemstats.classical import item_table, rest_flags

    mis = {"negative discrimination", "negative item-rest"}
    print("| model | respondents | r(b) | r(a) | r(theta) | b 95% coverage | planted flagged /10 | other flagged "
          "| shuffled r(b) | shuffled r(a) |\n|---|---|---|---|---|---|---|---|---|---|")
    for model in ("2pl", "3pl"):
        for n in (20, 100):
            rows = []
            for seed in range(seeds):
                s = simulate(n, 500, model, k=4, missing=0.1, seed=seed)
                y = s["y"].copy()
                bad = np.flatnonzero(np.abs(s["b"]) < 1)[::25][:10]
                y[:, bad] = 1 - y[:, bad]
                good = np.setdiff1d(np.arange(500), bad)
                f = fit(y, s["k"], model)
                t = item_table(y)
                fl = [bool((set(a) | set(b)) & mis) for a, b in zip(f.flags, rest_flags(t["item_rest"], t["n"]))]
                sh = s["y"].ravel().copy()
                np.random.default_rng(seed).shuffle(sh)
                c = fit(sh.reshape(y.shape), s["k"], model)
                rows.append([pearsonr(s["b"][good], f.b[good])[0], pearsonr(s["a"][good], f.a[good])[0],
                             pearsonr(s["theta"], f.theta)[0],
                             np.mean(np.abs(f.b[good] - s["b"][good]) < 1.96 * f.b_se[good]),
                             sum(fl[i] for i in bad), sum(fl[i] for i in good),
                             pearsonr(s["b"], c.b)[0], pearsonr(s["a"], c.a)[0]])
            r = np.array(rows)
            cells = [f"{m:.3f} ({lo:.3f})" for m, lo in zip(r.mean(0)[:4], r.min(0)[:4])]
            cells += [f"{r[:, 4].mean():.1f} (min {r[:, 4].min():.0f})", f"{r[:, 5].mean():.1f} (max {r[:, 5].max():.0f})"]
            cells += [f"{r[:, 6].mean():+.3f} (max abs {np.abs(r[:, 6]).max():.3f})",
                      f"{r[:, 7].mean():+.3f} (max abs {np.abs(r[:, 7]).max():.3f})"]
            print(f"| {model} | {n} | " + " | ".join(cells) + " |", flush=True)


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
    if "--recovery" in sys.argv:
        recovery()
        sys.exit()
    n_items = int(sys.argv[sys.argv.index("--items") + 1]) if "--items" in sys.argv else 500
    print("| fitter | model | respondents x items | missing | r(b) | r(a) | seconds |\n|---|---|---|---|---|---|---|")
    for model in ("1pl", "2pl", "3pl"):
        for n in (20, 100):
            for miss in (0.0, 0.1):
                print("\n".join(compare(n, model, miss, n_items)), flush=True)
    if "--big" in sys.argv:
        big()
