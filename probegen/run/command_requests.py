"""The requests of ``probegen export``, ``compare``, ``filter`` and ``study make``: one frozen object per
command, checked once before any work (each dataset's kind detected and each model resolved once, by
the command's runner), then run with the tasks the check found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from probegen import tasks
from probegen.errors import ProbegenError
from probegen.io import check_file_replaceable, check_output_not_input, ensure_writable
from probegen.paths import DEFAULT_ROOT, slug

if TYPE_CHECKING:
    from probegen.runner import Runner

Log = Callable[[str], None]
#: the formats ``probegen export`` writes as folders (the others are the kinds' release files)
FOLDER_FORMATS = ("lm-eval", "hf")


@dataclass(frozen=True)
class ExportRequest:
    """``probegen export``: ``fmt`` None is the kind's release format; None options were not given."""

    dataset: str
    out: str
    fmt: str | None = None
    split: str | None = None
    seed: int | None = None
    nonce: str | None = None
    pattern: str | None = None
    task: str | None = None  # the lm-eval task name


def check_export_request(req: ExportRequest) -> Any:
    """Every check of an export, before anything is read or written; the dataset's task (None: a run's export)."""
    from probegen.exporters import check_export

    check_output_not_input(req.out, [req.dataset])
    if _check_run_export(req):
        return None
    kind = tasks.detect(req.dataset)
    if req.fmt in FOLDER_FORMATS:
        check_export(kind, req.dataset, req.fmt, req.split, req.seed, req.nonce, req.pattern)
        ensure_writable(Path(req.out), True, writer="export")
        return kind
    if not isinstance(kind, tasks.Exportable):  # the kind cannot export: one line, before any work
        raise tasks.incapable(kind, "export", req.dataset)
    if any(v is not None for v in (req.seed, req.nonce, req.pattern, req.task)):
        raise ProbegenError("--seed, --nonce, --pattern and --task apply to --format lm-eval and hf")
    check_file_replaceable(req.out)  # before loading: a file probegen did not write is never replaced
    fmt = req.fmt or kind.release_format
    if fmt is None or fmt != kind.release_format:
        raise ProbegenError(f"{req.dataset} is a {kind.name} dataset; it cannot be exported as "
                            f"{fmt or 'a release file'}")
    tasks.check_options([kind], {"split": req.split}, "export", [req.dataset])
    return kind


def _check_run_export(req: ExportRequest) -> bool:
    """Whether ``req`` exports a run (``--format eee|inspect-log``), checked against a dataset's formats."""
    from probegen.exchange.export import RUN_FORMATS, is_run

    if not is_run(req.dataset):
        if req.fmt in RUN_FORMATS:
            raise ProbegenError(f"--format {req.fmt} exports a run folder (a `probegen eval` output with "
                                f"results.json); {req.dataset} is not one")
        return False
    if req.fmt not in RUN_FORMATS:
        raise ProbegenError(f"{req.dataset} is a run, not a dataset: export it with --format eee or inspect-log"
                            + (f" (not {req.fmt})" if req.fmt else ""))
    if any(v is not None for v in (req.split, req.seed, req.nonce, req.pattern, req.task)):
        raise ProbegenError("--split, --seed, --nonce, --pattern and --task apply to datasets, not to a run's export")
    if req.fmt == "eee":
        ensure_writable(Path(req.out), True, [req.dataset], writer="output")
    else:
        if Path(req.out).suffix not in (".eval", ".json"):
            raise ProbegenError(f"--out {req.out}: an inspect-ai log is a .eval or .json file")
        check_file_replaceable(req.out)
    return True


def run_export_request(req: ExportRequest) -> str:
    """``probegen export``: check ``req``, write the export; the line to print."""
    from probegen.exporters import export

    kind = check_export_request(req)
    if kind is None:  # a run's per-item results (checked by _check_run_export)
        from probegen.exchange.export import write_eee, write_inspect_log

        return write_eee(req.dataset, req.out) if req.fmt == "eee" else write_inspect_log(req.dataset, req.out)
    if req.fmt in FOLDER_FORMATS:
        return export(req.dataset, req.fmt, req.out, split=req.split, seed=req.seed, nonce=req.nonce,
                      pattern=req.pattern, task=req.task, kind=kind)
    return cast(str, kind.write_release(req.dataset, req.out, req.split))


