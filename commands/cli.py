"""probegen's command line: one click group whose commands call the library API (see the package doc)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from probegen import request_options as opts
from probegen.errors import SKIP_HINT, ProbegenError, SkippableRowError
from probegen.paths import DEFAULT_ROOT, slug
from probegen.runner import Runner, Runtime

from . import options as shared
from .forms import forms_option, make_outputs, write_forms
from .items import lm_eval_metric_option, respondent_options
from .options import SEED, MethodCommand, add_device_options, add_wordnet_source_option, given_options, log
from .options import checked_type as T

#: every character str.splitlines() breaks a line at, written as its escape in an error line
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def _fail(msg: str, code: int = 1) -> NoReturn:
    # one line, whatever the message quotes (a line break of any kind inside an id or option text of an input file)
    msg = msg.translate(_LINE_BREAKS).rstrip()  # the line ends in text, never in blanks
    click.echo(f"probegen: error: {msg}", err=True)
    sys.exit(code)


#: what a Ctrl-C leaves behind, by command (outputs are renamed into place only when complete): the commands that
#: score go to the persistent score cache as they go, those that may score (context scorer, --model...) too
_INTERRUPTED = {**dict.fromkeys(("eval", "bias", "compare", "contamination"),
                                "; scores computed so far are cached, so rerunning resumes"),
                **dict.fromkeys(("make", "filter"),
                                "; any model scores computed so far are cached and reused by a rerun")}


class _Group(click.Group):
    """Turns expected exceptions into one clean line and a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ProbegenError as e:  # with how --on-invalid skip gets past the row it names, on a command that has it
            cmd = self.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
            takes = cmd is not None and any(p.name == "on_invalid" for p in cmd.params)
            _fail(str(e) + (SKIP_HINT if isinstance(e, SkippableRowError) and takes else ""))
        except KeyboardInterrupt:
            done = _INTERRUPTED.get(ctx.invoked_subcommand or "")
            _fail("interrupted" if done is None else f"interrupted; no output was left half-written{done}", 130)
        except PermissionError as e:
            _fail(f"permission denied: {e.filename or e}")
        except OSError as e:  # also a full disk or a failing device, which name no file (ENOSPC, EIO)
            if e.strerror:
                _fail(f"{e.strerror}: {e.filename}" if e.filename else f"{e.strerror} (errno {e.errno})")
            _fail(" ".join(str(e).split()) or type(e).__name__)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="probegen")
@click.option("--wordnet", type=click.Path(), envvar="PROBEGEN_WORDNET",
              help="WordNet 3.0 directory (nltk layout). Env: PROBEGEN_WORDNET.")
@click.option("--semcor", type=click.Path(), envvar="PROBEGEN_SEMCOR",
              help="SemCor 3.0 directory (brown1/brown2/brownv). Env: PROBEGEN_SEMCOR.")
@click.option("--cache-dir", type=click.Path(), envvar="PROBEGEN_CACHE",
              help="Cache directory. Env: PROBEGEN_CACHE (default ~/.cache/probegen).")
@click.pass_context
def cli(ctx: click.Context, wordnet: str | None, semcor: str | None, cache_dir: str | None) -> None:
    """Build controlled lexical-semantic probes from WordNet and SemCor, and score models on them.

    \b
    Examples:
      probegen data                                   # where WordNet/SemCor were found
      probegen models                                 # models usable offline
      probegen make coda21 --easy                     # clean-easy CoDA21, nouns and verbs
      probegen stats probegen_out/datasets/coda21-clean-easy
      probegen eval --model smollm2-135m --dataset probegen_out/datasets/coda21-clean-easy
    """
    ctx.obj = {"wordnet": wordnet, "semcor": semcor}
    if cache_dir:
        os.environ["PROBEGEN_CACHE"] = cache_dir


