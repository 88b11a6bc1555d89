"""The CoDA21 item model: plain dataclasses, serialised as one JSON object per group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..contexts import Context  # re-exported: the shared model, importable from here as before
from ..errors import DatasetError

__all__ = ["Context", "Group", "Item"]


@dataclass(frozen=True)
class Item:
    """One synset of a group: its lemma, definition and one context where it occurs.

    >>> it = Item("ice.n.01", "ice", "frozen water", Context.from_text("The mice saw ice.", "ice"))
    >>> it.to_json()["context"]  # the CoDA21 layout: no source/ref, unlike WordNetQA's
    {'text': 'The mice saw ice.', 'char_span': [13, 16]}
    >>> Item.from_json(it.to_json()) == it
    True
    """

    synset: str
    lemma: str
    definition: str
    context: Context

    def to_json(self) -> dict[str, Any]:
        return {
            "synset": self.synset,
            "lemma": self.lemma,
            "definition": self.definition,
            "context": self.context.to_json("coda21"),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Item":
        return cls(d["synset"], d.get("lemma", d["synset"].split(".")[0]), d["definition"], Context.from_json(d["context"], "coda21"))


@dataclass(frozen=True)
class Group:
    """A CoDA21 group: k items whose contexts must be aligned to their definitions.

    Items are stored in a seeded shuffled order; gold pairs item i's context with item i's
    definition, and evaluators present the definitions in another seeded order.
    """

    id: str
    pos: str
    ancestor: str
    relation: str
    items: tuple[Item, ...]

    @property
    def k(self) -> int:
        return len(self.items)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pos": self.pos,
            "ancestor": self.ancestor,
            "relation": self.relation,
            "items": [it.to_json() for it in self.items],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Group":
        try:
            return cls(d["id"], d["pos"], d["ancestor"], d["relation"], tuple(Item.from_json(x) for x in d["items"]))
        except (KeyError, TypeError, ValueError) as e:
            raise DatasetError(f"malformed CoDA21 group {d.get('id', '?') if isinstance(d, dict) else '?'}: {e}") from None
