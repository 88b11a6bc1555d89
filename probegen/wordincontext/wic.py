"""``probegen make wic``: WiC-style pairs from SemCor, all seeded.

A pair is two SemCor contexts of the same lemma and POS (in sentences of at most ``max_tokens``
tokens, no other form of the lemma visible: ``probegen.leaks``), label T if both are tagged with the
same synset. Per lemma, T and F pairs are drawn alternately, each context at most once, then cut to
equal numbers (labels balanced within every lemma, so the word alone cannot predict the label).
Splits are disjoint by lemma; the order of contexts in a pair and of pairs in the file is shuffled.

Pruning rule ``wic`` (default), after the WiC paper's own: an F pair is dropped when its two
synsets share a supersense (WordNet lexicographer file, e.g. ``noun.artifact``), or are
first-order neighbours in the hypernym graph (one is a direct hypernym of the other, instance
links included), or are sisters (they share a direct hypernym). ``supersense`` and ``related``
apply one half; ``none`` keeps every F pair. The manifest counts what each reason removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any, Callable

from ..contexts import Context, recorded
from ..errors import NothingBuilt, ProbegenError
from .items import WicItem

if TYPE_CHECKING:
    from numpy.random import Generator

    from ..wordnet_graph import WordNetGraph
    from .dataset import WicDataset
from .source import LeakFilter, SourceStats, SplitConfig, leak_filter, load_sources, occurrences, rng_for, split_by_rank

PRUNE_RULES = ("wic", "supersense", "related", "none")


@dataclass(frozen=True)
class WicConfig(SplitConfig):
    """Settings of a WiC-style build (recorded in the manifest)."""

    pos: tuple[str, ...] = ("n", "v")
    prune: str = "wic"
    max_pairs: int | None = None
    max_pairs_per_lemma: int = 6
    max_contexts_per_lemma: int = 40
    max_tokens: int = 60
    dev_frac: float = 0.1
    test_frac: float = 0.2
    seed: int = 0

    def validate(self) -> None:
        if self.prune not in PRUNE_RULES:
            raise ProbegenError(f"unknown prune rule {self.prune!r}; choose one of {', '.join(PRUNE_RULES)}")
        if self.max_pairs_per_lemma < 2:
            raise ProbegenError("--max-pairs-per-lemma must be at least 2 (one T and one F pair)")
        self.check_split("lemmas", "WiC pairs")


def fine_reason(graph: WordNetGraph, a: str, b: str, rule: str = "wic") -> str | None:
    """Why the distinction between synsets ``a`` and ``b`` is too fine under ``rule`` (None: keep).

    >>> class G:  # a stand-in graph: two senses under one parent, one in another supersense
    ...     lex = {"x.n.01": "noun.act", "x.n.02": "noun.act", "x.n.03": "noun.object"}
    ...     par = {"x.n.01": ["p.n.01"], "x.n.02": ["p.n.01"], "x.n.03": ["q.n.01"]}
    ...     g = type("N", (), {"nodes": {s: {"lexname": lx} for s, lx in lex.items()}})()
    ...     def parents(self, s, instances=False):
    ...         return self.par[s]
    >>> fine_reason(G(), "x.n.01", "x.n.02"), fine_reason(G(), "x.n.01", "x.n.02", "related")
    ('supersense', 'sister')
    >>> fine_reason(G(), "x.n.01", "x.n.03") is None
    True
    """
    if rule == "none":
        return None
    if rule in ("wic", "supersense") and graph.g.nodes[a]["lexname"] == graph.g.nodes[b]["lexname"]:
        return "supersense"
    if rule in ("wic", "related"):
        pa, pb = set(graph.parents(a, instances=True)), set(graph.parents(b, instances=True))
        if b in pa or a in pb:
            return "hypernym"
        if pa & pb:
            return "sister"
    return None


@dataclass
class PairStats:
    """Counters of the pairing step (written to the manifest)."""

    lemmas_polysemous: int = 0  # lemmas seen with >= 2 synsets
    lemmas_taken: int = 0  # lemmas that gave at least one T and one F pair
    lemmas_without_pairs: int = 0
    t_candidates: int = 0
    f_candidates: int = 0
    f_pruned: dict[str, int] = field(default_factory=dict)
    synset_pairs_pruned: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


Pair = tuple[Context, Context, bool]


def _pairs_for_lemma(ctxs: list[Context], graph: WordNetGraph, cfg: WicConfig, rng: Generator, st: PairStats,
                     pruned_pairs: dict[tuple[str, str], str]) -> list[Pair]:
    """Balanced T/F pairs of one lemma's contexts, each context used at most once."""
    t_cand, f_cand = [], []
    for i, j in combinations(range(len(ctxs)), 2):
        a, b = ctxs[i], ctxs[j]
        if a.sent_id == b.sent_id:
            continue  # one sentence would give both contexts
        sa, sb = recorded(a.synset, "synset"), recorded(b.synset, "synset")
        if sa == sb:
            t_cand.append((i, j))
            continue
        why = fine_reason(graph, sa, sb, cfg.prune)
        if why:
            st.f_pruned[why] = st.f_pruned.get(why, 0) + 1
            pruned_pairs.setdefault((min(sa, sb), max(sa, sb)), why)
            continue
        f_cand.append((i, j))
    st.t_candidates += len(t_cand)
    st.f_candidates += len(f_cand)
    t_cand = [t_cand[k] for k in rng.permutation(len(t_cand))]
    f_cand = [f_cand[k] for k in rng.permutation(len(f_cand))]
    used: set[int] = set()
    chosen: dict[bool, list[tuple[int, int]]] = {True: [], False: []}

    def take(cands: list[tuple[int, int]], label: bool) -> bool:
        while cands:
            i, j = cands.pop(0)
            if i not in used and j not in used:
                used.update((i, j))
                chosen[label].append((i, j))
                return True
        return False

    per_label = cfg.max_pairs_per_lemma // 2
    while len(chosen[True]) < per_label and take(t_cand, True) and take(f_cand, False):
        pass
    n = min(len(chosen[True]), len(chosen[False]))
    out = []
    for label in (True, False):
        for i, j in chosen[label][:n]:
            a, b = (ctxs[i], ctxs[j]) if rng.random() < 0.5 else (ctxs[j], ctxs[i])
            out.append((a, b, label))
    return out


