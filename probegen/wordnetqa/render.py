"""Rendering WordNetQA questions and choices from the question templates of the wordnet's language
(``templates/questions/<language>.yaml`` or ``--templates FILE``). A dataset carries its own
:class:`Templates`, so two datasets in one process each render in their own language. Modes (the
bias diagnostics' partial inputs): ``full`` (the real question), ``context`` (the target replaced
by the nonce, by its span), ``word`` (the word and the choices, no sentence), ``choice`` (the
choices alone).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, cast

import numpy as np

from ..errors import DatasetError, ProbegenError
from ..templating import QuestionTemplates, bundled_languages, question_templates
from ..text import replace_char_span

if TYPE_CHECKING:
    from ..tasks import Dataset
    from .items import MCItem

MODES = ("full", "context", "word", "choice")
# The template id of an item imported from a WordNetQA release row: its stem is not one of
# probegen's templates, so the ablations are cut from the stem itself (``release_parts``).
RELEASE_TEMPLATE = "release"
# Release probes with no templates of their own, rendered with another probe's queries: a
# DictionaryQA row (GCIDE senses) asks for a word's sense in a sentence, as definitions does.
RELEASE_ALIASES = MappingProxyType({"dictionary": "definitions"})

# template id -> (probe, template, its template set; None for a spec's probe)
ById = Mapping[str, "tuple[str, dict[str, Any], dict[str, Any] | None]"]


@lru_cache(maxsize=None)
def _bundled_by_id() -> ById:
    """The bundled question-template sets by template id (the first language's wins a shared id)."""
    sets = [question_templates(lang).data for lang in bundled_languages()]
    return MappingProxyType({t["id"]: (p, t, data) for data in reversed(sets) for p, ps in data["probes"].items()
                             for t in ps["templates"]})


@dataclass(frozen=True, eq=False)
class Templates:
    """The question templates of one WordNetQA dataset: ``questions`` (new items are made with it) and a
    probe spec's ``probes``. An item finds its template by id among them and the bundled sets.

    >>> en = Templates(question_templates("en"))
    >>> en.choice_text("hypernymy", ("domestic_animal", "domesticated_animal"), "any of various animals")
    'domestic animal, defined as any of various animals'
    >>> en.choice_text("synonymy", ("dog", "domestic_dog"), "a member of the genus Canis")
    'dog, domestic dog'
    """

    questions: QuestionTemplates
    probes: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.probes:  # fail at the build or load, not at the first item rendered
            if name in self.questions.data["probes"]:
                raise ProbegenError(f"probe {name!r} is built in ({self.questions.file}); a spec's probe needs "
                                    "another name")
        _ = self.by_id

    @classmethod
    def of_manifest(cls, manifest: Mapping[str, Any] | None) -> Templates:
        """The templates a dataset's manifest records (``question_templates``, ``probe_templates``)."""
        manifest = manifest or {}
        rec = manifest.get("question_templates")
        rec = rec if isinstance(rec, dict) else {}
        if isinstance(rec.get("content"), dict):
            qt = QuestionTemplates(str(rec.get("file")), str(rec.get("language") or "en"), str(rec.get("sha256")),
                                   rec["content"], bundled=False)
        else:
            lang = str(rec.get("language") or "en")
            qt = question_templates(lang if lang in bundled_languages() else "en")
        return cls(qt, dict(manifest.get("probe_templates") or {}))

    @cached_property
    def by_id(self) -> ById:
        """template id -> (probe, template, its template set; None for a spec's probe)."""
        out = dict(_bundled_by_id())
        if not self.questions.bundled:
            data = self.questions.data
            for p, ps in data["probes"].items():
                for t in ps["templates"]:
                    if t["id"] in out and out[t["id"]][1] != t:
                        raise ProbegenError(f"{self.questions.file}: template id {t['id']!r} ({p}) is already used by "
                                            "another template; give every template its own id")
            out.update((t["id"], (p, t, data)) for p, ps in data["probes"].items() for t in ps["templates"]
                       if t["id"] not in out)
        out.update((t["id"], (p, t, None)) for p, ps in self.probes.items() for t in ps["templates"])
        return MappingProxyType(out)

    def probe_spec(self, probe: str) -> dict[str, Any]:
        """The templates of ``probe`` that new items are made with."""
        if probe in self.probes:
            return self.probes[probe]
        probes = self.questions.data["probes"]
        if probe not in probes:
            raise ProbegenError(f"{self.questions.file} has no probe {probe!r}; it has {', '.join(probes)}")
        return cast("dict[str, Any]", probes[probe])

    def template_by_id(self, tid: str) -> dict[str, Any] | None:
        """The template with id ``tid`` (None if no set has such a template)."""
        got = self.by_id.get(tid)
        return got[1] if got else None

    def pick_template(self, probe: str, key: str, seed: int) -> dict[str, Any]:
        """The template of ``probe`` for the question ``key``, seeded by the seed and the key only.

        >>> en = Templates(question_templates("en"))
        >>> (en.pick_template("definitions", "definitions:dog.n.01:c0", 0)
        ...  == en.pick_template("definitions", "definitions:dog.n.01:c0", 0))
        True
        """
        temps = self.probe_spec(probe)["templates"]
        rng = np.random.default_rng([seed, zlib.crc32(f"template/{key}".encode())])
        return cast("dict[str, Any]", temps[int(rng.integers(len(temps)))])

    def choice_text(self, probe: str, lemmas: tuple[str, ...], gloss: str) -> str:
        """A choice rendered from a synset's lemmas and gloss in the probe's format."""
        names = [lem.replace("_", " ") for lem in lemmas]
        return str(self.probe_spec(probe)["choice"].format(lemma=names[0], lemmas=", ".join(names), gloss=gloss))

    def item_templates(self, item: MCItem) -> dict[str, Any]:
        """The template set that made ``item`` (English for release rows and unknown ids)."""
        got = self.by_id.get(item.template)
        return got[2] if got and got[2] is not None else question_templates("en").data

    def item_probe(self, item: MCItem) -> dict[str, Any]:
        """The probe block that made ``item``: its template's set, a spec's probe, else the English one."""
        probes = self.item_templates(item)["probes"]
        probe = RELEASE_ALIASES.get(item.probe, item.probe) if item.template == RELEASE_TEMPLATE else item.probe
        if probe in probes and probe not in self.probes:
            return cast("dict[str, Any]", probes[probe])
        return self.probes.get(probe) or self.probe_spec(probe)

    def query(self, item: MCItem, style: str, mode: str, nonce: str) -> str:
        """The scorer query for ``item`` (``style``: the scorer's ``pattern`` or ``plain``)."""
        return _query(self, item, style, mode, nonce)

    def prompt(self, item: MCItem, mode: str, nonce: str) -> str:
        """The bare question stem a chat model's prompt asks ("" in the choice-only mode)."""
        return "" if mode == "choice" else _query(self, item, "pattern", mode, nonce, bare=True)


@lru_cache(maxsize=None)
def default_templates() -> Templates:
    """The English templates (what a dataset without recorded templates, e.g. release rows, renders with)."""
    return Templates(question_templates("en"))


def templates_of(data: Dataset) -> Templates:
    """The templates ``data`` renders its items with (a stand-in's: those its manifest records)."""
    got = getattr(data, "templates", None)
    return got if isinstance(got, Templates) else Templates.of_manifest(data.manifest)


def fill_stem(template: dict[str, Any], sentence: str, word: str, definition: str) -> str:
    """A stem with its placeholders filled (values are inserted verbatim, braces and all)."""
    return str(template["stem"].format(sentence=sentence, word=word, definition=definition))


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


def _release_context(templates: Templates, item: MCItem, ps: dict[str, Any], lm: bool, nonce: str) -> str:
    """Context query of a release item: its ``stem_spans`` replaced by the nonce (plain: the sentence
    without the target; synonymy: its Full query)."""
    if item.context is None:
        return str(ps["lm_query"].format(stem=item.question)) if lm else templates.query(item, "plain", "full", nonce)
    if lm:
        return str(ps["lm_query"].format(stem=mask_spans(item.question, list(item.stem_spans), nonce)))
    ctx = item.context
    off = item.question.find(ctx.text)
    inside = [(a - off, b - off) for a, b in item.stem_spans if off >= 0 and off <= a and b <= off + len(ctx.text)]
    return str(ps["plain_query"].format(sentence=mask_spans(ctx.text, inside or [ctx.char_span], None), word="",
                                        definition=item.definition))


def _unrenderable(item: MCItem) -> DatasetError:
    return DatasetError(f"item {item.id}: no known template ({item.template!r}) and no located sentence or definition: "
                        "it cannot be rendered as its probe's query")


def _query(templates: Templates, item: MCItem, style: str, mode: str, nonce: str, bare: bool = False) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    lm = style != "plain"
    if mode == "choice":
        return str(templates.item_templates(item)["choice_query"]["lm" if lm else "plain"])
    ps = templates.item_probe(item)
    if bare:  # the question stem itself, not wrapped for a language model's continuation
        ps = {**ps, "lm_query": "{stem}"}
    tmpl = templates.template_by_id(item.template)
    ctx = item.context
    if mode == "full":
        if lm:
            return str(ps["lm_query"].format(stem=item.question))
        if tmpl is None and item.template != RELEASE_TEMPLATE:
            raise _unrenderable(item)  # never the whole stem in place of the probe's query
        if item.template == RELEASE_TEMPLATE and ctx is None and not item.definition:
            return item.question  # a DictionaryQA question without a sentence: its stem is all it asks
        return str(ps["plain_query"].format(sentence=ctx.text if ctx else "", word=item.surface,
                                            definition=item.definition))
    if tmpl is None and item.template != RELEASE_TEMPLATE:
        raise DatasetError(f"item {item.id}: mode {mode!r} needs a probegen item with a known template (got "
                           f"{item.template!r})")
    if mode == "word":
        word = item.surface
        return str(ps["lm_query"].format(stem=ps["word_stem"].format(word=word))) if lm else word
    # context: the target hidden by its span
    if tmpl is None:
        return _release_context(templates, item, ps, lm, nonce)
    if lm:
        sentence = ctx.replaced(nonce) if ctx else ""
        return str(ps["lm_query"].format(stem=fill_stem(tmpl, sentence, nonce, item.definition)))
    return str(ps["plain_query"].format(sentence=ctx.replaced(None) if ctx else "", word="",
                                        definition=item.definition))
