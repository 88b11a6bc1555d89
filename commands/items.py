"""``probegen items`` and ``probegen subset``, and the options of commands that read respondents' answers."""

from __future__ import annotations

from typing import Callable

import click

from probegen import request_options as opts

from .options import SEED, F, RegistryChoice, checked_type, log, stacked

#: how an lm-eval --log_samples file becomes respondents (probegen.exchange.ingest.LM_EVAL_METRICS)
LM_EVAL_METRICS = ("acc", "acc_norm", "both")


def irt_option(default: str, help: str) -> Callable[[F], F]:
    """``--irt``: an IRT fitter of the registry (:func:`probegen.itemstats.irt.fitters`: 1pl, 2pl, 3pl and the
    entry-point group probegen.irt_fitters's) or none; it reaches the command as ``irt_model``."""
    def names() -> list[str]:
        from probegen.itemstats.irt import fitters

        return list(fitters())

    return click.option("--irt", "irt_model", type=RegistryChoice(names, "none"), default=default, show_default=True,
                        help=f"{help} Installed fitters (entry-point group probegen.irt_fitters) are among the "
                             "choices.")


def lm_eval_metric_option(command: F) -> F:
    """``--lm-eval-metric`` on a command that reads other harnesses' files (its value reaches the
    command as ``lm_eval_metric``)."""
    return click.option("--lm-eval-metric", "lm_eval_metric", type=click.Choice(LM_EVAL_METRICS), default="acc",
                        show_default=True,
                        help="An lm-eval --log_samples file is one respondent per model, scored by acc (summed "
                             "log-probabilities) or acc_norm (per character); both: two respondents, which answer "
                             "almost alike (not independent).")(command)


def respondent_options(model_help: str, run_help: str) -> Callable[[F], F]:
    """``--model`` (``models``) and ``--run`` (``runs``), both repeatable: models scored here, answers made already."""
    return stacked(click.option("--model", "models", multiple=True, help=model_help),
                   click.option("--run", "runs", multiple=True, type=click.Path(), help=run_help))


@click.command("items")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--out", required=True, type=click.Path(), help="Output folder (written whole or not at all).")
@click.option("--common", is_flag=True, help="Runs on different datasets: keep the items they share.")
@irt_option("2pl", "IRT model (3pl: guessing floor fixed at 1/k).")
@click.option("--pairs", is_flag=True, help="Also compare every pair of respondents (pairs.csv, Holm-corrected).")
@click.option("--bootstrap", "n_boot", type=checked_type(opts.N_BOOT), default=1000, show_default=True,
              help="Bootstrap replicates (KR-20 CI, paired CIs).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--bank", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also save the calibration as an item bank (IRT parameters, content fingerprints and strata per "
                   "item; dataset, model, respondents, date) for `probegen eval --adaptive FILE`.")
@lm_eval_metric_option
def items(runs: tuple[str, ...], out: str, common: bool, irt_model: str, pairs: bool, n_boot: int, seed: int,
          bank: str | None, lm_eval_metric: str) -> None:
    """Item analysis over runs: one response table, classical statistics, IRT, flags.

    RUN is a `probegen eval` or `probegen bias` folder (its per-row records) or a `probegen study`
    folder (one respondent per participant), or another harness's per-item results: lm-eval
    --log_samples files of a probegen lm-eval export, inspect-ai logs, Every Eval Ever samples
    (docs/exchange.md). Writes responses.csv/.parquet, items.csv,
    distractors.csv, respondents.csv, summary.json and report.md (and pairs.csv with --pairs).

    \b
    Examples:
      probegen items runs/glove runs/minilm runs/bert --out probegen_out/items/wordnetqa
      probegen items runs/a runs/b --pairs --irt 3pl --out items-ab
      probegen items runs/glove runs/minilm runs/bert --out items/wnqa --bank items/wnqa-bank.json
      probegen items runs/glove lm-out/MODEL/samples_probegen_wnqa_2026-01-01T00-00-00.jsonl logs/b.eval --out items-x
    """
    from probegen.itemstats.analyse import run_items

    click.echo(run_items(list(runs), out, common, None if irt_model == "none" else irt_model, n_boot, seed, pairs,
                         bank, lm_eval_metric))


@click.command("subset")
@click.argument("dataset", type=click.Path())
@click.option("--items", "items_dir", required=True, type=click.Path(),
              help="A `probegen items` folder of runs on DATASET.")
@click.option("--size", required=True, type=click.IntRange(min=1), help="Items (dataset records) to keep.")
@click.option("--method", type=click.Choice(["random", "anchor", "information"]), default="anchor", show_default=True,
              help="random: a seeded draw; anchor: k-means medoids of the items' response patterns "
                   "(tinyBenchmarks); information: the most Fisher information over the respondents' abilities.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the draw and of the validation.")
@click.option("--out", required=True, type=click.Path(), help="Output dataset folder.")
def subset(dataset: str, items_dir: str, size: int, method: str, seed: int, out: str) -> None:
    """A compact form of DATASET: a dataset of the same kind with --size records, its manifest naming
    the parent, method and seed, and predictor.json (how to predict full-set accuracy from it) with a
    leave-respondents-out validation against random subsets of the same size.

    \b
    Examples:
      probegen subset probegen_out/datasets/wordnetqa-definitions --items items/wordnetqa --size 100 --out compact
    """
    from probegen.itemstats.subset import run_subset

    click.echo(run_subset(dataset, items_dir, size, method, seed, out, log=log))
