"""Loading the probe templates that live as data files in ``templates/``."""

from __future__ import annotations

import json
import string
from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import ProbegenError


@lru_cache(maxsize=None)
def load_template(name: str) -> dict[str, Any]:
    """The parsed JSON template file ``templates/<name>.json``."""
    try:
        text = resources.files("templates").joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProbegenError(f"template file templates/{name}.json not found") from None
    return json.loads(text)


def default_nonce() -> str:
    """The default made-up word (CoDA21's 'bkatuhla')."""
    return load_template("nonce_words")["default"]


def dataset_nonce(manifest: dict | None) -> str:
    """The made-up word a dataset asks for (its manifest's ``nonce``, set by a probe spec), else
    the default.

    >>> dataset_nonce({"nonce": "wugaflor"}), dataset_nonce({})
    ('wugaflor', 'bkatuhla')
    """
    return (manifest or {}).get("nonce") or default_nonce()


def coda21_patterns(pattern: str | None = None) -> dict[str, str]:
    """Per-POS pattern strings for a named pattern, or a literal pattern containing ``{m}``.

    ``{m}`` (the made-up word) is the only placeholder; a literal brace is written ``{{`` or ``}}``.

    >>> coda21_patterns("{m} means")
    {'n': '{m} means', 'v': '{m} means'}
    >>> coda21_patterns("{m} is a {kind}")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: pattern '{m} is a {kind}' has unknown placeholder {kind}: only {m} (the made-up word) is filled in
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
            raise ProbegenError(f"pattern {pattern!r} has unknown placeholder {shown}: only {{m}} (the made-up word) is filled in")
    if not fields:
        raise ProbegenError(f"pattern {pattern!r} has no {{m}} placeholder for the made-up word")
