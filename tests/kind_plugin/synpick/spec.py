"""synonym-pick's probe-spec section: ``probegen make spec`` with ``shape: synonym_pick`` builds a dataset.

The section is registered through the task (:meth:`SpecHooks.spec_section`): probegen's schema reads
its fields, fills its defaults and runs its checks without naming it::

    name: synpick-artifacts
    shape: synonym_pick
    seed: 0
    concepts: {pos: [noun], lexfiles: [noun.artifact]}   # the shared concept filter
    synonym_pick: {n: 40, distractors: 3}

Each item is a WordNet synset with two one-word lemmas: the word, its synonym (the gold) and
``distractors`` first lemmas of other sampled synsets, in a seeded order. The same spec and seed give
byte-identical files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from probegen.errors import NothingBuilt, ProbegenError
from probegen.spec.schema import Spec, SpecSection, concept_filter, integer, spec_field
from probegen.tasks import SpecBuildable

KIND = "synonym-pick"  # task.py's (not imported: task.py imports this module)


@dataclass(frozen=True)
class Picks:
    """The ``synonym_pick`` section: how many words and how many wrong choices each."""

    n: int = spec_field(40, integer(2, 100_000), "words (a seeded sample of the synsets that pass the concept filter)")
    distractors: int = spec_field(3, integer(1, 9), "wrong choices per word (other sampled synsets' lemmas)")


def picks_of(spec: Spec) -> Picks:
    """The ``synonym_pick`` section of a checked spec."""
    return spec.part(Picks, "synonym_pick")


def _check(s: Spec) -> None:
    """What a synonym pick does not read, and a sample large enough for its distractors."""
    if s.relation is not None:
        raise ProbegenError("relation: a synonym pick asks for a lemma of the same synset; it takes no relation")
    if s.templates is not None:
        raise ProbegenError("templates: a synonym pick has no question templates")
    if s.concepts.min_semcor:
        raise ProbegenError("concepts.min_semcor: a synonym pick reads no SemCor")
    p = picks_of(s)
    if p.n <= p.distractors:
        raise ProbegenError(f"synonym_pick.n: {p.n} words cannot give {p.distractors} distractors each from the other "
                            "words; sample more")


#: the section: contexts are the synsets' WordNet definitions (one each)
SECTION = SpecSection(fields=Picks, context_sources=("wordnet",), contexts_max=1, check=_check)


@dataclass(frozen=True)
class PickConfig:
    """What a build reads of the spec (``probegen make spec`` checks it before any work)."""

    pos: tuple[str, ...]
    n: int
    distractors: int
    seed: int

    def validate(self) -> None:
        if not self.pos:
            raise ProbegenError("concepts.pos: name at least one part of speech")


def _words(graph: Any, s: str) -> list[str]:
    return [w for w in graph.lemmas(s) if w.isalpha() and w.islower()]


def build(spec: Spec, cfg: PickConfig, graph: Any) -> SimpleNamespace:
    """The items of a synonym-pick spec over ``graph`` (a :class:`probegen.wordnet_graph.WordNetGraph`)."""
    flt = concept_filter(spec, with_semcor=False)
    pool = [s for pos in cfg.pos for s in graph.synsets(pos)
            if len(_words(graph, s)) >= 2 and (flt is None or flt.admits(graph, s))]
    if len(pool) < cfg.n:
        raise NothingBuilt(f"spec {spec.name} gives {len(pool)} synsets with two one-word lemmas; synonym_pick.n "
                           f"asks for {cfg.n}: loosen its concepts or lower n")
    rng = np.random.default_rng(cfg.seed)
    picked = [pool[int(i)] for i in sorted(rng.choice(len(pool), size=cfg.n, replace=False))]
    rows = []
    for s in picked:
        word, gold = _words(graph, s)[:2]
        own = set(graph.lemmas(s))
        wrong: list[str] = []
        for j in rng.permutation(len(picked)):
            w = _words(graph, picked[int(j)])[0]
            if w not in own and w not in wrong:
                wrong.append(w)
            if len(wrong) == cfg.distractors:
                break
        choices = [gold, *wrong]
        order = rng.permutation(len(choices))
        rows.append({"id": s, "word": word, "definition": graph.definition(s), "lexfile": graph.g.nodes[s]["lexname"],
                     "choices": [choices[int(j)] for j in order], "gold": int(np.argsort(order)[0])})
    manifest = {"kind": KIND, "source": "WordNet 3.0", "n": len(rows), "distractors": cfg.distractors}
    return SimpleNamespace(items=rows, manifest=manifest)


class SpecHooks(SpecBuildable):
    """A spec of shape ``synonym_pick`` builds a synonym-pick dataset (:class:`probegen.tasks.SpecBuildable`)."""

    spec_shape = "synonym_pick"

    def spec_section(self) -> SpecSection:
        return SECTION

    def spec_config(self, spec: Spec) -> PickConfig:
        p = picks_of(spec)
        return PickConfig(spec.pos_codes, p.n, p.distractors, spec.seed)

    def build_from_spec(self, spec: Spec, cfg: Any, wordnet: str | None, semcor: str | None, progress: bool, log: Any,
                        runner: Any) -> SimpleNamespace:
        from probegen.wordnet_graph import load_graph

        data = build(spec, cfg, load_graph(wordnet))
        log(f"{len(data.items)} synonym picks from {KIND} spec {spec.name}")
        return data

    def write(self, data: Any, out: str | Path) -> Path:
        """``manifest.json`` and ``pairs.jsonl``, replaced as a whole (:func:`probegen.io.atomic_dir`)."""
        from probegen.io import atomic_dir, write_json, write_jsonl

        with atomic_dir(out) as tmp:
            write_json(tmp / "manifest.json", data.manifest)
            write_jsonl(tmp / "pairs.jsonl", data.items)
        return Path(out)
