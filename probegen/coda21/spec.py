"""An ``alignment`` probe spec as a CoDA21 build: the spec's section, its configuration and the build."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from ..errors import NothingBuilt, ProbegenError
from ..spec.schema import (
    Relation,
    Spec,
    SpecSection,
    concept_filter,
    given,
    hop_range,
    integer,
    number,
    spec_field,
    string,
)

if TYPE_CHECKING:
    from ..runner import Runner
    from .config import Coda21Config
    from .dataset import Coda21Dataset

ALIGNMENT_MAX_HOPS = 4


@dataclass(frozen=True)
class Alignment:
    """CoDA21-style groups of co-related synsets: clustering and the similarity cap."""

    k_min: int = spec_field(5, integer(2, 30), "smallest group")
    k_max: int = spec_field(10, integer(2, 30), "largest group")
    max_similarity: float = spec_field(0.8, number(-1.0, 1.0),
                                       "cap on the cosine similarity of two definitions in a group")
    embedder: str = spec_field("minilm-l6", string, "sentence embedder for definition clustering")


def alignment_of(spec: Spec) -> Alignment:
    """The ``alignment`` section of a checked spec (one line if it has none)."""
    return spec.part(Alignment, "alignment")


def _complete(spec: Spec) -> Spec:
    return replace(spec, relation=spec.relation or Relation())


def _check(s: Spec) -> None:
    rel, al, min_semcor = given(s.relation, "relation"), alignment_of(s), s.concepts.min_semcor
    lo, hi = hop_range(rel)
    if lo != hi or not 1 <= lo <= ALIGNMENT_MAX_HOPS:
        raise ProbegenError(f"relation.hops: alignment members sit 1..{ALIGNMENT_MAX_HOPS} hops from the shared "
                            f"synset, got {lo if lo == hi else [lo, hi]}")
    if rel.instances:
        raise ProbegenError("relation.instances: applies to multiple_choice hypernymy/hyponymy only")
    if al.k_min > al.k_max:
        raise ProbegenError(f"alignment.k_min: {al.k_min} is larger than alignment.k_max {al.k_max}")
    if min_semcor is None or min_semcor < 1:
        raise ProbegenError("concepts.min_semcor: alignment members need at least 1 SemCor context")
    if s.templates is not None:
        raise ProbegenError("templates: alignment items are scored with the patterns of templates/coda21.json "
                            "(eval --pattern)")


def coda21_config(spec: Spec) -> Coda21Config:
    """The CoDA21 configuration of an ``alignment`` spec.

    >>> from probegen.spec.schema import parse_spec
    >>> cfg = coda21_config(parse_spec({"name": "coda21-clean-easy", "shape": "alignment", "relation": {"hops": 2}}))
    >>> cfg.variant, cfg.relation, cfg.min_contexts
    ('clean-easy', 'grandparent', 5)
    >>> coda21_config(parse_spec({"name": "mero", "shape": "alignment", "relation": {"name": "part_meronym"}})).relation
    'part_holonym'
    """
    from .config import Coda21Config

    rel, hops = given(spec.relation, "relation").name, spec.hops[0]
    paper = rel == "hyponym" and hops in (1, 2)  # the paper's variants keep their exact config
    a, min_semcor = alignment_of(spec), spec.concepts.min_semcor or 0  # filled in by parse_spec
    cfg = Coda21Config(
        easy=paper and hops == 2,
        clean=min_semcor > 1,
        pos=spec.pos_codes,
        k_min=a.k_min,
        k_max=a.k_max,
        max_similarity=a.max_similarity,
        min_clean_contexts=min_semcor if min_semcor > 1 else Coda21Config.min_clean_contexts,
        embedder=a.embedder,
        context_scorer=spec.contexts.scorer,
        max_contexts=spec.contexts.max,
        seed=spec.seed,
        members=rel,
        hops=0 if paper else hops,
        concepts=concept_filter(spec, with_semcor=False),
    )
    name = spec.name.removeprefix("coda21-")
    if name != cfg.variant:
        cfg = replace(cfg, name=name)
    return cfg


def build_alignment(spec: Spec, cfg: Coda21Config, wordnet: str | None, semcor: str | None, progress: bool,
                    log: Callable[[str], None], runner: Runner) -> Coda21Dataset:
    """The CoDA21 dataset of an ``alignment`` spec (``runner`` loads the embedder and context scorer)."""
    from . import dataset as coda21

    try:
        return coda21.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log,
                            contexts=spec.contexts.source, runner=runner)
    except NothingBuilt as e:
        raise NothingBuilt(f"spec {spec.name} gives no groups: loosen its concepts, hops or alignment settings "
                           f"({e})") from None


#: the ``alignment`` section: 10 SemCor (or example) contexts scored per synset by ``contexts.scorer``,
#: members with at least 5 SemCor occurrences (clean; 1 = noisy)
SECTION = SpecSection(fields=Alignment, context_sources=("semcor", "examples"), contexts_max=10, min_semcor=5,
                      scorer=True, forms=True, complete=_complete, check=_check,
                      config=coda21_config, build=build_alignment)
