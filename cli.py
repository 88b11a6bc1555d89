"""probegen's command line: one click group whose commands call the library API.

Heavy imports (torch, transformers) happen inside commands so ``--help`` is instant. Expected
failures (missing data, unknown model, bad dataset, unwritable output) print one line and exit 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

DEFAULT_ROOT = Path("probegen_out")


def _fail(msg: str, code: int = 1) -> None:
    click.echo(f"probegen: error: {msg}", err=True)
    sys.exit(code)


class _Group(click.Group):
    """Turns expected exceptions into one clean line and a non-zero exit."""

    def invoke(self, ctx: click.Context):
        from probegen.errors import ProbegenError

        try:
            return super().invoke(ctx)
        except ProbegenError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail("interrupted; scores computed so far are cached, so rerunning resumes", 130)
        except PermissionError as e:
            _fail(f"permission denied: {e.filename or e}")
        except OSError as e:
            if e.errno is not None and e.filename:
                _fail(f"{e.strerror}: {e.filename}")
            raise


def _log(msg: str) -> None:
    click.echo(msg, err=True)


def _slug(name: str) -> str:
    return name.strip("/").replace("/", "_").replace(" ", "_")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="probegen")
@click.option("--wordnet", type=click.Path(), envvar="PROBEGEN_WORDNET", help="WordNet 3.0 directory (nltk layout). Env: PROBEGEN_WORDNET.")
@click.option("--semcor", type=click.Path(), envvar="PROBEGEN_SEMCOR", help="SemCor 3.0 directory (brown1/brown2/brownv). Env: PROBEGEN_SEMCOR.")
@click.option("--cache-dir", type=click.Path(), envvar="PROBEGEN_CACHE", help="Cache directory. Env: PROBEGEN_CACHE (default ~/.cache/probegen).")
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
def data(obj: dict) -> None:
    """Show where WordNet and SemCor were found, their versions and checksums."""
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
    """List the models usable offline and what kind of scorer each gets."""
    from probegen.models import list_models

    rows = list_models()
    click.echo(f"{'name':<16} {'kind':<10} {'offline':<8} where")
    for r in rows:
        click.echo(f"{r['name']:<16} {r['kind']:<10} {('yes' if r['available'] else 'no'):<8} {r.get('where', '')}")
    click.echo("Any other name is tried as a local path, then as a Hugging Face id (needs the hub).")


# ---- make ----------------------------------------------------------------------------------------
@cli.group()
def make() -> None:
    """Generate probe datasets (coda21, wordnetqa)."""


@make.command("coda21")
@click.option("--easy/--hard", default=False, help="easy: grandchildren of a grandparent; hard (default): children of a parent.")
@click.option("--clean/--noisy", default=True, help="clean (default): only synsets with >= 5 SemCor contexts.")
@click.option("--pos", type=click.Choice(["noun", "verb", "both"]), default="both", show_default=True)
@click.option("--k-min", default=5, show_default=True, help="Smallest group.")
@click.option("--k-max", default=10, show_default=True, help="Largest group.")
@click.option("--max-similarity", default=0.8, show_default=True, help="Cap on cosine similarity of two definitions in a group.")
@click.option("--embedder", default="minilm-l6", show_default=True, help="Sentence embedder for definition clustering (paper: stsb-distilbert-base).")
@click.option("--context-scorer", default="smollm2-135m", show_default=True, help="LM that picks the clearest SemCor context (causal or masked; paper: bert-base-uncased), or 'first' to take the first context without scoring.")
@click.option("--max-contexts", default=10, show_default=True, help="SemCor contexts scored per synset (first N in corpus order).")
@click.option("--seed", default=0, show_default=True)
@click.option("--adversarial", is_flag=True, help="Fill each group with the valid co-hyponyms the --against model confuses most; also writes the non-adversarial twin to <out>-twin.")
@click.option("--against", default="minilm-l6", show_default=True, help="Reference model for --adversarial.")
@click.option("--pool-max", default=40, show_default=True, help="With --adversarial: candidates per ancestor the reference model scores.")
@click.option("--out", type=click.Path(), help="Dataset directory [default: probegen_out/datasets/coda21-<variant>[-adv-<against>]].")
@click.pass_obj
def make_coda21(obj, easy, clean, pos, k_min, k_max, max_similarity, embedder, context_scorer, max_contexts, seed,
                adversarial, against, pool_max, out) -> None:
    """Generate a CoDA21 context-definition alignment dataset.

    \b
    Examples:
      probegen make coda21 --easy                 # clean-easy, nouns and verbs
      probegen make coda21 --noisy --pos verb     # noisy-hard verbs
      probegen make coda21 --context-scorer bert-base-uncased   # the paper's scorer (needs the hub)
      probegen make coda21 --adversarial --against minilm-l6   # + twin; compare with `probegen compare`
    """
    from probegen.coda21 import dataset as ds_mod
    from probegen.coda21.config import Coda21Config

    cfg = Coda21Config(
        easy=easy,
        clean=clean,
        pos=("n", "v") if pos == "both" else (pos[0],),
        k_min=k_min,
        k_max=k_max,
        max_similarity=max_similarity,
        embedder=embedder,
        context_scorer=context_scorer,
        max_contexts=max_contexts,
        seed=seed,
    )
    cfg.validate()
    name = f"coda21-{cfg.variant}" + (f"-adv-{_slug(against)}" if adversarial else "")
    out = Path(out) if out else DEFAULT_ROOT / "datasets" / name
    _check_writable(out)
    if adversarial:
        from probegen.adversarial.coda21 import AdversarialSettings, build_adversarial
        from probegen.models import resolve_model

        resolve_model(against)  # an unknown reference model fails now, not after the contexts are scored

        ds, twin = build_adversarial(cfg, AdversarialSettings(against, pool_max), obj["wordnet"], obj["semcor"], True, _log)
        twin_out = out.with_name(out.name + "-twin")
        ds_mod.write(twin, twin_out)
        a = ds.manifest["adversarial"]
        click.echo(f"wrote {twin_out} (twin)")
        click.echo(f"adversarial: {a['groups_changed']} of {a['groups']} groups changed ({a['members_replaced']} members "
                   f"replaced); {against} alignment errors {a['reference_errors']['twin']} -> {a['reference_errors']['adversarial']}")
    else:
        ds = ds_mod.build(cfg, wordnet=obj["wordnet"], semcor=obj["semcor"], progress=True, log=_log)
    ds_mod.write(ds, out)
    c = ds.manifest["counts"]
    click.echo(f"wrote {out}: " + ", ".join(f"{p}: {c[p]['groups']} groups / {c[p]['unique_synsets']} synsets" for p in cfg.pos))


def _check_writable(out: Path) -> None:
    from probegen.io import ensure_writable

    ensure_writable(out)


# ---- dataset inspection --------------------------------------------------------------------------
@cli.command()
@click.argument("dataset", type=click.Path())
def stats(dataset: str) -> None:
    """Sizes beside the papers': CoDA21 groups/synsets per POS (Table 1), WordNetQA questions/items/synsets."""
    from probegen.evaluation import detect_dataset

    if detect_dataset(dataset) == "wordnetqa":
        from probegen.wordnetqa.dataset import counts as mc_counts, load as load_mc
        from probegen.wordnetqa.reference import size_table

        click.echo(dataset)
        click.echo(size_table(mc_counts(load_mc(dataset).items)))
        return
    from probegen.coda21.dataset import counts, load
    from probegen.coda21.reference import table1

    ds = load(dataset)
    variant = ds.manifest.get("config", {}).get("variant")
    ref = table1()
    click.echo(f"{dataset}  (variant: {variant or 'unknown'})")
    click.echo(f"{'variant':<12} {'pos':<5} {'groups':>7} {'paper':>6} {'ratio':>6}   {'synsets':>8} {'paper':>6} {'ratio':>6}")
    for pos, c in counts(ds.groups).items():
        if c["groups"] == 0:
            continue
        r = ref.get((variant, pos))
        if r:
            click.echo(
                f"{variant:<12} {pos:<5} {c['groups']:>7} {r['groups']:>6} {c['groups'] / r['groups']:>6.2f}   "
                f"{c['unique_synsets']:>8} {r['unique_synsets']:>6} {c['unique_synsets'] / r['unique_synsets']:>6.2f}"
            )
        else:
            click.echo(f"{str(variant):<12} {pos:<5} {c['groups']:>7} {'-':>6} {'-':>6}   {c['unique_synsets']:>8} {'-':>6} {'-':>6}")


