"""A ``wic_pair`` probe spec as a WiC build: the spec's section, its configuration and the build."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..errors import ProbegenError
from ..spec.schema import Spec, SpecSection, integer, number, one_of, optional, spec_field

if TYPE_CHECKING:
    from ..runner import Runner
    from .dataset import WicDataset
    from .wic import WicConfig


@dataclass(frozen=True)
class WicPair:
    """WiC-style pairs (same lemma, two SemCor contexts, same sense or not)."""

    prune: str = spec_field("wic", one_of(("wic", "supersense", "related", "none"), "prune rule"),
                            "drop F pairs whose senses are too close")
    max_pairs: int | None = spec_field(None, optional(integer(2)), "stop once this many pairs")
    max_pairs_per_lemma: int = spec_field(6, integer(2), "pairs per lemma")
    max_tokens: int = spec_field(60, integer(3), "skip longer SemCor sentences")
    dev_frac: float = spec_field(0.1, number(0.0, 0.99), "share of lemmas in dev")
    test_frac: float = spec_field(0.2, number(0.0, 0.99), "share of lemmas in test")


def _check(s: Spec) -> None:
    if s.relation is not None:
        raise ProbegenError("relation: WiC-style pairs compare two senses of one lemma; they take no relation")
    c = s.concepts
    if c.lexfiles or c.depth != (None, None) or c.min_semcor:
        raise ProbegenError("concepts: WiC-style pairs filter by part of speech only (lexfiles, depth and "
                            "min_semcor do not apply)")
    if s.templates is not None:
        raise ProbegenError("templates: WiC-style pairs have no question templates")


def wic_config(spec: Spec) -> WicConfig:
    """The WiC configuration of a ``wic_pair`` spec."""
    from .wic import WicConfig

    w, pos = spec.part(WicPair, "wic_pair"), spec.pos_codes
    return WicConfig(pos, w.prune, w.max_pairs, w.max_pairs_per_lemma, spec.contexts.max, w.max_tokens,
                     w.dev_frac, w.test_frac, spec.seed)


def build_wic_pair(spec: Spec, cfg: WicConfig, wordnet: str | None, semcor: str | None, progress: bool,
                   log: Callable[[str], None], runner: Runner) -> WicDataset:
    """The WiC dataset of a ``wic_pair`` spec."""
    from .wic import build

    return build(cfg, wordnet, semcor, log)


#: the ``wic_pair`` section: SemCor contexts, up to 40 per lemma
SECTION = SpecSection(fields=WicPair, context_sources=("semcor",), contexts_max=40, check=_check,
                      config=wic_config, build=build_wic_pair)
