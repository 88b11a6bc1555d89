"""Rendering CoDA21 groups into scorer queries, for the standard task (``context``: the target
replaced by the made-up word) and its ablations (``full``: the true word stays; ``word``: the word
alone; ``definition``: the same query for every row, so only the prior over definitions counts).
"""

from __future__ import annotations

from ..text import replace_char_span
from .items import Context, Group

MODES = ("context", "full", "word", "definition")


def _strip(ctx: Context, replacement: str | None) -> str:
    return replace_char_span(ctx.text, ctx.char_span, replacement)


def query(ctx: Context, pos: str, style: str, mode: str, nonce: str, patterns: dict[str, str]) -> str:
    """One row's query text for a scorer of ``style``: ``pattern`` (LMs: text + pattern) or ``plain``
    (embeddings: the context without the target)."""
    word = ctx.surface
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


def prompt_row(ctx: Context, mode: str, nonce: str) -> str:
    """One row as a chat model's prompt shows it: the word to define in square brackets."""
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
