"""The probe spec schema: a small dataclass tree, read from YAML or JSON and checked field by field.

A spec declares which concepts a probe is about (part of speech, depth, lexicographer files,
SemCor frequency), the relation and hop range that link a concept to its answer (any relation
the WordNet graph carries), the item shape (``alignment``: CoDA21 groups; ``multiple_choice``:
WordNetQA items; ``wic_pair``: WiC-style pairs), its contexts and, for a new multiple-choice
probe, its question templates. Every problem is one ``ProbegenError`` line naming the file and
the field::

    templates/specs/x.yaml: concepts.pos: unknown part of speech 'adverb'; use noun or verb

``load_spec(path, overrides)`` reads a file (``overrides`` are ``key.path=value`` strings whose
values are YAML, applied before validation); ``Spec.canonical()`` is the sorted, compact JSON
that the manifest records with its sha256.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..errors import ProbegenError
from .concepts import ConceptFilter

SHAPES = ("alignment", "multiple_choice", "wic_pair")
POS_NAMES = {"noun": "n", "verb": "v"}
MC_BUILTIN = ("definitions", "hypernymy", "hyponymy", "synonymy")
#: the relation each built-in WordNetQA probe follows (definitions and synonymy follow none)
MC_BUILTIN_RELATION = {"hypernymy": "hypernym", "hyponymy": "hyponym"}
ALIGNMENT_MAX_HOPS = 4
MC_MAX_HOPS = 10
CONTEXT_SOURCES = {"alignment": ("semcor", "examples"), "multiple_choice": ("wordnet", "wordnet+semcor"),
                   "wic_pair": ("semcor",)}


class _Bad(Exception):
    """A field's value is wrong (the message says why); turned into a ProbegenError with the field."""


# ---- field checkers: value -> normalised value, or _Bad -------------------------------------------
def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise _Bad(f"expected a string, got {_kind(v)}")
    return v


