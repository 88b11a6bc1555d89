"""``probegen contamination``; the work is :mod:`probegen.diagnostics.contamination`."""

from __future__ import annotations

import click

from probegen import request_options as opts
from probegen.runner import Runner, Runtime

from .items import lm_eval_metric_option, respondent_options
from .options import SEED, add_device_options, checked_type, log


@click.command("contamination")
@add_device_options
@respondent_options("Model to check (bundled name, hub id or local folder, e.g. a fine-tune); repeatable.",
                    "Answers made already, each on one form: a probegen run, lm-eval --log_samples file, inspect-ai "
                    "log or Every Eval Ever result (docs/exchange.md); each respondent needs one on every form. "
                    "Repeatable; with or instead of --model.")
@click.option("--seen", required=True, type=click.Path(), help="The published form (the one a model may have seen).")
@click.option("--fresh", multiple=True, required=True, type=click.Path(),
              help="Fresh parallel forms: --fresh D2 D3 ... (or --fresh repeated); at least 2.")
@click.argument("more_fresh", nargs=-1, type=click.Path())
@click.option("--alpha", type=checked_type(opts.CONTAMINATION_ALPHA), default=0.05, show_default=True,
              help="Level of the test (one-sided unless --two-sided).")
@click.option("--two-sided", is_flag=True, help="Flag the seen form being harder too (default: only easier).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of tie-breaking and choice orders.")
@click.option("--force", is_flag=True,
              help="Run on forms that are not siblings of one `make ... --forms K` build (the report says so).")
@click.option("--out", required=True, type=click.Path(), help="Report folder (written whole or not at all).")
@lm_eval_metric_option
def contamination(runtime: Runtime, models: tuple[str, ...], runs: tuple[str, ...], seen: str, fresh: tuple[str, ...],
                  more_fresh: tuple[str, ...], alpha: float, two_sided: bool, seed: int, force: bool, out: str,
                  lm_eval_metric: str) -> None:
    """Is a model better on the published form than on fresh parallel forms?

    Scores every form with each model, then tests the gap seen - mean(fresh) against how much
    forms nobody saw differ: each form's sampling error over its units (CoDA21 groups, WordNetQA
    concepts, resampled whole) plus the between-form spread estimated from the fresh forms
    against each other. Forms must be one kind, share no synset and be sibling forms of one
    `make ... --forms K` build (their manifests say so; --force runs on others, with a warning).
    --run reads answers made already (probegen runs, lm-eval, inspect-ai, Every Eval Ever), so a
    model reachable only through its results is checked too. Writes report.md (one plain sentence
    per model on what the gap means), summary.json, forms.csv and contamination.png.

    \b
    Examples:
      probegen contamination --model smollm2-135m --seen forms/wnqa-form1 \\
                             --fresh forms/wnqa-form2 forms/wnqa-form3 forms/wnqa-form4 --out contam
      probegen contamination --model ./smollm2-tuned-on-form1 --model smollm2-135m \\
                             --seen forms/f1 --fresh forms/f2 --fresh forms/f3 --out contam-ft
      probegen contamination --seen forms/f1 --fresh forms/f2 forms/f3 --run logs/m-f1.eval \\
                             --run logs/m-f2.eval --run logs/m-f3.eval --out contam-m
    """
    from probegen.diagnostics.contamination import table
    from probegen.run.contamination import run_contamination

    runner = Runner(runtime, log=log)
    res = run_contamination(list(models), seen, [*fresh, *more_fresh], out, runner=runner, alpha=alpha,
                            alternative="two-sided" if two_sided else "greater", seed=seed, log=log,
                            runs=list(runs), force=force, lm_eval_metric=lm_eval_metric)
    click.echo(table(res))
    for r in res["models"]:
        click.echo(r["sentence"])
    click.echo(f"report: {out}/report.md")
