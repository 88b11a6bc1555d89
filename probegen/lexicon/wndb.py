"""WNDB files (Princeton WordNet's ``data.*``/``index.*``) read through nltk's WordNet reader."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterator, cast

from .base import RELATIONS, LexicalResource, SynsetRecord


def record_from_nltk(s: Any) -> SynsetRecord:
    """A :class:`SynsetRecord` from an nltk ``Synset``."""
    # nltk's Synset method for each relation is its name plus "s" (hypernyms, similar_tos, ...)
    pointers = sorted({(rel, t.name()) for rel in RELATIONS for t in getattr(s, f"{rel}s")()})
    antonyms = sorted({(lem.name(), a.synset().name(), a.name()) for lem in s.lemmas() for a in lem.antonyms()})
    return SynsetRecord(
        name=s.name(),
        pos="a" if s.pos() == "s" else s.pos(),
        lemmas=tuple(lem.name() for lem in s.lemmas()),
        definition=s.definition(),
        examples=tuple(s.examples()),
        order=s.offset(),
        lexname=s.lexname(),
        pointers=tuple(pointers),
        antonyms=tuple(antonyms),
    )


class NltkWordNet(LexicalResource):
    """A WNDB wordnet opened by nltk's ``WordNetCorpusReader`` (``reader``)."""

    location: str  # where it was found, set by probegen.lexicon.sources

    def __init__(self, reader: Any, source: str = "", label: str = "", version: str = "", sha256: str = "") -> None:
        self.reader = reader
        self.source, self.label, self.version, self.sha256 = source, label, version, sha256

    def synsets(self) -> Iterator[SynsetRecord]:
        yield from (record_from_nltk(s) for s in sorted(self.reader.all_synsets(), key=lambda s: (s.pos(), s.offset())))

    def base_forms(self, word: str, pos: str) -> set[str]:
        return set(self.reader._morphy(word.lower(), pos)) if pos and pos in "nvar" else set()

    def sense_key_index(self) -> "SenseKeys":
        """Sense key -> synset name from the wordnet's own ``index.sense`` (resolved lazily)."""
        if getattr(self, "_sense_keys", None) is None:
            self._sense_keys = SenseKeys(self.reader)
        return self._sense_keys


class SenseKeys(Mapping[str, str]):
    """``index.sense`` as a read-only mapping: sense key -> synset name, resolved only when asked (SemCor
    needs ~30k of the ~207k keys) and only if the synset at that offset has a sense with that key."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self._offsets: dict[str, int] = {}
        with open(Path(reader.root.path) / "index.sense", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) >= 2:
                    self._offsets[fields[0]] = int(fields[1])
        self._names: dict[str, str | None] = {}

    def _resolve(self, key: str) -> str | None:
        from nltk.corpus.reader.wordnet import WordNetError

        offset = self._offsets.get(key)
        if offset is None:
            return None
        try:
            pos = "nvars"[int(key.split("%")[1].split(":")[0]) - 1]  # ss_type digit 1..5
            synset = self.reader.synset_from_pos_and_offset(pos, offset)
        except (WordNetError, ValueError, KeyError, IndexError):
            return None
        if synset is None or not any(lem.key() == key for lem in synset.lemmas()):
            return None
        return cast(str, synset.name())

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]  # str only
        if key not in self._names:
            self._names[key] = self._resolve(key)
        got = self._names[key]
        return default if got is None else got

    def __getitem__(self, key: str) -> str:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._offsets if self.get(k) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
