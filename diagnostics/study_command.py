"""``probegen study score``: registered into the ``study`` group by the CLI (scoring needs diagnostics).

Only click is imported at module level; expected failures raise ``ProbegenError``.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("score")
@click.argument("study_dir", metavar="STUDY", type=click.Path())
@click.option("--model", "models", multiple=True, type=click.Path(),
              help="A `probegen bias` output directory on the study's dataset; repeat for several. Adds the model-human gap table.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=click.IntRange(min=2), help="Bootstrap replicates.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--out", type=click.Path(), help="Report directory [default: STUDY/score].")
def score(study_dir, models, n_boot, seed, out) -> None:
    """Human accuracy per condition with CIs, agreement, human Bias_C/Bias_W, and model-human gaps.

    Writes results.json, report.md and bias_plane.png (humans as a black star; models, with
    --model, on the same items).

    \b
    Examples:
      probegen study score probegen_out/studies/wordnetqa-definitions
      probegen study score probegen_out/studies/wordnetqa-definitions --model probegen_out/bias/minilm-l6 --model probegen_out/bias/glove-50d
    """
    from probegen.io import ensure_writable

    from .human import score_study, summary, write_score

    out_dir = Path(out) if out else Path(study_dir) / "score"
    # written by atomic_dir; by default inside the study, never onto it or a run it reads
    ensure_writable(out_dir, replace=True, inputs=list(models), homes=[study_dir])
    res = score_study(study_dir, list(models), n_boot=n_boot, seed=seed)
    write_score(res, out_dir)
    click.echo(summary(res))
    click.echo(f"report: {out_dir / 'report.md'}")
