"""``probegen contamination``: the cli registers it with ``cli.add_command``.

Only click is imported at module level; the work is :mod:`probegen.diagnostics.contamination`.
Expected failures raise ``ProbegenError`` so the CLI group prints one line and exits non-zero.
"""

from __future__ import annotations

import click

from .options import SEED, add_device_options, log


@click.command("contamination")
@add_device_options
@click.option("--model", "models", multiple=True, required=True,
              help="Model to check (bundled name, hub id or local folder, e.g. a fine-tune); repeatable.")
@click.option("--seen", required=True, type=click.Path(), help="The published form (the one a model may have seen).")
@click.option("--fresh", multiple=True, required=True, type=click.Path(),
              help="Fresh parallel forms: --fresh D2 D3 ... (or --fresh repeated); at least 2.")
@click.argument("more_fresh", nargs=-1, type=click.Path())
@click.option("--alpha", type=click.FloatRange(0, 0.5, min_open=True), default=0.05, show_default=True,
              help="Level of the test (one-sided unless --two-sided).")
@click.option("--two-sided", is_flag=True, help="Flag the seen form being harder too (default: only easier).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of tie-breaking and choice orders.")
@click.option("--out", required=True, type=click.Path(), help="Report folder (written whole or not at all).")
def contamination(runtime, models, seen, fresh, more_fresh, alpha, two_sided, seed, out) -> None:
    """Is a model better on the published form than on fresh parallel forms?

    Scores every form with each model, then tests the gap seen - mean(fresh) against how much
    forms nobody saw differ: each form's sampling error over its units (CoDA21 groups, WordNetQA
    concepts, resampled whole) plus the between-form spread estimated from the fresh forms
    against each other. Forms must be one kind and share no synset. Writes report.md (one plain
    sentence per model on what the gap means), summary.json, forms.csv and contamination.png.

    \b
    Examples:
      probegen contamination --model smollm2-135m --seen forms/wnqa-form1 \\
                             --fresh forms/wnqa-form2 forms/wnqa-form3 forms/wnqa-form4 --out contam
      probegen contamination --model ./smollm2-tuned-on-form1 --model smollm2-135m \\
                             --seen forms/f1 --fresh forms/f2 --fresh forms/f3 --out contam-ft
    """
    from probegen.diagnostics.contamination import run_contamination, table
    from probegen.runner import Runner

    runner = Runner(runtime, log=log)
    res = run_contamination(list(models), seen, [*fresh, *more_fresh], out, runner=runner, alpha=alpha,
                            alternative="two-sided" if two_sided else "greater", seed=seed, log=log)
    click.echo(table(res))
    for r in res["models"]:
        click.echo(r["sentence"])
    click.echo(f"report: {out}/report.md")
