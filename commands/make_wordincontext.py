"""``probegen make wic`` and ``probegen make wsd``: the CLI registers them with ``make.add_command``.

Only click is imported at module level; expected failures raise ``ProbegenError`` so the CLI
group prints one line and exits non-zero.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import click

from probegen import request_options as opts

from .options import SEED, add_wordnet_source_option, checked_type
from .options import log as _log

DEFAULT_ROOT = Path("probegen_out") / "datasets"


def _out(out: str | None, name: str, obj: dict | None) -> Path:
    from probegen.io import ensure_writable

    path = Path(out) if out else DEFAULT_ROOT / name
    ensure_writable(path, replace=True, inputs=[(obj or {}).get("wordnet"), (obj or {}).get("semcor")],
                    writer="dataset")
    return path


def _summary(ds, out: Path) -> None:
    c = ds.manifest["counts"]["splits"]
    parts = []
    for s, v in c.items():
        extra = (f" ({v['true']} T / {v['false']} F)" if "true" in v
                 else f" ({v.get('mean_choices')} choices on average)" if "mean_choices" in v else "")
        parts.append(f"{s} {v['items']}{extra}, {v['lemmas']} lemmas")
    click.echo(f"wrote {out}: " + "; ".join(parts))


def _write(ds, path: Path) -> None:
    """Rank 0 alone writes (under torchrun every rank built the same seeded dataset); all wait for it."""
    from probegen.runner import Runner
    from probegen.wordincontext.dataset import write

    runner = Runner(log=_log)
    runner.write(lambda: write(ds, path))
    if runner.is_main:
        _summary(ds, path)


_POS = click.option("--pos", type=click.Choice(["noun", "verb", "both"]), default="both", show_default=True)
_SEED = click.option("--seed", type=SEED, default=0, show_default=True)
_MAX_TOKENS = click.option("--max-tokens", default=60, show_default=True, type=click.IntRange(min=3),
                           help="Skip SemCor sentences longer than this (tokens).")


def _splits(dev: float, of: str, name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """--dev-frac (default ``dev``) and --test-frac: the shares of ``of`` in dev and test; then --seed and --out
    (default ``probegen_out/datasets/<name>``)."""
    options = [
        click.option("--dev-frac", default=dev, show_default=True, type=checked_type(opts.DEV_FRAC),
                     help=f"Share of {of} in dev."),
        click.option("--test-frac", default=0.2, show_default=True, type=checked_type(opts.TEST_FRAC),
                     help=f"Share of {of} in test."),
        _SEED,
        click.option("--out", type=click.Path(), help=f"Dataset directory [default: probegen_out/datasets/{name}]."),
    ]
    return lambda f: functools.reduce(lambda g, option: option(g), reversed(options), f)


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
def wic(obj, pos, prune, max_pairs, max_pairs_per_lemma, max_contexts_per_lemma, max_tokens, dev_frac, test_frac, seed,
        out) -> None:
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
    cfg.validate()
    path = _out(out, "wic-semcor", obj)
    ds = build(cfg, (obj or {}).get("wordnet"), (obj or {}).get("semcor"), _log)
    _write(ds, path)


@click.command("wsd")
@add_wordnet_source_option
@_POS
@click.option("--max-items", default=None, type=click.IntRange(min=1),
              help="A seeded sample of this many items [default: all].")
@_MAX_TOKENS
@_splits(0.0, "SemCor documents", "wsd-semcor")
@click.pass_obj
def wsd(obj, pos, max_items, max_tokens, dev_frac, test_frac, seed, out) -> None:
    """Generate WSD-style items from SemCor: a context, its lemma's sense definitions as choices.

    Only lemmas with at least two WordNet senses; splits by SemCor document; seeded choice order.

    \b
    Examples:
      probegen make wsd --max-items 3000
      probegen make wsd --pos noun --test-frac 0.3
    """
    from probegen.wordincontext.source import POS_NAMES
    from probegen.wordincontext.wsd import WsdConfig, build

    cfg = WsdConfig(POS_NAMES[pos], max_items, max_tokens, dev_frac, test_frac, seed)
    cfg.validate()
    path = _out(out, "wsd-semcor", obj)
    ds = build(cfg, (obj or {}).get("wordnet"), (obj or {}).get("semcor"), _log)
    _write(ds, path)
