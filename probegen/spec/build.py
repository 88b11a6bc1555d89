"""Building a probe spec: each item shape maps onto an existing generator, so a spec's output is
a CoDA21, WordNetQA or WiC dataset that ``probegen stats/eval/bias/export`` read unchanged.

- ``alignment`` -> :class:`probegen.coda21.config.Coda21Config` (members ``relation.hops`` steps of
  ``relation.name`` from a shared synset; ``min_semcor`` is the clean/noisy threshold);
- ``multiple_choice`` -> :class:`probegen.wordnetqa.config.WordNetQAConfig` (a built-in probe, or a
  relation probe whose templates the manifest records as ``probe_templates``);
- ``wic_pair`` -> :class:`probegen.wordincontext.wic.WicConfig`.

The manifest gets a ``spec`` block: the canonical JSON of the spec (as data) and its sha256.
Everything else in the output equals what the matching ``probegen make`` command writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import NothingBuilt
from .concepts import ConceptFilter
from .schema import Spec


@dataclass
class Built:
    """A spec's dataset: its kind (a task name: coda21, wordnetqa, wic) and the dataset object."""

    kind: str
    dataset: Any

    def write(self, out: str | Path) -> Path:
        from .. import tasks

        return tasks.get(self.kind).write(self.dataset, out)

    def summary(self) -> str:
        from .. import tasks

        return tasks.get(self.kind).built_summary(self.dataset)


def concept_filter(spec: Spec, with_semcor: bool) -> ConceptFilter | None:
    """The spec's lexicographer-file/depth filter (and SemCor floor if ``with_semcor``), None if it admits all."""
    c = spec.concepts
    flt = ConceptFilter(tuple(c.lexfiles), c.depth[0], c.depth[1], (c.min_semcor or 0) if with_semcor else 0)
    return flt if flt.active else None


def coda21_config(spec: Spec):
    """The CoDA21 configuration of an ``alignment`` spec.

    >>> from probegen.spec.schema import parse_spec
    >>> cfg = coda21_config(parse_spec({"name": "coda21-clean-easy", "shape": "alignment", "relation": {"hops": 2}}))
    >>> cfg.variant, cfg.relation, cfg.min_contexts
    ('clean-easy', 'grandparent', 5)
    >>> coda21_config(parse_spec({"name": "mero", "shape": "alignment", "relation": {"name": "part_meronym"}})).relation
    'part_holonym'
    """
    from ..coda21.config import Coda21Config

    rel, hops = spec.relation.name, spec.hops[0]
    paper = rel == "hyponym" and hops in (1, 2)  # the paper's variants keep their exact config
    a, min_semcor = spec.alignment, spec.concepts.min_semcor
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


def wordnetqa_config(spec: Spec):
    """The WordNetQA configuration of a ``multiple_choice`` spec."""
    from ..wordnetqa.config import WordNetQAConfig

    mc = spec.multiple_choice
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
        relation="" if builtin else spec.relation.name,
        min_hops=lo,
        concepts=concept_filter(spec, with_semcor=True),
    )


def probe_templates(spec: Spec) -> dict[str, Any]:
    """A relation probe's templates in the shape of a probe of ``templates/questions/en.yaml``."""
    t, probe = spec.templates, spec.multiple_choice.probe
    return {
        "choice": t.choice,
        "templates": [{"id": f"{probe}-{i}", "stem": stem} for i, stem in enumerate(t.stems, 1)],
        "word_stem": t.word_stem,
        "lm_query": t.lm_query,
        "plain_query": t.plain_query,
    }


def wic_config(spec: Spec):
    """The WiC configuration of a ``wic_pair`` spec."""
    from ..wordincontext.wic import WicConfig

    w, pos = spec.wic_pair, spec.pos_codes
    return WicConfig(pos, w.prune, w.max_pairs, w.max_pairs_per_lemma, spec.contexts.max, w.max_tokens,
                     w.dev_frac, w.test_frac, spec.seed)


def config_for(spec: Spec):
    """The generator configuration a spec maps onto (checked: a bad value fails before any work)."""
    from .. import tasks

    cfg = tasks.for_spec_shape(spec.shape).spec_config(spec)
    cfg.validate()
    return cfg


def models_of(spec: Spec) -> list[str]:
    """The models a build loads (resolved up front, so an unknown name fails in a moment)."""
    from .. import tasks

    return tasks.for_spec_shape(spec.shape).spec_models(spec)


def build_alignment(spec: Spec, cfg, wordnet: str | None, semcor: str | None, progress: bool,
                    log: Callable[[str], None], runner=None):
    """The CoDA21 dataset of an ``alignment`` spec (``runner`` loads the embedder and context scorer)."""
    from ..coda21 import dataset as coda21

    try:
        return coda21.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log,
                            contexts=spec.contexts.source, runner=runner)
    except NothingBuilt as e:
        raise NothingBuilt(f"spec {spec.name} gives no groups: loosen its concepts, hops or alignment settings "
                           f"({e})") from None


def build_multiple_choice(spec: Spec, cfg, wordnet: str | None, semcor: str | None, progress: bool,
                          log: Callable[[str], None]):
    """The WordNetQA dataset of a ``multiple_choice`` spec (a relation probe's templates go into the manifest)."""
    from ..wordnetqa import dataset as wordnetqa
    from ..wordnetqa.render import register_probe

    extra = {}
    if cfg.relation:
        extra["probe_templates"] = {spec.multiple_choice.probe: probe_templates(spec)}
        register_probe(spec.multiple_choice.probe, extra["probe_templates"][spec.multiple_choice.probe])
    try:
        ds = wordnetqa.build(cfg, wordnet=wordnet, semcor=semcor, progress=progress, log=log)
    except NothingBuilt as e:
        raise NothingBuilt(f"spec {spec.name} gives no items: no concept passes its filters with a "
                           f"{spec.multiple_choice.probe} answer ({e})") from None
    ds.manifest.update(extra)
    return ds


def build_wic_pair(spec: Spec, cfg, wordnet: str | None, semcor: str | None, progress: bool,
                   log: Callable[[str], None]):
    """The WiC dataset of a ``wic_pair`` spec."""
    from ..wordincontext.wic import build

    return build(cfg, wordnet, semcor, log)


def build_spec(spec: Spec, wordnet: str | None = None, semcor: str | None = None, progress: bool = True,
               log: Callable[[str], None] = print, runner=None) -> Built:
    """Generate the dataset a spec declares (see the module docstring for the mapping); ``runner``
    (a :class:`~probegen.runner.Runner`) loads any model the build scores with."""
    from .. import tasks

    task = tasks.for_spec_shape(spec.shape)
    cfg = config_for(spec)
    record = {"name": spec.name, "sha256": spec.sha256, "spec": spec.to_dict()}
    ds = task.build_from_spec(spec, cfg, wordnet, semcor, progress, log, runner)
    ds.manifest["spec"] = record
    if spec.nonce:  # eval, bias and export read it back (probegen.templating.dataset_nonce)
        ds.manifest["nonce"] = spec.nonce
    return Built(task.name, ds)
