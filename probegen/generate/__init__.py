"""The generative method: a chat model asked each unit as a prompt (:mod:`.prompts`, :mod:`.chat`), its
answer parsed (:mod:`.parse`) by :class:`GenerativeScorer` (:mod:`.scorer`; :mod:`.metrics`); the letter
method reads the same prompts' option-label probabilities (:mod:`.letter`, :mod:`.letter_api`).
"""

from __future__ import annotations

from typing import Any, Mapping

from .scorer import GenerativeScorer

__all__ = ["GenerativeScorer", "load_generator"]

#: runtime settings the chat backends take (others, e.g. a likelihood scorer's token budget, do not apply)
CHAT_SETTINGS = ("device", "dtype", "api_base", "api_key_env", "concurrency", "api_timeout", "max_retries",
                 "batch_size", "cache")


def load_generator(model: str, permutations: int | str = 1, prompts: str | None = None, seed: int = 0,
                   **settings: Any) -> GenerativeScorer:
    """A :class:`GenerativeScorer` for ``model``: served when ``api_base`` serves it, else a local chat
    model; ``prompts``: a template file (default: the bundled ones); ``settings``: :data:`CHAT_SETTINGS`
    (others are an error unless unset)."""
    from .chat import load_chat
    from .prompts import prompt_templates

    given = chat_settings(settings, "--method generate")
    templates = prompt_templates(prompts)  # a malformed file fails before the model loads
    return GenerativeScorer(load_chat(model, **given), templates, permutations=permutations, seed=seed)


def chat_settings(settings: Mapping[str, Any], flag: str) -> dict[str, Any]:
    """The :data:`CHAT_SETTINGS` given; one line if another is (not ``auto``): it does not apply to ``flag``."""
    from ..errors import ProbegenError

    wrong = sorted(k for k, v in settings.items() if k not in CHAT_SETTINGS and v not in (None, "auto"))
    if wrong:
        raise ProbegenError(f"{', '.join('--' + w.replace('_', '-') for w in wrong)} do(es) not apply to {flag}")
    return {k: v for k, v in settings.items() if k in CHAT_SETTINGS and v is not None}
