"""IRT fitters compared on simulated data (docs/itemstats.md): parameter recovery and time.

probegen's own marginal-likelihood fit (probegen.itemstats.irt) against girth 0.8.0's MML estimators,
py-irt 0.7.1's variational (pyro SVI) 1PL/2PL and irtorch 0.5.6's MML 1PL/2PL/3PL; none is a dependency,
each arm runs only where its package imports (``pip install girth==0.8.0`` / ``py-irt==0.7.1`` /
``irtorch==0.5.6``). Run: ``python bench/bench_itemstats.py [--items N] [--fitters a,b] [--models 2pl]
[--resp 20,100] [--missing 0.1] [--big]``; ``--big`` also times probegen's 2PL on 100 x 20,000 and 20 x 200,000.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
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


def compare(n_resp: int, model: str, missing: float, n_items: int = 500, fitters: list[str] | None = None) -> list[str]:
    s = simulate(n_resp, n_items, model, k=4, missing=missing, seed=1)
    rows = []
    for name in fitters or list(FITTERS):
        module, models, fitter = FITTERS[name]
        if model not in models or importlib.util.find_spec(module) is None:
            continue
        t = time.perf_counter()
        try:
            out = fitter(s["y"], model, s["k"])
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

    def arg(flag: str, default: str) -> str:
        return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default

    n_items = int(arg("--items", "500"))
    fitters = arg("--fitters", ",".join(FITTERS)).split(",")
    print("| fitter | model | respondents x items | missing | r(b) | r(a) | seconds |\n|---|---|---|---|---|---|---|")
    for model in arg("--models", "1pl,2pl,3pl").split(","):
        for n in map(int, arg("--resp", "20,100").split(",")):
            for miss in map(float, arg("--missing", "0,0.1").split(",")):
                print("\n".join(compare(n, model, miss, n_items, fitters)), flush=True)
    if "--big" in sys.argv:
        big()
