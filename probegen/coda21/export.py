"""CoDA21's export docs: one doc per context, the choices its group's definitions in the
evaluator's seeded column order, the gold its own definition's position (probegen's
``--matching simple``; one-to-one alignment has no lm-eval equivalent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ProbegenError

if TYPE_CHECKING:
    from .dataset import Coda21Dataset


def coda21_docs(ds: Coda21Dataset, seed: int = 0, nonce: str | None = None,
                pattern: str | None = None) -> list[dict[str, Any]]:
    """One doc per CoDA21 context: its group's definitions (seeded column order) as choices."""
    import numpy as np

    from ..settings import Settings
    from ..templating import dataset_nonce
    from .evaluate import column_order
    from .render import patterns_for, render_group

    cfg = Settings.given(nonce=nonce or dataset_nonce(ds.manifest), pattern=pattern, seed=seed)
    patterns = patterns_for(cfg.pattern)
    docs = []
    for g in ds.groups:
        order = column_order(g.id, g.k, cfg.seed)
        gold = np.argsort(order)  # row i's definition sits at column gold[i]
        queries = render_group(g, "pattern", "context", cfg.nonce, patterns)
        for i, (it, q) in enumerate(zip(g.items, queries)):
            docs.append(
                {
                    "id": f"{g.id}/{i}",
                    "query": q,
                    "choices": [g.items[j].definition for j in order],
                    "gold": int(gold[i]),
                    "group": g.id,
                    "pos": g.pos,
                    "k": g.k,
                    "synset": it.synset,
                    "choice_synsets": [g.items[j].synset for j in order],
                }
            )
    if not docs:
        raise ProbegenError("no groups to export")
    return docs
