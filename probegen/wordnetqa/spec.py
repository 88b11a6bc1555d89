"""A ``multiple_choice`` probe spec as a WordNetQA build: its configuration, a relation probe's templates
and the build (:mod:`probegen.spec.build` dispatches through the task).
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import NothingBuilt
from ..spec.schema import Spec, concept_filter, given


def wordnetqa_config(spec: Spec):
    """The WordNetQA configuration of a ``multiple_choice`` spec."""
    from .config import WordNetQAConfig

    mc = given(spec.multiple_choice, "multiple_choice")
    builtin = mc.probe in ("definitions", "hypernymy", "hyponymy", "synonymy")
    lo, hi = spec.hops if spec.relation is not None else (1, mc.isa_hops)
    return WordNetQAConfig(
        probes=(mc.probe,),
        pos=spec.pos_codes,
        max_hops=hi,
        distractors=tuple(mc.distractors),
        sister_depth=mc.sister_depth,
        contexts=spec.contexts.source,
        max_contexts=spec.contexts.max,
        max_answers_per_hop=mc.max_answers_per_hop,
        min_answer_depth=mc.min_answer_depth,
        instances=spec.relation.instances if spec.relation is not None else False,
        max_concepts=mc.max_concepts,
        dev_frac=mc.dev_frac,
        test_frac=mc.test_frac,
        seed=spec.seed,
        relation="" if builtin else given(spec.relation, "relation").name,
        min_hops=lo,
        concepts=concept_filter(spec, with_semcor=True),
    )


def probe_templates(spec: Spec) -> dict[str, Any]:
    """A relation probe's templates in the shape of a probe of ``templates/questions/en.yaml``."""
    t, probe = given(spec.templates, "templates"), given(spec.multiple_choice, "multiple_choice").probe
    return {
        "choice": t.choice,
        "templates": [{"id": f"{probe}-{i}", "stem": stem} for i, stem in enumerate(t.stems, 1)],
        "word_stem": t.word_stem,
        "lm_query": t.lm_query,
        "plain_query": t.plain_query,
    }


def build_multiple_choice(spec: Spec, cfg, wordnet: str | None, semcor: str | None, progress: bool,
                          log: Callable[[str], None]):
    """The WordNetQA dataset of a ``multiple_choice`` spec (a relation probe's templates go into the manifest)."""
    from . import dataset as wordnetqa

    probe = given(spec.multiple_choice, "multiple_choice").probe
    own = {probe: probe_templates(spec)} if cfg.relation else None
    try:
        return wordnetqa.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log, probe_templates=own)
    except NothingBuilt as e:
        raise NothingBuilt(f"spec {spec.name} gives no items: no concept passes its filters with a "
                           f"{probe} answer ({e})") from None
