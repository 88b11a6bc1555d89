"""``probegen eval``: load a dataset and a model, score, and write results.

Results directory:
- ``results.json``: model, scorer settings, pattern, nonce, reduction, metrics, timings and the
  dataset manifest's hash;
- ``groups.jsonl`` (CoDA21) or ``items.jsonl`` (multiple choice): per-group/item scores,
  prediction and gold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import DatasetError, ProbegenError
from .io import atomic_dir, read_manifest, recover, sha256_text, write_json, write_jsonl

LM_KINDS = ("causal", "masked")


def detect_dataset(path: str | Path) -> str:
    """``coda21`` or ``wordnetqa`` from a dataset directory's manifest or a file's shape."""
    p = Path(path)
    recover(p)  # an interrupted write of p is finished first
    if not p.exists():
        raise DatasetError(f"dataset {p} does not exist")
    if p.is_dir():
        mf = p / "manifest.json"
        if mf.exists():
            kind = read_manifest(mf).get("kind")
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


def resolve_models(models: Iterable[str], scorer_kind: str | None = None) -> dict[str, str]:
    """``{model: scorer kind}``, resolved before any dataset is built or scored.

    An unknown name fails here in a moment (one line, naming it) rather than after a
    generation or a scoring run. A forced ``scorer_kind`` on a local directory needs no
    detection (as in :func:`probegen.models.load_scorer`).
    """
    from .models import BUNDLED, resolve_model

    out = {}
    for m in models:
        if scorer_kind and m not in BUNDLED and Path(m).expanduser().exists():
            out[m] = scorer_kind
        else:
            out[m] = scorer_kind or resolve_model(m).kind
    return out


def check_options(kind: str, **given: Any) -> None:
    """Reject evaluation options that do not apply to a ``kind`` dataset or contradict each other.

    ``given`` holds only the options the user set (``None`` = not given): ``pattern``,
    ``matching`` and ``nonce`` are CoDA21's (multiple choice is evaluated on the full question),
    ``length_norm`` and ``split`` multiple choice's; summed and mean log-probs are never mixed.

    >>> check_options("wordnetqa", pattern=None, length_norm="chars")
    >>> check_options("wordnetqa", reduction="mean", length_norm="chars")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --reduction mean --length-norm chars would divide a per-token mean by characters; use --length-norm chars with --reduction sum, or --length-norm tokens
    """
    given = {k: v for k, v in given.items() if v is not None}
    wrong_kind = {"wordnetqa": ("pattern", "matching", "nonce"), "coda21": ("length_norm", "split")}[kind]
    for opt in wrong_kind:
        if opt in given and not (opt == "length_norm" and given[opt] == "none"):
            other = "CoDA21" if kind == "wordnetqa" else "multiple-choice (WordNetQA)"
            name = "WordNetQA" if kind == "wordnetqa" else "CoDA21"
            raise ProbegenError(f"--{opt.replace('_', '-')} applies to {other} datasets only; this is a {name} dataset")
    reduction, norm = given.get("reduction"), given.get("length_norm")
    if reduction == "mean" and norm == "chars":
        raise ProbegenError(
            "--reduction mean --length-norm chars would divide a per-token mean by characters; "
            "use --length-norm chars with --reduction sum, or --length-norm tokens"
        )
    if reduction == "sum" and norm == "tokens":
        raise ProbegenError("--length-norm tokens is the per-token mean (--reduction mean); it cannot be used with --reduction sum")


def check_model_options(model: str, model_kind: str, **given: Any) -> None:
    """Reject LM-only options for embedding/static models: ``reduction``, a ``length_norm`` other
    than none, and CoDA21's ``pattern`` and ``nonce`` (their query is the context with the
    target removed, no pattern and no made-up word).

    >>> check_model_options("glove-50d", "static", reduction=None, length_norm="none")
    >>> check_model_options("glove-50d", "static", pattern="is")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --pattern applies to language models only; glove-50d is a static model
    """
    if model_kind in LM_KINDS:
        return
    for opt, value in given.items():
        if value is not None and not (opt == "length_norm" and value == "none"):
            raise ProbegenError(f"--{opt.replace('_', '-')} applies to language models only; {model} is a {model_kind} model")


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


@dataclass(frozen=True)
class EvalOptions:
    """How ``probegen eval`` scores and decides; ``None`` = not given by the user.

    Options that do not apply to the dataset or model kind are rejected only when given, so
    the defaults (reduction ``sum``, matching ``alignment``, length_norm ``none``) are filled
    in after the checks.
    """

    scorer_kind: str | None = None
    nonce: str | None = None
    pattern: str | None = None
    reduction: str | None = None
    matching: str | None = None
    length_norm: str | None = None
    split: str | None = None
    seed: int = 0
    batch_size: int | None = None


def run_eval(
    model: str,
    dataset: str | Path,
    out: Path,
    options: EvalOptions = EvalOptions(),
    log: Callable[[str], None] = print,
    figures: Callable[[dict[str, Any], Path], dict[str, str]] | None = None,
) -> str:
    """Evaluate ``model`` on ``dataset``, write the results directory, return a summary table.

    ``options`` (:class:`EvalOptions`): options given for the wrong dataset kind or model
    kind, or contradicting each other, fail before anything is loaded (:func:`check_options`).
    CoDA21 only: ``pattern``, ``matching``, ``nonce``. Multiple choice (WordNetQA) only: ``length_norm``
    (``none``, ``tokens`` = mean log-prob per token, which loads LMs with ``reduction="mean"``,
    or ``chars``) and ``split`` (evaluate one split; default all items). The results directory
    is written beside ``out`` and renamed into place once; ``figures(results, folder)`` may add
    plots to it and returns ``{name: file}`` for results.json (the CLI draws WordNetQA's
    hops x distractor heatmap this way: the library does not import ``diagnostics``).

    Under ``torchrun`` every rank scores a share of the request table and rank 0 writes the
    results (:mod:`probegen.distributed`); everything but the ``run`` block (timings, work
    counters, process count) is identical to a single-process run.
    """
    from . import distributed as dist
    from .templating import coda21_patterns, dataset_nonce

    o = options
    scorer_kind, nonce, pattern, reduction, matching = o.scorer_kind, o.nonce, o.pattern, o.reduction, o.matching
    length_norm, split, seed, batch_size = o.length_norm, o.split, o.seed, o.batch_size
    dist.init_from_env()  # under torchrun: join the process group; rank 0 speaks for the run
    if not dist.is_main():
        log = _silent
    kind = detect_dataset(dataset)
    given = {"pattern": pattern, "matching": matching, "nonce": nonce, "length_norm": length_norm, "split": split, "reduction": reduction}
    check_options(kind, **given)
    if kind == "coda21":
        coda21_patterns(pattern)  # a malformed pattern fails now, not after scoring
    model_kind = resolve_models([model], scorer_kind)[model]
    lm_only = {"pattern": pattern, "nonce": nonce} if kind == "coda21" else {}
    check_model_options(model, model_kind, reduction=reduction, length_norm=length_norm, **lm_only)
    reduction, matching, length_norm = reduction or "sum", matching or "alignment", length_norm or "none"
    # load (and validate) the dataset before the model: bad input fails in a second
    if kind == "coda21":
        from .coda21.dataset import load

        data = load(dataset)
    else:
        from .wordnetqa.dataset import load as load_mc

        data = load_mc(dataset)
    nonce = nonce or dataset_nonce(data.manifest)  # a spec may name its own made-up word
    if kind != "coda21" and length_norm == "tokens":
        reduction = "mean"  # per-token normalisation is the scorer's mean reduction
    t0 = time.perf_counter()
    with dist.main_first():  # one rank converts/caches the weights, the others reuse them
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
        # what may differ between two runs of the same evaluation: timings, cache hits, processes
        "run": {
            "timings": {"load_s": round(t_load, 3), "score_s": round(t_score, 3)},
            "scorer_stats": scorer.stats() if hasattr(scorer, "stats") else None,
            "distributed": dist.describe(),
        },
    }
    if dist.is_main():
        with atomic_dir(out) as tmp:
            write_jsonl(tmp / rows_file, rows)
            if figures is not None:
                results["plots"] = figures(results, tmp)
            write_json(tmp / "results.json", results)
        log(f"wrote {out}")
    dist.barrier()  # no rank leaves (and tears the group down) before the results are written
    return summary_table(model, kind, res["metrics"])


def _silent(msg: str) -> None:
    """The log of ranks other than 0: one process speaks for the run."""


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
