"""One ``probegen bias`` run as a typed request: the command fills a :class:`BiasRequest` and prints the
summary :func:`run_checked` returns (option checks, the method, the zero-shot or trained run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from probegen import methods, tasks
from probegen.errors import ProbegenError
from probegen.io import ensure_writable
from probegen.methods import method_options, resolved
from probegen.request_options import BIAS_OPTIONS, check_request

if TYPE_CHECKING:
    from probegen.runner import Runner

DEFAULT_OUT = Path("probegen_out") / "bias"
Log = Callable[[str], None]


@dataclass(frozen=True)
class BiasRequest:
    """What one ``probegen bias`` run is asked to do. ``given`` names the options the user set (those
    are checked against the datasets and the model); ``out`` None: under :data:`DEFAULT_OUT`, by model."""

    model: str
    datasets: tuple[str, ...] = ()
    out: str | None = None
    seed: int = 0
    n_boot: int = 1000
    scorer: str | None = None
    nonce: str | None = None
    pattern: str = "definition-of"
    reduction: str = "sum"
    batch_size: int | None = None
    folds: int = 5
    split: str | None = None
    controls: bool = True
    debias_share: float | None = None
    method: str | None = None
    finetune: bool = False
    seeds: int = 3
    human: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()
    limit: int | None = None
    sample: int | None = None
    on_invalid: str = "error"
    probe: str | None = None
    wordnet: str | None = None
    semcor: str | None = None
    given: frozenset[str] = frozenset()
    #: the method's own options by name (:attr:`probegen.methods.Method.options`: ``permutations``, ...)
    method_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_request(self, resolved(BIAS_OPTIONS))  # one type and range per option, the command line's too
        object.__setattr__(self, "method_options", method_options(self.method_options))

    def asked(self, name: str) -> Any:
        """The value of option ``name`` if the user set it, else None."""
        return getattr(self, name) if name in self.given else None

    def out_dir(self, suffix: str = "") -> Path:
        """Where the report goes."""
        return (Path(self.out) if self.out
                else DEFAULT_OUT / (self.model.strip("/").replace("/", "_").replace(" ", "_") + suffix))


def choose_method(method: str | None, datasets: tuple[str, ...], finetune: bool = False,
                  kinds: Sequence[Any] | None = None) -> str:
    """The method a run uses: the one asked for, else by dataset kind (all must agree): zero-shot where
    the task has zero-shot ablations, else trained. ``kinds``: the datasets' tasks if already detected."""
    if method is not None and methods.get(method, "bias").asks:  # every kind's units can be asked
        if finetune:
            raise ProbegenError("--finetune applies to --method trained (word-in-context datasets)")
        return method
    trained_only = [not t.zero_shot for t in (kinds if kinds is not None else map(tasks.detect, datasets))]
    if method is None:
        if any(trained_only) and not all(trained_only):
            raise ProbegenError("word-in-context datasets (measured with --method trained) and CoDA21/WordNetQA "
                                "datasets (--method zeroshot) cannot share one run; run them separately")
        method = (methods.trained_method() if trained_only and all(trained_only) else methods.default()).flags["bias"]
    trains = methods.get(method, "bias").trains
    if not trains and finetune:
        raise ProbegenError("--finetune applies to --method trained (word-in-context datasets)")
    if not trains and any(trained_only):
        bad = next(d for d, w in zip(datasets, trained_only) if w)
        raise ProbegenError(f"{bad} is a word-in-context dataset: it has no zero-shot ablations; use --method trained")
    return method


#: the options of ``probegen bias`` whose applicability depends on the datasets' tasks
TASK_OPTIONS = ("pattern", "nonce", "reduction", "scorer", "split", "folds", "controls", "method", "finetune", "seeds",
                "limit", "sample", "on_invalid", "probe", "debias_share")


def check_options(req: BiasRequest, runner: Runner) -> tuple[list[Any], str]:
    """Every check of ``req`` before any work (options, method, human studies, the model resolved by
    ``runner``); the datasets' tasks and the method."""
    from probegen.diagnostics.eval_report import check_debias_share

    from .evaluation import check_method_options, subset_request
    from .run_bias import default_tasks

    subset_request(req.asked("limit"), req.asked("sample"))  # --limit with --sample: one line
    # bias --method trained takes the options of the cloze method it is checked as
    asked = methods.get(req.method, "bias")
    check_method_options(methods.default().name if asked.trains else asked.name,
                         {**{n: req.asked(n) for n in ("scorer", "reduction", "pattern")}, **req.method_options})
    check_debias_share(req.debias_share, req.method, req.method_options.get("permutations", 1))
    kinds = tasks.check_dataset_options(req.datasets, {n: req.asked(n) for n in TASK_OPTIONS}, "bias",
                                        default_tasks=default_tasks())
    method = choose_method(req.method, req.datasets, req.finetune, kinds)
    if req.human:
        _check_human(req, method)
    trains = methods.get(method, "bias").trains
    if trains and req.beside:
        raise ProbegenError("--beside adds other runs' points to the zero-shot or generative bias plane; "
                            "it does not apply to --method trained")
    if not trains:
        _check_zeroshot(req, runner)
    return kinds, method


