"""Loading the probe templates that live as data files in ``templates/``."""

from __future__ import annotations

import json
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


def coda21_patterns(pattern: str | None = None) -> dict[str, str]:
    """Per-POS pattern strings for a named pattern, or a literal pattern containing ``{m}``."""
    spec = load_template("coda21")
    name = pattern or spec["default_pattern"]
    if name in spec["patterns"]:
        return dict(spec["patterns"][name])
    if "{m}" in name:
        return {"n": name, "v": name}
    known = ", ".join(spec["patterns"])
    raise ProbegenError(f"unknown pattern {name!r}: use one of {known}, or a literal containing {{m}}")
