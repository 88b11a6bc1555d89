"""One call for notebooks, the same path as the command line: ``probegen.score`` and ``probegen.bias``.

``probegen eval`` and :func:`score` build one :class:`EvalRequest` and run it through
:func:`run_eval_request` (options checked once, the model loaded once by the command's
:class:`~probegen.runner.Runner`); :func:`bias` is ``probegen bias``. Both return a :class:`Run`.

>>> import tempfile, probegen
>>> from probegen.paths import shared_data_candidates
>>> release = next(p for p in shared_data_candidates() if p.is_dir()) / "wordnetqa-release-sample"
>>> tmp = Path(tempfile.mkdtemp())
>>> run = probegen.score("glove-50d", release / "definitions-train-sample.jsonl", out=tmp / "glove", limit=10)
>>> run.results["metrics"]["n_items"], len(run.rows), run.path.name
(10, 10, 'glove')
>>> "accuracy" in run.summary
True
>>> probegen.score("glove-50d", release / "definitions-train-sample.jsonl", out=tmp / "x",
...                pattern="is")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
probegen.errors.ProbegenError: --pattern applies to CoDA21 datasets only; ...definitions-train-sample.jsonl is a
multiple-choice (WordNetQA) dataset
>>> run = probegen.bias("glove-50d", release / "synonymy-train-sample.jsonl", out=tmp / "b", limit=8, n_boot=50,
...                     controls=False)
>>> sorted(run.results["datasets"][0]["all"]["ablations"]), len(run.rows)
(['choice', 'context', 'full', 'label', 'word'], 8)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

from probegen import methods, tasks
from probegen.errors import ProbegenError
from probegen.io import ensure_writable, read_text
from probegen.paths import DEFAULT_ROOT
from probegen.request_options import DATASET, DEVICE, DTYPE, OptionTypeError
from probegen.runner import Runner, Runtime

from .evaluation import EvalRequest


@dataclass
class Run:
    """One finished run: its folder, ``results.json``, the per-unit rows and the printed summary."""

    path: Path
    results: dict[str, Any]
    rows: list[dict[str, Any]]
    summary: str

    @classmethod
    def read(cls, path: Path, summary: str) -> "Run":
        results = json.loads(read_text(path / "results.json", what="results file"))
        rows_file = (results.get("files") or {}).get("rows") or next(
            (n for n in ("groups.jsonl", "items.jsonl") if (path / n).exists()), None)
        rows = ([json.loads(line) for line in read_text(path / rows_file, what="rows file").splitlines()]
                if rows_file else [])
        return cls(path, results, rows, summary)


def check_eval_request(req: EvalRequest, runner: Runner) -> tasks.Task:
    """Every check of an eval request before any model is loaded (``runner`` resolves it); the dataset's task."""
    from probegen.diagnostics.eval_report import check_debias_share

    from .evaluation import check_eval_options

    task = tasks.detect(req.dataset)
    trained = _method(req, task).trains
    # a trained probe (word in context) loads its encoder as it is, whatever its kind: no model check
    check_eval_options(task, req.model, req.dataset, req, runner, check_model=not trained)
    check_debias_share(req.debias_share, req.method, req.method_options.get("permutations", 1))
    from probegen.itemstats.adaptive import check_adaptive

    check_adaptive(req, task, trained)
    if trained and req.n_boot is not None:
        raise ProbegenError("--bootstrap applies to zero-shot evaluations; a word-in-context eval trains a probe "
                            "(see probegen bias --method trained)")
    return task


def _method(req: EvalRequest, task: Any) -> methods.Method:
    """The method asked, but the trained probe for a kind without zero-shot ablations not asked by a chat model."""
    method = methods.get(req.method, "eval")
    return methods.trained_method() if not task.zero_shot and not method.asks else method


def run_eval_request(req: EvalRequest, runner: Runner, root: Path = DEFAULT_ROOT,
                     figures: Callable[[dict[str, Any], Path], dict[str, str]] | None = None) -> tuple[Path, str]:
    """``probegen eval``: (the results folder, the summary to print). ``figures`` adds plots to the folder."""
    from probegen.diagnostics.eval_report import analyse_eval

    from .evaluation import run_eval, subset_request

    task = check_eval_request(req, runner)
    if _method(req, task).trains:  # word in context: a linear probe trained on the train split
        from probegen.diagnostics.trained import TrainedConfig

        from .trained import eval_trained

        out_dir = req.out_dir(root)
        ensure_writable(out_dir, replace=True, inputs=[req.dataset], writer="run")
        cfg = TrainedConfig(seed=req.seed, batch_size=req.batch_size or 32,
                            subset=subset_request(req.limit, req.sample))
        return out_dir, eval_trained(req.model, req.dataset, out_dir, cfg, log=runner.log, runner=runner, task=task)
    out_dir = req.out_dir(root)
    ensure_writable(out_dir, replace=True, inputs=[req.dataset], writer="run")
    n_boot = 1000 if req.n_boot is None else req.n_boot
    summary = run_eval(req, out_dir, figures=figures, runner=runner, task=task,
                       analyse=lambda results, rows, folder: analyse_eval(results, rows, folder, n_boot, req.seed,
                                                                          req.debias_share))
    return out_dir, summary


