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

import re
import zlib
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import DatasetError, ProbegenError
from ..templating import load_template
from ..text import replace_char_span

MODES = ("full", "context", "word", "choice")
# The template id of an item imported from a WordNetQA release row: its stem is not one of
# probegen's templates, so the ablations are cut from the stem itself (``release_parts``).
RELEASE_TEMPLATE = "release"


def spec() -> dict[str, Any]:
    """The parsed template file."""
    return load_template("wordnetqa")


# Probes declared by probe specs (probegen.spec), in the same shape as a templates/wordnetqa.json
# probe; a spec-built dataset records them in its manifest and ``dataset.load`` registers them.
_EXTRA_PROBES: dict[str, dict[str, Any]] = {}


def register_probe(name: str, block: dict[str, Any]) -> None:
    """Make a spec-declared probe's templates known (the built-in probes cannot be replaced)."""
    if name in spec()["probes"]:
        raise ProbegenError(f"probe {name!r} is built in (templates/wordnetqa.json); a spec's probe needs another name")
    _EXTRA_PROBES[name] = block
    _by_id.cache_clear()


def probe_spec(probe: str) -> dict[str, Any]:
    probes = spec()["probes"]
    if probe in _EXTRA_PROBES:
        return _EXTRA_PROBES[probe]
    if probe not in probes:
        raise ProbegenError(f"templates/wordnetqa.json has no probe {probe!r}; it has {', '.join(probes)}")
    return probes[probe]


@lru_cache(maxsize=None)
def _by_id() -> dict[str, tuple[str, dict[str, Any]]]:
    every = {**spec()["probes"], **_EXTRA_PROBES}
    return {t["id"]: (p, t) for p, ps in every.items() for t in ps["templates"]}


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


def word_spans(text: str, word: str) -> list[tuple[int, int]]:
    """Character spans of ``word`` as a whole word (case-insensitive) in ``text``.

    >>> word_spans('the mice saw "ice" and Ice', "ice")
    [(14, 17), (23, 26)]
    """
    if not word.strip():
        return []
    pat = re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", re.IGNORECASE)
    return [m.span() for m in pat.finditer(text)]


def quoted_span(stem: str, word: str) -> tuple[int, int]:
    """The span of the quoted sentence (or definition) in a release stem, inside its quotes.

    Quotes that enclose just the word (``the word "X"``) are set aside; the sentence runs from
    the first remaining double quote to the last, so quotes inside the sentence do not cut it.

    >>> stem = 'In the sentence "the ice melted", the word "ice" is best defined as:'
    >>> a, b = quoted_span(stem, "ice"); stem[a:b]
    'the ice melted'
    """
    word_quotes = set()
    for m in re.finditer(re.escape(f'"{word}"'), stem, re.IGNORECASE):
        word_quotes.update((m.start(), m.end() - 1))
    qs = [i for i, ch in enumerate(stem) if ch == '"' and i not in word_quotes]
    if len(qs) < 2:
        raise DatasetError("the stem has no quoted sentence")
    return qs[0] + 1, qs[-1]


def release_parts(probe: str, stem: str, surface: str) -> tuple[str, list[tuple[int, int]], str]:
    """(sentence, spans of the surface form in it, definition) of a release stem.

    Definitions, hypernymy and hyponymy stems quote a sentence in which the surface form must
    occur as a whole word (else the item cannot be ablated: ``DatasetError``); a synonymy stem
    quotes the definition and has no sentence.

    >>> release_parts("hypernymy", 'In "a dog barked", the word or concept "dog" is best described as a type of', "dog")
    ('a dog barked', [(2, 5)], '')
    >>> release_parts("synonymy", 'Which words best correspond to "a domesticated canine"?', "dog")
    ('', [], 'a domesticated canine')
    """
    if not surface.strip():
        raise DatasetError("notes.surface_form is empty")
    a, b = quoted_span(stem, surface)
    if probe == "synonymy":
        return "", [], stem[a:b]
    sentence = stem[a:b]
    spans = word_spans(sentence, surface)
    if not spans:
        raise DatasetError(f"surface form {surface!r} is not a whole word of the quoted sentence {sentence[:60]!r}")
    return sentence, spans, ""


def mask_spans(text: str, spans: list[tuple[int, int]], replacement: str | None) -> str:
    """``text`` with every span replaced (right to left, so earlier spans stay valid).

    >>> mask_spans("a dog saw a dog", [(2, 5), (12, 15)], "bkatuhla")
    'a bkatuhla saw a bkatuhla'
    """
    for span in sorted(spans, reverse=True):
        text = replace_char_span(text, span, replacement)
    return text


def _release_context(item, ps: dict[str, Any], lm: bool, nonce: str) -> str:
    """Context query of a release item: every whole-word occurrence of the surface form in the
    stem masked by its span (in the quoted sentence and in the word's own quotes). A synonymy
    stem has no sentence: its Context query is its Full query, as for generated items."""
    if item.context is None:
        return query(item, "pattern" if lm else "plain", "full", nonce)
    if lm:
        return ps["lm_query"].format(stem=mask_spans(item.question, word_spans(item.question, item.surface), nonce))
    sentence, spans, definition = release_parts(item.probe, item.question, item.surface)
    return ps["plain_query"].format(sentence=mask_spans(sentence, spans, None), word="", definition=definition or item.definition)


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
        if tmpl is None and item.template != RELEASE_TEMPLATE:
            return item.question
        return ps["plain_query"].format(sentence=ctx.text if ctx else "", word=item.surface, definition=item.definition)
    if tmpl is None and item.template != RELEASE_TEMPLATE:
        raise DatasetError(f"item {item.id}: mode {mode!r} needs a probegen item with a known template (got {item.template!r})")
    if mode == "word":
        word = item.surface
        return ps["lm_query"].format(stem=ps["word_stem"].format(word=word)) if lm else word
    # context: the target hidden by its span
    if tmpl is None:
        return _release_context(item, ps, lm, nonce)
    if lm:
        sentence = ctx.replaced(nonce) if ctx else ""
        return ps["lm_query"].format(stem=fill_stem(tmpl, sentence, nonce, item.definition))
    return ps["plain_query"].format(sentence=ctx.replaced(None) if ctx else "", word="", definition=item.definition)
