"""The ``--method`` / ``--finetune`` / ``--seeds`` part of ``probegen bias`` (options declared in ``command.py``)."""

from __future__ import annotations

from pathlib import Path

import click

METHODS = ("zeroshot", "trained")
METHOD_HELP = ("zeroshot: score each ablation with the model as is (CoDA21, WordNetQA); trained: the bias paper's "
               "method, a classifier per input condition trained on the train split (word-in-context datasets: "
               "probegen make wic/wsd, a generic word-in-context JSONL, a WiC release copy) "
               "[default: trained for word-in-context datasets, zeroshot otherwise].")


def choose_method(method: str | None, datasets: tuple[str, ...], finetune: bool = False) -> str:
    """The method a run uses: the one asked for, else by dataset kind (all given datasets must agree)."""
    from probegen.errors import ProbegenError
    from probegen.wordincontext.dataset import is_wordincontext

    wic = [is_wordincontext(d) for d in datasets]
    if method is None:
        if any(wic) and not all(wic):
            raise ProbegenError("word-in-context datasets (measured with --method trained) and CoDA21/WordNetQA datasets "
                                "(--method zeroshot) cannot share one run; run them separately")
        method = "trained" if wic and all(wic) else "zeroshot"
    if method == "zeroshot" and finetune:
        raise ProbegenError("--finetune applies to --method trained (word-in-context datasets)")
    if method == "zeroshot" and any(wic):
        bad = next(d for d, w in zip(datasets, wic) if w)
        raise ProbegenError(f"{bad} is a word-in-context dataset: it has no zero-shot ablations; use --method trained")
    return method


def run_trained_command(ctx: click.Context, model: str, datasets: tuple[str, ...], out: str | None, seed: int,
                        n_boot: int, finetune: bool, seeds: int, batch_size: int | None, default_out: Path) -> None:
    """Run ``--method trained`` and print its summary."""
    from probegen.io import ensure_writable

    from .trained import TrainedConfig, require_gpu, run_trained, summary_table

    if finetune:
        require_gpu()  # before any dataset or model is loaded
    out_dir = Path(out) if out else default_out / (model.strip("/").replace("/", "_").replace(" ", "_") + "-trained")
    ensure_writable(out_dir, replace=True, inputs=datasets)
    cfg = TrainedConfig(seeds=seeds, seed=seed, n_boot=n_boot, finetune=finetune, batch_size=batch_size or 32)
    results = run_trained(model, list(datasets), out_dir, cfg, log=lambda m: click.echo(m, err=True))
    click.echo(summary_table(results))
    click.echo(f"report: {out_dir / 'report.md'}")


def eval_wordincontext(model: str, dataset: str, out: str | None, seed: int, batch_size: int | None, root: Path) -> bool:
    """``probegen eval`` on a word-in-context dataset (a linear probe, full input); False if ``dataset`` is not one."""
    from probegen.io import ensure_writable
    from probegen.wordincontext.dataset import is_wordincontext

    if not is_wordincontext(dataset):
        return False
    from .trained import TrainedConfig, eval_trained

    slug = lambda s: s.strip("/").replace("/", "_").replace(" ", "_")  # noqa: E731
    out_dir = Path(out) if out else root / "runs" / f"{slug(model)}__{slug(Path(dataset).stem)}"
    ensure_writable(out_dir, replace=True, inputs=[dataset])
    cfg = TrainedConfig(seed=seed, batch_size=batch_size or 32)
    click.echo(eval_trained(model, dataset, out_dir, cfg, log=lambda m: click.echo(m, err=True)))
    return True
