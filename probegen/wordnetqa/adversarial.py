"""Adversarial WordNetQA: the same questions, distractors the reference model scores highest.

The twin is the standard build, so both sets share item ids, questions, gold answers and positions.
Each adversarial item keeps its twin's mix of distractor types but picks, among the valid
candidates of each type (``Relations.valid``), the ones the reference model finds most plausible.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..runner import Runner
from ..templating import default_nonce
from . import dataset as D
from .items import ChoiceMeta, MCItem

if TYPE_CHECKING:
    from ..scorers.base import Scorer
    from .config import WordNetQAConfig
    from .distractors import Relations

Candidate = tuple[str, str, int | None]  # (synset, distractor type, distance)


@dataclass(frozen=True)
class AdversarialSettings:
    """How adversarial distractors are chosen (recorded in the manifest)."""

    against: str
    typed_pool: int = 12  # valid sister/ISA candidates scored per item (a seeded sample when more)
    random_pool: int = 8  # valid random candidates scored per item
    length_norm: str = "chars"  # LM scores compared per character, so long glosses are not penalised


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _pool(it: MCItem, cfg: WordNetQAConfig, rel: Relations, render: Callable[[str], str], s: AdversarialSettings,
          rng: np.random.Generator) -> list[Candidate]:
    """Valid candidates ``(synset, type, distance)`` for one item: its family's typed ones, then random."""
    sister = rel.candidates("definitions", it.synset, "sister", cfg.max_hops, cfg.sister_depth)
    isa_all = rel.candidates("definitions", it.synset, "isa", cfg.max_hops, cfg.sister_depth)
    related = set(sister) | set(isa_all)
    family = {"sister": sister, "isa": D.isa_family(it.probe, isa_all)}.get(it.distractor_type, {})
    texts = {_key(it.choices[it.answer])}
    out: list[Candidate] = []

    def take(x: str, t: str, d: int | None) -> bool:
        k = _key(render(x))
        if k in texts or not rel.valid(it.probe, it.synset, it.gold_synset, x, render):
            return False
        texts.add(k)
        out.append((x, t, d))
        return True

    names = list(family)
    n_typed = 0
    for i in rng.permutation(len(names)):
        if n_typed >= s.typed_pool:
            break
        x = names[int(i)]
        n_typed += take(x, *family[x])
    pool = rel.matched_pool(it.gold_synset)
    n_random = 0
    for _ in range(2000):
        if n_random >= s.random_pool:
            break
        x = pool[int(rng.integers(len(pool)))]
        if x not in related:
            n_random += take(x, "random", None)
    return out


def _replace_distractors(it: MCItem, pool: list[Candidate], txt: list[str], sc: np.ndarray, cfg: WordNetQAConfig,
                         settings: AdversarialSettings, kind: str) -> MCItem:
    """The twin item ``it`` with its distractors replaced by the pool's most plausible ones to the
    reference model (as many typed and random as the twin has), or ``it`` itself when too few are valid."""
    from ..core import grid_units
    from .evaluate import normalise

    sc = normalise(np.asarray(sc, dtype=np.float64), txt, settings.length_norm, kind) if txt else sc
    slots = [j for j in range(len(it.choices)) if j != it.answer]
    want_typed = sum(it.choice_meta[j].type not in ("random", "gold") for j in slots)
    # most plausible to the model first; scores on the decision grid (probegen.core.grid_units), so two candidates
    # that differ only in another CPU's last bits tie, and a tie goes to the pool's seeded order
    g = grid_units(sc)
    order = sorted(range(len(pool)), key=lambda k: (-g[k], k))
    typed = [k for k in order if pool[k][1] != "random"][:want_typed]
    rand = [k for k in order if pool[k][1] == "random"][: len(slots) - len(typed)]
    picked = typed + rand
    if len(picked) < len(slots):  # too few valid candidates: keep the twin's item
        return it
    # the chosen distractors fill the twin's distractor slots in a seeded order: rank never shows in position
    perm = D.item_rng(cfg.seed, it.id + "/adversarial-slots").permutation(len(slots))
    choices, meta = list(it.choices), list(it.choice_meta)
    for slot, k in zip(slots, [picked[i] for i in perm]):
        choices[slot] = txt[k]
        meta[slot] = ChoiceMeta(*pool[k])
    d = [m.distance for s, m in enumerate(meta) if s != it.answer and m.type != "random" and m.distance is not None]
    new = dataclasses.replace(it, choices=tuple(choices), choice_meta=tuple(meta),
                              distractor_hops=min(d) if d else None)
    new.check()
    return new


def _score_candidates(twin: D.WordNetQADataset, pools: list[list[Candidate]],
                      renderers: dict[str, Callable[[str], str]], ref: Scorer, progress: bool,
                      runner: Runner) -> tuple[list[list[str]], list[np.ndarray]]:
    """(candidate texts, the reference model's scores of them) per twin item, as one request table."""
    from ..core import Unit

    nonce = default_nonce()
    texts = [[renderers[it.probe](x) for x, _, _ in pool] for it, pool in zip(twin.items, pools)]
    # an item with no valid candidate scores its gold alone (kept as the twin's item anyway)
    units = [Unit.choice(it.id, twin.templates.query(it, ref.query_style, "full", nonce), t or [it.choices[it.answer]])
             for it, t in zip(twin.items, texts)]
    return texts, [m[0] for m in runner.score(units, ref, progress=progress)]


def build_adversarial(
    cfg: WordNetQAConfig, settings: AdversarialSettings, wordnet: str | None = None, semcor: str | None = None,
    progress: bool = True, log: Callable[[str], None] = print, *, runner: Runner,
) -> tuple[D.WordNetQADataset, D.WordNetQADataset]:
    """(adversarial dataset, non-adversarial twin) for one WordNetQA configuration."""
    from ..wordnet_graph import load_graph
    from .distractors import Relations

    progress, log = progress and runner.progress, runner.main_log(log)
    twin = D.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log)
    graph = load_graph(wordnet)
    rel = Relations(graph, cfg.instances)
    renderers = {p: D.choice_renderer(graph, p, twin.templates) for p in cfg.probes}
    ref = runner.load_scorer(settings.against)
    pools = [_pool(it, cfg, rel, renderers[it.probe], settings, D.item_rng(cfg.seed, it.id + "/adversarial"))
             for it in twin.items]
    log(f"scoring {sum(map(len, pools))} candidate distractors of {len(pools)} items with {settings.against}")
    texts, scores = _score_candidates(twin, pools, renderers, ref, progress, runner)
    items = [_replace_distractors(it, pool, txt, sc, cfg, settings, ref.kind)
             for it, pool, txt, sc in zip(twin.items, pools, texts, scores)]
    record = {
        "reference_model": settings.against,
        "reference_scorer": ref.settings(),
        "method": "per item: the twin's number of typed (sister/ISA) and random distractors, each the valid "
                  "candidates the reference model scores highest (query as in probegen eval, full mode)",
        "settings": dataclasses.asdict(settings),
        "items": len(items),
        "items_changed": sum(new.choices != it.choices for new, it in zip(items, twin.items)),
    }
    manifest = {**twin.manifest, "adversarial": record, "counts": D.counts(items)}
    adv = D.WordNetQADataset(items, manifest)
    twin.manifest["adversarial_twin_of"] = {"reference_model": settings.against}
    return adv, twin
