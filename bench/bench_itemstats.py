"""IRT fitters compared on simulated data (docs/itemstats.md): parameter recovery and time.

probegen's own marginal-likelihood fit (probegen.itemstats.irt) against girth 0.8.0's MML estimators,
py-irt 0.7.1's variational (pyro SVI) 1PL/2PL and irtorch 0.5.6's MML 1PL/2PL/3PL; none is a dependency,
each arm runs only where its package imports (``pip install girth==0.8.0`` / ``py-irt==0.7.1`` /
``irtorch==0.5.6``; ``make bench BENCH_IRT_PYTHON=/path/to/venv/bin/python`` runs the comparison in a
scratch environment that has them). Each part writes its result file (machine, commit, date):

    python bench/bench_itemstats.py --compare [--items 100] [--fitters a,b] [--models 2pl] [--resp 20,100]
    python bench/bench_itemstats.py --recovery [--seeds 8]     # 500 items, planted mis-keyed items
    python bench/bench_itemstats.py --big [--big-sizes 100x20000,20x200000]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from probegen.itemstats.irt import fit, simulate  # noqa: E402


def _girth(y: np.ndarray, model: str) -> tuple[np.ndarray, np.ndarray]:
    import girth

    data = girth.tag_missing_data(np.where(np.isnan(y), 9, y).T.astype(int), [0, 1])
    if model == "1pl":
        r = girth.onepl_mml(data)
        return np.full(y.shape[1], r["Discrimination"]), r["Difficulty"]
    r = (girth.twopl_mml if model == "2pl" else girth.threepl_mml)(data)
    return r["Discrimination"], r["Difficulty"]


def _py_irt(y: np.ndarray, model: str) -> tuple[np.ndarray, np.ndarray]:
    """py-irt's SVI fit with its defaults (2,000 epochs, lr 0.1, "vague" priors, LogNormal a > 0); a
    missing cell is simply not an observation (``Dataset.from_pandas`` drops NaN cells)."""
    import pandas as pd
    import pyro
    from py_irt.config import IrtConfig
    from py_irt.dataset import Dataset
    from py_irt.training import IrtModelTrainer

    pyro.clear_param_store()
    pyro.set_rng_seed(0)
    data = Dataset.from_pandas(pd.DataFrame(y, columns=[f"i{j}" for j in range(y.shape[1])]))
    trainer = IrtModelTrainer(data_path=None, config=IrtConfig(model_type=model, seed=0), dataset=data,
                              verbose=False)
    trainer.train()
    p = trainer.best_params
    order = [data.item_id_to_ix[f"i{j}"] for j in range(y.shape[1])]
    b = np.asarray(p["diff"])[order]
    return (np.asarray(p["disc"])[order] if model == "2pl" else np.ones_like(b)), b


def _irtorch(y: np.ndarray, model: str, c: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """irtorch's MML with its defaults (quasi-Monte Carlo, 15 points, Adam); NaN cells are masked out of
    the likelihood. Its 3PL estimates c; ``c`` given freezes it by hand (requires_grad off: no API for it)."""
    import torch
    from irtorch.estimation_algorithms import MML
    from irtorch.models import OneParameterLogistic, ThreeParameterLogistic, TwoParameterLogistic

    torch.manual_seed(0)
    data = torch.tensor(y, dtype=torch.float32)
    m = {"1pl": OneParameterLogistic, "2pl": TwoParameterLogistic, "3pl": ThreeParameterLogistic}[model](data=data)
    if c is not None:
        with torch.no_grad():
            m.guessing_param.copy_(torch.logit(torch.tensor(c, dtype=torch.float32)))
        m.guessing_param.requires_grad_(False)
    with contextlib.redirect_stdout(io.StringIO()):  # irtorch prints every epoch's loss
        m.fit(train_data=data, algorithm=MML(), device="cpu")
    if model == "1pl":  # a fixed at 1, logit theta + d
        return np.ones(y.shape[1]), -m.item_parameters()["d"].to_numpy()
    p = m.item_parameters(irt_format=True)
    return p["a1"].to_numpy(), p["b"].to_numpy()


#: name -> (importable module, models it fits, fit(y, model, k))
FITTERS = {
    "probegen": ("numpy", ("1pl", "2pl", "3pl"), lambda y, model, k: fit(y, k, model)),
    "girth": ("girth", ("1pl", "2pl", "3pl"), lambda y, model, k: _girth(y, model)),
    "py-irt": ("py_irt", ("1pl", "2pl"), lambda y, model, k: _py_irt(y, model)),
    "irtorch": ("irtorch", ("1pl", "2pl", "3pl"), lambda y, model, k: _irtorch(y, model)),
    "irtorch-c-fixed": ("irtorch", ("3pl",), lambda y, model, k: _irtorch(y, model, 1 / k)),
}


def compare(n_resp: int, model: str, missing: float, n_items: int = 500,
            fitters: list[str] | None = None) -> list[dict]:
    """Each importable fitter on one simulated data set: r(true, fitted) of b and a, seconds."""
    s = simulate(n_resp, n_items, model, k=4, missing=missing, seed=1)
    rows = []
    for name in fitters or list(FITTERS):
        module, models, fitter = FITTERS[name]
        if model not in models or importlib.util.find_spec(module) is None:
            continue
        row = {"fitter": name, "model": model, "respondents": n_resp, "items": n_items, "missing": missing}
        t = time.perf_counter()
        try:
            out = fitter(s["y"], model, s["k"])
        except Exception as e:  # noqa: BLE001 (a library that cannot fit this case is a row of the table)
            rows.append({**row, "error": f"{type(e).__name__}: {str(e)[:120]}"})
            continue
        dt = time.perf_counter() - t
        a, b = (out.a, out.b) if hasattr(out, "a") else out
        ok = np.isfinite(a) & np.isfinite(b)
        rows.append({**row, "r_b": float(pearsonr(s["b"][ok], b[ok])[0]),
                     "r_a": float(pearsonr(s["a"][ok], a[ok])[0]) if model != "1pl" else None, "seconds": dt})
        print(rows[-1], flush=True)
    return rows


def recovery(seeds: int = 8, n_items: int = 500) -> list[dict]:
    """Mean (worst) over seeds of r(true, fitted) with 10 planted mis-keyed items (moderate difficulty)."""
    from probegen.itemstats.classical import item_table, rest_flags

    mis = {"negative discrimination", "negative item-rest"}
    out = []
    for model in ("2pl", "3pl"):
        for n in (20, 100):
            rows = []
            for seed in range(seeds):
                s = simulate(n, n_items, model, k=4, missing=0.1, seed=seed)
                y = s["y"].copy()
                bad = np.flatnonzero(np.abs(s["b"]) < 1)[::25][:10]
                y[:, bad] = 1 - y[:, bad]
                good = np.setdiff1d(np.arange(n_items), bad)
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
                             pearsonr(s["b"], c.b)[0], pearsonr(s["a"], c.a)[0],
                             np.mean(np.abs(f.theta - s["theta"]) < 1.96 * f.theta_sd)
                             ])
            r = np.array(rows, dtype=float)
            names = ("r_b", "r_a", "r_theta", "b_coverage")
            row = {"model": model, "respondents": n, "items": n_items, "seeds": seeds, "planted": 10}
            for j, name in enumerate(names):
                row[name] = {"mean": float(r[:, j].mean()), "min": float(r[:, j].min())}
            row["planted_flagged"] = {"mean": float(r[:, 4].mean()), "min": int(r[:, 4].min())}
            row["other_flagged"] = {"mean": float(r[:, 5].mean()), "max": int(r[:, 5].max())}
            for j, name in ((6, "shuffled_r_b"), (7, "shuffled_r_a")):
                row[name] = {"mean": float(r[:, j].mean()), "max_abs": float(np.abs(r[:, j]).max())}
            row["theta_coverage"] = float(r[:, 8].mean())
            out.append(row)
            print(row, flush=True)
    return out


def big(sizes: list[tuple[int, int]]) -> list[dict]:
    """probegen's 2PL on large simulated tables: seconds, numpy's peak memory, r(true b, fitted b)."""
    rows = []
    for n_resp, n_items in sizes:
        s = simulate(n_resp, n_items, "2pl", seed=2)
        tracemalloc.start()
        t = time.perf_counter()
        f = fit(s["y"], s["k"], "2pl")
        dt = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append({"respondents": n_resp, "items": n_items, "seconds": dt, "peak_mib": peak / 2**20,
                     "r_b": float(pearsonr(s["b"], f.b)[0])})
        print(rows[-1], flush=True)
    return rows


def versions() -> dict:
    """The installed version of each library arm (None: not importable here, its rows are absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("girth", "py-irt", "pyro-ppl", "irtorch", "numpy", "scipy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", action="store_true", help="the fitters on simulated data -> bench_itemstats_fitters.json")
    ap.add_argument("--recovery", action="store_true", help="parameter recovery -> bench_itemstats_recovery.json")
    ap.add_argument("--big", action="store_true", help="large tables -> bench_itemstats_big.json")
    ap.add_argument("--items", type=int, default=100, help="items of the comparison's data sets")
    ap.add_argument("--fitters", default=",".join(FITTERS))
    ap.add_argument("--models", default="1pl,2pl,3pl")
    ap.add_argument("--resp", default="20,100")
    ap.add_argument("--missing", default="0.1")
    ap.add_argument("--seeds", type=int, default=8, help="recovery: seeds per row")
    ap.add_argument("--big-sizes", default="100x20000,20x200000", help="respondents x items, comma-separated")
    ap.add_argument("--results", type=Path, default=benchlib.RESULTS_DIR)
    args = ap.parse_args(argv)
    if not (args.compare or args.recovery or args.big):
        args.compare = True
    threads = os.environ.get("OMP_NUM_THREADS")
    if args.compare:
        rows = []
        for model in args.models.split(","):
            for n in map(int, args.resp.split(",")):
                for miss in map(float, args.missing.split(",")):
                    rows += compare(n, model, miss, args.items, args.fitters.split(","))
        benchlib.write_result(args.results / "bench_itemstats_fitters.json", "bench_itemstats", rows,
                              config={"items": args.items, "k": 4, "seed": 1, "omp_threads": threads,
                                      "versions": versions(), "fitters": args.fitters.split(",")})
    if args.recovery:
        benchlib.write_result(args.results / "bench_itemstats_recovery.json", "bench_itemstats", recovery(args.seeds),
                              config={"items": 500, "missing": 0.1, "k": 4, "seeds": args.seeds})
    if args.big:
        sizes = [tuple(map(int, x.split("x"))) for x in args.big_sizes.split(",")]
        benchlib.write_result(args.results / "bench_itemstats_big.json", "bench_itemstats", big(sizes),
                              config={"omp_threads": threads})
    return 0


if __name__ == "__main__":
    sys.exit(main())