# ---- data and models -----------------------------------------------------------------------------
@cli.command()
@click.pass_obj
def data(obj: dict[str, Any]) -> None:
    """Show where WordNet and SemCor were found, their versions and checksums.

    \b
    Examples:
      probegen data
      probegen --wordnet ~/nltk_data/corpora/wordnet --semcor ./semcor3.0 data
      PROBEGEN_CACHE=/tmp/probegen-cache probegen data   # another cache directory
    """
    from probegen.data import data_report

    errors = []
    for row in data_report(obj["wordnet"], obj["semcor"]):
        if row.get("error"):
            errors.append(row["error"])
            continue
        click.echo(f"{row['name']} {row['version']}")
        for key in sorted(k for k in row if k not in ("name", "version", "error")):
            click.echo(f"  {key:<10} {row[key]}")
    if errors:
        _fail("; ".join(errors))


@cli.command()
def models() -> None:
    """List the models usable offline and what kind of scorer each gets.

    \b
    Examples:
      probegen models
      probegen eval --model glove-50d --dataset probegen_out/datasets/coda21-clean-hard   # a listed name
    """
    from probegen.models import list_models

    click.echo(f"{'name':<16} {'kind':<10} {'offline':<8} where")
    for r in list_models():
        click.echo(f"{r['name']:<16} {r['kind']:<10} {('yes' if r['available'] else 'no'):<8} {r.get('where', '')}")
    click.echo("Any other name is tried as a local path, then as a Hugging Face id (needs the hub).")


# ---- make ----------------------------------------------------------------------------------------
@cli.group()
def make() -> None:
    """Generate probe datasets (coda21, wordnetqa, wic, wsd, or a probe spec).

    \b
    Examples:
      probegen make coda21 --easy
      probegen make wordnetqa --probe definitions
      probegen make wic                           # WiC-style pairs from SemCor
      probegen make wsd                           # WSD-style items from SemCor
      probegen make spec templates/specs/verb-entailment-mc.yaml   # a probe family declared as data
      probegen make coda21 --help                 # every option of one dataset kind
    """


@make.command("coda21")
@add_device_options
@add_wordnet_source_option
@click.option("--contexts", type=click.Choice(["semcor", "examples"]), default=None,
              help="Where contexts come from: SemCor (mapped through sense keys) or the synsets' own examples "
                   "[default: semcor if the wordnet has sense keys, else examples].")
@click.option("--easy/--hard", default=False,
              help="easy: grandchildren of a grandparent; hard (default): children of a parent.")
@click.option("--clean/--noisy", default=True, help="clean (default): only synsets with >= 5 SemCor contexts.")
@click.option("--pos", type=click.Choice(["noun", "verb", "both"]), default="both", show_default=True)
@click.option("--k-min", default=5, show_default=True, help="Smallest group.")
@click.option("--k-max", default=10, show_default=True, help="Largest group.")
@click.option("--max-similarity", default=0.8, show_default=True, type=T(opts.MAX_SIMILARITY),
              help="Cap on cosine similarity of two definitions in a group.")
@click.option("--embedder", default="minilm-l6", show_default=True,
              help="Sentence embedder for definition clustering (paper: stsb-distilbert-base).")
@click.option("--context-scorer", default="smollm2-135m", show_default=True,
              help="LM that picks the clearest SemCor context (causal or masked; paper: bert-base-uncased), or 'first' "
                   "to take the first context without scoring.")
@click.option("--max-contexts", default=10, show_default=True,
              help="SemCor contexts scored per synset (first N in corpus order).")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--adversarial", is_flag=True,
              help="Fill each group with the valid co-hyponyms the --against model confuses most; also writes the "
                   "non-adversarial twin to <out>-twin.")
@click.option("--against", default="minilm-l6", show_default=True, help="Reference model for --adversarial.")
@click.option("--pool-max", default=40, show_default=True,
              help="With --adversarial: candidates per ancestor the reference model scores.")
@click.option("--out", type=click.Path(),
              help="Dataset directory [default: probegen_out/datasets/coda21-<variant>[-adv-<against>]].")
