"""``probegen bias``: a click command the CLI registers with ``cli.add_command(bias)``.

Heavy imports happen inside the command; expected failures raise ``ProbegenError`` so the CLI
group prints one line and exits non-zero.
"""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_OUT = Path("probegen_out") / "bias"


def _writable(out: Path) -> None:
    from probegen.io import ensure_writable

    ensure_writable(out)


@click.command("bias")
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
@click.pass_context
def bias(ctx, model, datasets, out, seed, n_boot, scorer, nonce, pattern, reduction, batch_size, folds, split, controls) -> None:
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
    """
    from probegen.templating import coda21_patterns

    from .run_bias import BiasConfig, run_bias, summary_table

    coda21_patterns(pattern)  # an unknown pattern fails now, not after scoring
    obj = ctx.obj or {}
    out_dir = Path(out) if out else DEFAULT_OUT / model.strip("/").replace("/", "_").replace(" ", "_")
    _writable(out_dir)
    cfg = BiasConfig(seed=seed, n_boot=n_boot, nonce=nonce, pattern=pattern, folds=folds, controls=controls, split=split)
    results = run_bias(
        model,
        list(datasets) or None,
        out_dir,
        cfg,
        scorer_kind=scorer,
        reduction=reduction,
        batch_size=batch_size,
        wordnet=obj.get("wordnet"),
        semcor=obj.get("semcor"),
        log=lambda m: click.echo(m, err=True),
    )
    click.echo(summary_table(results))
    click.echo(f"report: {out_dir / 'report.md'}")
