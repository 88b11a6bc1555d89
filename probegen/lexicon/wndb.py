"""WNDB files (Princeton WordNet's ``data.*``/``index.*``) read through nltk's WordNet reader."""

from __future__ import annotations

from typing import Iterator

from .base import LexicalResource, SynsetRecord

# nltk Synset method -> probegen relation name
_NLTK_POINTERS = (
    ("hypernyms", "hypernym"),
    ("instance_hypernyms", "instance_hypernym"),
    ("part_meronyms", "part_meronym"),
    ("member_meronyms", "member_meronym"),
    ("substance_meronyms", "substance_meronym"),
    ("part_holonyms", "part_holonym"),
    ("member_holonyms", "member_holonym"),
    ("substance_holonyms", "substance_holonym"),
    ("entailments", "entailment"),
    ("causes", "cause"),
    ("similar_tos", "similar_to"),
    ("also_sees", "also_see"),
    ("verb_groups", "verb_group"),
    ("attributes", "attribute"),
)


def record_from_nltk(s) -> SynsetRecord:
    """A :class:`SynsetRecord` from an nltk ``Synset``."""
    pointers = sorted({(rel, t.name()) for meth, rel in _NLTK_POINTERS for t in getattr(s, meth)()})
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

    def __init__(self, reader, source: str = "", label: str = "", version: str = "", sha256: str = "") -> None:
        self.reader = reader
        self.source, self.label, self.version, self.sha256 = source, label, version, sha256

    def synsets(self) -> Iterator[SynsetRecord]:
        for s in sorted(self.reader.all_synsets(), key=lambda s: (s.pos(), s.offset())):
            yield record_from_nltk(s)

    def base_forms(self, word: str, pos: str) -> set[str]:
        return set(self.reader._morphy(word.lower(), pos)) if pos in "nvar" else set()
