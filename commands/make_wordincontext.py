"""``probegen make wic`` and ``probegen make wsd``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import click

from probegen import request_options as opts
from probegen.runner import Runner

from .forms import make_outputs
from .options import SEED, add_wordnet_source_option, checked_type, log, stacked

if TYPE_CHECKING:
    from probegen.wordincontext.dataset import WicDataset
    from probegen.wordincontext.wic import WicConfig
    from probegen.wordincontext.wsd import WsdConfig


def _make(cfg: WicConfig | WsdConfig, build: Callable[..., WicDataset], name: str, obj: dict[str, Any],
          out: str | None) -> None:
    """Check ``cfg``, build the dataset and write it (rank 0 alone: under torchrun every rank built the same
    seeded dataset; all wait for it) to ``out`` (default probegen_out/datasets/<name>)."""
    cfg.validate()
    path = make_outputs(out, name, obj)[0]
    ds = build(cfg, obj.get("wordnet"), obj.get("semcor"), log)
    runner = Runner(log=log)
    runner.write(lambda: ds.write(path))
    if runner.is_main:
        parts = []
        for s, v in ds.manifest["counts"]["splits"].items():
            extra = (f" ({v['true']} T / {v['false']} F)" if "true" in v
                     else f" ({v.get('mean_choices')} choices on average)" if "mean_choices" in v else "")
            parts.append(f"{s} {v['items']}{extra}, {v['lemmas']} lemmas")
        click.echo(f"wrote {path}: " + "; ".join(parts))


_POS = click.option("--pos", type=click.Choice(["noun", "verb", "both"]), default="both", show_default=True)
_SEED = click.option("--seed", type=SEED, default=0, show_default=True)
_MAX_TOKENS = click.option("--max-tokens", default=60, show_default=True, type=click.IntRange(min=3),
                           help="Skip SemCor sentences longer than this (tokens).")


def _splits(dev: float, of: str, name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """--dev-frac (default ``dev``) and --test-frac: the shares of ``of`` in dev and test; then --seed and --out
    (default ``probegen_out/datasets/<name>``)."""
    return stacked(
        click.option("--dev-frac", default=dev, show_default=True, type=checked_type(opts.DEV_FRAC),
                     help=f"Share of {of} in dev."),
        click.option("--test-frac", default=0.2, show_default=True, type=checked_type(opts.TEST_FRAC),
                     help=f"Share of {of} in test."),
        _SEED,
        click.option("--out", type=click.Path(), help=f"Dataset directory [default: probegen_out/datasets/{name}]."),
    )


@click.command("wic")
@add_wordnet_source_option
@_POS
@click.option("--prune", type=click.Choice(["wic", "supersense", "related", "none"]), default="wic", show_default=True,
              help="Drop F pairs whose senses are too close: wic = same supersense, or direct hypernym, or sisters.")
@click.option("--max-pairs", default=None, type=click.IntRange(min=2),
              help="Stop adding lemmas (seeded order) once this many pairs [default: all].")
@click.option("--max-pairs-per-lemma", default=6, show_default=True, type=click.IntRange(min=2),
              help="Pairs per lemma (half T, half F).")
@click.option("--max-contexts-per-lemma", default=40, show_default=True, type=click.IntRange(min=2),
              help="SemCor contexts considered per lemma (seeded sample).")
@_MAX_TOKENS
@_splits(0.1, "lemmas", "wic-semcor")
@click.pass_obj
def wic(obj: dict[str, Any], /, pos: str, prune: str, max_pairs: int | None, max_pairs_per_lemma: int,
        max_contexts_per_lemma: int, max_tokens: int, dev_frac: float, test_frac: float, seed: int,
        out: str | None) -> None:
    """Generate WiC-style pairs from SemCor: same lemma in two contexts, T if the same synset.

    Labels are balanced within every lemma, splits are disjoint by lemma, too-fine sense
    distinctions are pruned (--prune), and no context shows the target outside its span.

    \b
    Examples:
      probegen make wic --max-pairs 4000
      probegen make wic --pos verb --prune none --out wic-verbs-unpruned
    """
    from probegen.wordincontext.source import POS_NAMES
    from probegen.wordincontext.wic import WicConfig, build

    cfg = WicConfig(POS_NAMES[pos], prune, max_pairs, max_pairs_per_lemma, max_contexts_per_lemma, max_tokens, dev_frac,
                    test_frac, seed)
    _make(cfg, build, "wic-semcor", obj, out)


@click.command("wsd")
@add_wordnet_source_option
@_POS
@click.option("--max-items", default=None, type=click.IntRange(min=1),
              help="A seeded sample of this many items [default: all].")
@_MAX_TOKENS
@_splits(0.0, "SemCor documents", "wsd-semcor")
@click.pass_obj
def wsd(obj: dict[str, Any], /, pos: str, max_items: int | None, max_tokens: int, dev_frac: float, test_frac: float,
        seed: int, out: str | None) -> None:
    """Generate WSD-style items from SemCor: a context, its lemma's sense definitions as choices.

    Only lemmas with at least two WordNet senses; splits by SemCor document; seeded choice order.

    \b
    Examples:
      probegen make wsd --max-items 3000
      probegen make wsd --pos noun --test-frac 0.3
    """
    from probegen.wordincontext.source import POS_NAMES
    from probegen.wordincontext.wsd import WsdConfig, build

    _make(WsdConfig(POS_NAMES[pos], max_items, max_tokens, dev_frac, test_frac, seed), build, "wsd-semcor", obj, out)