@forms_option
@click.pass_obj
def make_coda21(obj: dict[str, Any], /, runtime: Runtime, contexts: str | None, pos: str, adversarial: bool,
                against: str, pool_max: int, out: str | None, n_forms: int | None, **settings: Any) -> None:
    """Generate a CoDA21 context-definition alignment dataset.

    \b
    Examples:
      probegen make coda21 --easy                 # clean-easy, nouns and verbs
      probegen make coda21 --noisy --pos verb     # noisy-hard verbs
      probegen make coda21 --context-scorer bert-base-uncased   # the paper's scorer (needs the hub)
      probegen make coda21 --adversarial --against minilm-l6   # + twin; compare with `probegen compare`
      probegen make coda21 --wordnet-source pwn31 --pos verb   # from WordNet 3.1 (SemCor through sense keys)
      probegen make coda21 --wordnet-source wn:oewn:2024 --contexts examples --noisy
      probegen make coda21 --pos noun --context-scorer first --forms 3 --out sets/coda   # sets/coda-form1..3
    """
    from probegen.coda21 import dataset as ds_mod
    from probegen.coda21.config import Coda21Config

    cfg = Coda21Config(pos=("n", "v") if pos == "both" else (pos[0],), **settings)  # the others: the config's fields
    cfg.validate()
    embedder, context_scorer = cfg.embedder, cfg.context_scorer
    name = f"coda21-{cfg.variant}" + (f"-adv-{slug(against)}" if adversarial else "")
    outputs = make_outputs(out, name, obj, n_forms, adversarial)
    runner = Runner(runtime, log=log)  # under torchrun every rank scores a share; rank 0 alone writes and speaks
    from probegen.run.evaluation import resolve_models
    from probegen.scorers import LM_KINDS

    # every model named fails now if unknown, not after the groups and contexts are built (kept for the loads)
    kinds = resolve_models([embedder] + ([context_scorer] if context_scorer != "first" else [])
                           + ([against] if adversarial else []), runner=runner)
    if context_scorer != "first" and kinds[context_scorer] not in LM_KINDS:
        raise ProbegenError(f"--context-scorer must be a causal or masked LM; {context_scorer!r} is a "
                            f"{kinds[context_scorer]} model")
    if adversarial and contexts == "examples":
        raise ProbegenError("--contexts examples is not available with --adversarial yet; drop one of them")
    echo = runner.main_log(click.echo)
    if adversarial:
        from probegen.coda21.adversarial import AdversarialSettings, build_adversarial

        ds, twin = build_adversarial(cfg, AdversarialSettings(against, pool_max), obj["wordnet"], obj["semcor"], True,
                                     log, runner=runner)
        runner.write(lambda: ds_mod.write(twin, outputs[1]))
        a = ds.manifest["adversarial"]
        echo(f"wrote {outputs[1]} (twin)")
        echo(f"adversarial: {a['groups_changed']} of {a['groups']} groups changed ({a['members_replaced']} members "
             f"replaced); {against} alignment errors {a['reference_errors']['twin']} -> "
             f"{a['reference_errors']['adversarial']}")
    else:
        ds = ds_mod.build(cfg, wordnet=obj["wordnet"], semcor=obj["semcor"], progress=True, log=log, contexts=contexts,
                          runner=runner)
    if n_forms:
        write_forms(ds, "coda21", cfg.seed, outputs, obj, runner, ds_mod.write)
        return
    runner.write(lambda: ds_mod.write(ds, outputs[0]))
    c = ds.manifest["counts"]
    echo(f"wrote {outputs[0]}: "
         + ", ".join(f"{p}: {c[p]['groups']} groups / {c[p]['unique_synsets']} synsets" for p in cfg.pos))


# ---- dataset inspection --------------------------------------------------------------------------
@cli.command()
@click.argument("dataset", type=click.Path())
def stats(dataset: str) -> None:
    """Sizes beside the papers': CoDA21 groups/synsets per POS (Table 1), WordNetQA questions/items/synsets.

    Also the leak rate per POS: contexts where a form of the target lemma is visible outside
    the hidden span (0 for sets probegen generates).

    \b
    Examples:
      probegen stats probegen_out/datasets/coda21-clean-easy
      probegen stats probegen_out/datasets/wordnetqa-definitions
      probegen stats coda21.json                  # a file in the original CoDA21 release schema
      probegen stats probegen_out/datasets/wic-semcor   # wic/wsd: pairs or items, labels, splits
    """
    from probegen import tasks

    click.echo(tasks.detect(dataset).stats(dataset, log))


