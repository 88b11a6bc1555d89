"""``probegen make wsd``: WSD-style items from SemCor, all seeded.

An item is one sense-tagged noun/verb token (its lemma with at least two senses, all definitions
different, no other form of the lemma visible: ``probegen.leaks``) in a sentence of at most
``max_tokens`` tokens; the choices are its lemma's synsets' definitions in a seeded per-item order
(WordNet's frequency order would leak the answer). Splits are by SemCor document; ``max_items``
keeps a seeded sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..contexts import Context, recorded
from ..errors import NothingBuilt
from .items import WicItem

if TYPE_CHECKING:
    from ..wordnet_graph import WordNetGraph
    from .dataset import WicDataset
from .source import (
    LeakFilter,
    SourceStats,
    SplitConfig,
    doc,
    key,
    leak_filter,
    load_sources,
    occurrences,
    order,
    rng_for,
    split_by_rank,
)


@dataclass(frozen=True)
class WsdConfig(SplitConfig):
    """Settings of a WSD-style build (recorded in the manifest)."""

    pos: tuple[str, ...] = ("n", "v")
    max_items: int | None = None
    max_tokens: int = 60
    dev_frac: float = 0.0
    test_frac: float = 0.2
    seed: int = 0

    def validate(self) -> None:
        self.check_split("documents", "WSD items")


def sense_index(graph: WordNetGraph, pos: tuple[str, ...]) -> dict[tuple[str, str], list[str]]:
    """(lower-cased lemma, POS) -> its synsets in WordNet file order."""
    out: dict[tuple[str, str], list[str]] = {}
    for p in pos:
        for s in graph.synsets(p):
            for lem in graph.lemmas(s):
                senses = out.setdefault((lem.lower(), p), [])
                if s not in senses:
                    senses.append(s)
    return out


def _eligible(index: dict[str, list[Context]], graph: WordNetGraph, senses: dict[tuple[str, str], list[str]],
              cfg: WsdConfig, src: SourceStats) -> tuple[list[Context], dict[str, int]]:
    """The occurrences an item can be made of (corpus order), and why the others were skipped."""
    skipped = {"monosemous": 0, "tag_not_a_sense_of_lemma": 0, "repeated_definition": 0}
    eligible = []
    for o in occurrences(index, graph, cfg.pos, cfg.max_tokens, src):
        cands = senses.get((recorded(o.lemma, "lemma"), graph.pos(recorded(o.synset, "synset"))), [])
        if len(cands) < 2:
            skipped["monosemous"] += 1
        elif o.synset not in cands:
            skipped["tag_not_a_sense_of_lemma"] += 1
        elif len({graph.definition(s) for s in cands}) < len(cands):
            skipped["repeated_definition"] += 1
        else:
            eligible.append(o)
    return eligible, skipped


def _kept(eligible: list[Context], clean: LeakFilter, cfg: WsdConfig) -> list[Context]:
    """The clean occurrences: all, or a seeded sample of ``max_items`` (in corpus order)."""
    if cfg.max_items is None:
        return [o for o in eligible if clean.ok(o)]
    kept = []
    for i in rng_for(cfg.seed, "wsd/sample").permutation(len(eligible)).tolist():
        if clean.ok(eligible[i]):
            kept.append(eligible[i])
            if len(kept) >= cfg.max_items:
                break
    kept.sort(key=order)
    return kept


def _item(o: Context, graph: WordNetGraph, senses: dict[tuple[str, str], list[str]], splits: dict[str, str],
          cfg: WsdConfig) -> WicItem:
    """One occurrence as an item: every sense's definition, in a seeded order, the tag the gold."""
    pos = graph.pos(recorded(o.synset, "synset"))
    cands = senses[(recorded(o.lemma, "lemma"), pos)]
    iid = f"wsd-{key(o)}"
    shown = [cands[i] for i in rng_for(cfg.seed, iid).permutation(len(cands)).tolist()]
    return WicItem(
        id=iid, lemma=recorded(o.lemma, "lemma"), pos=pos, context=o.as_text(),
        choices=tuple(graph.definition(s) for s in shown), gold=shown.index(o.synset),
        split=splits[doc(o)], unit=doc(o),
        meta={"synset": o.synset, "choice_synsets": shown, "ref": o.sent_id},
    )


def build(cfg: WsdConfig, wordnet: str | None = None, semcor: str | None = None,
          log: Callable[[str], None] = print) -> WicDataset:
    """Generate WSD-style items from SemCor and WordNet (see the module doc)."""
    from ..manifest import data_block, make_manifest
    from .dataset import WicDataset, split_counts

    cfg.validate()
    wn_info, sc_info, graph, wn, index = load_sources(wordnet, semcor, log)
    senses = sense_index(graph, cfg.pos)
    src = SourceStats()
    eligible, skipped = _eligible(index, graph, senses, cfg, src)
    splits = split_by_rank(sorted({doc(o) for o in eligible}), cfg.dev_frac, cfg.test_frac,
                           rng_for(cfg.seed, "wsd/splits"))
    kept = _kept(eligible, leak_filter(wn, src), cfg)
    if not kept:
        raise NothingBuilt("no WSD item could be built for these settings")
    items = [_item(o, graph, senses, splits, cfg) for o in kept]
    counts = {
        "splits": split_counts(items),
        "items": len(items),
        "documents": {s: len({it.unit for it in items if it.split == s}) for s in ("train", "dev", "test")},
        "construction": {"eligible": len(eligible), "skipped": skipped, "contexts": src.to_json()},
    }
    manifest = make_manifest(
        "wsd", cfg.to_dict(), cfg.seed, data_block(wn_info, sc_info), counts,
        task="choice",
        no_leak="contexts showing another form of the target lemma outside its span are skipped (probegen.leaks)",
    )
    log(f"wsd: {len(items)} items from {len({doc(o) for o in kept})} documents; "
        f"leaky contexts skipped {src.leaky} of {src.leak_checked} checked")
    return WicDataset(items, manifest)
