"""Reading the original WordNetQA and DictionaryQA release files as they are.

The release (Richardson & Sabharwal, TACL 2020; ``allenai/semantic_fragments``) is one JSON object a
line: ``question.stem``, ``question.choices[{text, label}]``, ``answerKey``, ``id`` and ``notes``.

- The sentence is the stem's first quoted passage (single, double or typographic quotes), closed
  by the last closing quote before the word's own quotes, so apostrophes inside it do not cut it.
- The word (``notes.surface_form``; DictionaryQA: ``notes.word``) is located in it as a whole word,
  else through the wordnet's morphology (``home-schooling`` for ``home-school``).
- The probe type comes from the caller, else the file name, else the notes, never the id (the
  release's hyponymy test file has ids ``hypernymy_N``).
- The gold is the choice whose label equals ``answerKey``, compared as strings (any label set).

A row that cannot be read raises :class:`InvalidRow` (a DatasetError with a short stable ``reason``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..contexts import Context
from ..errors import DatasetError, ProbegenError, SkippableRowError
from ..io import json_type, parse_json, read_text
from .config import PROBES
from .items import LABELS, ChoiceMeta, MCItem

if TYPE_CHECKING:
    from ..leaks import Morphology

#: probes a release row can be: WordNetQA's four and DictionaryQA (GCIDE senses, read like definitions)
RELEASE_PROBES = PROBES + ("dictionary",)
ON_INVALID = ("error", "skip")
#: ids kept per skip reason in the manifest
IDS_KEPT = 20

# words of a file name (or its folder) that name a probe
_NAME_WORDS = {
    **dict.fromkeys(("definitions", "definition", "defs"), "definitions"),
    **dict.fromkeys(("hypernymy", "hypernym", "hypernyms"), "hypernymy"),
    **dict.fromkeys(("hyponymy", "hyponym", "hyponyms"), "hyponymy"),
    **dict.fromkeys(("synonymy", "synonym", "synonyms"), "synonymy"),
    **dict.fromkeys(("dictionary", "dictionaryqa", "dictqa", "gcide"), "dictionary"),
}
# an opening quote -> the quotes that close it
_CLOSERS = {"'": "'\u2019", "\u2018": "\u2019'", '"': '"\u201d', "\u201c": '\u201d"'}
_ANY_OPEN = "'\"\u2018\u201c"
_ANY_CLOSE = "'\"\u2019\u201d"


class InvalidRow(DatasetError):
    """A release row that cannot be read; ``reason``: the short stable key skipped rows are counted under."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason


# ---- the probe type ----------------------------------------------------------------------------------
def probe_from_name(path: str | Path) -> str | None:
    """The probe a file name names (one probe word among its words), else its folder's exact name.

    >>> probe_from_name("hyponymy-test.jsonl"), probe_from_name("data_mcqa/dictionary_qa/test.jsonl")
    ('hyponymy', 'dictionary')
    >>> probe_from_name("wordnetqa_release_four_probes.jsonl") is None
    True
    """
    p = Path(path)
    found = {_NAME_WORDS[w] for w in re.split(r"[^a-z]+", p.stem.lower()) if w in _NAME_WORDS}
    if len(found) == 1:
        return found.pop()
    folder = p.parent.name.lower()
    return {"dictionary_qa": "dictionary", **{k: k for k in PROBES}}.get(folder) if not found else None


