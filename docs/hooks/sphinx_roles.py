"""A griffe extension for the API reference: probegen's docstrings use Sphinx roles
(``:func:`score```, ``:class:`~probegen.runner.Runner```) and bare doctests, which mkdocstrings'
parsers leave as literal text (a doctest's ``[...][:4]`` even reads as a Markdown link). Roles
become code spans (``~`` keeps the last name only) and each doctest a ``pycon`` code block, so
the pages read as the docstrings do in an editor."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|obj|exc|const):`(~?)([^`]+)`")


def _plain(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


def _fence_doctests(text: str) -> str:
    """Wrap each run of ``>>>`` lines and their output (up to a blank line) in a pycon block."""
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        if not inside and line.lstrip().startswith(">>>"):
            out += ["```pycon"]
            inside = True
        elif inside and not line.strip():
            out += ["```"]
            inside = False
        out.append(line)
    return "\n".join(out + (["```"] if inside else []))


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles to code spans and doctests to code blocks in every docstring."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _ROLE.sub(_plain, obj.docstring.value).replace("``", "`")
            obj.docstring.value = _fence_doctests(text)
