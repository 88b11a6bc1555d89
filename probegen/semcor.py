"""SemCor 3.0 reader: a regex SGML parser, sense-key resolution, and a cached synset -> contexts index.

The tagfiles are SGML with unquoted attributes (XML parsers refuse them), one element per line:
``<s snum=1>``, ``<wf cmd=done pos=NN lemma=jury wnsn=1 lexsn=1:14:00::>jury</wf>``, ``<punc>.</punc>``.
Proper names carry ``pn=`` and the sense of their category (``Fulton_County`` is tagged
location.n.01): they are no occurrence of that word, so they give no tag (their words stay).
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .contexts import Context
from .data import DataInfo, load_wordnet, locate_semcor, locate_wordnet
from .io import atomic_write, sha256_text
from .paths import cache_dir, set_aside

if TYPE_CHECKING:
    from .lexicon.base import LexicalResource

INDEX_FORMAT = 2  # bump when the parse or the cache layout changes (2: no pn= tags, lemma kept)

log = logging.getLogger(__name__)

# One alternative per element kind; the text groups are [^<]* because tagfiles never nest.
_ELEMENT = re.compile(r"<s\s([^>]*)>|<wf\s([^>]*)>([^<]*)</wf>|<punc>([^<]*)</punc>|(</s>)")
_ATTR = re.compile(r'([\w-]+)=("[^"]*"|[^\s"]+)')
_MARKER = re.compile(r"\([a-z]+\)")  # adjective position markers: preceding(a) -> preceding


@dataclass(frozen=True)
class Tag:
    """A sense-tagged word: tokens[start:end] of its sentence, with its lemma and WordNet synset."""

    start: int
    end: int  # exclusive
    lemma: str
    synset: str  # e.g. "investigation.n.01"


@dataclass(frozen=True)
class Sentence:
    """One SemCor sentence; multiword units are split into words, so a Tag may span several."""

    id: str  # "brown1/br-a01#1": corpus folder / file # snum
    tokens: tuple[str, ...]
    tags: tuple[Tag, ...]


def Occurrence(sent_id: str, tokens: tuple[str, ...], span: tuple[int, int], lemma: str) -> Context:  # noqa: N802
    """One tagged occurrence of a synset as a :class:`~probegen.contexts.Context` held as tokens (its
    text rendered when first asked for: detokenising ~217k at load would add ~3 s), with SemCor's lemma.

    >>> occ = Occurrence(sent_id="br#1", tokens=("Fans", "cheered", "."), span=(0, 1), lemma="fan")
    >>> occ.surface, occ.sent_id, occ.context() is occ
    ('Fans', 'br#1', True)
    """
    return Context.from_tokens(tokens, span, sent_id, "semcor", lemma)


@dataclass
class ParseStats:
    """Counters filled by iter_sentences."""

    files: int = 0
    sentences: int = 0
    tokens: int = 0
    tagged: int = 0  # tags kept (resolved to a synset of the wordnet)
    unresolved: int = 0  # sense keys the wordnet does not know (3.0 knows all of SemCor's)
    unsensed: int = 0  # lemma given but wnsn 0/missing or lexsn missing: no WordNet 3.0 sense
    proper_names: int = 0  # pn= tags (a name tagged with its category's sense), dropped


def _attrs(text: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in _ATTR.findall(text)}


def _words(text: str) -> list[str]:
    """Split an _-joined multiword token into its words (keeping odd tokens like "_" whole)."""
    return [w for w in text.split("_") if w] or ([text] if text else [])


def parse_tagfile(text: str, sent_prefix: str, resolve: Callable[[str], str | None],
                  stats: ParseStats | None = None) -> Iterator[Sentence]:
    """Sentences of one tagfile's text; ``resolve(sense_key)`` returns a synset name or None."""
    stats = stats if stats is not None else ParseStats()
    snum = None
    tokens: list[str] = []
    tags: list[Tag] = []
    for m in _ELEMENT.finditer(text):
        s_attrs, wf_attrs, wf_text, punc, s_end = m.groups()
        if s_attrs is not None:
            snum, tokens, tags = _attrs(s_attrs).get("snum", "?"), [], []
        elif wf_attrs is not None:
            words = _words(wf_text)
            start = len(tokens)
            tokens.extend(words)
            if "lemma=" in wf_attrs and words:  # most wf carry no sense: skip the attribute parse
                a = _attrs(wf_attrs)
                if "pn" in a:  # "Fulton_County" tagged location.n.01: not a use of "location"
                    stats.proper_names += 1
                    continue
                wnsn = a.get("wnsn", "").split(";")[0]
                lexsn = a.get("lexsn", "").split(";")[0]
                if not lexsn or wnsn in ("", "0"):
                    stats.unsensed += 1
                    continue
                synset = resolve(_MARKER.sub("", f"{a['lemma']}%{lexsn}"))
                if synset is None:
                    stats.unresolved += 1
                    continue
                tags.append(Tag(start, len(tokens), a["lemma"], synset))
        elif punc is not None:
            tokens.append(punc)
        elif s_end is not None and snum is not None:
            stats.sentences += 1
            stats.tokens += len(tokens)
            stats.tagged += len(tags)
            yield Sentence(f"{sent_prefix}#{snum}", tuple(tokens), tuple(tags))
            snum = None