def _polysemous(index: dict[str, list[Context]], graph: WordNetGraph, cfg: WicConfig,
                src: SourceStats) -> dict[tuple[str, str], list[Context]]:
    """(lemma, POS) -> its SemCor occurrences, for the lemmas seen with at least two synsets."""
    by_lemma: dict[tuple[str, str], list[Context]] = {}
    for o in occurrences(index, graph, cfg.pos, cfg.max_tokens, src):
        by_lemma.setdefault((recorded(o.lemma, "lemma"), graph.pos(recorded(o.synset, "synset"))), []).append(o)
    return {k: by_lemma[k] for k in sorted(by_lemma) if len({o.synset for o in by_lemma[k]}) >= 2}


def _pairs(by_lemma: dict[tuple[str, str], list[Context]], graph: WordNetGraph, cfg: WicConfig, clean: LeakFilter,
           st: PairStats) -> dict[tuple[str, str], list[Pair]]:
    """(lemma, POS) -> its balanced pairs, lemmas taken in seeded order until ``max_pairs``."""
    lemmas = list(by_lemma)
    pruned_pairs: dict[tuple[str, str], str] = {}
    pairs: dict[tuple[str, str], list[Pair]] = {}
    total = 0
    for k in rng_for(cfg.seed, "wic/lemmas").permutation(len(lemmas)).tolist():
        if cfg.max_pairs is not None and total >= cfg.max_pairs:
            break
        lemma, pos = lemmas[k]
        rng = rng_for(cfg.seed, f"wic/{lemma}.{pos}")
        occs = by_lemma[lemmas[k]]
        ctxs = []
        for i in rng.permutation(len(occs)).tolist():
            if clean.ok(occs[i]):
                ctxs.append(occs[i])
                if len(ctxs) >= cfg.max_contexts_per_lemma:
                    break
        got = _pairs_for_lemma(ctxs, graph, cfg, rng, st, pruned_pairs) if len({c.synset for c in ctxs}) >= 2 else []
        if not got:
            st.lemmas_without_pairs += 1
            continue
        pairs[lemmas[k]] = got
        total += len(got)
    st.lemmas_taken = len(pairs)
    for why in pruned_pairs.values():
        st.synset_pairs_pruned[why] = st.synset_pairs_pruned.get(why, 0) + 1
    return pairs


def _items(pairs: dict[tuple[str, str], list[Pair]], cfg: WicConfig) -> list[WicItem]:
    """The pairs as items (contexts as text), split by lemma, in a seeded order."""
    keys = sorted(pairs)
    splits = split_by_rank([f"{w}.{p}" for w, p in keys], cfg.dev_frac, cfg.test_frac, rng_for(cfg.seed, "wic/splits"))
    items = []
    for lemma, pos in keys:
        unit = f"{lemma}.{pos}"
        for n, (a, b, label) in enumerate(pairs[(lemma, pos)]):
            items.append(
                WicItem(
                    id=f"wic-{unit}-{n:02d}", lemma=lemma, pos=pos, context=a.as_text(), context2=b.as_text(),
                    label=label, split=splits[unit], unit=unit,
                    meta={"synsets": [a.synset, b.synset], "refs": [a.sent_id, b.sent_id]},
                )
            )
    return [items[i] for i in rng_for(cfg.seed, "wic/order").permutation(len(items)).tolist()]


def build(cfg: WicConfig, wordnet: str | None = None, semcor: str | None = None,
          log: Callable[[str], None] = print) -> WicDataset:
    """Generate WiC-style pairs from SemCor and WordNet (see the module doc)."""
    from ..manifest import data_block, make_manifest
    from .dataset import WicDataset, split_counts

    cfg.validate()
    wn_info, sc_info, graph, wn, index = load_sources(wordnet, semcor, log)
    src = SourceStats()
    by_lemma = _polysemous(index, graph, cfg, src)
    st = PairStats(lemmas_polysemous=len(by_lemma))
    pairs = _pairs(by_lemma, graph, cfg, leak_filter(wn, src), st)
    if not pairs:
        raise NothingBuilt("no WiC pair could be built (too few polysemous lemmas in SemCor for these settings)")
    items = _items(pairs, cfg)
    counts = {"splits": split_counts(items), "items": len(items),
              "construction": {**st.to_json(), "contexts": src.to_json()}}
    manifest = make_manifest(
        "wic", cfg.to_dict(), cfg.seed, data_block(wn_info, sc_info), counts,
        task="pair",
        prune_rule=__doc__.split("Pruning rule ", 1)[1].strip().replace("\n", " "),
        no_leak="contexts showing another form of the target lemma outside its span are skipped (probegen.leaks)",
    )
    log(f"wic: {len(items)} pairs from {len(pairs)} lemmas; pruned F candidates {st.f_pruned}; "
        f"leaky contexts skipped {src.leaky} of {src.leak_checked} checked")
    return WicDataset(items, manifest)
