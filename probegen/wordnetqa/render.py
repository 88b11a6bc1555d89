"""Rendering WordNetQA questions and choices from ``templates/wordnetqa.json``.

Question stems and choice formats are data; this module only fills them in. Evaluation renders
the scorer's query from an item in one of four modes (the bias diagnostics' partial inputs):

- ``full``: the real question (the standard evaluation);
- ``context``: the question with the target word replaced by the nonce, by its span, in the
  sentence and in the stem (embedding/static scorers: the sentence with the target removed);
- ``word``: the target word and the choices, no sentence (``word_stem``);
- ``choice``: the choices alone: the same neutral query for every item.
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import DatasetError, ProbegenError
from ..templating import load_template

MODES = ("full", "context", "word", "choice")


def spec() -> dict[str, Any]:
    """The parsed template file."""
    return load_template("wordnetqa")


def probe_spec(probe: str) -> dict[str, Any]:
    probes = spec()["probes"]
    if probe not in probes:
        raise ProbegenError(f"templates/wordnetqa.json has no probe {probe!r}; it has {', '.join(probes)}")
    return probes[probe]


@lru_cache(maxsize=None)
def _by_id() -> dict[str, tuple[str, dict[str, Any]]]:
    return {t["id"]: (p, t) for p, ps in spec()["probes"].items() for t in ps["templates"]}


def template_by_id(tid: str) -> dict[str, Any] | None:
    """The template with id ``tid`` (None if the file has no such template)."""
    got = _by_id().get(tid)
    return got[1] if got else None


def pick_template(probe: str, key: str, seed: int) -> dict[str, Any]:
    """The template of ``probe`` for the question ``key``: a seeded choice that depends only on
    the seed and the key, so regenerating one question never shifts the others.

    >>> pick_template("definitions", "definitions:dog.n.01:c0", 0) == pick_template("definitions", "definitions:dog.n.01:c0", 0)
    True
    """
    temps = probe_spec(probe)["templates"]
    rng = np.random.default_rng([seed, zlib.crc32(f"template/{key}".encode())])
    return temps[int(rng.integers(len(temps)))]


def fill_stem(template: dict[str, Any], sentence: str, word: str, definition: str) -> str:
    """A stem with its placeholders filled (values are inserted verbatim, braces and all)."""
    return template["stem"].format(sentence=sentence, word=word, definition=definition)


def choice_text(probe: str, lemmas: tuple[str, ...], gloss: str) -> str:
    """A choice rendered from a synset's lemmas and gloss in the probe's format.

    >>> choice_text("hypernymy", ("domestic_animal", "domesticated_animal"), "any of various animals")
    'domestic animal, defined as any of various animals'
    >>> choice_text("synonymy", ("dog", "domestic_dog"), "a member of the genus Canis")
    'dog, domestic dog'
    """
    names = [lem.replace("_", " ") for lem in lemmas]
    return probe_spec(probe)["choice"].format(lemma=names[0], lemmas=", ".join(names), gloss=gloss)


def query(item, style: str, mode: str, nonce: str) -> str:
    """The scorer query for ``item`` (``style``: the scorer's ``pattern`` or ``plain``)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    lm = style != "plain"
    if mode == "choice":
        return spec()["choice_query"]["lm" if lm else "plain"]
    ps = probe_spec(item.probe)
    tmpl = template_by_id(item.template)
    ctx = item.context
    if mode == "full":
        if lm:
            return ps["lm_query"].format(stem=item.question)
        if tmpl is None:
            return item.question
        return ps["plain_query"].format(sentence=ctx.text if ctx else "", word=item.surface, definition=item.definition)
    if tmpl is None:
        raise DatasetError(f"item {item.id}: mode {mode!r} needs a probegen item with a known template (got {item.template!r})")
    if mode == "word":
        word = item.surface
        return ps["lm_query"].format(stem=ps["word_stem"].format(word=word)) if lm else word
    # context: the target hidden by its span
    if lm:
        sentence = ctx.replaced(nonce) if ctx else ""
        return ps["lm_query"].format(stem=fill_stem(tmpl, sentence, nonce, item.definition))
    return ps["plain_query"].format(sentence=ctx.replaced(None) if ctx else "", word="", definition=item.definition)
