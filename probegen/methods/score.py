"""The cloze method (``--method score`` of eval, ``--method zeroshot`` of bias): every candidate
scored by the model's likelihood (an LM) or similarity (an embedder, static vectors)."""

from __future__ import annotations

from .base import Method


class ScoreMethod(Method):
    """The model's own scorer, every likelihood option taken: the :class:`Method` defaults."""

    name = "score"
    #: how position and calibration blocks name it (results.json's ``position.method``)
    title = "cloze"
    flags = {"eval": "score", "bias": "zeroshot"}
    default = True
