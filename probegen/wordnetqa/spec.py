"""A ``multiple_choice`` probe spec as a WordNetQA build: the spec's section, its configuration, a
relation probe's templates and the build.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from ..errors import NothingBuilt, ProbegenError
from ..spec.schema import (
    Relation,
    Spec,
    SpecSection,
    check_templates,
    concept_filter,
    given,
    hop_range,
    integer,
    list_of,
    number,
    one_of,
    optional,
    spec_field,
    string,
)

if TYPE_CHECKING:
    from ..runner import Runner
    from .config import WordNetQAConfig
    from .dataset import WordNetQADataset

MC_BUILTIN = ("definitions", "hypernymy", "hyponymy", "synonymy")
#: the relation each built-in WordNetQA probe follows (definitions and synonymy follow none)
MC_BUILTIN_RELATION = {"hypernymy": "hypernym", "hyponymy": "hyponym"}
MC_MAX_HOPS = 10


@dataclass(frozen=True)
class MultipleChoice:
    """WordNetQA-style 5-way items: the probe and its distractor policy."""

    probe: str = spec_field("definitions", string,
                            "definitions, hypernymy, hyponymy, synonymy, or a new name (needs templates)")
    distractors: tuple[str, ...] = spec_field(("random", "sister", "isa"),
                                              list_of(one_of(("random", "sister", "isa"), "distractor type")),
                                              "perturbations: one item per question and type")
    sister_depth: int = spec_field(2, integer(1, 5), "sister family depth")
    isa_hops: int = spec_field(4, integer(1, MC_MAX_HOPS),
                               "definitions/synonymy: ISA distractors at 1..N hops (other probes: relation.hops)")
    max_answers_per_hop: int = spec_field(1, integer(1), "gold answers sampled per concept and hop")
    min_answer_depth: int = spec_field(2, integer(0), "noun hypernymy answers nearer the root are skipped")
    max_concepts: int | None = spec_field(None, optional(integer(1)), "a seeded sample of N concepts")
    dev_frac: float = spec_field(0.1, number(0.0, 0.99), "share of concepts in dev")
    test_frac: float = spec_field(0.1, number(0.0, 0.99), "share of concepts in test")


def multiple_choice_of(spec: Spec) -> MultipleChoice:
    """The ``multiple_choice`` section of a checked spec (one line if it has none)."""
    return spec.part(MultipleChoice, "multiple_choice")


def _complete(spec: Spec) -> Spec:
    """A built-in relation probe follows its relation 1..4 hops unless the spec says otherwise."""
    probe = multiple_choice_of(spec).probe
    if spec.relation is None and probe in MC_BUILTIN_RELATION:
        return replace(spec, relation=Relation(name=MC_BUILTIN_RELATION[probe], hops=(1, 4)))
    return spec


def _check(s: Spec) -> None:
    mc = multiple_choice_of(s)
    if not mc.probe or not mc.probe.replace("-", "").replace("_", "").isalnum():
        raise ProbegenError(f"multiple_choice.probe: {mc.probe!r} is not a probe name (letters, digits, - and _)")
    if mc.dev_frac + mc.test_frac >= 1:
        raise ProbegenError("multiple_choice.test_frac: dev_frac + test_frac must stay below 1, got "
                            f"{mc.dev_frac + mc.test_frac}")
    if mc.probe in MC_BUILTIN:
        want = MC_BUILTIN_RELATION.get(mc.probe)
        got = s.relation.name if s.relation else None
        if got != want:
            raise ProbegenError(f"relation.name: probe {mc.probe} follows "
                                f"{want or 'no relation (leave relation out)'}, got {got}")
        if s.templates is not None:
            raise ProbegenError(f"templates: probe {mc.probe} is built in (templates/questions/); name a new probe to "
                                "write templates")
        if s.relation is not None and s.relation.hops[0] != 1 and mc.probe not in MC_BUILTIN_RELATION:
            raise ProbegenError("relation.hops: applies to relation probes only")
    else:
        if s.relation is None:
            raise ProbegenError(f"relation: the new probe {mc.probe!r} needs a relation (entailment, part_meronym, "
                                "...)")
        if s.relation.instances:
            raise ProbegenError("relation.instances: applies to the hypernymy/hyponymy probes only")
        if s.templates is None or not s.templates.stems:
            raise ProbegenError(f"templates.stems: the new probe {mc.probe!r} needs at least one question stem")
        if not s.templates.word_stem:
            raise ProbegenError("templates.word_stem: missing (the question without its sentence, with {word}; bias "
                                "needs it)")
        check_templates(s.templates)
    if s.relation is not None:
        lo, hi = hop_range(s.relation)
        if not 1 <= lo <= hi <= MC_MAX_HOPS:
            raise ProbegenError(f"relation.hops: multiple choice answers sit 1..{MC_MAX_HOPS} hops away, got [{lo}, "
                                f"{hi}]")


def wordnetqa_config(spec: Spec) -> WordNetQAConfig:
    """The WordNetQA configuration of a ``multiple_choice`` spec."""
    from .config import WordNetQAConfig

    mc = multiple_choice_of(spec)
    builtin = mc.probe in MC_BUILTIN
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
    t, probe = given(spec.templates, "templates"), multiple_choice_of(spec).probe
    return {
        "choice": t.choice,
        "templates": [{"id": f"{probe}-{i}", "stem": stem} for i, stem in enumerate(t.stems, 1)],
        "word_stem": t.word_stem,
        "lm_query": t.lm_query,
        "plain_query": t.plain_query,
    }


def build_multiple_choice(spec: Spec, cfg: WordNetQAConfig, wordnet: str | None, semcor: str | None, progress: bool,
                          log: Callable[[str], None], runner: Runner) -> WordNetQADataset:
    """The WordNetQA dataset of a ``multiple_choice`` spec (a relation probe's templates go into the manifest)."""
    from . import dataset as wordnetqa

    probe = multiple_choice_of(spec).probe
    own = {probe: probe_templates(spec)} if cfg.relation else None
    try:
        return wordnetqa.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log, probe_templates=own)
    except NothingBuilt as e:
        raise NothingBuilt(f"spec {spec.name} gives no items: no concept passes its filters with a "
                           f"{probe} answer ({e})") from None


#: the ``multiple_choice`` section: WordNet (or WordNet and SemCor) contexts, 3 used per synset
SECTION = SpecSection(fields=MultipleChoice, context_sources=("wordnet", "wordnet+semcor"), contexts_max=3,
                      forms=True, complete=_complete, check=_check,
                      config=wordnetqa_config, build=build_multiple_choice)
