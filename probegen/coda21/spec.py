"""An ``alignment`` probe spec as a CoDA21 build: its configuration and the build
(:mod:`probegen.spec.build` dispatches through the task).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..errors import NothingBuilt
from ..spec.schema import Spec, concept_filter, given

if TYPE_CHECKING:
    from ..runner import Runner


def coda21_config(spec: Spec):
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
    a, min_semcor = given(spec.alignment, "alignment"), spec.concepts.min_semcor or 0  # filled in by parse_spec
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
        from dataclasses import replace

        cfg = replace(cfg, name=name)
    return cfg


def build_alignment(spec: Spec, cfg, wordnet: str | None, semcor: str | None, progress: bool,
                    log: Callable[[str], None], runner: Runner):
    """The CoDA21 dataset of an ``alignment`` spec (``runner`` loads the embedder and context scorer)."""
    from . import dataset as coda21

    try:
        return coda21.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log,
                            contexts=spec.contexts.source, runner=runner)
    except NothingBuilt as e:
        raise NothingBuilt(f"spec {spec.name} gives no groups: loosen its concepts, hops or alignment settings "
                           f"({e})") from None
