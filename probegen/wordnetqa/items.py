"""The WordNetQA item model: one 5-way multiple-choice question a JSON object. ``choices`` are the
presented texts in order, ``answer`` the gold index, and ``choice_meta`` says which synset each
choice renders, its role and its distance from the question's concept.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterator

from ..contexts import Context  # re-exported: the shared model, importable from here as before
from ..errors import DatasetError
from ..items import Item

LABELS = "ABCDE"


@dataclass(frozen=True)
class ChoiceMeta:
    """What a choice renders: its synset, its ``type`` (gold, random, sister, isa_up, isa_down) and its
    distance from the question's concept (None for random)."""

    synset: str
    type: str
    distance: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"synset": self.synset, "type": self.type, "distance": self.distance}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ChoiceMeta":
        return cls(d["synset"], d["type"], d.get("distance"))


@dataclass(frozen=True)
class MCItem(Item):
    """One multiple-choice question about a concept (``synset``): ``cluster`` (concept within probe
    type) and ``split`` are per concept; ``question_id`` is shared by one question's perturbations."""

    what = "WordNetQA item"

    id: str
    probe: str
    pos: str
    synset: str
    word: str  # the concept's lemma the question is about (spaces, not underscores)
    question: str  # the rendered stem (the standard, full-input question)
    template: str  # template id in templates/questions/<language>.yaml
    choices: tuple[str, ...]
    answer: int
    choice_meta: tuple[ChoiceMeta, ...]
    gold_synset: str
    hops: int  # 0 for definitions and synonymy
    chain: tuple[str, ...]  # concept ... gold synset along the ISA path (just the concept for hops 0)
    distractor_type: str  # the perturbation: random | sister | isa
    distractor_hops: int | None  # distance of the closest distractor of that type (None: random)
    cluster: str
    split: str
    question_id: str
    definition: str = ""  # the concept's gloss (the synonymy stem; kept for every probe)
    context: Context | None = None
    # a release row's stem spans that the Context ablation hides (the target in the quoted sentence,
    # the word's own quotes); empty for generated items, whose stems are rendered from templates
    stem_spans: tuple[tuple[int, int], ...] = ()

    @property
    def surface(self) -> str:
        return self.context.surface if self.context else self.word

    @property
    def answer_key(self) -> str:
        return LABELS[self.answer]

    def targets(self) -> Iterator[tuple[Context, str]]:
        """The context, if any, with the located lemma (``word``)."""
        if self.context is not None:
            yield self.context, self.word

    def to_json(self) -> dict[str, Any]:
        """Every field in declaration order (``stem_spans`` only where there are some)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(choices=list(self.choices), choice_meta=[m.to_json() for m in self.choice_meta],
                 chain=list(self.chain), context=self.context.to_json("with-source") if self.context else None,
                 stem_spans=[list(sp) for sp in self.stem_spans])
        if not self.stem_spans:
            del d["stem_spans"]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "MCItem":
        try:
            item = cls(
                id=str(d["id"]),
                probe=d["probe"],
                pos=d.get("pos", ""),
                synset=d["synset"],
                word=d.get("word", ""),
                question=d["question"],
                template=d.get("template", ""),
                choices=tuple(d["choices"]),
                answer=int(d["answer"]),
                choice_meta=tuple(ChoiceMeta.from_json(m) for m in d.get("choice_meta") or ()),
                gold_synset=d.get("gold_synset", d["synset"]),
                hops=int(d.get("hops", 0)),
                chain=tuple(d.get("chain") or ()),
                distractor_type=d.get("distractor_type", ""),
                distractor_hops=d.get("distractor_hops"),
                cluster=str(d.get("cluster", f"{d['probe']}:{d['synset']}")),
                split=d.get("split", "test"),
                question_id=d.get("question_id", str(d["id"])),
                definition=d.get("definition", ""),
                context=Context.from_json(d["context"], "with-source") if d.get("context") else None,
                stem_spans=tuple((int(a), int(b)) for a, b in d.get("stem_spans") or ()),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DatasetError(f"malformed {cls.what} {d.get('id', '?') if isinstance(d, dict) else '?'}: "
                               f"{e}") from None
        item.check()
        return item

    def check(self) -> None:
        """Reject items a 5-way evaluation cannot use."""
        n = len(self.choices)
        if n < 2:
            raise DatasetError(f"item {self.id} has {n} choice(s); multiple choice needs at least 2")
        if n > len(LABELS):
            raise DatasetError(f"item {self.id} has {n} choices; at most {len(LABELS)} are supported")
        if not 0 <= self.answer < n:
            raise DatasetError(f"item {self.id}: answer {self.answer} outside its {n} choices")
        if len(set(self.choices)) != n:
            raise DatasetError(f"item {self.id} repeats a choice text")
        if self.choice_meta and len(self.choice_meta) != n:
            raise DatasetError(f"item {self.id} has {len(self.choice_meta)} choice_meta rows for {n} choices")