@cli.command()
@click.argument("dataset", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["coda21-json", "wordnetqa-json"]), default=None,
              help="coda21-json: the CoDA21 release schema; wordnetqa-json: WordNetQA release JSONL [default: by dataset kind].")
@click.option("--split", type=click.Choice(["train", "dev", "test"]), default=None, help="WordNetQA: export one split.")
@click.option("--out", type=click.Path(), required=True, help="Output file.")
def export(dataset: str, fmt: str | None, split: str | None, out: str) -> None:
    """Export a dataset to the original release's schema.

    \b
    Examples:
      probegen export probegen_out/datasets/coda21-clean-easy --out clean-easy.json
      probegen export probegen_out/datasets/wordnetqa-all --split test --out wordnetqa-test.jsonl
    """
    import json

    from probegen.errors import ProbegenError
    from probegen.evaluation import detect_dataset
    from probegen.io import atomic_write, dumps

    kind = detect_dataset(dataset)
    fmt = fmt or f"{kind}-json"
    if fmt != f"{kind}-json":
        raise ProbegenError(f"{dataset} is a {kind} dataset; it cannot be exported as {fmt}")
    if kind == "coda21":
        from probegen.coda21.dataset import export_coda21_json, load

        ds = load(dataset)
        with atomic_write(out) as fh:
            json.dump(export_coda21_json(ds), fh, ensure_ascii=False, indent=1, sort_keys=True)
        click.echo(f"wrote {out} ({len(ds.groups)} groups, {fmt})")
        return
    from probegen.wordnetqa.dataset import export_release, load as load_mc

    rows = export_release(load_mc(dataset), split)
    with atomic_write(out) as fh:
        for r in rows:
            fh.write(dumps(r) + "\n")
    click.echo(f"wrote {out} ({len(rows)} questions, {fmt})")


