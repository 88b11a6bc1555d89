"""``probegen eval``: load a dataset and a model, score, and write ``results.json`` (settings, metrics,
timings, the manifest's hash, ``subset`` and ``invalid`` where any) and the per-unit rows."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .. import methods as _methods
from .. import tasks
from ..core import as_unit_scorer
from ..errors import ProbegenError
from ..io import sha256_text, write_json, write_jsonl
from ..paths import DEFAULT_ROOT, slug
from ..request_options import EVAL_OPTIONS, check_request
from ..scorers import LM_KINDS
from ..tasks import Settings, subset_line
from ..templating import dataset_nonce

if TYPE_CHECKING:
    from ..runner import Runner
    from ..tasks import Dataset, Evaluation, Task

#: every exchange of the generative method with the model (prompt, raw answers, parse), one per line
RESPONSES_FILE = "responses.jsonl"


def resolve_models(models: Iterable[str], scorer_kind: str | None = None, *, runner: Runner) -> dict[str, str]:
    """``{model: scorer kind}`` resolved by ``runner`` (kept for the load) before any work, so an unknown
    name fails in a moment; a forced ``scorer_kind`` on a local directory is taken as it is."""
    from ..models import BUNDLED

    return {m: scorer_kind if scorer_kind and m not in BUNDLED and Path(m).expanduser().exists()
            else scorer_kind or runner.resolve(m).kind for m in models}


def check_model_options(model: str, model_kind: str, **given: Any) -> None:
    """Reject LM-only options (``given``, None = not given; ``length_norm`` ``none`` passes) for an
    embedding or static model.

    >>> check_model_options("glove-50d", "static", reduction=None, length_norm="none")
    >>> check_model_options("glove-50d", "static", pattern="is")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --pattern applies to language models only; glove-50d is a static model
    """
    if model_kind in LM_KINDS:
        return
    for opt, value in given.items():
        if value is not None and not (opt == "length_norm" and value == "none"):
            raise ProbegenError(f"--{opt.replace('_', '-')} applies to language models only; {model} is a {model_kind} "
                                "model")


def load_model_scorer(model: str, scorer_kind: str | None, reduction: str, batch_size: int | None,
                      runner: Runner) -> Any:
    """The default method's scorer for ``model``, loaded by ``runner``."""
    return _methods.default().load_scorer(runner, _methods.ScorerRequest(
        model=model, scorer=scorer_kind, reduction=reduction, batch_size=batch_size))


@dataclass(frozen=True)
class EvalRequest:
    """Everything ``probegen eval`` is asked; an option left ``None`` was not set, so an option that does
    not apply is rejected only when given (:func:`check_eval_options`) and defaults are filled in after."""

    model: str
    dataset: str
    out: str | None = None
    method: str = field(default_factory=lambda: _methods.default().flags["eval"])
    scorer: str | None = None
    nonce: str | None = None
    pattern: str | None = None
    reduction: str | None = None
    matching: str | None = None
    length_norm: str | None = None
    split: str | None = None
    pll: str | None = None
    limit: int | None = None
    sample: int | None = None
    on_invalid: str | None = None
    probe: str | None = None  # a release file's probe type (multiple choice)
    n_boot: int | None = None
    debias_share: float | None = None
    seed: int = 0
    batch_size: int | None = None
    adaptive: str | None = None  # an item bank (probegen items --bank): give its items adaptively
    budget: int | None = None
    target_se: float | None = None
    batch_items: int | None = None
    randomesque: int | None = None
    #: the method's own options by name (:attr:`probegen.methods.Method.options`: ``permutations``, ...)
    method_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_request(self, _methods.resolved(EVAL_OPTIONS))  # one type and range per option, the command line's too
        object.__setattr__(self, "method_options", _methods.method_options(self.method_options))

    def asked(self) -> dict[str, Any]:
        """The options the dataset's kind is checked against (names as the CLI's, with ``_``)."""
        keys = ("scorer", "nonce", "pattern", "reduction", "matching", "length_norm", "split", "pll", "limit", "sample",
                "on_invalid", "probe", "debias_share")
        return {k: getattr(self, k) for k in keys}

    def out_dir(self, root: Path = DEFAULT_ROOT) -> Path:
        """``out``, or ``<root>/runs/<model>__<dataset stem>`` as the CLI names it."""
        return Path(self.out) if self.out else root / "runs" / f"{slug(self.model)}__{slug(Path(self.dataset).stem)}"