def _nonce(v: Any) -> str:
    """A made-up word: 2-30 ASCII letters, or "" for templates/nonce_words.json's default."""
    v = _str(v)
    if v and not (v.isascii() and v.isalpha() and 2 <= len(v) <= 30):
        raise _Bad(f"a made-up word is 2-30 ASCII letters, got {v!r}")
    return v


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Bad(f"expected an integer, got {_kind(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _Bad(f"{v} is out of bounds ({lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'})")
        return v
    return check


def _float(lo: float, hi: float) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(f"expected a number, got {_kind(v)}")
        if not lo <= v <= hi:
            raise _Bad(f"{v} is out of bounds ({lo}..{hi})")
        return float(v)
    return check


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Bad(f"expected true or false, got {_kind(v)}")
    return v


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else check(v)


def _list(check: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    def run(v: Any) -> tuple:
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            v = [v]  # a single value stands for a list of one
        if not isinstance(v, list):
            raise _Bad(f"expected a list, got {_kind(v)}")
        return tuple(check(x) for x in v)
    return run


def _choice(options: tuple[str, ...], what: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if _str(v) not in options:
            raise _Bad(f"unknown {what} {v!r}; use "
                       f"{', '.join(options[:-1]) + ' or ' + options[-1] if len(options) > 1 else options[0]}")
        return v
    return check


def _range(v: Any) -> tuple[int | None, int | None]:
    """``[lo, hi]`` with null for an open end, or one integer for ``[n, n]``."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v, v]
    if not isinstance(v, list) or len(v) != 2:
        raise _Bad(f"expected an integer or a list [lo, hi], got {_kind(v)}")
    lo, hi = (_optional(_int(0))(x) for x in v)
    if lo is not None and hi is not None and lo > hi:
        raise _Bad(f"empty range [{lo}, {hi}]")
    return lo, hi


def _relation_name(v: Any) -> str:
    from ..lexicon.base import QUERYABLE

    return _choice(QUERYABLE, "relation")(v)


def _lexfile(v: Any) -> str:
    from .lexfiles import LEXFILES

    return _choice(LEXFILES, "lexicographer file")(v)


def _kind(v: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), type(v).__name__)


def _f(default: Any, check: Callable[[Any], Any], doc: str = "") -> Any:
    """A spec field: its default, its checker and a one-line description (for the docs)."""
    if isinstance(default, (dict, list)):
        raise TypeError("use a tuple or a dataclass default")
    return field(default=default, metadata={"check": check, "doc": doc})


def _section(cls: type) -> Any:
    return field(default=None, metadata={"section": cls})


# ---- the tree -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Concepts:
    """Which synsets a probe is about."""

    pos: tuple[str, ...] = _f(("noun",), _list(_choice(tuple(POS_NAMES), "part of speech")), "noun and/or verb")
    depth: tuple[int | None, int | None] = _f((None, None), _range, "[min, max] hypernym depth (root = 0); null = open")
    lexfiles: tuple[str, ...] = _f((), _list(_lexfile),
                                   "lexicographer files (noun.artifact, verb.body, ...); empty = any")
    min_semcor: int | None = _f(None, _optional(_int(0)),
                                "least SemCor occurrences [default: alignment 5 SemCor occurrences (clean; 1 = noisy), "
                                "else 0]")


@dataclass(frozen=True)
class Relation:
    """The relation from a concept to its answer (alignment: from the shared synset to the members)."""

    name: str = _f("hyponym", _relation_name, "any relation of probegen.lexicon.QUERYABLE")
    hops: tuple[int | None, int | None] = _f((1, 1), _range, "steps of the relation: n or [min, max]")
    instances: bool = _f(False, _bool, "multiple choice hypernymy/hyponymy: follow instance links too")


@dataclass(frozen=True)
class Alignment:
    """CoDA21-style groups of co-related synsets: clustering and the similarity cap."""

    k_min: int = _f(5, _int(2, 30), "smallest group")
    k_max: int = _f(10, _int(2, 30), "largest group")
    max_similarity: float = _f(0.8, _float(-1.0, 1.0), "cap on the cosine similarity of two definitions in a group")
    embedder: str = _f("minilm-l6", _str, "sentence embedder for definition clustering")


@dataclass(frozen=True)
class MultipleChoice:
    """WordNetQA-style 5-way items: the probe and its distractor policy."""

    probe: str = _f("definitions", _str, "definitions, hypernymy, hyponymy, synonymy, or a new name (needs templates)")
    distractors: tuple[str, ...] = _f(("random", "sister", "isa"),
                                      _list(_choice(("random", "sister", "isa"), "distractor type")),
                                      "perturbations: one item per question and type")
    sister_depth: int = _f(2, _int(1, 5), "sister family depth")
    isa_hops: int = _f(4, _int(1, MC_MAX_HOPS),
                       "definitions/synonymy: ISA distractors at 1..N hops (other probes: relation.hops)")
    max_answers_per_hop: int = _f(1, _int(1), "gold answers sampled per concept and hop")
    min_answer_depth: int = _f(2, _int(0), "noun hypernymy answers nearer the root are skipped")
    max_concepts: int | None = _f(None, _optional(_int(1)), "a seeded sample of N concepts")
    dev_frac: float = _f(0.1, _float(0.0, 0.99), "share of concepts in dev")
    test_frac: float = _f(0.1, _float(0.0, 0.99), "share of concepts in test")


@dataclass(frozen=True)
class WicPair:
    """WiC-style pairs (same lemma, two SemCor contexts, same sense or not)."""

    prune: str = _f("wic", _choice(("wic", "supersense", "related", "none"), "prune rule"),
                    "drop F pairs whose senses are too close")
    max_pairs: int | None = _f(None, _optional(_int(2)), "stop once this many pairs")
    max_pairs_per_lemma: int = _f(6, _int(2), "pairs per lemma")
    max_tokens: int = _f(60, _int(3), "skip longer SemCor sentences")
    dev_frac: float = _f(0.1, _float(0.0, 0.99), "share of lemmas in dev")
    test_frac: float = _f(0.2, _float(0.0, 0.99), "share of lemmas in test")


@dataclass(frozen=True)
class Contexts:
    """Where context sentences come from and how one is chosen."""

    source: str = _f("", _choice(("semcor", "examples", "wordnet", "wordnet+semcor"), "context source"),
                     "alignment: semcor or examples (the synsets' own); multiple_choice: wordnet or wordnet+semcor "
                     "[default: the first]")
    scorer: str = _f("smollm2-135m", _str, "alignment: LM that picks the clearest context, or 'first'")
    max: int = _f(0, _int(1),
                  "contexts per synset (alignment: scored, 10; multiple choice: used, 3) or per lemma (wic_pair: 40)")


@dataclass(frozen=True)
class Templates:
    """Question templates of a new multiple-choice probe (the shape of a probe in templates/questions/en.yaml)."""

    stems: tuple[str, ...] = _f((), _list(_str), "question stems with {sentence}, {word} and/or {definition}")
    choice: str = _f("{lemma}, defined as {gloss}", _str, "a choice from its synset: {lemma}, {lemmas}, {gloss}")
    word_stem: str = _f("", _str, "the question without its sentence (bias diagnostics), with {word}")
    lm_query: str = _f("Question: {stem}\nAnswer:", _str, "a causal/masked LM's query around the stem")
    plain_query: str = _f("{sentence}", _str, "an embedding scorer's query")


@dataclass(frozen=True)
class Spec:
    """One probe family. ``path`` is where it was read from (not part of its identity)."""

    name: str = _f("", _str, "dataset name (default output folder probegen_out/datasets/<name>)")
    description: str = _f("", _str, "what the probe asks, for people")
    shape: str = _f("", _choice(SHAPES, "item shape"), "alignment, multiple_choice or wic_pair")
    seed: int = _f(0, _int(0), "seed of every sampled choice")
    nonce: str = _f("", _nonce, "made-up word that stands for the hidden target in eval, bias and export "
                    "(recorded in the manifest) [default: templates/nonce_words.json]")
    concepts: Concepts = _section(Concepts)
    relation: Relation | None = _section(Relation)
    alignment: Alignment | None = _section(Alignment)
    multiple_choice: MultipleChoice | None = _section(MultipleChoice)
    wic_pair: WicPair | None = _section(WicPair)
    contexts: Contexts = _section(Contexts)
    templates: Templates | None = _section(Templates)
    path: str = field(default="", compare=False, metadata={"internal": True})

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (tuples as lists, absent sections left out, no path)."""
        return _plain(self)

    def canonical(self) -> str:
        """Sorted, compact JSON: equal specs give equal strings."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    @property
    def pos_codes(self) -> tuple[str, ...]:
        return tuple(POS_NAMES[p] for p in self.concepts.pos)

    @property
    def hops(self) -> tuple[int, int]:
        lo, hi = self.relation.hops if self.relation else (1, 1)
        return lo or 1, hi or lo or 1


S = TypeVar("S")


def given(section: S | None, name: str) -> S:
    """A section that a checked spec of its shape has (:func:`parse_spec` fills the shape's sections with
    their defaults); one line naming it if it is missing (a spec built by hand, not parsed).

    >>> given(None, "alignment")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: alignment: missing (the spec's shape needs this section)
    """
    if section is None:
        raise ProbegenError(f"{name}: missing (the spec's shape needs this section)")
    return section


def hop_range(relation: Relation) -> tuple[int, int]:
    """Both ends of ``relation.hops`` (a checked spec has both; one line if one is missing)."""
    lo, hi = relation.hops
    if lo is None or hi is None:
        raise ProbegenError("relation.hops: give both ends of the hop range")
    return lo, hi


def concept_filter(spec: Spec, with_semcor: bool) -> ConceptFilter | None:
    """The spec's lexicographer-file/depth filter (and SemCor floor if ``with_semcor``), None if it admits all."""
    c = spec.concepts
    flt = ConceptFilter(tuple(c.lexfiles), c.depth[0], c.depth[1], (c.min_semcor or 0) if with_semcor else 0)
    return flt if flt.active else None


def _plain(obj: Any) -> Any:
    if is_dataclass(obj):
        return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)
                if not f.metadata.get("internal") and getattr(obj, f.name) is not None}
    if isinstance(obj, tuple):
        return [_plain(x) for x in obj]
    return obj


# ---- parsing ---------------------------------------------------------------------------------------
def _parse(cls: type, raw: Any, where: str) -> Any:
    """An instance of the dataclass ``cls`` from a mapping, checking every key (``where`` = its path)."""
    if not isinstance(raw, dict):
        raise ProbegenError(f"{where or 'the spec'}: expected a mapping, got {_kind(raw)}")
    known = [f for f in fields(cls) if not f.metadata.get("internal")]
    names = {f.name for f in known}
    for key in raw:
        if key not in names:
            raise ProbegenError(f"{_join(where, str(key))}: unknown key; {cls.__name__.lower()} takes "
                                f"{', '.join(sorted(names))}")
    kw: dict[str, Any] = {}
    for f in known:
        if f.name not in raw:
            continue
        path = _join(where, f.name)
        if "section" in f.metadata:
            kw[f.name] = _parse(f.metadata["section"], raw[f.name] if raw[f.name] is not None else {}, path)
            continue
        try:
            kw[f.name] = f.metadata["check"](raw[f.name])
        except _Bad as e:
            raise ProbegenError(f"{path}: {e}") from None
    return cls(**kw)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def parse_spec(raw: Any, path: str = "<spec>") -> Spec:
    """A checked :class:`Spec` from parsed YAML/JSON; every error names ``path`` and the field.

    >>> s = parse_spec({"name": "x", "shape": "alignment", "relation": {"name": "part_meronym"}})
    >>> s.relation.name, s.hops, s.contexts.source, s.concepts.pos
    ('part_meronym', (1, 1), 'semcor', ('noun',))
    >>> parse_spec({"name": "x", "shape": "alignment", "concepts": {"pos": ["adverb"]}}, "a.yaml")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: a.yaml: concepts.pos: unknown part of speech 'adverb'; use noun or verb
    >>> parse_spec({"name": "x", "shape": "alignment", "relation": {"hops": 7}}, "a.yaml")
    Traceback (most recent call last):
    probegen.errors.ProbegenError: a.yaml: relation.hops: alignment members sit 1..4 hops from the shared synset, got 7
    """
    try:
        spec = _parse(Spec, raw, "")
        spec = _complete(spec)
        _check(spec)
    except ProbegenError as e:
        raise ProbegenError(f"{path}: {e}") from None
    return _replace(spec, path=path)


def _replace(obj: Any, **kw: Any) -> Any:
    from dataclasses import replace

    return replace(obj, **kw)


def _complete(s: Spec) -> Spec:
    """Fill the sections a shape needs with their defaults (and the context defaults by shape)."""
    if not s.name:
        raise ProbegenError("name: missing (the dataset's name)")
    if not s.shape:
        raise ProbegenError(f"shape: missing; use {', '.join(SHAPES)}")
    concepts = s.concepts or Concepts()
    if concepts.min_semcor is None:
        concepts = _replace(concepts, min_semcor=5 if s.shape == "alignment" else 0)
    kw: dict[str, Any] = {"concepts": concepts}
    ctx = s.contexts or Contexts()
    source = ctx.source or CONTEXT_SOURCES[s.shape][0]
    default_max = {"alignment": 10, "multiple_choice": 3, "wic_pair": 40}[s.shape]
    kw["contexts"] = _replace(ctx, source=source, max=ctx.max or default_max)
    if s.shape == "alignment":
        kw["alignment"] = s.alignment or Alignment()
        kw["relation"] = s.relation or Relation()
    elif s.shape == "multiple_choice":
        kw["multiple_choice"] = s.multiple_choice or MultipleChoice()
        probe = kw["multiple_choice"].probe
        if s.relation is None and probe in MC_BUILTIN_RELATION:
            kw["relation"] = Relation(name=MC_BUILTIN_RELATION[probe], hops=(1, 4))
    elif s.shape == "wic_pair":
        kw["wic_pair"] = s.wic_pair or WicPair()
    return _replace(s, **kw)


def _check(s: Spec) -> None:
    """The rules that tie fields together (each error names the field it blames)."""
    for other in SHAPES:
        if other != s.shape and getattr(s, other) is not None:
            raise ProbegenError(f"{other}: this section belongs to shape {other}, not {s.shape}")
    if s.contexts.source not in CONTEXT_SOURCES[s.shape]:
        raise ProbegenError(f"contexts.source: shape {s.shape} takes {' or '.join(CONTEXT_SOURCES[s.shape])}, got "
                            f"{s.contexts.source!r}")
    if not s.concepts.pos:
        raise ProbegenError("concepts.pos: name at least one part of speech")
    if len(set(s.concepts.pos)) != len(s.concepts.pos):
        raise ProbegenError("concepts.pos: a part of speech is named twice")
    if s.relation is not None:
        hop_range(s.relation)
    if s.shape == "alignment":
        _check_alignment(s)
    elif s.shape == "multiple_choice":
        _check_mc(s)
    else:
        _check_wic_pair(s)
    if s.shape != "alignment" and s.contexts.scorer != Contexts().scorer:
        raise ProbegenError("contexts.scorer: applies to shape alignment only")


def _check_alignment(s: Spec) -> None:
    rel, al, min_semcor = given(s.relation, "relation"), given(s.alignment, "alignment"), s.concepts.min_semcor
    lo, hi = hop_range(rel)
    if lo != hi or not 1 <= lo <= ALIGNMENT_MAX_HOPS:
        raise ProbegenError(f"relation.hops: alignment members sit 1..{ALIGNMENT_MAX_HOPS} hops from the shared "
                            f"synset, got {lo if lo == hi else [lo, hi]}")
    if rel.instances:
        raise ProbegenError("relation.instances: applies to multiple_choice hypernymy/hyponymy only")
    if al.k_min > al.k_max:
        raise ProbegenError(f"alignment.k_min: {al.k_min} is larger than alignment.k_max {al.k_max}")
    if min_semcor is None or min_semcor < 1:
        raise ProbegenError("concepts.min_semcor: alignment members need at least 1 SemCor context")
    if s.templates is not None:
        raise ProbegenError("templates: alignment items are scored with the patterns of templates/coda21.json "
                            "(eval --pattern)")


def _check_wic_pair(s: Spec) -> None:
    if s.relation is not None:
        raise ProbegenError("relation: WiC-style pairs compare two senses of one lemma; they take no relation")
    c = s.concepts
    if c.lexfiles or c.depth != (None, None) or c.min_semcor:
        raise ProbegenError("concepts: WiC-style pairs filter by part of speech only (lexfiles, depth and "
                            "min_semcor do not apply)")
    if s.templates is not None:
        raise ProbegenError("templates: WiC-style pairs have no question templates")


def _check_mc(s: Spec) -> None:
    mc = given(s.multiple_choice, "multiple_choice")
    if not mc.probe or not mc.probe.replace("-", "").replace("_", "").isalnum():
        raise ProbegenError(f"multiple_choice.probe: {mc.probe!r} is not a probe name (letters, digits, - and _)")
    if mc.dev_frac + mc.test_frac >= 1:
        raise ProbegenError("multiple_choice.test_frac: dev_frac + test_frac must stay below 1, got "
                            f"{mc.dev_frac + mc.test_frac}")
    if mc.probe in MC_BUILTIN:
        want = MC_BUILTIN_RELATION.get(mc.probe)
        got = s.relation.name if s.relation else None
        if got != want:
            raise ProbegenError(f"relation.name: probe {mc.probe} follows "
                                f"{want or 'no relation (leave relation out)'}, got {got}")
        if s.templates is not None:
            raise ProbegenError(f"templates: probe {mc.probe} is built in (templates/questions/); name a new probe to "
                                "write templates")
        if s.relation is not None and s.relation.hops[0] != 1 and mc.probe not in MC_BUILTIN_RELATION:
            raise ProbegenError("relation.hops: applies to relation probes only")
    else:
        if s.relation is None:
            raise ProbegenError(f"relation: the new probe {mc.probe!r} needs a relation (entailment, part_meronym, "
                                "...)")
        if s.relation.instances:
            raise ProbegenError("relation.instances: applies to the hypernymy/hyponymy probes only")
        if s.templates is None or not s.templates.stems:
            raise ProbegenError(f"templates.stems: the new probe {mc.probe!r} needs at least one question stem")
        if not s.templates.word_stem:
            raise ProbegenError("templates.word_stem: missing (the question without its sentence, with {word}; bias "
                                "needs it)")
        _check_placeholders(s.templates)
    if s.relation is not None:
        lo, hi = hop_range(s.relation)
        if not 1 <= lo <= hi <= MC_MAX_HOPS:
            raise ProbegenError(f"relation.hops: multiple choice answers sit 1..{MC_MAX_HOPS} hops away, got [{lo}, "
                                f"{hi}]")


def _check_placeholders(t: Templates) -> None:
    from ..templating import _check_fields

    allowed = {
        "stems": {"sentence", "word", "definition"}, "choice": {"lemma", "lemmas", "gloss"},
        "word_stem": {"word"}, "lm_query": {"stem"}, "plain_query": {"sentence", "word", "definition"},
    }
    for name, ok in allowed.items():
        values = getattr(t, name)
        for i, text in enumerate(values if isinstance(values, tuple) else (values,)):
            where = f"templates.{name}" + (f"[{i}]" if isinstance(values, tuple) else "")
            _check_fields(text, sorted(ok), where)  # an unknown name, a format spec or a conversion


# ---- files ------------------------------------------------------------------------------------------
SPEC_DIR = "specs"
#: a spec is a page of YAML; a larger file is a mistake, refused before parsing
MAX_SPEC_BYTES = 2**20


def builtin_specs() -> dict[str, Path]:
    """Name -> file of every spec shipped in ``templates/specs/``."""
    from importlib import resources

    root = resources.files("probegen.templates").joinpath(SPEC_DIR)
    return {Path(p.name).stem: Path(str(p)) for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith((".yaml", ".yml", ".json"))}


def resolve_spec_path(name_or_path: str) -> Path:
    """A spec file path, or the built-in spec of that name (``coda21-clean-hard``)."""
    p = Path(name_or_path)
    if p.exists():
        return p
    specs = builtin_specs()
    if name_or_path in specs:
        return specs[name_or_path]
    raise ProbegenError(f"spec {name_or_path} not found: not a file, nor a built-in spec ({', '.join(specs)})")


def read_raw(path: str | Path) -> Any:
    """The parsed YAML or JSON of a spec file (JSON is read as JSON, anything else as YAML)."""
    import yaml

    from ..io import load_yaml, read_text

    p = Path(path)
    text = read_text(p, MAX_SPEC_BYTES, "spec file", ProbegenError)  # refused unread when too large
    try:
        if p.suffix == ".json":
            return json.loads(text)
        return load_yaml(text)  # no aliases (a "billion laughs")
    except json.JSONDecodeError as e:
        raise ProbegenError(f"{p}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise ProbegenError(f"{p}: nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        pos = getattr(e, "position", None)  # a ReaderError (a character YAML forbids) has no mark
        line = mark.line + 1 if mark is not None else text.count("\n", 0, pos) + 1 if pos is not None else None
        why = " ".join(str(getattr(e, "problem", None) or getattr(e, "reason", None) or e).split())
        raise ProbegenError(f"{p}: not valid YAML ({why}{f' at line {line}' if line else ''})") from None


def apply_overrides(raw: Any, overrides: list[str] | tuple[str, ...], path: str = "<spec>") -> Any:
    """``raw`` with each ``a.b.c=value`` set (the value read as YAML: ``[verb]``, ``3``, ``first``).

    >>> apply_overrides({"contexts": {"max": 10}}, ["contexts.scorer=first", "concepts.pos=[verb]"])
    {'contexts': {'max': 10, 'scorer': 'first'}, 'concepts': {'pos': ['verb']}}
    """
    import copy

    import yaml

    from ..io import load_yaml

    out = copy.deepcopy(raw) if isinstance(raw, dict) else raw
    for ov in overrides:
        key, eq, value = ov.partition("=")
        if not eq or not key.strip():
            raise ProbegenError(f"--set {ov!r}: expected KEY=VALUE, e.g. contexts.scorer=first")
        if not isinstance(out, dict):
            raise ProbegenError(f"{path}: expected a mapping at the top, got {_kind(out)}")
        try:
            parsed = load_yaml(value)
        except yaml.YAMLError:
            raise ProbegenError(f"--set {ov!r}: the value is not valid YAML") from None
        node = out
        parts = key.strip().split(".")
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            if not isinstance(nxt, dict):
                raise ProbegenError(f"--set {ov!r}: {'.'.join(parts[: i + 1])} is not a section")
            node = nxt
        node[parts[-1]] = parsed
    return out


def load_spec(name_or_path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Spec:
    """Read, override and check a spec file (or a built-in spec by name)."""
    p = resolve_spec_path(str(name_or_path))
    return parse_spec(apply_overrides(read_raw(p), overrides, str(p)), str(p))
