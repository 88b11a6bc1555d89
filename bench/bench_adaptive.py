"""Adaptive testing from a calibrated item bank (docs/adaptive.md): how well 10 to 100 items predict
a model's full-set accuracy, against random subsets and `probegen subset --method information`.

Two sets: CoDA21 clean-hard nouns (`probegen make coda21 --hard --clean --pos noun --context-scorer
first`, the first ``--coda-groups`` groups; 3PL, floor 1/k; a group's rows are its items) and a
WordNetQA set (`probegen make wordnetqa --limit 150`: all four probes; 2PL). Respondents: glove-50d
and minilm-l6 under `eval` (CoDA21: both matchings) and `bias --no-controls` (one per condition; on
WordNetQA glove-50d's only);
with ``--smol`` also smollm2-135m under eval on CoDA21 (both matchings). `probegen items --bank`
calibrates each set on them (the bank the evaluation uses).

- **Real respondents, leave one out**: the IRT model refitted without the respondent, whose recorded
  answers are then given adaptively (the engine of `probegen eval --adaptive`, :mod:`probegen.itemstats.cat`,
  answering from the response table); its predicted full-set accuracy against its real one.
- **Simulated respondents**: abilities ~ N(0, 1) planted on the bank fitted on every real respondent,
  answers drawn from it (the truth: the realised full-set accuracy).
- Budgets 10, 20, 50, 100 items: mean and 90th-percentile |predicted - full|, the 95% interval's
  coverage, Kendall's tau of the predictions against the truth; adaptive against a random subset of
  the same size (its plain accuracy, and the same IRT prediction) and against the records with the most
  information over the calibration respondents (`subset --method information`, IRT-predicted);
  pairs scored against the full set's.
- Exposure against precision: randomesque 1, 5, 10 at 50 items (simulated respondents): error,
  coverage, the most any record is given, the mean overlap of two tests.
- ``--smol``: `probegen eval --model smollm2-135m --adaptive` on CoDA21 (bank calibrated without
  SmolLM2) against its full run on the same groups: predicted and full accuracy, pairs, wall time
  (each with a score cache of its own, so neither reads the other's scores; time: the model's load and the
  scoring, results.json's timings).

    python bench/bench_adaptive.py [--smol] [--coda-groups 34] [--sims 60] [--work probegen_out/bench/adaptive]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from probegen.itemstats.analyse import load_items  # noqa: E402
from probegen.itemstats.bank import load_dataset, read_bank  # noqa: E402
from probegen.itemstats.cat import CatBank, CatConfig, posterior, predict, run_cat  # noqa: E402
from probegen.itemstats.irt import fit, information, prob  # noqa: E402

REPO = benchlib.BENCH_DIR.parent
SMOL = "smollm2-135m"
BUDGETS = (10, 20, 50, 100)
CODA_MAKE = ["coda21", "--hard", "--clean", "--pos", "noun", "--context-scorer", "first"]
WNQA_MAKE = ["wordnetqa", "--limit", "150"]
CODA_RUNS = [("e-glove", "eval", "glove-50d", []), ("e-glove-simple", "eval", "glove-50d", ["--matching", "simple"]),
             ("e-minilm", "eval", "minilm-l6", []), ("e-minilm-simple", "eval", "minilm-l6", ["--matching", "simple"]),
             ("b-glove", "bias", "glove-50d", ["--no-controls"]), ("b-minilm", "bias", "minilm-l6", ["--no-controls"]),
             ("e-smol", "eval", SMOL, []), ("e-smol-simple", "eval", SMOL, ["--matching", "simple"])]
# minilm-l6's bias conditions on the WordNetQA set (about 26,000 more pairs) are left out: over half an hour on 2
# shared cores
WNQA_RUNS = [("e-glove", "eval", "glove-50d", []), ("e-minilm", "eval", "minilm-l6", []),
             ("b-glove", "bias", "glove-50d", ["--no-controls"])]


def probegen(*args: str, log: Path, env: dict[str, str] | None = None) -> float:
    """Run ``probegen ARGS`` (:func:`benchlib.run_probegen`); its wall time in seconds."""
    t = time.perf_counter()
    benchlib.run_probegen([str(a) for a in args], log, "bench_adaptive", env)
    return time.perf_counter() - t


def runs(dataset: Path, plan: list, limit: int | None, work: Path, log: Path, smol: bool) -> tuple[list[Path], dict]:
    """Every respondent run of ``plan`` (kept from an earlier bench run when its results.json is there)."""
    done, seconds = [], {}
    for name, cmd, model, extra in plan:
        if model == SMOL and not smol:
            continue
        out = work / "runs" / name
        if not (out / "results.json").is_file():
            seconds[name] = round(probegen(cmd, "--model", model, "--dataset", dataset, *extra, "--bootstrap", "50",
                                           *(["--limit", str(limit)] if limit else []), "--out", out, log=log), 1)
            print(f"bench_adaptive: {work.name} {name} {seconds[name]:.0f} s", flush=True)
        done.append(out)
    return done, seconds


def matrix(items_dir: Path, bank_path: Path) -> tuple[np.ndarray, list[str], np.ndarray, dict]:
    """(Y respondents x bank items, respondent names, k, the bank's record/stratum/cluster per item)."""
    table, _, _ = load_items(items_dir)
    y, names, items, k = table.matrix()
    bank = read_bank(bank_path)
    col = {it: i for i, it in enumerate(items)}
    order = [col[str(it["item"])] for it in bank.items]
    eng = bank.engine()
    return y[:, order], names, k[order], {"record": eng.record, "stratum": eng.stratum, "cluster": eng.cluster,
                                          "bank": bank}


def truth_of(y_row: np.ndarray, record: np.ndarray) -> float:
    """Full-set accuracy as eval counts it: the mean over records of each record's share right."""
    n = int(record.max()) + 1
    return float(np.mean([np.nanmean(y_row[record == r]) for r in range(n)]))


def engine(fitted, meta: dict) -> CatBank:
    return CatBank(a=fitted.a, b=fitted.b, c=fitted.c, record=meta["record"], stratum=meta["stratum"],
                   cluster=meta["cluster"])


def fixed_subset(order: np.ndarray, sizes: np.ndarray, budget: int) -> list[int]:
    """The records taken in ``order`` while their items fit in ``budget``."""
    out, used = [], 0
    for r in order:
        if used + sizes[r] <= budget:
            out.append(int(r))
            used += sizes[r]
    return out


def answers_of(y_row: np.ndarray, bank: CatBank, records: list[int]) -> dict[int, float]:
    return {int(i): float(y_row[i]) for i in np.flatnonzero(np.isin(bank.record, records))}


def one_respondent(y_row: np.ndarray, bank: CatBank, info_order: np.ndarray, budget: int, seed: int,
                   randomesque: int = 1, draws: int = 3) -> dict:
    """Every method's prediction for one respondent at one budget: {method: (pred, lo, hi, records)}."""
    sizes = np.bincount(bank.record)
    res = run_cat(bank, CatConfig(budget=budget, batch_items=10, randomesque=randomesque, seed=seed),
                  lambda recs: answers_of(y_row, bank, list(recs)))
    out = {"adaptive": (res.prediction["accuracy"], res.prediction["lo"], res.prediction["hi"], res.records)}
    info = fixed_subset(info_order, sizes, budget)
    a = answers_of(y_row, bank, info)
    p = predict(bank, a, posterior(bank, a))
    out["information"] = (p["accuracy"], p["lo"], p["hi"], info)
    rng = np.random.default_rng(seed)
    plain, irt = [], []
    for _ in range(draws):
        recs = fixed_subset(rng.permutation(len(sizes)), sizes, budget)
        a = answers_of(y_row, bank, recs)
        plain.append((float(np.mean([np.mean([a[int(i)] for i in np.flatnonzero(bank.record == r)]) for r in recs])),
                      None, None, recs))
        p = predict(bank, a, posterior(bank, a))
        irt.append((p["accuracy"], p["lo"], p["hi"], recs))
    out["random (plain accuracy)"] = plain
    out["random (IRT prediction)"] = irt
    return out


def summarise(preds: dict[str, list], truth: np.ndarray, pairs: np.ndarray, budget: int) -> list[dict]:
    """Per method: mean and p90 |error|, coverage, Kendall tau, items and pairs given (mean)."""
    rows = []
    for method, per in preds.items():
        draws = per if isinstance(per[0], list) else [[p] for p in per]
        flat = [(d, t) for ds, t in zip(draws, truth) for d in ds]
        err = np.array([abs(d[0] - t) for d, t in flat])
        cov = [d[1] <= t <= d[2] for d, t in flat if d[1] is not None]
        taus = [kendalltau([ds[k][0] for ds in draws], truth).statistic for k in range(len(draws[0]))]
        rows.append({"method": method, "budget": budget, "n": len(truth), "mean_abs_error": float(err.mean()),
                     "p90_abs_error": float(np.quantile(err, 0.9)), "coverage": float(np.mean(cov)) if cov else None,
                     "kendall_tau": float(np.nanmean(taus)) if len(truth) > 2 else None,
                     "pairs": float(np.mean([pairs[d[3]].sum() for d, _ in flat]))})
    return rows


def collect(preds: dict[str, list], got: dict) -> None:
    for m, v in got.items():
        preds.setdefault(m, []).append(v)


def leave_one_out(y: np.ndarray, k: np.ndarray, meta: dict, irt: str, pairs: np.ndarray) -> list[dict]:
    """Real respondents, each left out of the calibration and given its own recorded answers."""
    truth = np.array([truth_of(row, meta["record"]) for row in y])
    rows = []
    fits = [fit(np.delete(y, j, axis=0), k, irt) for j in range(len(y))]
    for budget in BUDGETS:
        if budget > y.shape[1]:
            continue
        preds: dict[str, list] = {}
        for j, fitted in enumerate(fits):
            bank = engine(fitted, meta)
            collect(preds, one_respondent(y[j], bank, info_order(fitted, bank), budget, seed=j))
        rows += summarise(preds, truth, pairs, budget)
    return rows


def info_order(fitted, bank: CatBank) -> np.ndarray:
    """Records by information summed over the calibration respondents' abilities (`subset --method information`)."""
    per = np.bincount(bank.record, weights=information(fitted, fitted.theta).sum(axis=0))
    return np.argsort(-per, kind="stable")


def simulated(fitted, meta: dict, pairs: np.ndarray, n: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Respondents at planted abilities on the full calibration's bank: (budget rows, exposure rows)."""
    bank = engine(fitted, meta)
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n)
    y = (rng.random((n, len(bank.a))) < prob(theta[:, None], bank.a[None, :], bank.b[None, :], bank.c[None, :]))
    y = y.astype(float)
    truth = np.array([truth_of(row, bank.record) for row in y])
    order = info_order(fitted, bank)
    rows = []
    for budget in BUDGETS:
        if budget > len(bank.a):
            continue
        preds: dict[str, list] = {}
        for j in range(n):
            collect(preds, one_respondent(y[j], bank, order, budget, seed=j))
        rows += summarise(preds, truth, pairs, budget)
    return rows, exposure(bank, y, truth, min(50, len(bank.a)))


def exposure(bank: CatBank, y: np.ndarray, truth: np.ndarray, budget: int) -> list[dict]:
    """Randomesque 1, 5, 10: precision against how often the same records are given."""
    out = []
    for r in (1, 5, 10):
        tests, err, cov = [], [], []
        for j, row in enumerate(y):
            res = run_cat(bank, CatConfig(budget=budget, batch_items=10, randomesque=r, seed=j),
                          lambda recs, row=row: answers_of(row, bank, list(recs)))
            tests.append(set(res.records))
            err.append(abs(res.prediction["accuracy"] - truth[j]))
            cov.append(res.prediction["lo"] <= truth[j] <= res.prediction["hi"])
        counts = np.bincount([x for t in tests for x in t], minlength=bank.n_records)
        overlap = [len(a & b) / max(1, len(a)) for i, a in enumerate(tests[:60]) for b in tests[i + 1:60]]
        out.append({"randomesque": r, "budget": budget, "n": len(y), "mean_abs_error": float(np.mean(err)),
                    "coverage": float(np.mean(cov)), "max_exposure": float(counts.max() / len(y)),
                    "records_ever_given": int((counts > 0).sum()), "records": bank.n_records,
                    "mean_overlap": float(np.mean(overlap))})
    return out


def record_pairs(dataset: Path, bank_path: Path) -> np.ndarray:
    """The unique (query, candidate) pairs of each bank record's unit (what a likelihood scorer scores)."""
    from probegen.core import request_table
    from probegen.tasks import Settings

    task, data, records, ids = load_dataset(dataset)
    where = {r: i for i, r in enumerate(ids)}
    mode = "context" if task.name == "coda21" else "full"
    return np.array([len(request_table(task.units(task.with_records(data, [records[where[r]]]), mode, Settings())))
                     for r in read_bank(bank_path).records()], float)


def one_set(name: str, dataset: Path, plan: list, irt: str, limit: int | None, args, log: Path) -> dict:
    """Runs, calibration (the bank), leave-one-out, simulated respondents and exposure of one set."""
    work = args.work / name
    done, seconds = runs(dataset, plan, limit, work, log, args.smol)
    probegen("items", *done, "--out", work / "items", "--irt", irt, "--bootstrap", "50", "--bank", work / "bank.json",
             log=log)
    y, names, k, meta = matrix(work / "items", work / "bank.json")
    pairs = record_pairs(dataset, work / "bank.json")
    print(f"bench_adaptive: {name}: {len(names)} respondents x {y.shape[1]} items; leave one out", flush=True)
    loo = leave_one_out(y, k, meta, irt, pairs)
    print(f"bench_adaptive: {name}: simulated respondents", flush=True)
    sim, expo = simulated(fit(y, k, irt), meta, pairs, args.sims)
    return {"set": name, "dataset": str(dataset.relative_to(REPO)) if dataset.is_relative_to(REPO) else str(dataset),
            "irt": irt, "limit": limit, "respondents": names, "items": int(y.shape[1]),
            "records": int(meta["record"].max()) + 1, "pairs_full": float(pairs.sum()), "leave_one_out": loo,
            "simulated": sim, "exposure": expo, "seconds": seconds}


def own_cache(root: Path) -> dict[str, str]:
    """An environment whose probegen cache shares the converted weights and data but not the scores."""
    from probegen.paths import cache_dir

    shared = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    for p in shared.iterdir():
        if not p.name.startswith("scores.sqlite") and not (root / p.name).exists():
            (root / p.name).symlink_to(p)
    return {**os.environ, "PROBEGEN_CACHE": str(root)}


def smol_run(dataset: Path, groups: int, work: Path, log: Path) -> dict:
    """SmolLM2 given 50 items adaptively (bank calibrated without it) against its full run on the same groups."""
    out = work / "smol"  # kept from an earlier bench run when its two SmolLM2 runs are there
    base = [r for r in sorted((work / "runs").iterdir()) if "smol" not in r.name and (r / "results.json").is_file()]
    if not (out / "bank.json").is_file():
        probegen("items", *base, "--out", out / "items", "--irt", "3pl", "--bootstrap", "50", "--bank",
                 out / "bank.json", log=log)
    with tempfile.TemporaryDirectory(prefix="bench-adaptive-") as tmp:
        if not (out / "adaptive" / "results.json").is_file():
            probegen("eval", "--model", SMOL, "--dataset", dataset, "--adaptive", out / "bank.json", "--budget", "50",
                     "--bootstrap", "50", "--out", out / "adaptive", log=log, env=own_cache(Path(tmp) / "a"))
        full_env = own_cache(Path(tmp) / "f")
        if not (out / "full" / "results.json").is_file():
            probegen("eval", "--model", SMOL, "--dataset", dataset, "--limit", str(groups), "--bootstrap", "50",
                     "--out", out / "full", log=log, env=full_env)
        # SmolLM2's respondents of the leave-one-out: the full run, and simple matching on its cached scores
        shutil.rmtree(work / "runs" / "e-smol", ignore_errors=True)
        shutil.copytree(out / "full", work / "runs" / "e-smol")
        if not (work / "runs" / "e-smol-simple" / "results.json").is_file():
            probegen("eval", "--model", SMOL, "--dataset", dataset, "--limit", str(groups), "--matching", "simple",
                     "--bootstrap", "50", "--out", work / "runs" / "e-smol-simple", log=log, env=full_env)
    ad = json.loads((out / "adaptive" / "results.json").read_text(encoding="utf-8"))
    full = json.loads((out / "full" / "results.json").read_text(encoding="utf-8"))
    block = ad["adaptive"]
    stats = lambda r: (r.get("run") or {}).get("scorer_stats") or {}  # noqa: E731
    return {"model": SMOL, "groups": groups, "bank_respondents": block["bank_respondents"],
            "predicted": block["predicted_accuracy"], "ability": block["ability"],
            "observed_on_given": block["observed_accuracy"], "full_accuracy": full["metrics"]["all"]["accuracy"],
            "items_given": block["items_given"], "bank_items": block["bank_items"],
            "records_given": block["records_given"], "pairs_given": block["pairs_given"],
            "pairs_full_subset": int(sum(record_pairs(dataset, out / "bank.json"))),
            "pairs_full_dataset": block["pairs_full"], "time_adaptive_s": round(sum(ad["run"]["timings"].values()), 1),
            "time_full_s": round(sum(full["run"]["timings"].values()), 1),
            "score_adaptive_s": ad["run"]["timings"]["score_s"], "score_full_s": full["run"]["timings"]["score_s"],
            "stats_adaptive": stats(ad), "stats_full": stats(full)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smol", action="store_true", help="SmolLM2 respondents and its adaptive-vs-full run")
    ap.add_argument("--coda-groups", type=int, default=34, help="CoDA21 groups (the first N) in the bank")
    ap.add_argument("--sims", type=int, default=60, help="simulated respondents per set")
    ap.add_argument("--work", type=Path, default=REPO / "probegen_out" / "bench" / "adaptive")
    ap.add_argument("--results", type=Path, default=benchlib.RESULTS_DIR)
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / "bench_adaptive.log"
    sets = args.work / "sets"
    coda, wnqa = sets / "coda21-clean-hard", sets / "wordnetqa-150"
    for path, make in ((coda, CODA_MAKE), (wnqa, WNQA_MAKE)):
        if not (path / "manifest.json").is_file():
            probegen("make", *make, "--out", path, log=log)
    smol = None
    if args.smol:  # first: SmolLM2 as a new model against a bank without it; then it joins the respondents
        runs(coda, CODA_RUNS, args.coda_groups, args.work / "coda21", log, smol=False)
        smol = smol_run(coda, args.coda_groups, args.work / "coda21", log)
    rows = [one_set("coda21", coda, CODA_RUNS, "3pl", args.coda_groups, args, log),
            one_set("wordnetqa", wnqa, WNQA_RUNS, "2pl", None, args, log)]
    benchlib.write_result(args.results / "bench_adaptive.json", "bench_adaptive", rows, smol=smol,
                          config={"budgets": list(BUDGETS), "coda21_make": "probegen make " + " ".join(CODA_MAKE),
                                  "wordnetqa_make": "probegen make " + " ".join(WNQA_MAKE),
                                  "coda21_groups": args.coda_groups, "sims": args.sims, "batch_items": 10,
                                  "random_draws": 3, "smol": args.smol})
    return 0


if __name__ == "__main__":
    sys.exit(main())