def _check_human(req: BiasRequest, method: str) -> None:
    """A study that cannot be scored fails now, not after the model has scored everything."""
    from .human import score_study

    if methods.get(method, "bias").trains:
        raise ProbegenError("--human adds human points to the zero-shot bias plane; it does not apply to --method "
                            "trained")
    for h in req.human:
        score_study(h, n_boot=2)


def run_trained_request(req: BiasRequest, log: Log, runner: Runner, kinds: Sequence[Any] | None = None) -> str:
    """``--method trained``: a classifier per input condition; returns the summary to print."""
    from probegen.diagnostics.trained import TrainedConfig, summary_table

    from .evaluation import subset_request
    from .trained import require_gpu, run_trained

    if req.finetune:
        require_gpu()  # before any dataset or model is loaded
    out_dir = req.out_dir("-trained")
    ensure_writable(out_dir, replace=True, inputs=req.datasets, writer="run")

    cfg = TrainedConfig(seeds=req.seeds, seed=req.seed, n_boot=req.n_boot, finetune=req.finetune,
                        batch_size=req.batch_size or 32, subset=subset_request(req.limit, req.sample))
    results = run_trained(req.model, list(req.datasets), out_dir, cfg, log=log, runner=runner, kinds=kinds)
    return f"{summary_table(results)}\nreport: {out_dir / 'report.md'}"


def _check_zeroshot(req: BiasRequest, runner: Runner) -> None:
    """Every option and the model (resolved by ``runner``) checked before any dataset is generated."""
    from .evaluation import check_model_options, resolve_models

    if methods.get(req.method, "bias").asks:  # a chat model is resolved by its backend when it loads
        return
    # the model before the default datasets are generated: an unknown name fails in a moment
    model_kind = resolve_models([req.model], req.scorer, runner=runner)[req.model]
    check_model_options(req.model, model_kind, reduction=req.asked("reduction"), pattern=req.asked("pattern"))


def run_zeroshot_request(req: BiasRequest, log: Log, runner: Runner, kinds: Sequence[Any] | None = None) -> str:
    """The zero-shot ablations (and human points) of a checked request; returns the summary to print."""
    from .evaluation import subset_request
    from .run_bias import BiasConfig, run_bias, summary_table

    out_dir = req.out_dir()
    ensure_writable(out_dir, replace=True, inputs=[*req.datasets, *req.human, *req.beside, req.wordnet, req.semcor],
                    writer="run")  # written by atomic_dir
    cfg = BiasConfig.asked(nonce=req.nonce, pattern=req.pattern, seed=req.seed, split=req.split, n_boot=req.n_boot,
                           folds=req.folds, controls=req.controls, debias_share=req.debias_share)
    # the report appears whole or not at all, written by rank 0 alone under torchrun
    with runner.output_dir(out_dir) as tmp:
        results = run_bias(req.model, list(req.datasets) or None, tmp, cfg, scorer_kind=req.scorer,
                           reduction=req.reduction, batch_size=req.batch_size, wordnet=req.wordnet, semcor=req.semcor,
                           log=lambda m: log(m.replace(str(tmp), str(out_dir))), runner=runner,
                           subset=subset_request(req.limit, req.sample), on_invalid=req.on_invalid, probe=req.probe,
                           method=req.method, method_options=req.method_options, kinds=kinds)
        if req.beside:
            from .run_bias import add_beside

            add_beside(tmp, list(req.beside))
        if req.human:
            from .human import add_human_to_bias

            add_human_to_bias(tmp, list(req.human), n_boot=req.n_boot, seed=req.seed)
    return f"{summary_table(results)}\nreport: {out_dir / 'report.md'}"


def run_checked(req: BiasRequest, log: Log, runner: Runner) -> tuple[str, str]:
    """Check ``req`` once, then run it, zero-shot or trained: (the method it ran, the summary to print)."""
    kinds, method = check_options(req, runner)
    if methods.get(method, "bias").trains:
        return method, run_trained_request(req, log, runner, kinds or None)
    return method, run_zeroshot_request(req, log, runner, kinds or None)
