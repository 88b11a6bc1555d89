"""Rendering CoDA21 groups into scorer queries, for the standard task (``context``: the target
replaced by the made-up word) and its ablations (``full``: the true word stays; ``word``: the word
alone; ``definition``: the same query for every row, so only the prior over definitions counts).
"""

from __future__ import annotations

import string

from ..errors import ProbegenError
from ..templating import load_template
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


def patterns_for(pattern: str | None = None) -> dict[str, str]:
    """Per-POS pattern strings for a named pattern, or a literal pattern whose one placeholder is ``{m}``.

    >>> patterns_for("{m} means")
    {'n': '{m} means', 'v': '{m} means'}
    >>> patterns_for("{m} is a {kind}")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: pattern '{m} is a {kind}' has unknown placeholder {kind}: only {m} (the made-up
    word) is filled in
    """
    spec = load_template("coda21")
    name = pattern or spec["default_pattern"]
    if name in spec["patterns"]:
        patterns = dict(spec["patterns"][name])
    elif "{m}" in name:
        patterns = {"n": name, "v": name}
    else:
        known = ", ".join(spec["patterns"])
        raise ProbegenError(f"unknown pattern {name!r}: use one of {known}, or a literal containing {{m}}")
    for pat in patterns.values():
        _check_placeholders(pat)
    return patterns


def _check_placeholders(pattern: str) -> None:
    """Fail now, with the placeholder named, on what ``pattern.format(m=...)`` would crash on."""
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(pattern) if f is not None]
    except ValueError as e:  # a lone "{" or "}"
        raise ProbegenError(f"pattern {pattern!r} is malformed ({e}); write a literal brace as {{{{ or }}}}") from None
    for f, spec, conv in fields:
        if f != "m" or spec or conv:
            shown = "{" + f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            raise ProbegenError(f"pattern {pattern!r} has unknown placeholder {shown}: only {{m}} (the made-up word) "
                                "is filled in")
    if not fields:
        raise ProbegenError(f"pattern {pattern!r} has no {{m}} placeholder for the made-up word")
