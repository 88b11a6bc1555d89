"""``probegen eval``: load a dataset and a model, score, and write results.

Results directory:
- ``results.json``: model, scorer settings, pattern, nonce, reduction, metrics, timings and the
  dataset manifest's hash;
- ``groups.jsonl`` (CoDA21) or ``items.jsonl`` (multiple choice): per-group/item scores,
  prediction and gold.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from .errors import DatasetError
from .io import sha256_text, write_json, write_jsonl


def detect_dataset(path: str | Path) -> str:
    """``coda21`` or ``wordnetqa`` from a dataset directory's manifest or a file's shape."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"dataset {p} does not exist")
    if p.is_dir():
        mf = p / "manifest.json"
        if mf.exists():
            try:
                kind = json.loads(mf.read_text(encoding="utf-8")).get("kind")
            except json.JSONDecodeError as e:
                raise DatasetError(f"{mf}: not valid JSON ({e.msg})") from None
            if kind in ("coda21", "wordnetqa"):
                return kind
        if (p / "groups.jsonl").exists():
            return "coda21"
        if (p / "items.jsonl").exists():
            return "wordnetqa"
        raise DatasetError(f"{p} is not a probegen dataset (no manifest.json, groups.jsonl or items.jsonl)")
    if p.suffix == ".jsonl":
        return "wordnetqa"
    return "coda21"


def load_model_scorer(model: str, scorer_kind: str | None, reduction: str, batch_size: int | None):
    """The shared scorer for ``model`` with the evaluation's settings."""
    from .models import load_scorer

    settings: dict[str, Any] = {}
    if batch_size:
        settings["batch_size"] = batch_size
    scorer = load_scorer(model, scorer_kind, **settings)
    if scorer.kind in ("causal", "masked"):
        scorer = load_scorer(model, scorer_kind, reduction=reduction, **settings)
    return scorer


def run_eval(
    model: str,
    dataset: str | Path,
    out: Path,
    scorer_kind: str | None = None,
    nonce: str | None = None,
    pattern: str | None = None,
    reduction: str = "sum",
    matching: str = "alignment",
    seed: int = 0,
    batch_size: int | None = None,
    log: Callable[[str], None] = print,
    length_norm: str = "none",
    split: str | None = None,
) -> str:
    """Evaluate ``model`` on ``dataset``, write the results directory, return a summary table.

    Multiple choice (WordNetQA) only: ``length_norm`` (``none``, ``tokens`` = mean log-prob per
    token, which loads LMs with ``reduction="mean"``, or ``chars``) and ``split`` (evaluate one
    split; default all items). The results directory also gets ``hops_heatmap.png``.
    """
    from .templating import default_nonce

    kind = detect_dataset(dataset)
    nonce = nonce or default_nonce()
    # load (and validate) the dataset before the model: bad input fails in a second
    if kind == "coda21":
        from .coda21.dataset import load

        data = load(dataset)
    else:
        from .wordnetqa.dataset import load as load_mc

        data = load_mc(dataset)
    if kind != "coda21" and length_norm == "tokens":
        reduction = "mean"  # per-token normalisation is the scorer's mean reduction
    t0 = time.perf_counter()
    scorer = load_model_scorer(model, scorer_kind, reduction, batch_size)
    t_load = time.perf_counter() - t0
    log(f"model {model}: {scorer.kind} scorer ({t_load:.1f} s to load)")

    t1 = time.perf_counter()
    if kind == "coda21":
        from .coda21.evaluate import EvalConfig, evaluate

        cfg = EvalConfig(nonce=nonce, pattern=pattern or "definition-of", matching=matching, seed=seed)
        res = evaluate(data, scorer, cfg, progress=True)
        rows_file, rows = "groups.jsonl", res["groups"]
        eval_cfg = {"nonce": cfg.nonce, "pattern": cfg.pattern, "matching": cfg.matching, "mode": cfg.mode, "seed": seed}
    else:
        from .wordnetqa.evaluate import evaluate_mc

        res = evaluate_mc(data, scorer, seed=seed, nonce=nonce, progress=True, length_norm=length_norm, split=split)
        rows_file, rows = "items.jsonl", res["items"]
        eval_cfg = {"nonce": nonce, "seed": seed, "mode": "full", "length_norm": res["metrics"]["length_norm"], "split": split}
    manifest = data.manifest
    t_score = time.perf_counter() - t1

    results = {
        "model": model,
        "scorer": {"kind": scorer.kind, **scorer.settings()},
        "dataset": {"path": str(dataset), "kind": kind, "manifest_sha256": sha256_text(json.dumps(manifest, sort_keys=True))},
        "eval": {**eval_cfg, "reduction": reduction if scorer.kind in ("causal", "masked") else None},
        "metrics": res["metrics"],
        "timings": {"load_s": round(t_load, 3), "score_s": round(t_score, 3)},
    }
    if hasattr(scorer, "stats"):
        results["scorer_stats"] = scorer.stats()
    write_jsonl(out / rows_file, rows)
    if kind != "coda21":
        from diagnostics.mc_plots import plot_hops_heatmap

        plot_hops_heatmap(res["metrics"], out / "hops_heatmap.png", title=f"{model} on {Path(dataset).name}")
        results["plot"] = "hops_heatmap.png"
    write_json(out / "results.json", results)
    log(f"wrote {out}")
    return summary_table(model, kind, res["metrics"])


def summary_table(model: str, kind: str, metrics: dict[str, Any]) -> str:
    """The paper's Table 2 layout: accuracy per POS with the random baseline and group count."""
    if kind != "coda21":
        from .wordnetqa.evaluate import summary as mc_summary

        return mc_summary(model, metrics)
    lines = [f"{'model':<24} {'pos':<5} {'accuracy':>9} {'random':>7} {'groups':>7}"]
    for pos in ("noun", "verb", "all"):
        if pos in metrics:
            m = metrics[pos]
            lines.append(f"{model:<24} {pos:<5} {m['accuracy']:>9.3f} {m['random']:>7.3f} {m['groups']:>7}")
    return "\n".join(lines)
