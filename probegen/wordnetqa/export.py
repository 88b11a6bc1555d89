"""WordNetQA's export docs (:mod:`probegen.exporters` writes them): one doc per item; the query is
``ds.templates.query(item, "pattern", "full")``, the choices the item's in the presented order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ProbegenError

if TYPE_CHECKING:
    from .dataset import WordNetQADataset


def wordnetqa_docs(ds: WordNetQADataset, split: str | None = None) -> list[dict[str, Any]]:
    """One doc per WordNetQA item (optionally one split), with probegen's full-question LM query."""
    from ..templating import dataset_nonce

    nonce = dataset_nonce(ds.manifest)
    docs = [
        {
            "id": it.id,
            "query": ds.templates.query(it, "pattern", "full", nonce),
            "choices": list(it.choices),
            "gold": it.answer,
            "probe": it.probe,
            "split": it.split,
            "cluster": it.cluster,
            "synset": it.synset,
            "gold_synset": it.gold_synset,
            "hops": it.hops,
            "distractor_type": it.distractor_type,
            "choice_types": [m.type for m in it.choice_meta],
        }
        for it in ds.split(split)
    ]
    if not docs:
        raise ProbegenError(f"no items to export{f' in split {split!r}' if split else ''}")
    return docs