def eval_figures(model: str, dataset: str) -> Callable[[dict[str, Any], Path], dict[str, str]]:
    """The ``figures`` of :func:`run_eval_request`: the hops x distractor heatmap of multiple choice."""

    def draw(results: dict[str, Any], folder: Path) -> dict[str, str]:
        if "by_hops_distractor" not in results["metrics"]:  # the heatmap's breakdown (multiple choice)
            return {}
        from probegen.diagnostics.mc_plots import plot_hops_heatmap

        plot_hops_heatmap(results["metrics"], folder / "hops_heatmap.png", title=f"{model} on {Path(dataset).name}")
        return {"hops_heatmap": "hops_heatmap.png"}

    return draw


def _runtime(device: str, dtype: str) -> Runtime:
    """The runtime of a notebook call, ``--device``/``--dtype`` checked as the command line checks them."""
    from probegen.models import resolve_device

    resolve_device(DEVICE.check(device))
    return Runtime(device, DTYPE.check(dtype))


def _logger(log: Callable[[str], None] | None) -> Callable[[str], None]:
    if log is not None and not callable(log):
        raise OptionTypeError(f"log must be a function of one string, or None; got {log!r}")
    return log or (lambda m: None)


def _keywords(call: str, request: type, options: dict[str, Any], fixed: set[str]) -> dict[str, Any]:
    """The notebook call's ``options`` as keywords of ``request``, a method's own ones in ``method_options``;
    a name of neither is a TypeError naming the choices."""
    own = {o.name for o in methods.options()}
    names = {f.name for f in fields(request)} - fixed - {"method_options"}
    wrong = sorted(set(options) - names - own)
    if wrong:
        raise TypeError(f"probegen.{call}() got unknown options {', '.join(wrong)}; choose from "
                        f"{', '.join(sorted(names | own))}")
    return {**{k: v for k, v in options.items() if k in names},
            "method_options": {k: v for k, v in options.items() if k in own}}


def score(model: str, dataset: str | Path, out: str | Path | None = None, *, device: str = "auto", dtype: str = "auto",
          log: Callable[[str], None] | None = None, **options: Any) -> Run:
    """``probegen eval --model MODEL --dataset DATASET`` as a function, ``options`` the CLI's by their names
    (``limit=20``, ``method="letter"``...); ``log`` gets the progress lines (default: none)."""
    req = EvalRequest(model=model, dataset=dataset, out=out,  # type: ignore[arg-type]  # a Path: check_request makes it str
                      **_keywords("score", EvalRequest, options, {"model", "dataset", "out"}))
    runner = Runner(_runtime(device, dtype).with_scorer(pll=None if req.pll in (None, "original") else req.pll),
                    log=_logger(log))
    path, summary = run_eval_request(req, runner)
    return Run.read(path, summary)


def bias(model: str, dataset: str | Path, out: str | Path | None = None, *, device: str = "auto", dtype: str = "auto",
         log: Callable[[str], None] | None = None, **options: Any) -> Run:
    """``probegen bias --model MODEL --dataset DATASET`` as a function, as :func:`score`; :attr:`Run.rows`
    are the full condition's rows of a zero-shot or asking run."""
    from .bias_request import TASK_OPTIONS, BiasRequest, run_checked

    kw = _keywords("bias", BiasRequest, options, {"model", "datasets", "out", "given", "wordnet", "semcor"})
    req = BiasRequest(model=model, datasets=(DATASET.check(dataset),), out=out, **kw,  # type: ignore[arg-type]  # out: as above
                      given=frozenset(k for k in options if k in TASK_OPTIONS))
    runner = Runner(_runtime(device, dtype), log=_logger(log))
    method, summary = run_checked(req, runner.log, runner)
    path = req.out_dir("-trained" if methods.get(method).trains else "")
    results = json.loads(read_text(path / "results.json", what="results file"))
    full = path / results["datasets"][0]["name"] / "full.jsonl" if results.get("datasets") else None
    rows = [json.loads(x) for x in read_text(full, what="rows file").splitlines()] if full and full.exists() else []
    return Run(path, results, rows, summary)


__all__ = ["EvalRequest", "Run", "bias", "check_eval_request", "eval_figures", "run_eval_request",
           "score"]