@cli.command()
@click.argument("dataset", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["coda21-json", "wordnetqa-json", "lm-eval", "hf", "eee",
                                                    "inspect-log"]), default=None,
              help="coda21-json: the CoDA21 release schema; wordnetqa-json: WordNetQA release JSONL; lm-eval: an "
                   "lm-evaluation-harness task folder; hf: a Hugging Face datasets folder [default: by dataset kind]. "
                   "Of a run folder (DATASET a `probegen eval` output): eee: Every Eval Ever aggregate + samples "
                   "(folder); inspect-log: an inspect-ai eval log (FILE.eval).")
@click.option("--split", type=click.Choice(["train", "dev", "test"]), default=None, help="WordNetQA: export one split.")
@click.option("--seed", type=SEED, default=None,
              help="lm-eval/hf, CoDA21: seed of the definitions' column order [default: 0].")
@click.option("--nonce", default=None, help="lm-eval/hf, CoDA21: made-up word [default: bkatuhla].")
@click.option("--pattern", default=None,
              help="lm-eval/hf, CoDA21: pattern name or literal with {m} [default: definition-of].")
@click.option("--task", default=None, help="lm-eval: task name [default: probegen_<dataset>].")
@click.option("--out", type=click.Path(), required=True, help="Output file (release schemas) or folder (lm-eval, hf).")
def export(dataset: str, fmt: str | None, split: str | None, seed: int | None, nonce: str | None,
           pattern: str | None, task: str | None, out: str) -> None:
    """Export a dataset to the original release's schema, an lm-evaluation-harness task or a
    Hugging Face datasets folder; or a run's per-item results as Every Eval Ever or an inspect-ai
    log (docs/exchange.md).

    \b
    Examples:
      probegen export probegen_out/datasets/coda21-clean-easy --out clean-easy.json
      probegen export probegen_out/datasets/wordnetqa-all --split test --out wordnetqa-test.jsonl
      probegen export probegen_out/datasets/wordnetqa-all --format lm-eval --out lm-eval-wordnetqa
      probegen export probegen_out/datasets/coda21-clean-easy --format hf --out hf-clean-easy
      probegen export runs/glove --format eee --out eee-glove
      probegen export runs/glove --format inspect-log --out logs/glove.eval
    """
    from probegen.run.command_requests import ExportRequest, run_export_request

    click.echo(run_export_request(ExportRequest(dataset=dataset, out=out, fmt=fmt, split=split, seed=seed, nonce=nonce,
                                                pattern=pattern, task=task)))


# ---- evaluation ----------------------------------------------------------------------------------
#: eval's options the request gets only when the user set them
_IF_GIVEN = ("reduction", "matching", "length_norm", "pll", "on_invalid", "n_boot")


@cli.command("eval", cls=MethodCommand)
@add_device_options
@click.option("--model", required=True, type=T(opts.MODEL),
              help="Bundled short name (see `probegen models`), Hugging Face id or local path.")
@click.option("--dataset", required=True, type=click.Path(),
              help="probegen dataset directory or an original-schema CoDA21 JSON file.")
@click.option("--scorer", type=T(opts.SCORER),
              help="Force the scorer kind (default: detected).")
@click.option("--nonce", default=None, type=T(opts.NONCE),
              help="Made-up word replacing the target [default: templates/nonce_words.json, bkatuhla].")
@click.option("--pattern", default=None, type=T(opts.PATTERN),
              help="Pattern name from templates/coda21.json or a literal with {m} [default: definition-of].")
@click.option("--reduction", type=T(opts.REDUCTION), default="sum", show_default=True,
              help="LM log-prob reduction over definition tokens.")
@click.option("--matching", type=T(opts.MATCHING), default="alignment", show_default=True,
              help="One-to-one alignment or each definition's best context.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for column order and tie breaking.")
@click.option("--batch-size", default=None, type=T(opts.BATCH_SIZE), help="Scorer batch size.")
@click.option("--pll", type=T(opts.PLL), default="original", show_default=True,
              help="Masked LMs: pseudo-log-likelihood as in the paper, or PLL-word-l2r (Kauf & Ivanova 2023).")
@click.option("--length-norm", type=T(opts.LENGTH_NORM), default="none", show_default=True,
              help="Multiple choice: normalise LM choice scores by tokens (mean log-prob) or characters.")
