"""``probegen bias``: fills a :class:`probegen.run.bias_request.BiasRequest` and prints what running it returns."""

from __future__ import annotations

from typing import Any

import click

from probegen import request_options as opts
from probegen.runner import Runner, Runtime

from .options import PROBE, SEED, MethodCommand, add_device_options, given_options, log
from .options import checked_type as T


@click.command("bias", cls=MethodCommand)
@add_device_options
@click.option("--model", required=True, type=T(opts.MODEL),
              help="Bundled short name (see `probegen models`), Hugging Face id or local path.")
@click.option(
    "--dataset", "datasets", multiple=True, type=click.Path(),
    help="Dataset directory; repeat for several [default: probegen_out/datasets/coda21-clean-easy and "
    "probegen_out/datasets/wordnetqa-definitions, generated if missing].",
)
@click.option("--out", type=click.Path(), help="Output directory [default: probegen_out/bias/<model>].")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed for column order, tie breaking, bootstrap and folds.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=T(opts.N_BOOT),
              help="Bootstrap replicates.")
@click.option("--scorer", type=T(opts.SCORER),
              help="Force the scorer kind (default: detected).")
@click.option("--nonce", default=None, type=T(opts.NONCE),
              help="Made-up word replacing the target [default: bkatuhla].")
@click.option("--pattern", default="definition-of", type=T(opts.PATTERN), show_default=True,
              help="CoDA21 pattern name or literal with {m}.")
@click.option("--reduction", type=T(opts.REDUCTION), default="sum", show_default=True,
              help="LM log-prob reduction.")
@click.option("--batch-size", default=None, type=T(opts.BATCH_SIZE), help="Scorer batch size.")
@click.option("--folds", default=5, show_default=True, type=T(opts.FOLDS),
              help="Cross-validation folds of the trained controls.")
@click.option("--split", type=T(opts.SPLIT), default=None,
              help="WordNetQA: analyse one split [default: all items].")
@click.option("--limit", type=T(opts.LIMIT), default=None, metavar="N",
              help="A quick look: only the first N resampling units per dataset (CoDA21 groups, WordNetQA concepts), "
                   "file order.")
@click.option("--sample", type=T(opts.SAMPLE), default=None, metavar="N",
              help="A quick look: N whole resampling units per dataset drawn with --seed, so the bootstrap CIs stay "
                   "honest (not with --limit).")
@click.option("--on-invalid", type=T(opts.ON_INVALID), default="error", show_default=True,
              help="Multiple choice: a row the reader cannot use stops the run (error) or is skipped and reported, "
                   "with ids, in results.json and report.md (skip).")
@PROBE
@click.option("--controls/--no-controls", default=True, show_default=True, help="Train the partial-input classifiers.")
@click.option("--debias-share", type=T(opts.DEBIAS_SHARE), default=None,
              metavar="SHARE",
              help="--method letter/generate with several orders: share of the clusters PriDe estimates the position "
                   "prior on; accuracy before and after is reported on the rest, per condition [default: 0.05].")
@click.option("--method", type=T(opts.BIAS_METHOD), default=None,
              help="zeroshot: score each ablation with the model as is (CoDA21, WordNetQA); trained: the bias paper's "
                   "method, a classifier per input condition trained on the train split (word-in-context datasets: "
                   "probegen make wic/wsd, a generic word-in-context JSONL, a WiC release copy); generate: ask a chat "
                   "model each ablation as a prompt and parse its answer (every kind); letter: the same prompts, read "
                   "as the probability of each option label as the answer's next token (every kind) [default: "
                   "trained for word-in-context datasets, zeroshot otherwise]. Methods of installed plugins "
                   "(entry-point group probegen.methods) are among the choices; each method's own options follow the "
                   "others.")
@click.option("--finetune", is_flag=True, help="--method trained: fine-tune the encoder too (needs a CUDA GPU).")
@click.option("--seeds", default=3, show_default=True, type=T(opts.SEEDS),
              help="--method trained: runs (seeds) per condition.")
@click.option("--human", "human", multiple=True, type=click.Path(),
              help="A `probegen study` directory (answered, scored on its own items): its human point joins the bias "
                   "plane; repeatable.")
@click.option("--beside", "beside", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="An earlier `probegen bias` output directory whose points join this run's bias plane "
                   "(e.g. likelihood-scored models beside a chat model); repeatable.")
@click.pass_context
def bias(ctx: click.Context, /, runtime: Runtime, **options: Any) -> None:
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
      probegen bias --model glove-50d --dataset probegen_out/datasets/wordnetqa-definitions --sample 20   # 20 whole concepts
      probegen bias --model glove-50d --dataset probegen_out/datasets/coda21-clean-hard --limit 30   # the first 30 groups
      probegen bias --model minilm-l6 --dataset hypernymy-train.jsonl --on-invalid skip   # skip (and list) unusable release rows
      probegen bias --model minilm-l6 --dataset data_mcqa/hyponymy/test.jsonl --probe hyponymy
      probegen bias --model smollm2-135m --method generate --dataset probegen_out/datasets/coda21-clean-hard --limit 20
      probegen bias --model smollm2 --api-base http://127.0.0.1:8000/v1 --method generate --dataset probegen_out/datasets/wordnetqa-definitions
      probegen bias --model smollm2-135m --method generate --dataset DATASET --beside probegen_out/bias/minilm-l6   # beside a scored model

    Each dataset's folder holds ablations.jsonl: per condition and item, the exact query and
    candidate texts the model scored, and the gold.
    """  # noqa: E501 (the examples are shown verbatim by --help)
    from probegen.run.bias_request import TASK_OPTIONS, BiasRequest, run_checked

    obj = ctx.obj or {}
    req = BiasRequest(**options, wordnet=obj.get("wordnet"), semcor=obj.get("semcor"),
                      given=given_options(ctx, *TASK_OPTIONS))
    runner = Runner(runtime, log=log)  # under torchrun every rank scores a share; rank 0 alone writes and speaks
    runner.main_log(click.echo)(run_checked(req, log, runner)[1])
