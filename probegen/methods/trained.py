"""The trained method (``--method trained`` of bias; the eval of a word-in-context dataset): a
probe trained on the encoder's features per input condition (:mod:`probegen.diagnostics.trained`)."""

from __future__ import annotations

from typing import Any

from ..errors import ProbegenError
from .base import Method, ScorerRequest


class TrainedMethod(Method):
    """No zero-shot scorer: the command hands the run to the trained-probe path (``trains``)."""

    name = "trained"
    title = "trained probe"
    flags = {"bias": "trained"}
    trains = True

    def load_scorer(self, runner: Any, req: ScorerRequest) -> Any:
        raise ProbegenError("--method trained trains a probe per condition; it loads no zero-shot scorer")

    def shown_settings(self, ev: Any, scorer: Any) -> tuple[str, ...]:
        """A trained probe records no likelihood setting worth showing (none applied to it)."""
        return ()
