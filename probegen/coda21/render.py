"""Rendering CoDA21 groups into scorer queries, for the standard task and its ablations.

Modes (the bias diagnostics rerun the same groups with partial input):
- ``context``: the standard task; the target is replaced by the made-up word.
- ``full``: the true target word stays in the context.
- ``word``: the target word alone, no context.
- ``definition``: no context and no word; every row gets the same query, so only the model's
  prior over definitions can separate them.
"""

from __future__ import annotations

from ..text import replace_char_span
from .items import Context, Group

MODES = ("context", "full", "word", "definition")


def _strip(ctx: Context, replacement: str | None) -> str:
    return replace_char_span(ctx.text, ctx.char_span, replacement)


def query(ctx: Context, pos: str, style: str, mode: str, nonce: str, patterns: dict[str, str]) -> str:
    """One row's query text.

    ``style`` is the scorer's: ``pattern`` (LMs: text + pattern, e.g. "... Definition of m is"),
    ``plain`` (embeddings: the context with the target removed) or ``generate`` (a prompt's row:
    the context with the word to define in square brackets, the made-up word in its place in the
    ``context`` mode; the word alone in ``word``; nothing in ``definition``).
    """
    word = ctx.surface
    if style == "generate":
        return _generate_row(ctx, mode, nonce)
    if mode == "context":
        m, text = nonce, (_strip(ctx, nonce) if style == "pattern" else _strip(ctx, None))
    elif mode == "full":
        m, text = word, ctx.text
    elif mode == "word":
        m, text = word, (word if style == "plain" else "")
    elif mode == "definition":
        m, text = nonce, ""
    else:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    if style == "plain":
        return text
    pat = patterns[pos].format(m=m)
    return f"{text} {pat}" if text else pat


def _generate_row(ctx: Context, mode: str, nonce: str) -> str:
    if mode == "context":
        return _strip(ctx, f"[{nonce}]")
    if mode == "full":
        return _strip(ctx, f"[{ctx.surface}]")
    if mode == "word":
        return f"[{ctx.surface}]"
    if mode == "definition":
        return ""
    raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")


def render_group(group: Group, style: str, mode: str, nonce: str, patterns: dict[str, str]) -> list[str]:
    """Queries for every row (item contexts in stored order)."""
    return [query(it.context, group.pos, style, mode, nonce, patterns) for it in group.items]