def _chain(notes: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """(synsets along ``notes.chain``, its direction ``=>`` / ``<=`` or "")."""
    chain = notes.get("chain")
    if isinstance(chain, str):
        arrows = set(re.findall(r"=>|<=", chain))
        parts = tuple(s.strip() for s in re.split(r"=>|<=", chain) if s.strip())
        return parts, (arrows.pop() if len(arrows) == 1 else "")
    if isinstance(chain, list):
        return tuple(str(s) for s in chain), ""
    return (), ""


def _wordnet_direction(chain: tuple[str, ...]) -> str | None:
    """hypernymy/hyponymy for a list chain whose last synset is a WordNet ancestor/descendant of the first."""
    reader = _reader()
    if reader is None or len(chain) < 2:
        return None
    try:
        a, b = reader.synset(chain[0]), reader.synset(chain[-1])
    except Exception:  # not a WordNet 3.0 synset name: the chain says nothing here
        return None

    def up(s: Any) -> Any:  # an nltk Synset: its hypernyms of both kinds
        return s.hypernyms() + s.instance_hypernyms()

    if b in a.closure(up):
        return "hypernymy"
    if a in b.closure(up):
        return "hyponymy"
    return None


def probe_from_notes(notes: dict[str, Any], word_quoted: bool) -> str | None:
    """The probe the notes tell (``word_quoted``: the stem quotes the word by itself).

    >>> probe_from_notes({"chain": "stoop.v.05=>hold.v.14", "hops": 1}, True)
    'hypernymy'
    >>> probe_from_notes({"chain": "circulate.v.07<=circulate.v.07", "hops": 0}, True)
    'definitions'
    >>> probe_from_notes({"chain": "spirillaceae.n.01<=spirillaceae.n.01", "hops": 0}, False)
    'synonymy'
    """
    if isinstance(notes.get("probe"), str) and notes["probe"]:
        return cast(str, notes["probe"])
    if "sense_choices" in notes or "distractor_synsets" in notes:  # DictionaryQA's GCIDE sense notes
        return "dictionary"
    chain, arrow = _chain(notes)
    if len(set(chain)) >= 2:
        if arrow:
            return "hypernymy" if arrow == "=>" else "hyponymy"
        return _wordnet_direction(chain)
    if notes.get("hops") in (0, None) and chain:
        return "definitions" if word_quoted else "synonymy"
    return None


# ---- answerKey and labels ------------------------------------------------------------------------------
def _label(v: Any, what: str) -> str:
    """A label or key as a string (an integer as its digits)."""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise InvalidRow("invalid answerKey or label", f"{what} must be a string or an integer, got {json_type(v)}")
    return str(v).strip()


def choices_and_gold(r: dict[str, Any]) -> tuple[tuple[str, ...], int]:
    """(choice texts, gold index): the choice whose label equals ``answerKey`` (as strings).

    >>> choices_and_gold({"question": {"choices": [{"text": "a", "label": 1}, {"text": "b", "label": 2}]},
    ...                   "answerKey": "2"})
    (('a', 'b'), 1)
    """
    q = r.get("question")
    raw = q.get("choices") if isinstance(q, dict) else None
    if not isinstance(raw, list) or not raw:
        raise InvalidRow("missing field", "missing or invalid field question.choices")
    texts, labels = [], []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or not isinstance(c.get("text"), str) or not c["text"].strip():
            raise InvalidRow("missing field", f"missing or invalid field question.choices[{i}].text")
        texts.append(c["text"])
        labels.append(_label(c["label"], f"question.choices[{i}].label") if c.get("label") is not None
                      else LABELS[i % len(LABELS)])
    if r.get("answerKey") is None:
        raise InvalidRow("missing field", "missing or invalid field answerKey")
    key = _label(r["answerKey"], "answerKey")
    hits = ([i for i, lab in enumerate(labels) if lab == key]
            or [i for i, lab in enumerate(labels) if lab.lower() == key.lower()])
    if len(hits) != 1:
        why = "is not one of" if not hits else "matches more than one of"
        raise InvalidRow("answerKey not a choice label",
                         f"answerKey {r['answerKey']!r} {why} the choice labels {', '.join(labels)}")
    return tuple(texts), hits[0]


# ---- the wordnet ------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _reader() -> Any:
    """nltk's WordNet 3.0 reader (probegen's default wordnet), or None where none is found."""
    try:
        from ..lexicon.sources import open_resource

        return getattr(open_resource(None), "reader", None)
    except (ProbegenError, OSError, LookupError):
        return None


@lru_cache(maxsize=1)
def _morphology() -> Morphology | None:
    """WordNet 3.0's morphology (``probegen.leaks.Morphology``), or None where no wordnet is found."""
    try:
        from ..leaks import default_morphology

        return default_morphology(None)
    except (ProbegenError, OSError, LookupError):
        return None


def synset_lemmas(name: str) -> tuple[str, ...]:
    """The lemmas of a synset name: its WordNet lemmas if it is one, else its head (``floppy_disk``
    of ``floppy_disk.n.01``; a GCIDE sense ``neglect.u.5`` gives ``neglect``)."""
    head = name.rsplit(".", 2)[0] if name.count(".") >= 2 else ""
    reader = _reader()
    if reader is not None and head:
        try:
            return tuple(dict.fromkeys((head, *reader.synset(name).lemma_names())))
        except Exception:  # not a synset of this wordnet: its head is all there is
            pass
    return (head,) if head else ()


# ---- the quoted sentence and the word in it ---------------------------------------------------------------
def _words(phrase: str) -> tuple[str, ...]:
    from ..leaks import tokens_with_spans

    return tuple(t for t, _, _ in tokens_with_spans(phrase.replace("_", " ")))


def _bases(token: str, pos: str) -> frozenset[str]:
    morph = _morphology()
    if morph is None:
        return frozenset({token})
    return morph.bases(token, pos) if pos in ("n", "v", "a", "r") else morph.all_bases(token)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted, overlapping ones merged (masking never cuts a span twice)."""
    out: list[tuple[int, int]] = []
    for x, y in sorted(set(spans)):
        if out and x < out[-1][1]:
            out[-1] = (out[-1][0], max(y, out[-1][1]))
        else:
            out.append((x, y))
    return out


def locate_word(sentence: str, forms: list[str], pos: str = "") -> list[tuple[int, int]]:
    """Spans of every visible form of the target in ``sentence`` for the first of ``forms`` found there:
    whole words (case-insensitive) and, through the wordnet's morphology, words sharing base forms.

    >>> locate_word("They replaced the floppy disks.", ["floppy disk", "floppy"], "n")
    [(18, 30)]
    >>> locate_word("The parents are home-schooling their daughter", ["home-school"], "v")
    [(16, 30)]
    """
    from ..leaks import tokens_with_spans
    from .render import word_spans

    toks = tokens_with_spans(sentence)
    tok_bases = [_bases(t, pos) for t, _, _ in toks]
    for form in forms:
        pattern = [_bases(w, pos) for w in _words(form)]
        n = len(pattern)
        found = word_spans(sentence, form.replace("_", " ")) if form.strip() else []
        found += [(toks[i][1], toks[i + n - 1][2]) for i in range(len(toks) - n + 1) if n
                  and all(tok_bases[i + j] & pattern[j] for j in range(n))]
        if found:
            return _merged(found)
    return []


def word_quotes(stem: str, forms: list[str]) -> list[tuple[int, int]]:
    """Spans (quotes included) where the stem quotes one of ``forms`` by itself (``the span 'X'``)."""
    alts = sorted({f.replace("_", " ").strip() for f in forms if f.strip()}, key=len, reverse=True)
    if not alts:
        return []
    # a quote opens after no letter and closes before none (``neighbors' snootiness'`` quotes nothing)
    pat = re.compile(f"(?<!\\w)[{_ANY_OPEN}]\\s*(?:" + "|".join(re.escape(a) for a in alts)
                     + f")\\s*[{_ANY_CLOSE}](?!\\w)", re.IGNORECASE)
    return [m.span() for m in pat.finditer(stem)]


def _is_closer(stem: str, j: int, closers: str) -> bool:
    """A closing quote: one of ``closers`` not followed by a letter or digit (``aunt's`` is no quote)."""
    return stem[j] in closers and (j + 1 == len(stem) or not stem[j + 1].isalnum())


def quoted_passages(stem: str, quotes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Candidate spans of the first quoted passage that is not a word quote, most likely first: closed
    by the last closing quote before each later word quote (apostrophes inside the passage make a
    nearer one wrong), then by every closing quote from the nearest on.

    >>> stem = "Given the fragment 'he disliked his neighbors' snootiness', the word 'snootiness' is"
    >>> [stem[a:b] for a, b in quoted_passages(stem, [(67, 79)])][0]
    "he disliked his neighbors' snootiness"
    """
    inside = {i for a, b in quotes for i in range(a, b)}
    opens = [i for i, ch in enumerate(stem) if ch in _CLOSERS and i not in inside
             and (i == 0 or not stem[i - 1].isalnum())]
    if not opens:
        return []
    s = opens[0]
    closers = _CLOSERS[stem[s]]
    ends = [j for j in range(s + 1, len(stem)) if j not in inside and _is_closer(stem, j, closers)]
    out: list[tuple[int, int]] = []
    for limit in [a for a, _ in quotes if a > s]:
        before = [j for j in ends if j < limit]
        if before:
            out.append((s + 1, before[-1]))
    out += [(s + 1, j) for j in ends]
    return [c for c in dict.fromkeys(out) if stem[c[0]:c[1]].strip()]


def locate_sentence(stem: str, forms: list[str],
                    pos: str = "") -> tuple[tuple[int, int], list[tuple[int, int]], list[tuple[int, int]]]:
    """(sentence span in the stem, the target's spans in the sentence, the word's own quotes in the
    stem): the first quoted passage in which the target is found (:func:`locate_word`).

    >>> stem = ("Given 'an elaborate formal dinner with all the fixings', the word/phrase 'fixings' is best defined "
    ...         "as a type of")
    >>> (a, b), spans, quotes = locate_sentence(stem, ["fixings"], "n")
    >>> stem[a:b], spans, [stem[x:y] for x, y in quotes]
    ('an elaborate formal dinner with all the fixings', [(40, 47)], ["'fixings'"])
    """
    quotes = word_quotes(stem, forms)
    candidates = quoted_passages(stem, quotes)
    if not candidates:
        raise InvalidRow("no quoted sentence", "the stem has no quoted sentence")
    for a, b in candidates:
        spans = locate_word(stem[a:b], forms, pos)
        if spans:  # the word's quotes again, with the forms found (``'floppy disks'`` for floppy_disk)
            quotes = word_quotes(stem, forms + [stem[a + x:a + y] for x, y in spans])
            return (a, b), spans, [q for q in quotes if q[1] <= a or q[0] >= b]
    a, b = candidates[0]
    raise InvalidRow("word not in the quoted sentence",
                     f"the word {forms[0]!r} is not found in the quoted sentence {stem[a:b][:60]!r} (not as a whole "
                     "word, nor as a form of it)")


def quoted_definition(stem: str) -> str:
    """The definition a synonymy stem quotes (the whole quoted passage)."""
    found = quoted_passages(stem, [])
    if not found:
        raise InvalidRow("no quoted definition", "the stem has no quoted definition")
    a, b = found[-1]  # the farthest closing quote: a definition's own apostrophes do not cut it
    return stem[a:b]


def stem_spans(stem: str, sentence: tuple[int, int], spans: list[tuple[int, int]],
               quotes: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Every span of the stem the Context ablation hides: the target in the sentence and the inside
    of the word's own quotes (never the stem's own words)."""
    a = sentence[0]
    hidden = {(a + x, a + y) for x, y in spans}
    for x, y in quotes:
        inner = stem[x + 1:y - 1]
        lead = len(inner) - len(inner.lstrip())
        hidden.add((x + 1 + lead, x + 1 + len(inner.rstrip())))
    return tuple(_merged(list(hidden)))


# ---- one row ----------------------------------------------------------------------------------------------
#: the type of each ``notes`` field probegen reads (any may be missing or null)
NOTE_TYPES: dict[str, type | tuple[type, ...]] = {
    **dict.fromkeys(("probe", "concept", "gold_synset", "word", "surface_form", "pos", "distractor_type", "cluster",
                     "split", "question_id"), str),
    **dict.fromkeys(("hops", "distractor_hops"), int),
    **dict.fromkeys(("choice_synsets", "choice_types", "choice_distances"), list),
    "chain": (list, str),  # probegen writes a list, the original release a string
}


def check_notes(notes: dict[str, Any]) -> None:
    """Reject a ``notes`` field of the wrong type (``"pos": 3``, ``"hops": "x"``) with its name."""
    for key, kind in NOTE_TYPES.items():
        v = notes.get(key)
        if v is not None and (not isinstance(v, kind) or isinstance(v, bool)):
            names: dict[object, str] = {str: "a string", int: "an integer", list: "a list"}
            want = names.get(kind, "a list or a string")
            raise InvalidRow("invalid notes field", f"notes.{key} must be {want}, got {json_type(v)}")


def _row_id(r: dict[str, Any]) -> str:
    rid = r.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
        raise InvalidRow("missing field", "missing or invalid field id")
    return str(rid)


def _split_of(notes: dict[str, Any], path: str | Path) -> str:
    """``notes.split``, else the split the file name names (``hypernymy-train-sample``), else test."""
    if notes.get("split"):
        return str(notes["split"])
    words = set(re.split(r"[^a-z]+", Path(path).stem.lower())) if path else set()
    return next((s for s in ("train", "dev", "test") if s in words), "test")


def _pos(notes: dict[str, Any], concept: str) -> str:
    pos = notes.get("pos") or (concept.rsplit(".", 2)[1] if concept.count(".") >= 2 else "")
    return "a" if pos == "s" else pos


def _cut(probe: str, stem: str, forms: list[str], pos: str,
         ablations: bool) -> tuple[Context | None, str, tuple[tuple[int, int], ...]]:
    """(context, definition, stem spans the Context ablation hides) of a row of ``probe``."""
    if probe == "synonymy":
        return None, quoted_definition(stem), ()
    if not forms[0]:
        raise InvalidRow("missing field", "missing field notes.surface_form (the word the question is about)")
    try:
        (a, b), spans, quotes = locate_sentence(stem, forms, pos)
    except InvalidRow as e:
        if probe != "dictionary" or ablations:
            if probe == "dictionary":
                raise InvalidRow("no sentence to ablate", f"{e}: a DictionaryQA row without a quoted sentence holding "
                                 "its word has no Context or Word ablation (probegen eval reads it as a full "
                                 "question)") from None
            raise
        return None, "", ()  # a DictionaryQA question without a sentence: its stem is its question
    return Context(text=stem[a:b], char_span=spans[0], source="release"), "", stem_spans(stem, (a, b), spans, quotes)


def _meta(notes: dict[str, Any], n: int) -> tuple[ChoiceMeta, ...]:
    types = notes.get("choice_types") or []
    meta = tuple(ChoiceMeta(str(s), str(t), d if isinstance(d, int) and not isinstance(d, bool) else None)
                 for s, t, d in zip(notes.get("choice_synsets") or [], types,
                                    notes.get("choice_distances") or [None] * len(types)))
    return meta if len(meta) == n else ()


def _row_probe(probe: str | None, path: str | Path, notes: dict[str, Any], stem: str, surface: str) -> str:
    got = probe or probe_from_name(path) or probe_from_notes(notes, bool(surface and word_quotes(stem, [surface])))
    if not got:
        raise InvalidRow("probe type unknown", "cannot tell the probe type: give it (--probe), name it in the file "
                         f"name ({', '.join(RELEASE_PROBES)}) or in notes (notes.probe, or notes.chain with => or <=)")
    if got not in RELEASE_PROBES:
        raise InvalidRow("probe type unknown", f"unknown probe type {got!r} (one of {', '.join(RELEASE_PROBES)})")
    return got


def read_row(r: Any, path: str | Path = "", probe: str | None = None, ablations: bool = False) -> MCItem:
    """One release row as an item of its probe (:class:`InvalidRow` if it cannot be); ``ablations``:
    it also needs ``notes.gold_synset`` and, for DictionaryQA, the quoted sentence with the word."""
    from .render import RELEASE_TEMPLATE

    if not isinstance(r, dict):
        raise InvalidRow("not a JSON object", "not a JSON object")
    rid = _row_id(r)
    q = r.get("question")
    stem = q.get("stem") if isinstance(q, dict) else None
    if not isinstance(stem, str) or not stem.strip():
        raise InvalidRow("missing field", "missing or invalid field question.stem")
    choices, answer = choices_and_gold(r)
    notes = r.get("notes") if r.get("notes") is not None else {}
    if not isinstance(notes, dict):
        raise InvalidRow("invalid notes field", "notes is not a JSON object")
    check_notes(notes)
    surface = str(notes.get("surface_form") or notes.get("word") or "")
    probe = _row_probe(probe, path, notes, stem, surface)
    concept = str(notes.get("concept") or notes.get("gold_synset") or "")
    if ablations and not concept:
        raise InvalidRow("missing field", "missing field notes.gold_synset (the bootstrap resamples by concept)")
    chain, _ = _chain(notes)
    pos = _pos(notes, concept)
    forms = list(dict.fromkeys([surface, str(notes.get("word") or surface),
                                *synset_lemmas(chain[0] if chain else concept)]))
    context, definition, hidden = _cut(probe, stem, forms, pos, ablations)
    concept = concept or rid
    item = MCItem(
        id=rid, probe=probe, pos=pos, synset=concept, word=str(notes.get("word") or surface),
        question=stem, template=RELEASE_TEMPLATE, choices=choices, answer=answer,
        choice_meta=_meta(notes, len(choices)),
        gold_synset=str(notes.get("gold_synset") or concept), hops=int(notes.get("hops") or 0), chain=chain,
        distractor_type=str(notes.get("distractor_type") or ""), distractor_hops=notes.get("distractor_hops"),
        cluster=str(notes.get("cluster") or f"{probe}:{concept}"), split=_split_of(notes, path),
        question_id=str(notes.get("question_id") or rid), definition=definition, context=context, stem_spans=hidden,
    )
    try:
        item.check()
    except DatasetError as e:
        raise InvalidRow("unusable choices", str(e)) from None
    return item


def _skip_record(skipped: dict[str, dict[str, Any]], reason: str, rid: str) -> None:
    got = skipped.setdefault(reason, {"count": 0, "ids": []})
    got["count"] += 1
    if len(got["ids"]) < IDS_KEPT:
        got["ids"].append(rid)


def _line_id(line: str, n: int) -> str:
    """A skipped row's id for the record (``line N`` when it has none that reads)."""
    m = re.search(r'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)', line)
    return m.group(1).strip('"') if m else f"line {n}"


def read_release(path: str | Path, ablations: bool = False, probe: str | None = None,
                 on_invalid: str = "error") -> tuple[list[MCItem], dict[str, Any] | None]:
    """(items, the ``invalid`` record or None) of a release JSONL file: a row that cannot be read raises
    ``DatasetError("FILE:LINE: why")``, or with ``on_invalid="skip"`` is left out and counted."""
    if on_invalid not in ON_INVALID:
        raise ProbegenError(f"unknown on_invalid {on_invalid!r}; choose from {', '.join(ON_INVALID)}")
    if probe is not None and probe not in RELEASE_PROBES:
        raise ProbegenError(f"unknown probe {probe!r}; a release file holds one of {', '.join(RELEASE_PROBES)}")
    p = Path(path)
    items: list[MCItem] = []
    seen: dict[str, int] = {}
    skipped: dict[str, dict[str, Any]] = {}
    rows = 0
    for n, line in enumerate(read_text(p).split("\n"), 1):
        if not line.strip():
            continue
        rows += 1
        try:
            try:
                r = parse_json(line, p, n)
            except DatasetError as e:
                raise InvalidRow("not valid JSON", str(e).split(f"{p}:{n}: ", 1)[-1]) from None
            it = read_row(r, p, probe, ablations)
            if it.id in seen:
                raise InvalidRow("repeated id", f"item id {it.id!r} repeats line {seen[it.id]}")
        except InvalidRow as e:
            if on_invalid == "error":  # what skip would leave out: the CLI names --on-invalid skip
                raise SkippableRowError(f"{p}:{n}: {e}") from None
            _skip_record(skipped, e.reason, _line_id(line, n))
            continue
        seen[it.id] = n
        items.append(it)
    if not items:
        why = f" ({rows} rows, all invalid: {', '.join(skipped)})" if rows else ""
        raise DatasetError(f"dataset {p} has no items{why}")
    record = {"policy": "skip", "rows": rows, "kept": len(items), "skipped": skipped} if on_invalid == "skip" else None
    return items, record
