"""``probegen bias``: a click command the CLI registers with ``cli.add_command(bias)``.

Heavy imports happen inside the command; expected failures raise ``ProbegenError`` so the CLI
group prints one line and exits non-zero.
"""

from __future__ import annotations

from pathlib import Path

import click

from probegen.models import add_device_options

from .trained_command import METHOD_HELP, choose_method, run_trained_command

DEFAULT_OUT = Path("probegen_out") / "bias"


def _writable(out: Path, inputs: list) -> None:
    from probegen.io import ensure_writable

    ensure_writable(out, replace=True, inputs=inputs)  # written by atomic_dir


def option_given(ctx: click.Context, name: str, value):
    """``value`` if the user set option ``name`` (command line or env), else None: options are
    checked for what was asked, not for their defaults."""
    from click.core import ParameterSource

    return None if ctx.get_parameter_source(name) in (ParameterSource.DEFAULT, None) else value


def _check_applicable(datasets: tuple[str, ...], **given) -> None:
    """Reject an option that applies to none of the given datasets (e.g. --pattern with only WordNetQA sets)."""
    from probegen.errors import ProbegenError
    from probegen.evaluation import check_options, detect_dataset

    if not datasets:  # the defaults hold one CoDA21 and one WordNetQA set: every option applies
        return
    errors = []
    for kind in sorted({detect_dataset(d) for d in datasets}):
        try:
            check_options(kind, **given)
            return
        except ProbegenError as e:
            errors.append(e)
    raise errors[0]


@click.command("bias")
@add_device_options
@click.option("--model", required=True, help="Bundled short name (see `probegen models`), Hugging Face id or local path.")
@click.option(
    "--dataset", "datasets", multiple=True, type=click.Path(),
    help="Dataset directory; repeat for several [default: probegen_out/datasets/coda21-clean-easy and "
    "probegen_out/datasets/wordnetqa-definitions, generated if missing].",
)
@click.option("--out", type=click.Path(), help="Output directory [default: probegen_out/bias/<model>].")
@click.option("--seed", default=0, show_default=True, help="Seed for column order, tie breaking, bootstrap and folds.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=click.IntRange(min=2), help="Bootstrap replicates.")
@click.option("--scorer", type=click.Choice(["causal", "masked", "embedding", "static"]), help="Force the scorer kind (default: detected).")
@click.option("--nonce", default=None, help="Made-up word replacing the target [default: bkatuhla].")
@click.option("--pattern", default="definition-of", show_default=True, help="CoDA21 pattern name or literal with {m}.")
@click.option("--reduction", type=click.Choice(["sum", "mean"]), default="sum", show_default=True, help="LM log-prob reduction.")
@click.option("--batch-size", default=None, type=int, help="Scorer batch size.")
@click.option("--folds", default=5, show_default=True, type=click.IntRange(min=2), help="Cross-validation folds of the trained controls.")
@click.option("--split", type=click.Choice(["train", "dev", "test"]), default=None, help="WordNetQA: analyse one split [default: all items].")
@click.option("--controls/--no-controls", default=True, show_default=True, help="Train the partial-input classifiers.")
@click.option("--method", type=click.Choice(["zeroshot", "trained"]), default=None, help=METHOD_HELP)
@click.option("--finetune", is_flag=True, help="--method trained: fine-tune the encoder too (needs a CUDA GPU).")
@click.option("--seeds", default=3, show_default=True, type=click.IntRange(min=1), help="--method trained: runs (seeds) per condition.")
@click.option("--human", "human", multiple=True, type=click.Path(),
              help="A `probegen study` directory (answered, scored on its own items): its human point joins the bias plane; repeatable.")
@click.pass_context
def bias(ctx, model, datasets, out, seed, n_boot, scorer, nonce, pattern, reduction, batch_size, folds, split, controls,
         method, finetune, seeds, human) -> None:
    """Partial-input baselines and context/word bias ratios (Bias_C, Bias_W) with bootstrap CIs.

    Scores each dataset with full input, context only, word only and definition/choice only,
    compares with the label prior, trains choice-/definition-only controls and writes
    results.json, report.md and the bias-plane figure.

    \b
    Examples:
      probegen bias --model smollm2-135m
      probegen bias --model smollm2-135m --dataset probegen_out/datasets/coda21-clean-hard --bootstrap 2000
      probegen bias --model minilm-l6 --dataset a --dataset b --out bias-minilm
      probegen bias --model smollm2-135m --split test   # WordNetQA test split only (faster)
      probegen bias --method trained --model minilm-l6 --dataset probegen_out/datasets/wic-semcor
      probegen bias --model minilm-l6 --dataset probegen_out/datasets/wordnetqa-definitions --human probegen_out/studies/wordnetqa-definitions
    """
    if human:  # a study that cannot be scored fails now, not after the model has scored everything
        from probegen.errors import ProbegenError

        from .human import score_study

        if choose_method(method, datasets, finetune) == "trained":
            raise ProbegenError("--human adds human points to the zero-shot bias plane; it does not apply to --method trained")
        for h in human:
            score_study(h, n_boot=2)
    if choose_method(method, datasets, finetune) == "trained":
        return run_trained_command(ctx, model, datasets, out, seed, n_boot, finetune, seeds, batch_size, DEFAULT_OUT)
    from probegen.evaluation import check_model_options, resolve_models
    from probegen.io import atomic_dir
    from probegen.templating import coda21_patterns

    from .run_bias import BiasConfig, run_bias, summary_table

    coda21_patterns(pattern)  # an unknown pattern fails now, not after scoring
    _check_applicable(datasets, pattern=option_given(ctx, "pattern", pattern), split=split)
    # the model before the default datasets are generated: an unknown name fails in a moment
    model_kind = resolve_models([model], scorer)[model]
    check_model_options(model, model_kind, reduction=option_given(ctx, "reduction", reduction),
                        pattern=option_given(ctx, "pattern", pattern))
    obj = ctx.obj or {}
    out_dir = Path(out) if out else DEFAULT_OUT / model.strip("/").replace("/", "_").replace(" ", "_")
    _writable(out_dir, [*datasets, *human, obj.get("wordnet"), obj.get("semcor")])
    cfg = BiasConfig(seed=seed, n_boot=n_boot, nonce=nonce, pattern=pattern, folds=folds, controls=controls, split=split)
    with atomic_dir(out_dir) as tmp:  # the report appears whole or not at all
        results = run_bias(
            model,
            list(datasets) or None,
            tmp,
            cfg,
            scorer_kind=scorer,
            reduction=reduction,
            batch_size=batch_size,
            wordnet=obj.get("wordnet"),
            semcor=obj.get("semcor"),
            log=lambda m: click.echo(m.replace(str(tmp), str(out_dir)), err=True),
        )
        if human:
            from .human import add_human_to_bias

            add_human_to_bias(tmp, list(human), n_boot=n_boot, seed=seed)
    click.echo(summary_table(results))
    click.echo(f"report: {out_dir / 'report.md'}")