@click.option("--split", type=T(opts.SPLIT), default=None,
              help="Multiple choice: evaluate one split [default: all items].")
@click.option("--limit", type=T(opts.LIMIT), default=None, metavar="N",
              help="A quick look: only the first N units (groups, items) in file order.")
@click.option("--sample", type=T(opts.SAMPLE), default=None, metavar="N",
              help="A quick look: N units drawn at random with --seed (not with --limit).")
@click.option("--on-invalid", type=T(opts.ON_INVALID), default="error", show_default=True,
              help="Multiple choice: a row the reader cannot use stops the run (error) or is skipped and reported, "
                   "with ids, in results.json and the summary (skip).")
@shared.PROBE
@click.option("--method", type=T(opts.EVAL_METHOD), default=shared.FirstMethod("eval"), show_default=True,
              help="score: likelihood or similarity of each candidate; generate: ask a chat model (local with a chat "
                   "template, or a served model's chat endpoint with --api-base) and parse its answer; letter: the "
                   "same prompt, read as the probability of each option label (A.., yes/no) as the answer's next "
                   "token. Methods of installed plugins (entry-point group probegen.methods) are among the choices; "
                   "each method's own options follow the others.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=T(opts.N_BOOT),
              help="Bootstrap replicates of every CI (resampling CoDA21 groups, WordNetQA concepts; seeded by --seed).")
@click.option("--debias-share", type=T(opts.DEBIAS_SHARE), default=None,
              metavar="SHARE",
              help="--method letter/generate with several orders: share of the clusters PriDe estimates the position "
                   "prior on; accuracy before and after is reported on the rest [default: 0.05].")
@click.option("--adaptive", type=T(opts.ADAPTIVE), default=None, metavar="BANK",
              help="Give the items of an item bank (probegen items --bank) adaptively: batches picked by information "
                   "at the current ability, which predicts the full-set accuracy (docs/adaptive.md).")
@click.option("--budget", type=T(opts.BUDGET), default=None, metavar="N",
              help="--adaptive: stop at N items (at most the bank's).")
@click.option("--target-se", type=T(opts.TARGET_SE), default=None, metavar="SE",
              help="--adaptive: stop once the ability's standard error is at most SE.")
@click.option("--batch-items", type=T(opts.BATCH_ITEMS), default=None, metavar="N",
              help="--adaptive: items per batch scored at once [default: 10].")
@click.option("--randomesque", type=T(opts.RANDOMESQUE), default=None, metavar="N",
              help="--adaptive: exposure control, each record drawn among the N most informative [default: 1].")
@click.option("--out", type=click.Path(), help="Results directory [default: probegen_out/runs/<model>__<dataset>].")
@click.pass_context
def eval_cmd(ctx: click.Context, /, runtime: Runtime, model: str, dataset: str, pll: str, **options: Any) -> None:
    """Score a model on a dataset and align (CoDA21) or pick (multiple choice).

    \b
    Examples:
      probegen eval --model smollm2-135m --dataset probegen_out/datasets/coda21-clean-hard
      probegen eval --model minilm-l6 --dataset coda21.json --matching simple
      probegen eval --model ./my-bert --scorer masked --dataset probegen_out/datasets/coda21-clean-easy
      probegen eval --model smollm2-135m --dataset probegen_out/datasets/wordnetqa-definitions --length-norm chars --split test
      probegen eval --model minilm-l6 --dataset WiC_dataset/   # word-in-context: a linear probe, train -> test
      probegen eval --model roberta-large --pll word-l2r --device cuda --dataset probegen_out/datasets/coda21-clean-hard
      probegen eval --model glove-50d --dataset probegen_out/datasets/coda21-clean-hard --sample 20 --seed 1   # quick look
      probegen eval --model glove-50d --dataset probegen_out/datasets/wordnetqa-definitions --limit 100   # first 100 items
      probegen eval --model minilm-l6 --dataset probegen_out/datasets/coda21-clean-hard --adaptive bank.json --budget 50
      probegen eval --model minilm-l6 --dataset definitions-train.jsonl --on-invalid skip   # skip (and list) unusable release rows
      probegen eval --model minilm-l6 --dataset data_mcqa/hyponymy/test.jsonl --probe hyponymy   # a release file its name does not name
      probegen eval --model smollm2-135m --method generate --dataset probegen_out/datasets/coda21-clean-hard --limit 20
      probegen eval --model smollm2 --api-base http://127.0.0.1:8000/v1 --method generate --permutations 3 --dataset probegen_out/datasets/wordnetqa-definitions
    """  # noqa: E501 (the examples are shown verbatim by --help)
    from probegen.run.api import EvalRequest, eval_figures, run_eval_request

    # --pll is a method setting of the evaluated (masked) model: part of the runtime every load gets
    runner = Runner(runtime.with_scorer(pll=None if pll == "original" else pll), log=log)
    # the request holds what the user set: a default of these is never an error (the path probegen.score takes too)
    given = given_options(ctx, *_IF_GIVEN)
    options = {k: None if k in _IF_GIVEN and k not in given else v for k, v in {**options, "pll": pll}.items()}
    req = EvalRequest(model=model, dataset=dataset, **options)
    _, summary = run_eval_request(req, runner, DEFAULT_ROOT, figures=eval_figures(model, dataset))
    runner.main_log(click.echo)(summary)  # under torchrun, rank 0 speaks for the run


