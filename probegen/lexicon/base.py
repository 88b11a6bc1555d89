"""One small interface over a lexical resource (a wordnet), whatever its file format (WNDB:
:mod:`probegen.lexicon.wndb`; WN-LMF: :mod:`probegen.lexicon.lmf`); :func:`probegen.wordnet_graph.build_graph`
turns any resource into the graph every generator walks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterator, Mapping

#: synset-level relations a graph carries, by probegen's name (WN-LMF names in comments where they
#: differ). hypernym / instance_hypernym become graph edges; the rest are node attributes.
RELATIONS: tuple[str, ...] = (
    "hypernym",
    "instance_hypernym",
    "part_meronym",  # mero_part
    "member_meronym",  # mero_member
    "substance_meronym",  # mero_substance
    "part_holonym",  # holo_part
    "member_holonym",  # holo_member
    "substance_holonym",  # holo_substance
    "entailment",  # entails
    "cause",  # causes
    "similar_to",  # similar
    "also_see",  # also
    "verb_group",
    "attribute",
)
#: relations a generator may ask for: the stored ones, their hierarchy inverses, and antonymy
#: (stored on lemmas, lifted to synsets).
QUERYABLE: tuple[str, ...] = RELATIONS + ("hyponym", "instance_hyponym", "antonym")


@dataclass(frozen=True)
class SynsetRecord:
    """One synset as a resource gives it.

    ``name`` is the graph node id: nltk's ``dog.n.01`` for WNDB, the synset id for WN-LMF.
    ``pos`` is ``n``, ``v``, ``a`` (satellites included) or ``r``. ``lemmas`` use ``_`` for spaces.
    ``order`` is the resource's own file order (WNDB byte offset), used to sort synsets.
    ``pointers`` are ``(relation, target name)`` with relation in :data:`RELATIONS`, sorted;
    ``antonyms`` are ``(lemma, target synset, target lemma)``, sorted.
    """

    name: str
    pos: str
    lemmas: tuple[str, ...]
    definition: str
    examples: tuple[str, ...] = ()
    order: int = 0
    lexname: str = ""
    pointers: tuple[tuple[str, str], ...] = ()
    antonyms: tuple[tuple[str, str, str], ...] = ()
    ili: str = ""


class LexicalResource(ABC):
    """A wordnet: its synsets, its morphology, and how to name it in a manifest."""

    #: how the user named it: ``pwn30``, ``pwn31``, a path, or ``wn:LEXICON``
    source: str = ""
    #: e.g. ``WordNet 3.0``, ``oewn:2024``
    label: str = ""
    version: str = ""
    language: str = "en"
    #: a checksum of the underlying files: keys caches and goes into manifests
    sha256: str = ""

    @abstractmethod
    def synsets(self) -> Iterator[SynsetRecord]:
        """Every synset, in a deterministic order."""

    @abstractmethod
    def base_forms(self, word: str, pos: str) -> set[str]:
        """The lemma forms ``word`` can be an inflection of in ``pos`` (itself included if a lemma)."""

    def sense_key_index(self) -> Mapping[str, str]:
        """WordNet sense key -> synset name, for mapping sense-tagged corpora (SemCor).

        Resources without sense keys raise: their contexts come from examples (``--contexts examples``).
        """
        from ..errors import ProbegenError

        raise ProbegenError(f"{self.label or self.source} has no sense keys: use --contexts examples")

    def describe(self) -> dict[str, str]:
        """What a manifest records about the resource."""
        return {"source": self.source, "label": self.label, "version": self.version,
                "language": self.language, "sha256": self.sha256}