@dataclass(frozen=True)
class CompareRequest:
    """``probegen compare``: two paired probe sets scored by every model, and answers made already (``runs``)."""

    twin: str
    other: str
    models: tuple[str, ...]
    labels: tuple[str, str] = ("twin", "adversarial")
    seed: int = 0
    n_boot: int = 1000
    out: str | None = None
    runs: tuple[str, ...] = ()
    lm_eval_metric: str = "acc"  # an lm-eval file's respondent (acc, acc_norm, both)

    def out_dir(self, root: Path = DEFAULT_ROOT) -> Path:
        """``out``, or ``<root>/compare/<other's name>``."""
        return Path(self.out) if self.out else root / "compare" / Path(self.other).name


def check_compare_request(req: CompareRequest, runner: Runner, root: Path = DEFAULT_ROOT) -> tuple[Any, Any]:
    """Every check of a comparison before any work (output, kinds, models); the two datasets' tasks."""
    from .compare import raise_mismatch
    from .evaluation import resolve_models

    if not req.models and not req.runs:
        raise ProbegenError("give --model (scored here) or --run (answers made already), or both")
    ensure_writable(req.out_dir(root), True, [req.twin, req.other, *req.runs], writer="run")
    kinds = tasks.detect(req.twin), tasks.detect(req.other)
    if kinds[0].name != kinds[1].name:  # two kinds cannot be paired: one line before any model loads
        raise_mismatch(kinds[0].name, kinds[1].name)
    if req.models:
        resolve_models(req.models, runner=runner)  # an unknown name fails in a moment
    return kinds


def run_compare_request(req: CompareRequest, runner: Runner, root: Path = DEFAULT_ROOT) -> dict[str, Any]:
    """``probegen compare``: check ``req``, read ``--run``s before any model loads, score and write the report."""
    from .compare import compare, read_imported
    from .run_bias import load_dataset

    kinds = check_compare_request(req, runner, root)
    loaded, imported = None, None
    if req.runs:  # the datasets and runs are read once here, so that a bad run fails before any output
        loaded = load_dataset(req.twin, task=kinds[0]), load_dataset(req.other, task=kinds[1])
        imported = read_imported(list(req.runs), req.twin, req.other, loaded[0][0], (loaded[0][1], loaded[1][1]),
                                 set(req.models), req.lm_eval_metric)
    with runner.output_dir(req.out_dir(root)) as tmp:  # written by rank 0 alone under torchrun
        out: dict[str, Any] = compare(req.twin, req.other, list(req.models), tmp, req.labels, req.seed, req.n_boot,
                                      runner.log, runner=runner, kinds=kinds, runs=list(req.runs), loaded=loaded,
                                      imported=imported)  # Any to a mypy run on the bare folders
        return out


@dataclass(frozen=True)
class FilterRequest:
    """``probegen filter --artefacts``: AFLite settings, and the models ``probegen bias`` runs before/after."""

    dataset: str
    budget: int
    splits: int = 8
    threshold: float = 0.75
    tolerance: float = 0.02
    holdout: float = 0.25
    seed: int = 0
    models: tuple[str, ...] = ()
    out: str | None = None
    wordnet: str | None = None
    semcor: str | None = None

    def out_dir(self) -> Path:
        """``out``, or ``<dataset>-filtered`` beside the dataset."""
        src = Path(self.dataset)
        return Path(self.out) if self.out else src.with_name(src.name + "-filtered")

    def bias_dirs(self) -> dict[str, Path]:
        """Each model's before/after bias report, beside the filtered dataset."""
        out = self.out_dir()
        return {m: out.with_name(out.name + f"-bias-{slug(m)}") for m in self.models}


