"""Adversarial CoDA21: the same ancestors and group sizes, members the reference model confuses most.

The twin is the standard build, so both sets share ancestors, group ids and sizes (the same chance)
and differ only in which valid co-hyponyms fill each group. Where no confusable set of the twin's
size exists, a group keeps its twin members ("twin"), the rest of them if k_min remain ("shrunk"),
else it is "dropped". Every constraint of the standard build still holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..adversarial.confusable import alignment_errors, most_confusable
from ..runner import Runner
from ..templating import default_nonce
from . import dataset as D
from .grouping import SynsetGroup, candidates_for
from .items import Context
from .render import patterns_for, query

if TYPE_CHECKING:
    from ..scorers.base import Scorer
    from ..wordnet_graph import WordNetGraph
    from .config import Coda21Config


@dataclass(frozen=True)
class AdversarialSettings:
    """How adversarial members are chosen (recorded in the manifest)."""

    against: str
    pool_max: int = 40  # candidates per ancestor the reference model scores (n x n pairs)
    reduction: str = "sum"


def _pools(p: D.Plan, pool_max: int) -> dict[str, list[str]]:
    """Per ancestor with groups: its twin members first, then other eligible candidates by name."""
    members: dict[str, list[str]] = {}
    for sg in p.synset_groups:
        members.setdefault(sg.ancestor, []).extend(sg.members)
    pools = {}
    for anc, mem in members.items():
        pos = p.graph.pos(anc)
        others = [c for c in candidates_for(p.graph, anc, p.cfg.easy) if c in p.pools[pos] and c not in mem]
        pools[anc] = sorted(mem) + others[: max(0, pool_max - len(mem))]
    return pools


def _score_pools(pools: dict[str, list[str]], pos_of: dict[str, str], chosen: dict[str, Context], graph: WordNetGraph,
                 scorer: Scorer, progress: bool, runner: Runner) -> dict[str, np.ndarray]:
    """The reference model's context x definition matrix over each ancestor's whole pool, in one request table."""
    from ..core import Unit

    patterns, nonce = patterns_for(None), default_nonce()
    units = [
        Unit.group(anc, [query(chosen[m], pos_of[anc], scorer.query_style, "context", nonce, patterns) for m in pool],
                   [graph.definition(m) for m in pool], range(len(pool)), "alignment")
        for anc, pool in pools.items()
    ]
    return dict(zip(pools, runner.score(units, scorer, progress=progress)))


def _decide_group(gid: str, sg: SynsetGroup, pool: list[str], mat: np.ndarray, vectors: Callable[[list[str]], Any],
                  cfg: Coda21Config, used: set[str]) -> tuple[dict[str, Any], tuple[str, ...] | None]:
    """(decision record, members or None if dropped) of one group (see the module doc)."""
    free = [i for i, m in enumerate(pool) if m not in used]
    vec = vectors([pool[i] for i in free])
    pick = most_confusable(mat[np.ix_(free, free)], vec @ vec.T, len(sg.members), cfg.max_similarity)
    how = "adversarial"
    if pick is None:  # no valid confusable set of this size: keep the twin's members that are still free
        pick = [free.index(pool.index(m)) for m in sg.members if m not in used]
        # "shrunk": earlier adversarial groups took some twin members, but k_min or more remain
        how = "twin" if len(pick) == len(sg.members) else "shrunk"
        if len(pick) < cfg.k_min:
            return {"id": gid, "ancestor": sg.ancestor, "how": "dropped"}, None
    members = tuple(sorted(pool[free[i]] for i in pick))
    twin_idx = [pool.index(m) for m in sg.members]
    adv_idx = [pool.index(m) for m in members]
    return {
        "id": gid,
        "ancestor": sg.ancestor,
        "how": how,
        "replaced": len(set(sg.members) - set(members)),
        "ref_errors_twin": alignment_errors(mat[np.ix_(twin_idx, twin_idx)]),
        "ref_errors_adversarial": alignment_errors(mat[np.ix_(adv_idx, adv_idx)]),
    }, members


def _choose_groups(p: D.Plan, pools: dict[str, list[str]],
                   mats: dict[str, np.ndarray]) -> tuple[list[SynsetGroup], list[str], list[dict[str, Any]]]:
    """(adversarial groups, their twin's ids, one decision per twin group), in generation order."""
    used: set[str] = set()
    groups: list[SynsetGroup] = []
    ids: list[str] = []
    decisions = []
    for gid, sg in zip(D.group_ids(p.cfg, p.synset_groups), p.synset_groups):
        decision, members = _decide_group(gid, sg, pools[sg.ancestor], mats[sg.ancestor], p.vectors[sg.pos], p.cfg,
                                          used)
        decisions.append(decision)
        if members is None:
            continue
        used.update(members)
        groups.append(SynsetGroup(sg.ancestor, sg.relation, sg.pos, members))
        ids.append(gid)
    return groups, ids, decisions


def _record(settings: AdversarialSettings, ref: Scorer, groups: list[SynsetGroup],
            decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """The manifest's ``adversarial`` block: method, reference model and what changed."""
    return {
        "reference_model": settings.against,
        "reference_scorer": ref.settings(),
        "method": "greedy: most reference-alignment errors, then largest summed swap gain M_ij+M_ji-M_ii-M_jj; "
                  "constraints of the standard build unchanged",
        "pool_max": settings.pool_max,
        "groups": len(groups),
        "groups_changed": sum(d.get("replaced", 0) > 0 for d in decisions),
        "members_replaced": sum(d.get("replaced", 0) for d in decisions),
        "groups_kept_as_twin": sum(d["how"] == "twin" for d in decisions),
        "groups_shrunk": sum(d["how"] == "shrunk" for d in decisions),
        "groups_dropped": sum(d["how"] == "dropped" for d in decisions),
        "reference_errors": {"twin": sum(d.get("ref_errors_twin", 0) for d in decisions),
                             "adversarial": sum(d.get("ref_errors_adversarial", 0) for d in decisions)},
        "decisions": decisions,
    }


def build_adversarial(
    cfg: Coda21Config, settings: AdversarialSettings, wordnet: str | None = None, semcor: str | None = None,
    progress: bool = True, log: Callable[[str], None] = print, *, runner: Runner,
) -> tuple[D.Coda21Dataset, D.Coda21Dataset]:
    """(adversarial dataset, non-adversarial twin) for one CoDA21 configuration (``runner`` loads every model)."""
    progress, log = progress and runner.progress, runner.main_log(log)
    p = D.plan(cfg, wordnet, semcor, progress, log, runner=runner)
    pools = _pools(p, settings.pool_max)
    everyone = sorted({m for pool in pools.values() for m in pool})
    chosen, ctx_scorer = D.pick_contexts(p, everyone, progress, log, runner=runner)
    twin_members = sorted({m for g in p.synset_groups for m in g.members})
    twin = D.assemble(p, p.synset_groups, {m: chosen[m] for m in twin_members}, ctx_scorer)

    ref = runner.load_scorer(settings.against, reduction=settings.reduction)
    log(f"scoring {sum(len(x) ** 2 for x in pools.values())} pairs of {len(pools)} ancestor pools with "
        f"{settings.against}")
    pos_of = {anc: p.graph.pos(anc) for anc in pools}
    mats = _score_pools(pools, pos_of, chosen, p.graph, ref, progress, runner)
    adv_groups, ids, decisions = _choose_groups(p, pools, mats)
    adv = D.assemble(p, adv_groups, chosen, ctx_scorer, ids=ids,
                     adversarial=_record(settings, ref, adv_groups, decisions))
    twin.manifest["adversarial_twin_of"] = {"reference_model": settings.against}
    return adv, twin
