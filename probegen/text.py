"""Turning token lists into text while hiding the target by its token span.

Targets are always replaced by position (``span``), never by string search: replacing the
string "ice" would also hit "mice" and "iceberg".
"""

from __future__ import annotations

import re

# Penn-Treebank quotes as SemCor writes them, mapped to plain ASCII quotes.
_QUOTES = {"``": '"', "''": '"', "`": "'"}
_NO_SPACE_BEFORE = re.compile(r"^(?:[.,;:!?%)\]}]|'s|'S|n't|'re|'ve|'ll|'d|'m|\.\.\.)$")
_NO_SPACE_AFTER = {"(", "[", "{", "$"}


def detokenize(tokens: list[str] | tuple[str, ...]) -> tuple[str, list[tuple[int, int]]]:
    """Join tokens into readable text; return the text and each token's character span.

    >>> detokenize(["He", "said", ",", "``", "go", "''", "."])
    ('He said, "go".', [(0, 2), (3, 7), (7, 8), (9, 10), (10, 12), (12, 13), (13, 14)])
    """
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    open_quote = False
    prev = None
    for tok in tokens:
        tok = _QUOTES.get(tok, tok)
        glue = bool(parts) and not _NO_SPACE_BEFORE.match(tok) and prev not in _NO_SPACE_AFTER
        if tok == '"':
            # opening quotes attach to the next word, closing quotes to the previous one
            if open_quote:
                glue = False
            open_quote = not open_quote
        elif prev == '"' and open_quote:
            glue = False
        if glue:
            parts.append(" ")
            pos += 1
        spans.append((pos, pos + len(tok)))
        parts.append(tok)
        pos += len(tok)
        prev = tok
    return "".join(parts), spans


def replace_span(tokens: list[str] | tuple[str, ...], span: tuple[int, int], replacement: str) -> str:
    """The text with tokens ``span[0]:span[1]`` replaced by ``replacement`` (one word).

    >>> replace_span(["The", "mice", "saw", "ice", "."], (3, 4), "bkatuhla")
    'The mice saw bkatuhla.'
    """
    start, end = span
    if not 0 <= start < end <= len(tokens):
        raise ValueError(f"span {span} outside a context of {len(tokens)} tokens")
    return detokenize(list(tokens[:start]) + [replacement] + list(tokens[end:]))[0]


def remove_span(tokens: list[str] | tuple[str, ...], span: tuple[int, int]) -> str:
    """The text with the target tokens dropped (the embedding baselines' query).

    >>> remove_span(["He", "visited", "New", "York", "twice", "."], (2, 4))
    'He visited twice.'
    """
    start, end = span
    if not 0 <= start < end <= len(tokens):
        raise ValueError(f"span {span} outside a context of {len(tokens)} tokens")
    return detokenize(list(tokens[:start]) + list(tokens[end:]))[0]


def split_at_span(tokens: list[str] | tuple[str, ...], span: tuple[int, int]) -> tuple[str, str, str]:
    """(left, target, right) texts joining to ``detokenize(tokens)``, the target with its leading space
    (as a causal LM sees a word inside a sentence).

    >>> split_at_span(["The", "mice", "saw", "ice", "."], (3, 4))
    ('The mice saw', ' ice', '.')
    """
    text, spans = detokenize(tokens)
    start, end = span
    a = spans[start][0]
    b = spans[end - 1][1]
    # move the separating space into the target so the left context has no trailing space
    if a > 0 and text[a - 1] == " ":
        a -= 1
    return text[:a], text[a:b], text[b:]


def replace_char_span(text: str, span: tuple[int, int], replacement: str | None) -> str:
    """``text`` with characters ``span`` replaced by ``replacement``, or dropped (spaces tidied) if None.

    >>> replace_char_span("the mice saw ice", (13, 16), "bkatuhla")
    'the mice saw bkatuhla'
    >>> replace_char_span("the ice melted", (4, 7), None)
    'the melted'
    """
    a, b = span
    left, right = text[:a], text[b:]
    if replacement is not None:
        return left + replacement + right
    left, right = left.rstrip(), right.lstrip()
    glue = " " if left and right and right[0].isalnum() else ""
    return left + glue + right
