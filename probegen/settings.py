"""The one config of the options every command shares: :class:`Settings`.

A command's request (:class:`~probegen.run.api.EvalRequest`, ``BiasRequest``, ...) mirrors
its command line, an option left ``None`` when the user did not give it; the checks run on that.
Once they pass, the shared options become one :class:`Settings` (:meth:`Settings.given` fills the
defaults, here and nowhere else), and that is what the tasks, the CoDA21 evaluator, the bias run
and the exporters read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .templating import default_nonce


@dataclass(frozen=True)
class Settings:
    """How queries are rendered (``nonce``: the made-up word that hides a target; ``pattern``: the
    CoDA21 query pattern), how a unit is decided (``matching``: CoDA21's ``alignment`` or ``simple``),
    how multiple-choice scores are normalised (``length_norm``), which ``split`` is measured (None:
    every item) and the ``seed`` of every seeded choice (column orders, ties, subsets, bootstrap).

    >>> s = Settings.given(pattern=None, matching="simple", seed=3)
    >>> (s.pattern, s.matching, s.length_norm, s.seed, s.nonce == default_nonce())
    ('definition-of', 'simple', 'none', 3, True)
    """

    nonce: str = field(default_factory=default_nonce)  # templates/nonce_words.json, written once
    pattern: str = "definition-of"
    matching: str = "alignment"
    length_norm: str = "none"
    split: str | None = None
    seed: int = 0

    @classmethod
    def given(cls, **asked: Any) -> "Settings":
        """Settings from options as asked (``None``: not given, the default applies)."""
        return cls(**{k: v for k, v in asked.items() if v is not None})