def _resolver(wn: Any) -> Callable[[str], str | None]:
    """sense key -> synset name (None if unknown) through the resource's ``sense_key_index()`` (``wn``: a
    LexicalResource or an nltk reader); other wordnets than 3.0 map the keys they still have."""
    from .lexicon.base import LexicalResource
    from .lexicon.wndb import NltkWordNet

    # raises, with the --contexts examples hint, if none
    keys = (wn if isinstance(wn, LexicalResource) else NltkWordNet(wn)).sense_key_index()

    @lru_cache(maxsize=None)  # keys repeat a lot
    def resolve(key: str) -> str | None:
        return keys.get(key.lower())  # sense keys are lower-case; SemCor lemmas may not be

    return resolve


def tagfiles(semcor_dir: Path) -> list[tuple[str, Path]]:
    """(corpus/file, path) for every tagfile, sorted by corpus folder then file name."""
    return [(f"{corpus.name}/{f.name}", f)
            for corpus in sorted(p for p in Path(semcor_dir).iterdir() if (p / "tagfiles").is_dir())
            for f in sorted((corpus / "tagfiles").iterdir()) if f.is_file() and not f.name.startswith(".")]


def iter_sentences(semcor_dir: Path, wn: Any, stats: ParseStats | None = None) -> Iterator[Sentence]:
    """Every SemCor sentence in a fixed order (corpus folder, file name, document order). Tags keep a
    token's first sense; proper names, unsensed and unresolved tags are dropped (counted in ``stats``)."""
    stats = stats if stats is not None else ParseStats()
    resolve = _resolver(wn)
    for prefix, path in tagfiles(semcor_dir):
        stats.files += 1
        from .io import read_bytes  # a FIFO or a device in the corpus folder: one line, unread

        text = read_bytes(path).decode("utf-8", errors="replace")
        yield from parse_tagfile(text, prefix, resolve, stats)


# ---------------------------------------------------------------- cached index


def _build(semcor: DataInfo, wn: Any) -> dict[str, Any]:
    """Parse SemCor into the cache payload: tagged sentences once, SemCor's lemmas once, and
    per synset a flat [sentence index, start, end, lemma index, ...] list in document order."""
    stats = ParseStats()
    sentences: list[list[Any]] = []
    index: dict[str, list[int]] = {}
    lemmas: dict[str, int] = {}
    for sent in iter_sentences(semcor.path, wn, stats):
        if not sent.tags:
            continue  # no context can come from it
        i = len(sentences)
        sentences.append([sent.id, list(sent.tokens)])
        for t in sent.tags:
            lem = lemmas.setdefault(t.lemma, len(lemmas))
            index.setdefault(t.synset, []).extend((i, t.start, t.end, lem))
    return {"format": INDEX_FORMAT, "stats": asdict(stats), "sentences": sentences, "lemmas": list(lemmas),
            "index": index}


def _write(path: Path, payload: dict[str, Any]) -> None:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    with atomic_write(path, "wb") as fh:
        with gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=6, mtime=0) as gz:  # mtime=0: same bytes
            gz.write(data)


