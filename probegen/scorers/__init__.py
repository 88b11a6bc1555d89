"""Scorers: one protocol (:class:`Scorer`) for causal, masked, embedding and static models.

Only the torch-free base is imported here; backends import torch/transformers on demand.
Use :func:`probegen.models.load_scorer` to get one.
"""

from .base import Scorer, boundary_split

KINDS = ("causal", "masked", "embedding", "static")

__all__ = ["KINDS", "Scorer", "boundary_split"]