# ---- evaluation ----------------------------------------------------------------------------------
@cli.command("eval")
@click.option("--model", required=True, help="Bundled short name (see `probegen models`), Hugging Face id or local path.")
@click.option("--dataset", required=True, type=click.Path(), help="probegen dataset directory or an original-schema CoDA21 JSON file.")
@click.option("--scorer", type=click.Choice(["causal", "masked", "embedding", "static"]), help="Force the scorer kind (default: detected).")
@click.option("--nonce", default=None, help="Made-up word replacing the target [default: templates/nonce_words.json, bkatuhla].")
@click.option("--pattern", default=None, help="Pattern name from templates/coda21.json or a literal with {m} [default: definition-of].")
@click.option("--reduction", type=click.Choice(["sum", "mean"]), default="sum", show_default=True, help="LM log-prob reduction over definition tokens.")
@click.option("--matching", type=click.Choice(["alignment", "simple"]), default="alignment", show_default=True, help="One-to-one alignment or each definition's best context.")
@click.option("--seed", default=0, show_default=True, help="Seed for column order and tie breaking.")
@click.option("--batch-size", default=None, type=int, help="Scorer batch size.")
@click.option("--length-norm", type=click.Choice(["none", "tokens", "chars"]), default="none", show_default=True, help="Multiple choice: normalise LM choice scores by tokens (mean log-prob) or characters.")
@click.option("--split", type=click.Choice(["train", "dev", "test"]), default=None, help="Multiple choice: evaluate one split [default: all items].")
@click.option("--out", type=click.Path(), help="Results directory [default: probegen_out/runs/<model>__<dataset>].")
def eval_cmd(model, dataset, scorer, nonce, pattern, reduction, matching, seed, batch_size, length_norm, split, out) -> None:
    """Score a model on a dataset and align (CoDA21) or pick (multiple choice).

    \b
    Examples:
      probegen eval --model smollm2-135m --dataset probegen_out/datasets/coda21-clean-hard
      probegen eval --model minilm-l6 --dataset coda21.json --matching simple
      probegen eval --model ./my-bert --scorer masked --dataset probegen_out/datasets/coda21-clean-easy
      probegen eval --model smollm2-135m --dataset probegen_out/datasets/wordnetqa-definitions --length-norm chars --split test
    """
    from probegen.evaluation import run_eval

    out_dir = Path(out) if out else DEFAULT_ROOT / "runs" / f"{_slug(model)}__{_slug(Path(dataset).stem)}"
    _check_writable(out_dir)
    summary = run_eval(
        model=model,
        dataset=dataset,
        out=out_dir,
        scorer_kind=scorer,
        nonce=nonce,
        pattern=pattern,
        reduction=reduction,
        matching=matching,
        seed=seed,
        batch_size=batch_size,
        log=_log,
        length_norm=length_norm,
        split=split,
    )
    click.echo(summary)


@cli.command("plot-group")
@click.argument("run", type=click.Path(exists=True))
@click.option("--group", "group_id", default=None, help="Group id [default: the first group].")
@click.option("--out", type=click.Path(), help="PNG file [default: <run>/group-<id>.png].")
def plot_group(run: str, group_id: str | None, out: str | None) -> None:
    """Draw one group's k x k score matrix with the predicted alignment (CoDA21 Figure 2)."""
    from diagnostics.plots import plot_group_matrix

    path = plot_group_matrix(Path(run), group_id, Path(out) if out else None)
    click.echo(f"wrote {path}")