@cli.command("plot-group")
@click.argument("run", type=click.Path())  # a missing run is one line (after recovering an interrupted write)
@click.option("--group", "group_id", default=None, help="Group id [default: the first group].")
@click.option("--out", type=click.Path(), help="PNG file [default: <run>/group-<id>.png].")
def plot_group(run: str, group_id: str | None, out: str | None) -> None:
    """Draw one group's k x k score matrix with the predicted alignment (CoDA21 Figure 2).

    \b
    Examples:
      probegen plot-group probegen_out/runs/smollm2-135m__coda21-clean-hard
      probegen plot-group probegen_out/runs/smollm2-135m__coda21-clean-hard --group clean-hard-v-0007 --out fig2.png
    """
    from probegen.diagnostics.plots import plot_group_matrix

    path = plot_group_matrix(Path(run), group_id, Path(out) if out else None)
    click.echo(f"wrote {path}")


@cli.command()
@add_device_options
@click.argument("twin", type=click.Path())
@click.argument("other", type=click.Path())
@respondent_options("Model to score both sets with; repeat (reference and held-out).",
                    "Answers made already, as respondents: a `probegen eval`/`bias` run or another harness's per-item "
                    "file (lm-eval --log_samples, inspect-ai log, Every Eval Ever; docs/exchange.md) on TWIN or "
                    "OTHER; repeat: each respondent needs one run on each set.")
