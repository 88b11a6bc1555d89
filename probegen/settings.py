"""The one config of the options every command shares: :class:`Settings`, made from a checked
request (:meth:`Settings.given` fills the defaults, here and nowhere else)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .templating import default_nonce


@dataclass(frozen=True)
class Settings:
    """``nonce`` (the made-up word), CoDA21's ``pattern`` and ``matching``, ``length_norm``, the ``split``
    measured (None: every item) and the ``seed`` of every seeded choice.

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
