"""A ``wic_pair`` probe spec as a WiC build: its configuration and the build (:mod:`probegen.spec.build`
dispatches through the task).
"""

from __future__ import annotations

from typing import Callable

from ..spec.schema import Spec, given


def wic_config(spec: Spec):
    """The WiC configuration of a ``wic_pair`` spec."""
    from .wic import WicConfig

    w, pos = given(spec.wic_pair, "wic_pair"), spec.pos_codes
    return WicConfig(pos, w.prune, w.max_pairs, w.max_pairs_per_lemma, spec.contexts.max, w.max_tokens,
                     w.dev_frac, w.test_frac, spec.seed)


def build_wic_pair(spec: Spec, cfg, wordnet: str | None, semcor: str | None, progress: bool,
                   log: Callable[[str], None]):
    """The WiC dataset of a ``wic_pair`` spec."""
    from .wic import build

    return build(cfg, wordnet, semcor, log)
