"""WN-LMF wordnets (Open English WordNet, OMW lexicons, any WN-LMF file) read through ``wn``.

``open_lmf("wn:oewn:2024")`` opens a lexicon already in the user's ``wn`` database (never
downloading); ``open_lmf("x.xml")`` (or ``.xml.gz``) adds the file once to a private ``wn`` database
in probegen's cache, keyed by its sha256, so the user's ``wn`` data is never touched.

Node names are synset ids; ``s`` becomes ``a``; synset relations become
:data:`~probegen.lexicon.RELATIONS` pointers (``similar``: ``similar_to`` for adjectives,
``verb_group`` for verbs); a ``hyponym`` link also gives the ``hypernym`` it mirrors (no other
inverse is made up); unknown relation types are ignored; antonymy comes from sense relations. A
synset with no senses (no probe could name it) is left out with the relations that reach it.
English lexicons use ``wn``'s Morphy; other languages map a word to itself and to the lemmas that
list it as a ``<Form>``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import closing, contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

from ..errors import ProbegenError
from ..io import sha256_file, sha256_text
from ..paths import cache_dir, set_aside
from .base import LexicalResource, SynsetRecord
from .lmf_write import LMF_RELTYPES

if TYPE_CHECKING:
    import wn
    from wn.morphy import Morphy

#: WN-LMF synset relType -> probegen relation (``similar`` is resolved by part of speech)
FROM_LMF: dict[str, str] = {lmf: rel for rel, lmf in LMF_RELTYPES.items() if lmf != "similar"}
#: the hierarchy seen from below: recorded as the hypernym pointer of the target
_MIRRORED = {"hyponym": "hypernym", "instance_hyponym": "instance_hypernym"}
#: bump when the private database layout changes, so old caches are rebuilt
_DB_FORMAT = 1


@contextmanager
def _data_dir(path: Path | None) -> Iterator[None]:
    """Point ``wn`` at the database in ``path`` (None: the user's default) for the block, then close the
    connection ``wn`` pooled to it (it would stay open for the life of the process; ``wn`` reconnects)."""
    from wn import _db, config

    if path is None:
        yield
        return
    old = config.database_path.parent  # not .data_directory: its getter creates the folder
    config.data_directory = path
    pooled = path / "wn.db" in getattr(_db, "pool", {})  # an outer block's: that block closes it
    try:
        yield
    finally:
        config.data_directory = old
        if not pooled:
            _close(path)


def _close(db_dir: Path) -> None:
    """Close ``wn``'s pooled connection to the database in ``db_dir`` (before it is moved)."""
    from wn import _db

    conn = getattr(_db, "pool", {}).pop(db_dir / "wn.db", None)
    if conn is not None:
        conn.close()


#: attributes ``wn`` requires of each WN-LMF element (its loader only asserts them): checked first, with the line
REQUIRED_ATTRS: dict[str, tuple[str, ...]] = {
    "Lexicon": ("id", "label", "language", "email", "license", "version"),
    "LexiconExtension": ("id", "label", "language", "email", "license", "version"),
    "Requires": ("id|ref", "version"),
    "Extends": ("id|ref", "version"),
    "LexicalEntry": ("id",),
    "Lemma": ("writtenForm", "partOfSpeech"),
    "Form": ("writtenForm",),
    "Tag": ("category",),
    "Sense": ("id", "synset"),
    "SenseRelation": ("relType", "target"),
    "Synset": ("id", "ili"),
    "SynsetRelation": ("relType", "target"),
    "SyntacticBehaviour": ("subcategorizationFrame",),
}


def missing_attribute(name: str, attrs: dict[str, str]) -> str | None:
    """The first attribute ``wn`` requires that element ``name`` lacks (``a|b``: either), or None.

    >>> (missing_attribute("Lemma", {"writtenForm": "perro"}),
    ...  missing_attribute("Requires", {"ref": "x", "version": "1"}))
    ('partOfSpeech', None)
    """
    for need in REQUIRED_ATTRS.get(name, ()):
        if not any(a in attrs for a in need.split("|")):
            return need.replace("|", " or ")
    return None


def check_xml(path: Path) -> None:
    """Refuse, with ``FILE:LINE`` (wn's own message names no line), a file that is not well-formed XML or
    whose WN-LMF elements lack an attribute wn requires (or a ``<LexicalEntry>`` its ``<Lemma>``)."""
    import gzip
    import zlib
    from xml.parsers import expat

    parser = expat.ParserCreate()
    entry: list[object] = []  # the open <LexicalEntry>: [line, id, has a <Lemma>]

    def start(name: str, attrs: dict[str, str]) -> None:
        line = parser.CurrentLineNumber
        need = missing_attribute(name, attrs)
        if need is not None:
            which = f" (id {attrs['id']!r})" if "id" in attrs else ""
            raise ProbegenError(f"{path}:{line}: <{name}>{which} lacks the required attribute {need!r}")
        if name == "LexicalEntry":
            entry[:] = [line, attrs.get("id", ""), False]
        elif name == "Lemma" and entry:
            entry[2] = True

    def end(name: str) -> None:
        if name == "LexicalEntry" and entry and not entry[2]:
            raise ProbegenError(f"{path}:{entry[0]}: <LexicalEntry> (id {entry[1]!r}) has no <Lemma>")

    parser.StartElementHandler, parser.EndElementHandler = start, end
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except expat.ExpatError as e:
        raise ProbegenError(f"{path}:{e.lineno}: not well-formed XML ({expat.ErrorString(e.code)}, column "
                            f"{e.offset + 1})") from None
    except (OSError, EOFError, zlib.error) as e:  # includes gzip.BadGzipFile
        raise ProbegenError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None


def _private_db(path: Path, sha256: str) -> Path:
    """The folder of a private ``wn`` database holding the WN-LMF file ``path``, built on first use in a
    temporary folder and renamed into place (the loser of a race drops its copy)."""
    import wn

    root = cache_dir() / "wn-lmf"
    final = root / f"{sha256[:16]}-v{_DB_FORMAT}"
    if (final / "wn.db").is_file():
        damage = _damage(final / "wn.db")
        if damage is None:
            return final
        _close(final)
        set_aside(final, "WN-LMF database", damage, then=f"loading {path.name} again")
    check_xml(path)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        with _data_dir(tmp):
            try:
                wn.add(path, progress_handler=None)
            except Exception as e:  # noqa: BLE001 - wn raises many kinds on a malformed file
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ProbegenError(f"{path}: not a WN-LMF file wn can load ({msg})") from None
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "wn.db").is_file():  # not lost to another process: a real failure
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _damage(db: Path) -> Exception | None:
    """Why the SQLite file ``db`` is damaged (SQLite's quick check reads every page), or None."""
    import sqlite3

    from ..score_cache import is_damage

    try:
        with closing(sqlite3.connect(str(db))) as conn:
            problems = [r[0] for r in conn.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as e:
        if not is_damage(e):
            raise  # locked or unreadable: not damage, never set aside for it
        return e
    return None if problems == ["ok"] else sqlite3.DatabaseError("; ".join(problems))


def open_lmf(source: str) -> "WnLexicon":
    """The WN-LMF wordnet named by ``source``: ``wn:LEXICON`` (e.g. ``wn:oewn:2024``, already in the
    user's ``wn`` database) or the path of a WN-LMF file (``.xml`` or ``.xml.gz``)."""
    import wn

    if source.startswith("wn:"):
        spec = source[3:]
        db = wn.config.database_path
        have = []
        if db.is_file():  # never let wn create an empty database just to look
            have = [f"{lx.id}:{lx.version}" for lx in wn.lexicons()]
        if not any(spec in (h, h.split(":")[0]) for h in have):
            raise ProbegenError(
                f"no wn lexicon {spec!r} in {db} (have: {', '.join(have) or 'none'}): run "
                f"`python -m wn download {spec}` where the network allows, or pass the WN-LMF .xml file")
        return WnLexicon(spec, None, source=source, sha256="")
    path = Path(source).expanduser()
    if not path.is_file():
        raise ProbegenError(f"WN-LMF file {source} not found")
    sha = sha256_file(path)
    db_dir = _private_db(path, sha)
    with _data_dir(db_dir):
        specs = [f"{lx.id}:{lx.version}" for lx in wn.lexicons()]
    if len(specs) != 1:
        raise ProbegenError(f"{source} holds {len(specs)} lexicons ({', '.join(specs)}); probegen reads one per file")
    return WnLexicon(specs[0], db_dir, source=source, sha256=sha)


class WnLexicon(LexicalResource):
    """One ``wn`` lexicon (``spec`` ``id:version``), in the user's database or a private one (``db_dir``)."""

    def __init__(self, spec: str, db_dir: Path | None, source: str = "", sha256: str = "") -> None:
        import wn

        self.spec, self.db_dir, self.source = spec, db_dir, source
        with _data_dir(db_dir):
            self._wn = wn.Wordnet(lexicon=spec, expand="")
            lex = self._wn.lexicons()[0]
            self.spec = f"{lex.id}:{lex.version}"
            self.label = lex.label or self.spec
            self.version = lex.version
            self.language = lex.language
            # a database lexicon has no file to hash: its specifier and size identify it
            self.sha256 = sha256 or sha256_text(f"wn:{self.spec}:{len(self._wn.synsets())}")

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "lexicon": self.spec}

    def synsets(self) -> Iterator[SynsetRecord]:
        with _data_dir(self.db_dir):
            records = self._records()
        yield from records

    def _records(self) -> list[SynsetRecord]:
        w = self._wn
        all_ss = w.synsets()
        words = {wd.id: wd for wd in w.words()}  # one query, not one per sense
        lemma_of: dict[str, str] = {}

        def lemma(sense: wn.Sense) -> str:
            eid = getattr(sense, "_entry_id", None) or sense.word().id
            if eid not in lemma_of:
                lemma_of[eid] = words[eid].lemma().replace(" ", "_")
            return lemma_of[eid]

        mirrored: dict[str, set[tuple[str, str]]] = {}
        raw = []
        for i, ss in enumerate(all_ss):
            pos = "a" if ss.pos == "s" else ss.pos
            pointers: set[tuple[str, str]] = set()
            for rel, targets in ss.relations().items():
                name = FROM_LMF.get(rel)
                if rel == "similar":
                    name = "verb_group" if pos == "v" else "similar_to"
                for t in targets:
                    if rel in _MIRRORED:
                        mirrored.setdefault(t.id, set()).add((_MIRRORED[rel], ss.id))
                    elif name is not None:
                        pointers.add((name, t.id))
            senses = ss.senses()
            lemmas = tuple(lemma(s) for s in senses)
            antonyms = {(lem, a.synset().id, lemma(a))
                        for s, lem in zip(senses, lemmas) for a in s.get_related("antonym")}
            raw.append((i, ss, pos, lemmas, pointers, antonyms))
        # a synset without senses has no word in this lexicon: nothing can name it in a probe
        kept = {ss.id for _, ss, _, lemmas, _, _ in raw if lemmas}
        out = []
        for i, ss, pos, lemmas, pointers, antonyms in raw:
            if ss.id not in kept:
                continue
            pointers = {(r, t) for r, t in pointers | mirrored.get(ss.id, set()) if t in kept}
            antonyms = {a for a in antonyms if a[1] in kept}
            out.append(SynsetRecord(
                name=ss.id, pos=pos, lemmas=lemmas, definition=ss.definition() or "",
                examples=tuple(ss.examples()), order=i, lexname=ss.lexfile() or "",
                pointers=tuple(sorted(pointers)), antonyms=tuple(sorted(antonyms)), ili=ss.ili or ""))
        return out

    @cached_property
    def _morphy(self) -> Morphy:
        from wn.morphy import Morphy

        with _data_dir(self.db_dir):
            return Morphy(self._wn)

    @cached_property
    def _forms(self) -> dict[str, dict[str, set[str]]]:
        """pos -> written form -> lemmas (every lemma maps to itself), for non-English lexicons."""
        out: dict[str, dict[str, set[str]]] = {}
        with _data_dir(self.db_dir):
            for word in self._wn.words():
                pos = "a" if word.pos == "s" else word.pos
                lemma, *others = word.forms()
                for f in (lemma, *others):
                    out.setdefault(pos, {}).setdefault(f, set()).add(lemma)
        return out

    def base_forms(self, word: str, pos: str) -> set[str]:
        form = word.replace("_", " ")
        if self.language.split("-")[0] == "en":
            found = self._morphy(form.lower(), pos).get(pos, set())
            if pos == "a":
                found = found | self._morphy(form.lower(), "s").get("s", set())
        else:
            found = self._forms.get(pos, {}).get(form, set()) | self._forms.get(pos, {}).get(form.lower(), set())
        return {f.replace(" ", "_") for f in found}

    def sense_key_index(self) -> Mapping[str, str]:
        """WordNet sense key -> synset id, from ``dc:identifier`` sense metadata (OMW's English
        lexicons) or from sense ids that encode keys (Open English WordNet 2021+)."""
        import wn
        from wn.compat import sensekey

        out: dict[str, str] = {}
        with _data_dir(self.db_dir):
            try:
                getter = sensekey.sense_key_getter(self.spec)
            except wn.Error:  # not a lexicon wn knows the sense-key scheme of: try the metadata
                getter = None
            for s in self._wn.senses():
                key = getter(s) if getter is not None else s.metadata().get("identifier")
                if key and "%" in key:
                    out[key] = s.synset().id
                elif getter is None:
                    break  # no identifier on the first sense: the lexicon has no sense keys
        if not out:
            return super().sense_key_index()
        return out