@cli.command()
@click.argument("twin", type=click.Path())
@click.argument("other", type=click.Path())
@click.option("--model", "models", multiple=True, required=True, help="Model to score both sets with; repeat (reference and held-out).")
@click.option("--labels", default="twin,adversarial", show_default=True, help="Names of the two sets in the report.")
@click.option("--seed", default=0, show_default=True)
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=click.IntRange(min=2))
@click.option("--out", type=click.Path(), help="Report directory [default: probegen_out/compare/<other>].")
def compare(twin, other, models, labels, seed, n_boot, out) -> None:
    """Accuracy of each model on two paired versions of a probe set, with bootstrap CIs.

    Units (CoDA21 groups, WordNetQA concepts) are paired by id; the report gives both
    accuracies and their difference with 95% CIs, and a bar chart.

    \b
    Examples:
      probegen compare probegen_out/datasets/coda21-clean-hard-adv-minilm-l6-twin \\
                       probegen_out/datasets/coda21-clean-hard-adv-minilm-l6 --model minilm-l6 --model glove-50d
    """
    from diagnostics.compare import compare as run_compare, table

    la, _, lb = labels.partition(",")
    out_dir = Path(out) if out else DEFAULT_ROOT / "compare" / Path(other).name
    _check_writable(out_dir)
    res = run_compare(twin, other, list(models), out_dir, (la, lb or "other"), seed, n_boot, _log)
    click.echo(table(res))
    click.echo(f"report: {out_dir / 'report.md'}")


@cli.command("filter")
@click.argument("dataset", type=click.Path())
@click.option("--artefacts", is_flag=True, required=True, help="Remove the units cheap partial-input classifiers predict most reliably (AFLite).")
@click.option("--budget", type=click.IntRange(min=1), required=True, help="Most groups/items removed in total.")
@click.option("--splits", default=8, show_default=True, help="Random train/test splits per round.")
@click.option("--threshold", default=0.75, show_default=True, help="Remove only units predicted right at least this often.")
@click.option("--tolerance", default=0.02, show_default=True, help="Stop when held-out control accuracy <= chance + this.")
@click.option("--seed", default=0, show_default=True)
@click.option("--model", "models", multiple=True, help="Also run `probegen bias` with this model on the set before and after filtering.")
@click.option("--out", type=click.Path(), help="Filtered dataset directory [default: <dataset>-filtered].")
@click.pass_obj
def filter_cmd(obj, dataset, artefacts, budget, splits, threshold, tolerance, seed, models, out) -> None:
    """Filter partial-input artefacts out of a dataset, AFLite-style.

    WordNetQA: a choice-only classifier; CoDA21: a word-only overlap aligner. Each round trains
    them on random cluster-grouped splits and removes the most predictable units, until their
    held-out accuracy is near chance or --budget is spent. Removed ids, rounds and the controls
    before/after (with CIs) go into the new dataset's manifest.

    \b
    Examples:
      probegen filter probegen_out/datasets/wordnetqa-hypernymy --artefacts --budget 2000
      probegen filter probegen_out/datasets/coda21-clean-easy --artefacts --budget 40 --model minilm-l6
    """
    from probegen.adversarial.aflite import FilterSettings
    from probegen.adversarial.filtering import filter_dataset, summary

    src = Path(dataset)
    out_dir = Path(out) if out else src.with_name(src.name + "-filtered")
    _check_writable(out_dir)
    s = FilterSettings(budget=budget, splits=splits, threshold=threshold, tolerance=tolerance, seed=seed)
    record = filter_dataset(src, out_dir, s, _log)
    click.echo(summary(record))
    click.echo(f"wrote {out_dir}")
    if models:
        from diagnostics.run_bias import BiasConfig, run_bias, summary_table

        for m in models:
            bias_dir = out_dir.with_name(out_dir.name + f"-bias-{_slug(m)}")
            res = run_bias(m, [src, out_dir], bias_dir, BiasConfig(seed=seed), wordnet=obj["wordnet"], semcor=obj["semcor"], log=_log)
            click.echo(summary_table(res))
            click.echo(f"bias before/after: {bias_dir / 'report.md'}")


def _register_extensions() -> None:
    """Commands defined beside their library code (imported lazily: click only, no torch)."""
    from diagnostics.command import bias

    cli.add_command(bias)

    from probegen.wordnetqa.command import wordnetqa

    make.add_command(wordnetqa)


_register_extensions()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="probegen")


if __name__ == "__main__":
    main()
