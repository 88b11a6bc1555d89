"""Reference implementations the tests check probegen's fast paths against (slow, obviously right)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def causal_naive_scores(scorer, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """log P(candidate | query) of a causal scorer's pairs: one full forward pass per pair through
    the whole model (LM head everywhere, full log-softmax), the scorer's own tokenisation and
    reduction."""
    import torch

    device = scorer.model.get_input_embeddings().weight.device
    out = []
    with torch.inference_mode():
        for q, c in pairs:
            p, cont = scorer.encode_pair(q, c)
            ids = torch.tensor([list(p) + list(cont)], device=device)
            logits = scorer.model(input_ids=ids).logits[0].float().cpu()
            lp = torch.log_softmax(logits, dim=-1)
            pos = torch.arange(len(p) - 1, len(p) - 1 + len(cont))
            total = lp[pos, torch.tensor(cont)].sum().item()
            out.append(total / len(cont) if scorer.reduction == "mean" else total)
    return np.array(out, dtype=np.float64)