def run_eval(req: EvalRequest, out: Path, figures: Callable[[dict[str, Any], Path], dict[str, str]] | None = None, *,
             runner: Runner,
             analyse: Callable[[dict[str, Any], list[dict[str, Any]], Path], list[str]] | None = None,
             task: Task | None = None) -> str:
    """Evaluate ``req.model`` on ``req.dataset``, write the results directory ``out`` (whole or not at
    all), return the summary. ``task``: the dataset's task once the caller checked every option (None:
    detected and checked here). ``figures(results, folder)`` may add plots (returns ``{name: file}``),
    ``analyse(results, rows, folder)`` then summary lines. Under ``torchrun`` rank 0 writes."""
    model, dataset, options = req.model, req.dataset, req
    if task is None:  # a direct library call (a request is checked by api.check_eval_request)
        check_eval_options(task := tasks.detect(dataset), model, dataset, options, runner)
    settings, reduction = _settings(options)
    data, subset = load_subset(task, dataset, subset_request(options.limit, options.sample), options.seed,
                               options.on_invalid, options.split, log=runner.log, probe=options.probe)
    settings = replace(settings, nonce=options.nonce or dataset_nonce(data.manifest))
    reduction = task.scorer_reduction(reduction, settings)
    t0 = time.perf_counter()
    scorer = _methods.get(options.method, "eval").load_scorer(runner, _methods.ScorerRequest(
        model=model, scorer=options.scorer, reduction=reduction, batch_size=options.batch_size, seed=options.seed,
        options=options.method_options))  # rank 0 loads first
    t_load = time.perf_counter() - t0
    runner.log(f"model {model}: {scorer.kind} scorer ({t_load:.1f} s to load)")
    t1 = time.perf_counter()
    if options.adaptive is None:  # the whole set, or options.adaptive's bank
        ev, adaptive = task.evaluate(data, scorer, settings, progress=runner.progress), None
    else:
        from ..itemstats.adaptive import administer

        ev, adaptive = administer(task, data, scorer, settings, options, runner.log)
    timings = {"load_s": round(t_load, 3), "score_s": round(time.perf_counter() - t1, 3)}
    results = _results(model, dataset, task, data, scorer, ev, reduction, timings, runner, options.method_options)
    notes = _generation_notes(scorer, ev, results) + _shown_notes(results, data, subset) + _adaptive_notes(results,
                                                                                                          adaptive)
    exchanges = as_unit_scorer(scorer).exchanges()
    with runner.output_dir(out) as tmp:  # rank 0 writes; no rank leaves before the results are in place
        write_jsonl(tmp / ev.rows_file, ev.rows)
        if exchanges is not None:
            write_jsonl(tmp / RESPONSES_FILE, exchanges)
        if figures is not None and runner.is_main:
            results["plots"] = figures(results, tmp)
        notes += analyse(results, ev.rows, tmp) if analyse is not None and runner.is_main else []
        _adaptive_report(tmp, adaptive)
        write_json(tmp / "results.json", results)
    runner.log(f"wrote {out}")
    return "\n".join([task.summary(model, ev.metrics), *notes])


def _adaptive_notes(results: dict[str, Any], adaptive: dict[str, Any] | None) -> list[str]:
    """An adaptive run's block of results.json and its summary lines (none for a full run)."""
    if adaptive is None:
        return []
    from ..itemstats.adaptive import summary_lines

    results["adaptive"] = adaptive
    return summary_lines(adaptive)


def _adaptive_report(folder: Path, adaptive: dict[str, Any] | None) -> None:
    """An adaptive run's steps appended to the report.md that the analysis wrote (if it wrote one)."""
    if adaptive is not None and (folder / "report.md").is_file():
        from ..itemstats.adaptive import report_section

        with open(folder / "report.md", "a", encoding="utf-8") as fh:
            fh.write(report_section(adaptive))


def _generation_notes(scorer: Any, ev: Evaluation, results: dict[str, Any]) -> list[str]:
    """The generative method's block of results.json (invalid answers, order effects) and its summary lines."""
    if as_unit_scorer(scorer).exchanges() is None:  # a scorer that asks no prompts
        return []
    from ..generate.metrics import summarize

    results["generation"] = block = summarize(ev.rows)
    results["files"] = {"rows": ev.rows_file, "responses": RESPONSES_FILE}
    return _methods.generation_method(block).summary_lines(block) if block else []


def subset_request(limit: int | None, sample: int | None) -> tuple[str, int] | None:
    """``("limit", N)``, ``("sample", N)`` or None from ``--limit`` / ``--sample`` (never both).

    >>> subset_request(None, 20)
    ('sample', 20)
    >>> subset_request(5, 20)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --limit and --sample cannot be used together: --limit N takes the first N,
    --sample N a seeded sample; give one
    """
    if limit is not None and sample is not None:
        raise ProbegenError("--limit and --sample cannot be used together: --limit N takes the first N, "
                            "--sample N a seeded sample; give one")
    for how, n in (("limit", limit), ("sample", sample)):
        if n is not None:
            if n < 1:
                raise ProbegenError(f"--{how} must be at least 1 (got {n})")
            return how, int(n)
    return None


