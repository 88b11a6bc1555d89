"""The generative method: ask a chat model each unit as a prompt, parse its answer.

For models that give no log-probabilities of a prompt (chat models, most hosted APIs), probegen
asks and reads the answer instead of scoring. The pieces, in the order data flows through them:

- :mod:`~probegen.generate.prompts`: the prompt templates (data: ``templates/prompts/en.yaml``,
  or ``--prompts FILE``) that turn a unit into chat messages;
- :mod:`~probegen.generate.chat`: the chat backends (a local model with a chat template through
  transformers ``generate``; an OpenAI-compatible ``chat/completions`` endpoint through the
  served-model client) and the response cache that makes a second run replay without a request;
- :mod:`~probegen.generate.parse`: the strict parsers of answers (a complete matching, a letter,
  yes/no);
- :mod:`~probegen.generate.scorer`: :class:`GenerativeScorer`, which stands where a likelihood
  scorer stands in every task's evaluation and bias path;
- :mod:`~probegen.generate.metrics`: invalid-answer rate, per-order accuracy and consistency;
- :mod:`~probegen.generate.letter` (``--method letter``): the same prompts read as each option
  label's next-token probability (:class:`~probegen.generate.letter.LetterScorer`, in process or
  served: :mod:`~probegen.generate.letter_api`), recorded per order under ``generation``
  (``orders``, ``probs``, ``label_mass``).
"""

from __future__ import annotations

from typing import Any

from .scorer import GenerativeScorer

__all__ = ["GenerativeScorer", "load_generator"]

#: runtime settings the chat backends take (others, e.g. a likelihood scorer's token budget, do not apply)
CHAT_SETTINGS = ("device", "dtype", "api_base", "api_key_env", "concurrency", "api_timeout", "max_retries",
                 "batch_size", "cache")


def load_generator(model: str, permutations: int | str = 1, prompts: str | None = None, seed: int = 0,
                   **settings: Any) -> GenerativeScorer:
    """A :class:`GenerativeScorer` for ``model``: a served model when ``api_base`` serves it (its
    chat endpoint), else a local chat model (bundled short name or path); ``prompts`` a prompt
    template file (default: the bundled English templates); ``settings`` those of
    :data:`CHAT_SETTINGS` (others are ignored only if unset)."""
    from ..errors import ProbegenError
    from .chat import load_chat
    from .prompts import prompt_templates

    wrong = sorted(k for k, v in settings.items() if k not in CHAT_SETTINGS and v not in (None, "auto"))
    if wrong:
        raise ProbegenError(f"{', '.join('--' + w.replace('_', '-') for w in wrong)} do(es) not apply to --method "
                            "generate")
    templates = prompt_templates(prompts)  # a malformed file fails before the model loads
    chat = load_chat(model, **{k: v for k, v in settings.items() if k in CHAT_SETTINGS and v is not None})
    return GenerativeScorer(chat, templates, permutations=permutations, seed=seed)
