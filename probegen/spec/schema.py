"""The probe spec schema: a small dataclass tree, read from YAML or JSON and checked field by field.

A spec declares the concepts, the relation and hop range to the answer, the item shape (a
registered kind's: :func:`spec_sections`), its contexts and question templates. Every problem is
one ``ProbegenError`` line naming the file and the field (``x.yaml: concepts.pos: unknown part of
speech 'adverb'; use noun or verb``). ``Spec.canonical()`` is what the manifest records.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, TypeVar, cast

from ..errors import ProbegenError
from .concepts import ConceptFilter

POS_NAMES = {"noun": "n", "verb": "v"}


class Bad(Exception):
    """A field's value is wrong (the message says why); turned into a ProbegenError with the field."""


# ---- field checkers: value -> normalised value, or Bad -------------------------------------------
def string(v: Any) -> str:
    if not isinstance(v, str):
        raise Bad(f"expected a string, got {_kind(v)}")
    return v


def _nonce(v: Any) -> str:
    """A made-up word: 2-30 ASCII letters, or "" for templates/nonce_words.json's default."""
    v = string(v)
    if v and not (v.isascii() and v.isalpha() and 2 <= len(v) <= 30):
        raise Bad(f"a made-up word is 2-30 ASCII letters, got {v!r}")
    return str(v)


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise Bad(f"expected an integer, got {_kind(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise Bad(f"{v} is out of bounds ({lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'})")
        return v
    return check


def number(lo: float, hi: float) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Bad(f"expected a number, got {_kind(v)}")
        if not lo <= v <= hi:
            raise Bad(f"{v} is out of bounds ({lo}..{hi})")
        return float(v)
    return check


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise Bad(f"expected true or false, got {_kind(v)}")
    return v


def optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else check(v)


def list_of(check: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, ...]]:
    def run(v: Any) -> tuple[Any, ...]:
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            v = [v]  # a single value stands for a list of one
        if not isinstance(v, list):
            raise Bad(f"expected a list, got {_kind(v)}")
        return tuple(check(x) for x in v)
    return run


def one_of(options: tuple[str, ...], what: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if string(v) not in options:
            raise Bad(f"unknown {what} {v!r}; use "
                       f"{', '.join(options[:-1]) + ' or ' + options[-1] if len(options) > 1 else options[0]}")
        return str(v)
    return check


def int_range(v: Any) -> tuple[int | None, int | None]:
    """``[lo, hi]`` with null for an open end, or one integer for ``[n, n]``."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v, v]
    if not isinstance(v, list) or len(v) != 2:
        raise Bad(f"expected an integer or a list [lo, hi], got {_kind(v)}")
    lo, hi = (optional(integer(0))(x) for x in v)
    if lo is not None and hi is not None and lo > hi:
        raise Bad(f"empty range [{lo}, {hi}]")
    return lo, hi


def _relation_name(v: Any) -> str:
    from ..lexicon.base import QUERYABLE

    return one_of(QUERYABLE, "relation")(v)


def _lexfile(v: Any) -> str:
    from .lexfiles import LEXFILES

    return one_of(LEXFILES, "lexicographer file")(v)


def _kind(v: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), type(v).__name__)


def spec_field(default: Any, check: Callable[[Any], Any], doc: str = "") -> Any:
    """A spec field: its default, its checker and a one-line description (for the docs)."""
    if isinstance(default, (dict, list)):
        raise TypeError("use a tuple or a dataclass default")
    return field(default=default, metadata={"check": check, "doc": doc})


def _section(cls: type) -> Any:
    return field(default=None, metadata={"section": cls})


def _shape(v: Any) -> str:
    """A registered shape (resolved when a spec is read: plugins register theirs)."""
    return one_of(tuple(spec_sections()), "item shape")(v)


def _context_source(v: Any) -> str:
    """A context source some registered shape takes (:meth:`Spec` checks it against the spec's shape)."""
    sources = tuple(dict.fromkeys(src for sec in spec_sections().values() for src in sec.context_sources))
    return one_of(sources, "context source")(v)


# ---- the tree -------------------------------------------------------------------------------------
S = TypeVar("S")


@dataclass(frozen=True)
class Concepts:
    """Which synsets a probe is about."""

    pos: tuple[str, ...] = spec_field(("noun",), list_of(one_of(tuple(POS_NAMES), "part of speech")),
                                      "noun and/or verb")
    depth: tuple[int | None, int | None] = spec_field((None, None), int_range,
                                                      "[min, max] hypernym depth (root = 0); null = open")
    lexfiles: tuple[str, ...] = spec_field((), list_of(_lexfile),
                                           "lexicographer files (noun.artifact, verb.body, ...); empty = any")
    min_semcor: int | None = spec_field(None, optional(integer(0)),
                                        "least SemCor occurrences [default: the shape's; alignment 5 (clean; "
                                        "1 = noisy), else 0]")


@dataclass(frozen=True)
class Relation:
    """The relation from a concept to its answer (alignment: from the shared synset to the members)."""

    name: str = spec_field("hyponym", _relation_name, "any relation of probegen.lexicon.QUERYABLE")
    hops: tuple[int | None, int | None] = spec_field((1, 1), int_range, "steps of the relation: n or [min, max]")
    instances: bool = spec_field(False, boolean, "multiple choice hypernymy/hyponymy: follow instance links too")


@dataclass(frozen=True)
class Contexts:
    """Where context sentences come from and how one is chosen."""

    source: str = spec_field("", _context_source,
                     "alignment: semcor or examples (the synsets' own); multiple_choice: wordnet or wordnet+semcor "
                     "[default: the first]")
    scorer: str = spec_field("smollm2-135m", string, "alignment: LM that picks the clearest context, or 'first'")
    max: int = spec_field(0, integer(1),
                  "contexts per synset (alignment: scored, 10; multiple choice: used, 3) or per lemma (wic_pair: 40)")


@dataclass(frozen=True)
class Templates:
    """Question templates of a new multiple-choice probe (the shape of a probe in templates/questions/en.yaml)."""

    stems: tuple[str, ...] = spec_field((), list_of(string),
                                        "question stems with {sentence}, {word} and/or {definition}")
    choice: str = spec_field("{lemma}, defined as {gloss}", string,
                             "a choice from its synset: {lemma}, {lemmas}, {gloss}")
    word_stem: str = spec_field("", string, "the question without its sentence (bias diagnostics), with {word}")
    lm_query: str = spec_field("Question: {stem}\nAnswer:", string, "a causal/masked LM's query around the stem")
    plain_query: str = spec_field("{sentence}", string, "an embedding scorer's query")


@dataclass(frozen=True)
class Spec:
    """One probe family. ``path`` is where it was read from (not part of its identity)."""

    name: str = spec_field("", string, "dataset name (default output folder probegen_out/datasets/<name>)")
    description: str = spec_field("", string, "what the probe asks, for people")
    shape: str = spec_field("", _shape, "a registered shape: alignment, multiple_choice, wic_pair or a plugin's")
    seed: int = spec_field(0, integer(0), "seed of every sampled choice")
    nonce: str = spec_field("", _nonce, "made-up word that stands for the hidden target in eval, bias and export "
                    "(recorded in the manifest) [default: templates/nonce_words.json]")
    concepts: Concepts = _section(Concepts)
    relation: Relation | None = _section(Relation)
    #: the shape's own section (its kind's :class:`SpecSection` fields), written under the shape's name
    section: Any = field(default=None, metadata={"internal": True, "shape_sections": True})
    contexts: Contexts = _section(Contexts)
    templates: Templates | None = _section(Templates)
    path: str = field(default="", compare=False, metadata={"internal": True})

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (tuples as lists, absent sections left out, no path); the
        shape's section sits under the shape's name, after ``relation``."""
        out = _plain(self)
        if self.section is not None:
            keys = list(out)
            at = keys.index("contexts") if "contexts" in keys else len(keys)
            items = list(out.items())
            out = dict(items[:at] + [(self.shape, _plain(self.section))] + items[at:])
        return cast("dict[str, Any]", out)

    def part(self, cls: type[S], name: str) -> S:
        """The shape's section as the kind's dataclass ``cls`` (``name``: the shape, for the message)."""
        return given(self.section if isinstance(self.section, cls) else None, name)

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


def given(section: S | None, name: str) -> S:
    """A section a checked spec of its shape has; one line naming it if missing (a spec built by hand).

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


# ---- the shapes' sections ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecSection:
    """What a kind adds to the probe spec (:meth:`probegen.tasks.SpecBuildable.spec_section`): the
    section written under its shape's name, its defaults and its checks."""

    #: the section's frozen dataclass; each field a :func:`spec_field` (default, checker, doc)
    fields: type
    #: the ``contexts.source`` values the shape takes; the first is the default
    context_sources: tuple[str, ...]
    #: the default ``contexts.max``
    contexts_max: int
    #: the default ``concepts.min_semcor``
    min_semcor: int = 0
    #: ``contexts.scorer`` applies (an LM picks the clearest context)
    scorer: bool = False
    #: ``probegen make spec --forms`` applies (parallel forms of the built dataset)
    forms: bool = False
    #: more defaults once the section is filled (a spec -> the spec), e.g. a relation by probe
    complete: Callable[[Spec], Spec] | None = None
    #: the shape's cross-field rules: one ProbegenError naming the field it blames
    check: Callable[[Spec], None] | None = None
    #: the generator configuration of a spec, and ``build(spec, config, wordnet, semcor, progress, log,
    #: runner)``: the defaults of :meth:`probegen.tasks.SpecBuildable.spec_config` and ``build_from_spec``
    config: Callable[[Spec], Any] | None = None
    build: Callable[..., Any] | None = None


def spec_sections() -> dict[str, SpecSection]:
    """Shape -> section of every kind a spec can build (plugins included), sorted by shape.

    >>> list(spec_sections())[:3]
    ['alignment', 'multiple_choice', 'wic_pair']
    """
    from ..tasks import SpecBuildable, all_tasks  # the registry imports no spec module: no cycle

    found: dict[str, SpecSection] = {}
    taken = {f.name for f in fields(Spec)}  # a shape is a key beside the spec's own
    for t in [t for t in all_tasks() if isinstance(t, SpecBuildable)]:
        if t.spec_shape in found or t.spec_shape in taken:
            raise ProbegenError(f"kind {t.name!r} registers spec shape {t.spec_shape!r}, which "
                                f"{'another kind registers' if t.spec_shape in found else 'is a spec key'}")
        found[t.spec_shape] = t.spec_section()
    return dict(sorted(found.items()))


# ---- parsing ---------------------------------------------------------------------------------------
def _parse(cls: type, raw: Any, where: str, shapes: dict[str, SpecSection] | None = None) -> Any:
    """An instance of the dataclass ``cls`` from a mapping, checking every key (``where`` = its path);
    ``shapes`` (top level only) adds a key per shape, parsed into the ``shape_sections`` field."""
    if not isinstance(raw, dict):
        raise ProbegenError(f"{where or 'the spec'}: expected a mapping, got {_kind(raw)}")
    shapes = shapes or {}
    known = [f for f in fields(cls) if not f.metadata.get("internal") or f.metadata.get("shape_sections")]
    names = {f.name for f in known if not f.metadata.get("internal")} | set(shapes)
    for key in raw:
        if key not in names:
            raise ProbegenError(f"{_join(where, str(key))}: unknown key; {cls.__name__.lower()} takes "
                                f"{', '.join(sorted(names))}")
    kw: dict[str, Any] = {}
    for f in known:
        if f.metadata.get("shape_sections"):
            kw[f.name] = {shape: _parse(sec.fields, raw[shape] if raw[shape] is not None else {}, _join(where, shape))
                          for shape, sec in shapes.items() if shape in raw}
            continue
        if f.name not in raw:
            continue
        path = _join(where, f.name)
        if "section" in f.metadata:
            kw[f.name] = _parse(f.metadata["section"], raw[f.name] if raw[f.name] is not None else {}, path)
            continue
        try:
            kw[f.name] = f.metadata["check"](raw[f.name])
        except Bad as e:
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
    shapes = spec_sections()
    try:
        spec = _parse(Spec, raw, "", shapes)
        spec = _complete(spec, shapes)
        _check(spec, shapes)
    except ProbegenError as e:
        raise ProbegenError(f"{path}: {e}") from None
    return replace(spec, path=path)


def _complete(s: Spec, shapes: dict[str, SpecSection]) -> Spec:
    """Fill the shape's section and the context and SemCor defaults its kind declares; a section of
    another shape is an error."""
    if not s.name:
        raise ProbegenError("name: missing (the dataset's name)")
    if not s.shape:
        raise ProbegenError(f"shape: missing; use {', '.join(shapes)}")
    for other in s.section or {}:
        if other != s.shape:
            raise ProbegenError(f"{other}: this section belongs to shape {other}, not {s.shape}")
    sec = shapes[s.shape]
    concepts = s.concepts or Concepts()
    if concepts.min_semcor is None:
        concepts = replace(concepts, min_semcor=sec.min_semcor)
    ctx = s.contexts or Contexts()
    contexts = replace(ctx, source=ctx.source or sec.context_sources[0], max=ctx.max or sec.contexts_max)
    out = replace(s, concepts=concepts, contexts=contexts, section=(s.section or {}).get(s.shape) or sec.fields())
    return sec.complete(out) if sec.complete else out


def _check(s: Spec, shapes: dict[str, SpecSection]) -> None:
    """The rules that tie fields together: the generic ones, then the shape's own (:attr:`SpecSection.check`)."""
    sec = shapes[s.shape]
    if s.contexts.source not in sec.context_sources:
        raise ProbegenError(f"contexts.source: shape {s.shape} takes {' or '.join(sec.context_sources)}, got "
                            f"{s.contexts.source!r}")
    if not s.concepts.pos:
        raise ProbegenError("concepts.pos: name at least one part of speech")
    if len(set(s.concepts.pos)) != len(s.concepts.pos):
        raise ProbegenError("concepts.pos: a part of speech is named twice")
    if s.relation is not None:
        hop_range(s.relation)
    if sec.check:
        sec.check(s)
    if not sec.scorer and s.contexts.scorer != Contexts().scorer:
        scored = [shape for shape, other in shapes.items() if other.scorer]
        raise ProbegenError(f"contexts.scorer: applies to shape {' and '.join(scored) or 'none'} only")


def check_templates(t: Templates) -> None:
    """Each template names only the fields it is filled with (one line naming the template otherwise)."""
    from ..templating import check_fields

    allowed = {
        "stems": {"sentence", "word", "definition"}, "choice": {"lemma", "lemmas", "gloss"},
        "word_stem": {"word"}, "lm_query": {"stem"}, "plain_query": {"sentence", "word", "definition"},
    }
    for name, ok in allowed.items():
        values = getattr(t, name)
        for i, text in enumerate(values if isinstance(values, tuple) else (values,)):
            where = f"templates.{name}" + (f"[{i}]" if isinstance(values, tuple) else "")
            check_fields(text, sorted(ok), where)  # an unknown name, a format spec or a conversion


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