def reader_options(on_invalid: str | None = None, probe: str | None = None) -> dict[str, Any]:
    """The reader keywords the user asked for, passed to ``Task.load`` only when given.

    >>> reader_options("error", None), reader_options("skip", "hyponymy")
    ({}, {'on_invalid': 'skip', 'probe': 'hyponymy'})
    """
    return {**({"on_invalid": on_invalid} if on_invalid and on_invalid != "error" else {}),
            **({"probe": probe} if probe is not None else {})}


def load_subset(task: Any, path: str | Path, subset: tuple[str, int] | None, seed: int = 0,
                on_invalid: str | None = None, split: str | None = None, whole: str = "unit", ablations: bool = False,
                log: Callable[[str], None] = print, probe: str | None = None) -> tuple[Any, dict[str, Any] | None]:
    """(dataset, what a subset took or None): ``path`` loaded by ``task``, then cut to ``split`` and ``subset``."""
    kw = reader_options(on_invalid, probe)
    data = task.load(path, ablations=True, **kw) if ablations else task.load(path, **kw)
    if subset is None:
        return data, None
    if split:
        data = task.select_split(data, split, str(path))
    data, info = task.subset(data, subset[0], subset[1], seed, whole)
    log(f"{path}: {subset_line(info)}")
    return data, info


def _shown_notes(results: dict[str, Any], data: Dataset, subset: dict[str, Any] | None) -> list[str]:
    """Add the skipped rows and the subset to ``results``; the lines the summary adds for them."""
    from probegen.diagnostics.report import invalid_lines

    notes = []
    if invalid := data.manifest.get("invalid"):
        results["invalid"] = invalid
        notes += invalid_lines(invalid)
    if subset is not None:
        results["subset"] = subset
        notes.append(subset_line(subset))
    return notes


def check_eval_options(task: Any, model: str | None, dataset: str | Path, o: EvalRequest, runner: Runner,
                       check_model: bool = True) -> None:
    """Every option given fits the dataset's ``task``, the method and (``check_model``) the model's kind."""
    asked = o.asked()  # every option the dataset's kind is checked against (--pll, --debias-share too)
    given = {k: asked[k] for k in ("pattern", "matching", "nonce", "length_norm", "split", "reduction", "scorer",
                                   "limit", "sample", "on_invalid", "probe")}
    subset_request(o.limit, o.sample)  # both at once: one line before anything is loaded
    check_method_options(o.method, {**given, **o.method_options})
    tasks.check_options([task], asked, "eval", [dataset])
    if check_model and model is not None and not _methods.get(o.method, "eval").asks:
        # a chat model is resolved by its backend when it loads
        model_kind = resolve_models([model], o.scorer, runner=runner)[model]
        lm_only = {k: asked[k] for k in task.lm_only_options}
        check_model_options(model, model_kind, reduction=o.reduction, length_norm=o.length_norm, **lm_only)


def _settings(o: EvalRequest) -> tuple[Settings, str]:
    """(settings, reduction) of an evaluation whose options were checked: the defaults filled in."""
    settings = Settings(pattern=o.pattern or Settings.pattern, matching=o.matching or "alignment",
                        length_norm=o.length_norm or "none", split=o.split, seed=o.seed)
    return settings, o.reduction or "sum"


def check_method_options(method: str, given: dict[str, Any]) -> None:
    """Reject the options in ``given`` that do not apply to ``method`` (:func:`probegen.methods.check_options`)."""
    _methods.check_options(method, given)


def _results(model: str, dataset: str | Path, task: Task, data: Dataset, scorer: Any, ev: Evaluation, reduction: str,
             timings: dict[str, float], runner: Runner, method_options: Mapping[str, Any]) -> dict[str, Any]:
    """results.json of an evaluation (likelihood settings null, in the metrics too, for a method without)."""
    scorer_settings = scorer.settings()
    metrics = ev.metrics
    method = _methods.recorded(scorer_settings.get("method"))
    ev_block = method.record({**ev.config, "reduction": reduction if scorer.kind in LM_KINDS else None},
                             method_options)
    if not method.likelihood and isinstance(metrics, dict) and "length_norm" in metrics:
        metrics = {**metrics, "length_norm": None}
    stats = as_unit_scorer(scorer).stats()
    from ..scorers.base import run_note

    if note := run_note(stats or {}):  # the path the scores took (attention kernel and why), a precision's check
        runner.log(f"model {model}: {note}")
    manifest_sha = sha256_text(json.dumps(data.manifest, sort_keys=True))
    return {
        "model": model,
        "scorer": {"kind": scorer.kind, **scorer_settings},
        "dataset": {"path": str(dataset), "kind": task.name, "manifest_sha256": manifest_sha},
        "eval": ev_block,
        "metrics": metrics,
        # what may differ between two runs of the same evaluation: timings, cache hits, processes
        "run": {"timings": timings, "scorer_stats": stats, "distributed": runner.describe()},
    }
