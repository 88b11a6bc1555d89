"""The word-in-context branch of ``probegen eval``: a linear probe on the full input, train -> test."""

from __future__ import annotations

from pathlib import Path

import click

from .options import log


def eval_wordincontext(model: str, dataset: str, out: str | None, seed: int, batch_size: int | None, root: Path,
                       runner=None, subset: tuple[str, int] | None = None) -> bool:
    """``probegen eval`` on a word-in-context dataset (a linear probe, full input); False if ``dataset`` is not one.

    ``runner`` (the command's :class:`probegen.runner.Runner`) loads the encoder; rank 0 alone writes and prints."""
    from probegen import tasks
    from probegen.io import ensure_writable

    if tasks.detect(dataset).zero_shot:  # a task with zero-shot units: the shared evaluator
        return False
    from probegen.diagnostics.trained import TrainedConfig, eval_trained

    slug = lambda s: s.strip("/").replace("/", "_").replace(" ", "_")  # noqa: E731
    out_dir = Path(out) if out else root / "runs" / f"{slug(model)}__{slug(Path(dataset).stem)}"
    ensure_writable(out_dir, replace=True, inputs=[dataset], writer="run")
    cfg = TrainedConfig(seed=seed, batch_size=batch_size or 32, subset=subset)
    summary = eval_trained(model, dataset, out_dir, cfg, log=log, runner=runner)
    if runner is None or runner.is_main:
        click.echo(summary)
    return True
