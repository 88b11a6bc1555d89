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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .errors import ProbegenError
from .io import sha256_text, write_json, write_jsonl

if TYPE_CHECKING:
    from .runner import Runner

LM_KINDS = ("causal", "masked")


def detect_dataset(path: str | Path) -> str:
    """The kind (task name) of the dataset at ``path``: :func:`probegen.tasks.detect`.

    An interrupted write of ``path`` is finished first; a path no task claims is one DatasetError.
    """
    from . import tasks

    return tasks.detect(path).name


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
    """Reject ``probegen eval`` options that do not apply to a ``kind`` dataset or contradict each
    other (:func:`probegen.tasks.check_options` for one task; ``None`` = not given).

    >>> check_options("wordnetqa", pattern=None, length_norm="chars")
    >>> check_options("wordnetqa", reduction="mean", length_norm="chars")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --reduction mean --length-norm chars would divide a per-token mean by characters; use --length-norm chars with --reduction sum, or --length-norm tokens
    """
    from . import tasks

    tasks.check_options([tasks.get(kind)], given, "eval")


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


def load_model_scorer(model: str, scorer_kind: str | None, reduction: str, batch_size: int | None, runner: "Runner | None" = None):
    """The shared scorer for ``model`` with the evaluation's settings, loaded by ``runner``
    (its runtime: device, dtype, ...; default: a :class:`~probegen.runner.Runner` of the default runtime)."""
    from .runner import Runner

    runner = Runner.ensure(runner)
    settings: dict[str, Any] = {}
    if batch_size:
        settings["batch_size"] = batch_size
    scorer = runner.load_scorer(model, scorer_kind, **settings)
    if scorer.kind in ("causal", "masked"):
        scorer = runner.load_scorer(model, scorer_kind, reduction=reduction, **settings)
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
    runner: "Runner | None" = None,
) -> str:
    """Evaluate ``model`` on ``dataset``, write the results directory, return a summary table.

    The dataset's task (:func:`probegen.tasks.detect`) says which ``options``
    (:class:`EvalOptions`) apply: one given for another dataset kind or model kind, or
    contradicting another, fails before anything is loaded. CoDA21 only: ``pattern``,
    ``matching``, ``nonce``. Multiple choice (WordNetQA) only: ``length_norm`` (``none``,
    ``tokens`` = mean log-prob per token, which loads LMs with ``reduction="mean"``, or
    ``chars``) and ``split`` (evaluate one split; default all items). The results directory is
    written beside ``out`` and renamed into place once; ``figures(results, folder)`` may add plots
    to it and returns ``{name: file}`` for results.json (the CLI draws WordNetQA's hops x
    distractor heatmap this way: the library does not import ``diagnostics``).

    Under ``torchrun`` every rank scores a share of the request table and rank 0 writes the
    results (:class:`probegen.runner.Runner`); everything but the ``run`` block (timings, work
    counters, process count) is identical to a single-process run.
    """
    from . import tasks
    from .runner import Runner
    from .templating import dataset_nonce

    runner = Runner.ensure(runner, log)  # the command's runner: its runtime and process group
    task = tasks.detect(dataset)
    settings, reduction = _checked_settings(task, model, dataset, options)
    data = task.load(dataset)  # loaded (and validated) before the model: bad input fails in a second
    settings = replace(settings, nonce=options.nonce or dataset_nonce(data.manifest))  # a spec may name its own made-up word
    reduction = task.scorer_reduction(reduction, settings)
    t0 = time.perf_counter()
    scorer = load_model_scorer(model, options.scorer_kind, reduction, options.batch_size, runner)  # rank 0 loads first
    t_load = time.perf_counter() - t0
    runner.log(f"model {model}: {scorer.kind} scorer ({t_load:.1f} s to load)")
    t1 = time.perf_counter()
    ev = task.evaluate(data, scorer, settings, progress=runner.progress)
    timings = {"load_s": round(t_load, 3), "score_s": round(time.perf_counter() - t1, 3)}
    results = _results(model, dataset, task, data, scorer, ev, reduction, timings, runner)
    with runner.output_dir(out) as tmp:  # rank 0 writes; no rank leaves before the results are in place
        write_jsonl(tmp / ev.rows_file, ev.rows)
        if figures is not None and runner.is_main:
            results["plots"] = figures(results, tmp)
        write_json(tmp / "results.json", results)
    runner.log(f"wrote {out}")
    return task.summary(model, ev.metrics)


def _checked_settings(task, model: str, dataset: str | Path, o: EvalOptions):
    """(settings, reduction) of an evaluation once every option given fits the dataset's task and
    the model's kind; defaults are filled in only after the checks."""
    from . import tasks
    from .tasks import Settings

    given = {"pattern": o.pattern, "matching": o.matching, "nonce": o.nonce, "length_norm": o.length_norm, "split": o.split,
             "reduction": o.reduction, "scorer": o.scorer_kind}
    tasks.check_options([task], given, "eval", [dataset])
    model_kind = resolve_models([model], o.scorer_kind)[model]
    lm_only = {k: given[k] for k in task.lm_only_options}
    check_model_options(model, model_kind, reduction=o.reduction, length_norm=o.length_norm, **lm_only)
    settings = Settings(pattern=o.pattern or Settings.pattern, matching=o.matching or "alignment",
                        length_norm=o.length_norm or "none", split=o.split, seed=o.seed)
    return settings, o.reduction or "sum"


def _results(model: str, dataset: str | Path, task, data, scorer, ev, reduction: str, timings: dict[str, float], runner) -> dict[str, Any]:
    """results.json of an evaluation."""
    manifest_sha = sha256_text(json.dumps(data.manifest, sort_keys=True))
    return {
        "model": model,
        "scorer": {"kind": scorer.kind, **scorer.settings()},
        "dataset": {"path": str(dataset), "kind": task.name, "manifest_sha256": manifest_sha},
        "eval": {**ev.config, "reduction": reduction if scorer.kind in LM_KINDS else None},
        "metrics": ev.metrics,
        # what may differ between two runs of the same evaluation: timings, cache hits, processes
        "run": {
            "timings": timings,
            "scorer_stats": scorer.stats() if hasattr(scorer, "stats") else None,
            "distributed": runner.describe(),
        },
    }


def summary_table(model: str, kind: str, metrics: dict[str, Any]) -> str:
    """The terminal table of ``probegen eval`` for a ``kind`` dataset (its task's :meth:`~probegen.tasks.Task.summary`)."""
    from . import tasks

    return tasks.get(kind).summary(model, metrics)
