"""Rendering WordNetQA questions and choices from the question templates of the wordnet's language
(``templates/questions/<language>.yaml``, or ``--templates FILE``; see ``probegen.templating``).

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
from ..templating import QuestionTemplates, bundled_languages, question_templates
from ..text import replace_char_span

MODES = ("full", "context", "word", "choice")
# The template id of an item imported from a WordNetQA release row: its stem is not one of
# probegen's templates, so the ablations are cut from the stem itself (``release_parts``).
RELEASE_TEMPLATE = "release"
# Release probes with no templates of their own, rendered with another probe's queries: a
# DictionaryQA row (GCIDE senses) asks for a word's sense in a sentence, as definitions does.
RELEASE_ALIASES = {"dictionary": "definitions"}


# The question templates new items are made with (``use_templates``: a build picks them by the
# wordnet's language or --templates FILE); None is English.
_ACTIVE: QuestionTemplates | None = None
# Question-template sets of the user's own that datasets recorded (by sha256): a generated item's
# template id finds its set, so eval and bias render it in its own language.
_SETS: dict[str, dict[str, Any]] = {}


def active() -> QuestionTemplates:
    """The question templates new items are made with."""
    return _ACTIVE or question_templates("en")


def spec() -> dict[str, Any]:
    """The parsed question templates new items are made with (English unless a build chose others)."""
    return active().data


def use_templates(qt: QuestionTemplates) -> None:
    """Make new items with ``qt`` from now on (its template ids become known to eval too)."""
    global _ACTIVE
    if not qt.bundled:
        register_templates(qt.data, qt.file, qt.sha256)
    _ACTIVE = qt


def register_templates(data: dict[str, Any], name: str, sha256: str) -> None:
    """Make a question-template set known by its template ids (a dataset's recorded ``content``);
    an id another set already uses for a different template is a one-line error."""
    if sha256 in _SETS:
        return
    known = _by_id()
    for p, ps in data["probes"].items():
        for t in ps["templates"]:
            if t["id"] in known and known[t["id"]][1] != t:
                raise ProbegenError(f"{name}: template id {t['id']!r} ({p}) is already used by another template; "
                                    "give every template its own id")
    _SETS[sha256] = data
    _by_id.cache_clear()


# Probes declared by probe specs (probegen.spec), in the same shape as a question-template file's
# probe; a spec-built dataset records them in its manifest and ``dataset.load`` registers them.
_EXTRA_PROBES: dict[str, dict[str, Any]] = {}


def register_probe(name: str, block: dict[str, Any]) -> None:
    """Make a spec-declared probe's templates known (the built-in probes cannot be replaced)."""
    if name in spec()["probes"]:
        raise ProbegenError(f"probe {name!r} is built in ({active().file}); a spec's probe needs another name")
    _EXTRA_PROBES[name] = block
    _by_id.cache_clear()


def probe_spec(probe: str) -> dict[str, Any]:
    """The templates of ``probe`` that new items are made with."""
    probes = spec()["probes"]
    if probe in _EXTRA_PROBES:
        return _EXTRA_PROBES[probe]
    if probe not in probes:
        raise ProbegenError(f"{active().file} has no probe {probe!r}; it has {', '.join(probes)}")
    return probes[probe]


@lru_cache(maxsize=None)
def _by_id() -> dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """template id -> (probe, template, its template set; None for a spec's probe)."""
    sets = [question_templates(lang).data for lang in bundled_languages()] + list(_SETS.values())
    out = {t["id"]: (p, t, data) for data in reversed(sets) for p, ps in data["probes"].items()
           for t in ps["templates"]}
    out.update((t["id"], (p, t, None)) for p, ps in _EXTRA_PROBES.items() for t in ps["templates"])
    return out


def _item_templates(item) -> dict[str, Any]:
    """The template set that made ``item`` (English for release rows and unknown ids)."""
    got = _by_id().get(item.template)
    return got[2] if got and got[2] is not None else question_templates("en").data


def _item_probe(item) -> dict[str, Any]:
    """The probe block that made ``item``: its template's set, a spec's probe, else the English one."""
    probes = _item_templates(item)["probes"]
    probe = RELEASE_ALIASES.get(item.probe, item.probe) if item.template == RELEASE_TEMPLATE else item.probe
    if probe in probes and probe not in _EXTRA_PROBES:
        return probes[probe]
    return _EXTRA_PROBES.get(probe) or probe_spec(probe)


def template_by_id(tid: str) -> dict[str, Any] | None:
    """The template with id ``tid`` (None if the file has no such template)."""
    got = _by_id().get(tid)
    return got[1] if got else None


def pick_template(probe: str, key: str, seed: int) -> dict[str, Any]:
    """The template of ``probe`` for the question ``key``: a seeded choice that depends only on
    the seed and the key, so regenerating one question never shifts the others.

    >>> use_templates(question_templates("en"))
    >>> (pick_template("definitions", "definitions:dog.n.01:c0", 0)
    ...  == pick_template("definitions", "definitions:dog.n.01:c0", 0))
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

    >>> use_templates(question_templates("en"))  # what a build on an English wordnet chooses
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


def mask_spans(text: str, spans: list[tuple[int, int]], replacement: str | None) -> str:
    """``text`` with every span replaced (right to left, so earlier spans stay valid).

    >>> mask_spans("a dog saw a dog", [(2, 5), (12, 15)], "bkatuhla")
    'a bkatuhla saw a bkatuhla'
    """
    for span in sorted(spans, reverse=True):
        text = replace_char_span(text, span, replacement)
    return text


def _release_context(item, ps: dict[str, Any], lm: bool, nonce: str) -> str:
    """Context query of a release item: the spans of its stem recorded at reading (the target in
    the quoted sentence and the word's own quotes, ``item.stem_spans``) replaced by the nonce; a
    plain query is the sentence with the target removed. A synonymy stem has no sentence: its
    Context query is its Full query, as for generated items."""
    if item.context is None:
        return ps["lm_query"].format(stem=item.question) if lm else query(item, "plain", "full", nonce)
    if lm:
        return ps["lm_query"].format(stem=mask_spans(item.question, list(item.stem_spans), nonce))
    ctx = item.context
    off = item.question.find(ctx.text)
    inside = [(a - off, b - off) for a, b in item.stem_spans if off >= 0 and off <= a and b <= off + len(ctx.text)]
    return ps["plain_query"].format(sentence=mask_spans(ctx.text, inside or [ctx.char_span], None), word="",
                                    definition=item.definition)


def _unrenderable(item) -> DatasetError:
    return DatasetError(f"item {item.id}: no known template ({item.template!r}) and no located sentence or definition: "
                        "it cannot be rendered as its probe's query")


def query(item, style: str, mode: str, nonce: str) -> str:
    """The scorer query for ``item`` (``style``: the scorer's ``pattern`` or ``plain``, or
    ``generate``: the bare question stem a prompt asks, "" in the choice-only mode)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    if style == "generate":
        return "" if mode == "choice" else _query(item, "pattern", mode, nonce, bare=True)
    return _query(item, style, mode, nonce)


def _query(item, style: str, mode: str, nonce: str, bare: bool = False) -> str:
    lm = style != "plain"
    if mode == "choice":
        return _item_templates(item)["choice_query"]["lm" if lm else "plain"]
    ps = _item_probe(item)
    if bare:  # the question stem itself, not wrapped for a language model's continuation
        ps = {**ps, "lm_query": "{stem}"}
    tmpl = template_by_id(item.template)
    ctx = item.context
    if mode == "full":
        if lm:
            return ps["lm_query"].format(stem=item.question)
        if tmpl is None and item.template != RELEASE_TEMPLATE:
            raise _unrenderable(item)  # never the whole stem in place of the probe's query
        if item.template == RELEASE_TEMPLATE and ctx is None and not item.definition:
            return item.question  # a DictionaryQA question without a sentence: its stem is all it asks
        return ps["plain_query"].format(sentence=ctx.text if ctx else "", word=item.surface, definition=item.definition)
    if tmpl is None and item.template != RELEASE_TEMPLATE:
        raise DatasetError(f"item {item.id}: mode {mode!r} needs a probegen item with a known template (got "
                           f"{item.template!r})")
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