@click.option("--labels", default="twin,adversarial", show_default=True, help="Names of the two sets in the report.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=T(opts.N_BOOT))
@click.option("--out", type=click.Path(), help="Report directory [default: probegen_out/compare/<other>].")
@lm_eval_metric_option
def compare(runtime: Runtime, twin: str, other: str, models: tuple[str, ...], runs: tuple[str, ...], labels: str,
            seed: int, n_boot: int, out: str | None, lm_eval_metric: str) -> None:
    """Accuracy of each model on two paired versions of a probe set, with bootstrap CIs.

    Units (CoDA21 groups, WordNetQA concepts) are paired by id; the report gives both
    accuracies and their difference with 95% CIs, and a bar chart. With two or more models, every
    pair of models on each set too: the accuracy difference on the same decisions with a paired
    cluster-bootstrap CI, the exact McNemar p and its Holm-adjusted p over the set's pairs.

    --model scores a model here; --run reads answers made already (a respondent is a model x
    method x variant with one run on each set: placed by the dataset a run names, else by its item
    ids) and reports them as if scored here. Give either or both.

    \b
    Examples:
      probegen compare probegen_out/datasets/coda21-clean-hard-adv-minilm-l6-twin \\
                       probegen_out/datasets/coda21-clean-hard-adv-minilm-l6 --model minilm-l6 --model glove-50d
      probegen compare TWIN OTHER --run runs/glove-twin --run runs/glove-other --model minilm-l6
      probegen compare TWIN OTHER --run eee-twin --run eee-other --run logs/m-twin.eval --run logs/m-other.eval
    """
    from probegen.diagnostics.compare import pairs_table, table
    from probegen.run.command_requests import CompareRequest, run_compare_request

    la, _, lb = labels.partition(",")
    req = CompareRequest(twin=twin, other=other, models=tuple(models), labels=(la, lb or "other"), seed=seed,
                         n_boot=n_boot, out=out, runs=tuple(runs), lm_eval_metric=lm_eval_metric)
    runner = Runner(runtime, log=log)
    res = run_compare_request(req, runner, DEFAULT_ROOT)
    echo = runner.main_log(click.echo)
    echo(table(res))
    if pairs_table(res):
        echo(pairs_table(res))
    echo(f"report: {req.out_dir(DEFAULT_ROOT) / 'report.md'}")


@cli.command("filter")
@add_device_options
@click.argument("dataset", type=click.Path())
@click.option("--artefacts", is_flag=True, required=True,
              help="Remove the units cheap partial-input classifiers predict most reliably (AFLite).")
@click.option("--budget", type=click.IntRange(min=1), required=True, help="Most groups/items removed in total.")
@click.option("--splits", default=8, show_default=True, help="Random train/test splits per round.")
@click.option("--threshold", default=0.75, show_default=True, type=T(opts.FILTER_THRESHOLD),
              help="Remove only units predicted right at least this often.")
@click.option("--tolerance", default=0.02, show_default=True, type=T(opts.FILTER_TOLERANCE),
              help="Stop when the control's accuracy on a round's test splits <= chance + this.")
@click.option("--holdout", default=0.25, show_default=True, type=T(opts.FILTER_HOLDOUT),
              help="Share of concepts (WordNetQA synsets, CoDA21 ancestors) held out: never filtered, the controls are "
                   "measured on them.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--model", "models", multiple=True,
              help="Also run `probegen bias` with this model on the set before and after filtering.")
@click.option("--out", type=click.Path(), help="Filtered dataset directory [default: <dataset>-filtered].")
@click.pass_obj
def filter_cmd(obj: dict[str, Any], /, runtime: Runtime, dataset: str, artefacts: bool, budget: int, splits: int,
               threshold: float, tolerance: float, holdout: float, seed: int, models: tuple[str, ...],
               out: str | None) -> None:
    """Filter partial-input artefacts out of a dataset, AFLite-style.

    WordNetQA: a choice-only classifier; CoDA21: a word-only overlap aligner. Each round trains
    them on random cluster-grouped splits and removes the most predictable units, until their
    accuracy on the test splits is near chance or --budget is spent. A share of the concepts (--holdout) is
    set aside first and never filtered (nor written): the controls are trained on the rest before
    and after filtering and tested on it. Held-out and removed ids, rounds and those controls
    (with CIs) go into the new dataset's manifest.

    \b
    Examples:
      probegen filter probegen_out/datasets/wordnetqa-hypernymy --artefacts --budget 2000
      probegen filter probegen_out/datasets/coda21-clean-easy --artefacts --budget 40 --model minilm-l6
    """
    from probegen.run.command_requests import FilterRequest, run_filter_request

    req = FilterRequest(dataset=dataset, budget=budget, splits=splits, threshold=threshold, tolerance=tolerance,
                        holdout=holdout, seed=seed, models=tuple(models), out=out, wordnet=obj["wordnet"],
                        semcor=obj["semcor"])
    runner = Runner(runtime, log=log)
    run_filter_request(req, runner, runner.main_log(click.echo))


def _register_extensions() -> None:
    """The commands of the other modules here (they import click only, no torch)."""
    from . import bias, contamination, forms, items, make_spec, make_wordincontext, make_wordnetqa, study, view

    for command in (bias.bias, study.study, view.view, items.items, items.subset, contamination.contamination,
                    forms.forms):
        cli.add_command(command)
    for command in (make_wordnetqa.wordnetqa, make_spec.spec, make_wordincontext.wic, make_wordincontext.wsd):
        make.add_command(command)


_register_extensions()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="probegen")


if __name__ == "__main__":
    main()