def check_filter_request(req: FilterRequest, runner: Runner) -> Any:
    """Every check of a filter run before any work (kind, held-out share, outputs, models); the dataset's task."""
    from probegen.diagnostics.filtering import check_holdout

    from .evaluation import resolve_models

    (task,) = tasks.check_dataset_options([req.dataset], {}, "filter")
    check_holdout(req.holdout)
    for path in [req.out_dir(), *req.bias_dirs().values()]:
        ensure_writable(path, True, [req.dataset], writer="dataset" if path == req.out_dir() else "run")
    resolve_models(req.models, runner=runner)
    return task


def run_filter_request(req: FilterRequest, runner: Runner, echo: Log) -> None:
    """``probegen filter``: check ``req``, filter, then each model's bias before/after (``echo``: summaries)."""
    from probegen.diagnostics.aflite import FilterSettings
    from probegen.diagnostics.filtering import summary

    from .filtering import filter_dataset

    task = check_filter_request(req, runner)
    src, out_dir = Path(req.dataset), req.out_dir()
    s = FilterSettings(budget=req.budget, splits=req.splits, threshold=req.threshold, tolerance=req.tolerance,
                       seed=req.seed, holdout=req.holdout)
    # AFLite is the same on every rank: rank 0 alone filters and writes, the others wait for the dataset
    record = runner.write(lambda: filter_dataset(src, out_dir, s, runner.log, task=task))
    if record is not None:
        echo(summary(record))
        echo(f"wrote {out_dir}")
    from .run_bias import BiasConfig, run_bias, summary_table

    for m, bias_dir in req.bias_dirs().items():
        with runner.output_dir(bias_dir) as tmp:
            res = run_bias(m, [src, out_dir], tmp, BiasConfig.asked(seed=req.seed), wordnet=req.wordnet,
                           semcor=req.semcor,
                           # called only within this iteration: run_bias returns before bias_dir changes
                           log=lambda msg: runner.log(msg.replace(str(tmp), str(bias_dir))),  # noqa: B023
                           runner=runner, kinds=[task, task])  # the filtered set is of the source's kind
        echo(summary_table(res))
        echo(f"bias before/after: {bias_dir / 'report.md'}")


@dataclass(frozen=True)
class StudyRequest:
    """``probegen study make``: the sample, the conditions and the annotators of a human study."""

    dataset: str
    conditions: tuple[str, ...] = ("full", "context", "word")
    n: int = 100
    annotators: int = 2
    overlap: int = 50
    seed: int = 0
    split: str | None = None
    out: str | None = None

    def out_dir(self, root: Path) -> Path:
        """``out``, or ``<root>/<dataset name>[-<split>]``."""
        d = Path(self.dataset)
        name = Path(self.dataset.rstrip("/")).name if d.is_dir() else d.stem
        return Path(self.out) if self.out else root / (name + (f"-{self.split}" if self.split else ""))


def check_study_request(req: StudyRequest, root: Path) -> Any:
    """Every check of a study before anything is written (kind, options, output); the dataset's task."""
    (task,) = tasks.check_dataset_options([req.dataset], {"split": req.split}, "study")
    out_dir = req.out_dir(root)
    if out_dir.exists():
        raise ProbegenError(f"{out_dir} already exists; a study is never overwritten (it may hold answers): choose "
                            "another --out")
    ensure_writable(out_dir, inputs=[req.dataset])
    return task


def run_study_request(req: StudyRequest, root: Path) -> dict[str, Any]:
    """``probegen study make``: check ``req``, build and write the study; what was built."""
    from probegen.study.design import StudyConfig, build_study, write_study

    task = check_study_request(req, root)
    cfg = StudyConfig(conditions=req.conditions, n=req.n, annotators=req.annotators, overlap=req.overlap,
                      seed=req.seed, split=req.split)
    built = build_study(req.dataset, cfg, task=task)
    write_study(built, req.out_dir(root))
    return built
