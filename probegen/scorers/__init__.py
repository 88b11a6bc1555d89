"""Scorers: one protocol (:class:`Scorer`) for causal, masked, embedding, static and served models.

Only the torch-free base is imported here; backends import torch/transformers on demand.
Use :func:`probegen.models.load_scorer` to get one.
"""

from .base import Scorer, boundary_split

#: what a scorer says it is (``Scorer.kind``, results.json's ``scorer.kind``): the kinds of model scored in this process
KINDS = ("causal", "masked", "embedding", "static")
#: a model a server scores (an OpenAI-compatible completions endpoint, :class:`~probegen.scorers.api.ApiScorer`)
SERVED = "served"
#: the kinds scored as a causal LM, log P(continuation | text): the one test every site that treats a scorer
#: as a causal LM asks (in this process or served)
CAUSAL_KINDS = frozenset({"causal", SERVED})
#: the language-model kinds, log-probabilities of text: reduction, length norm, patterns and nonces apply
LM_KINDS = CAUSAL_KINDS | {"masked"}

__all__ = ["CAUSAL_KINDS", "KINDS", "LM_KINDS", "SERVED", "Scorer", "boundary_split"]
