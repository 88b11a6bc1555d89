"""The units a human study of a WordNetQA dataset samples from (:meth:`probegen.tasks.Studyable.study_pool`)."""

from __future__ import annotations

from typing import Any

from ..errors import ProbegenError
from ..study.views import study_rng as _rng
from .render import templates_of


def choice_pool(data: Any, cfg: Any) -> tuple[list[Any], str, dict[str, int]]:
    """Multiple-choice items a study samples from: one per concept cluster (of ``cfg.split``),
    only items with a known template when a condition other than full is shown."""
    skipped: dict[str, int] = {}
    items = list(data.items)
    if cfg.split:
        items = [it for it in items if it.split == cfg.split]
        if not items:
            raise ProbegenError(f"the dataset has no items in split {cfg.split!r}")
    if set(cfg.conditions) - {"full"}:
        known = templates_of(data).template_by_id
        usable = [it for it in items if known(it.template) is not None]
        if len(usable) < len(items):
            skipped["no template or context (full condition only)"] = len(items) - len(usable)
        items = usable
    by_cluster: dict[str, list[Any]] = {}
    for it in items:
        by_cluster.setdefault(it.cluster, []).append(it)
    clusters = sorted(by_cluster)
    pool = [by_cluster[c][int(_rng(cfg.seed, f"study-pick/{c}").integers(len(by_cluster[c])))] for c in clusters]
    return pool, "concept clusters", skipped