def _read(path: Path) -> tuple[dict[str, list[Context]], dict[str, int]] | None:
    """(index, stats) from the cache file; None if it is missing, of another format or damaged (set aside)."""
    if not path.exists():
        return None
    try:
        with gzip.open(path, "rb") as fh:
            payload = json.loads(fh.read())
        if isinstance(payload, dict) and payload.get("format") != INDEX_FORMAT:
            return None  # an older layout: rebuild quietly
        return _to_contexts(payload), dict(payload["stats"])
    except Exception as e:  # noqa: BLE001 - any damage means the same thing: parse SemCor again
        set_aside(path, "SemCor index cache", e)
        return None


def _to_contexts(payload: dict[str, Any]) -> dict[str, list[Context]]:
    sents = [(sid, tuple(toks)) for sid, toks in payload["sentences"]]  # one tuple per sentence, shared
    lemmas = payload["lemmas"]
    make = Context.from_tokens  # lazy: no sentence is detokenised here
    out: dict[str, list[Context]] = {}
    for synset, flat in payload["index"].items():
        if len(flat) % 4:
            raise ValueError(f"index row of {synset} has {len(flat)} fields, not a multiple of 4")
        out[synset] = [
            make(sents[flat[k]][1], (flat[k + 1], flat[k + 2]), sents[flat[k]][0], "semcor", lemmas[flat[k + 3]])
            for k in range(0, len(flat), 4)
        ]
    return out


_MEMO: dict[tuple[str, str], tuple[dict[str, list[Context]], dict[str, int]]] = {}


def _load(semcor: DataInfo, wordnet: DataInfo | LexicalResource, wn: Any
          ) -> tuple[dict[str, list[Context]], dict[str, int]]:
    """(index, parse stats) from the in-process memo, the cache file, or a fresh parse."""
    key = (semcor.sha256, wordnet.sha256)  # not wn: any reader of the same data gives the same index
    if key not in _MEMO:
        digest = sha256_text(f"{semcor.sha256}:{wordnet.sha256}:v{INDEX_FORMAT}")[:16]
        path = cache_dir() / f"semcor_index-{digest}.json.gz"
        got = _read(path)
        if got is None:
            payload = _build(semcor, wn if wn is not None else _wordnet_of(wordnet))
            _write(path, payload)
            got = _to_contexts(payload), payload["stats"]
        _MEMO.clear()  # keep one index alive: it holds ~216k contexts
        _MEMO[key] = got
    return _MEMO[key]


def _wordnet_of(wordnet: DataInfo | LexicalResource) -> Any:
    """The resource (or reader) behind ``wordnet``: itself if a resource, else the DataInfo's folder."""
    from .lexicon.base import LexicalResource

    return wordnet if isinstance(wordnet, LexicalResource) else load_wordnet(str(wordnet.path))


def context_index(
    semcor: DataInfo | None = None, wn: Any = None, wordnet: DataInfo | LexicalResource | None = None
) -> dict[str, list[Context]]:
    """synset name -> every tagged occurrence of it in SemCor (:func:`Occurrence`), in document order.

    Cached in ``cache_dir()`` (keyed on both data hashes and INDEX_FORMAT) and memoised in-process:
    treat the result as read-only. ``wn``: the reader or resource for ``wordnet`` (a located DataInfo
    or the resource itself). Missing arguments are located; WordNet is loaded only to build the cache.
    """
    return _load(semcor or locate_semcor(), wordnet or locate_wordnet(), wn)[0]


def semcor_stats(semcor: DataInfo | None = None, wn: Any = None,
                 wordnet: DataInfo | LexicalResource | None = None) -> dict[str, int]:
    """Corpus figures from the cached index: parse counters (files, sentences, tokens, tagged,
    unresolved, unsensed, proper_names) plus distinct noun/verb synsets and those with >= 5 occurrences."""
    index, stats = _load(semcor or locate_semcor(), wordnet or locate_wordnet(), wn)
    out = dict(stats)
    for pos, name in (("n", "noun"), ("v", "verb")):
        counts = [len(c) for s, c in index.items() if s.rsplit(".", 2)[1] == pos]
        out[f"{name}_synsets"] = len(counts)
        out[f"{name}_synsets_ge5"] = sum(c >= 5 for c in counts)
    return out
