"""The CoDA21 record: a :class:`Group` of :class:`Member` s, serialised as one JSON object per group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ..contexts import Context  # re-exported: the shared model, importable from here as before
from ..errors import DatasetError
from ..io import json_type
from ..items import Item as Record

__all__ = ["Context", "Group", "Item", "Member"]


@dataclass(frozen=True)
class Member:
    """One synset of a group: its lemma, definition and one context where it occurs.

    >>> it = Member("ice.n.01", "ice", "frozen water", Context.from_text("The mice saw ice.", "ice"))
    >>> it.to_json()["context"]  # the CoDA21 layout: no source/ref, unlike WordNetQA's
    {'text': 'The mice saw ice.', 'char_span': [13, 16]}
    >>> Member.from_json(it.to_json()) == it
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
            "context": self.context.to_json("with-tokens"),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Member":
        if not isinstance(d, dict) or not isinstance(d.get("context"), dict):
            raise DatasetError("an item must be an object with a 'context' object")
        synset = text_field(d, "synset")
        lemma = text_field(d, "lemma") if "lemma" in d else synset.split(".")[0]
        return cls(synset, lemma, text_field(d, "definition"), Context.from_json(d["context"], "with-tokens"))


# the name a group member had before the shared record base (probegen.items.Item) took it
Item = Member


def text_field(d: dict[str, Any], key: str) -> str:
    """``d[key]`` if it is a non-blank string, else a DatasetError naming the field.

    >>> text_field({"definition": 12345}, "definition")
    Traceback (most recent call last):
    probegen.errors.DatasetError: 'definition' must be a non-empty string, got a number
    """
    v = d.get(key)
    if not isinstance(v, str) or not v.strip():
        raise DatasetError(f"'{key}' must be a non-empty string, got "
                           f"{json_type(v) if not isinstance(v, str) else 'an empty one'}")
    return v


@dataclass(frozen=True)
class Group(Record):
    """A CoDA21 group: k members (``items``, seeded order) whose contexts must be aligned to their
    definitions; gold pairs member i's context with member i's definition."""

    what = "CoDA21 group"

    id: str
    pos: str
    ancestor: str
    relation: str
    items: tuple[Member, ...]

    @property
    def k(self) -> int:
        return len(self.items)

    def targets(self) -> Iterator[tuple[Context, str]]:
        return ((it.context, it.lemma) for it in self.items)

    def to_json(self) -> dict[str, Any]:
        head = {k: getattr(self, k) for k in ("id", "pos", "ancestor", "relation")}
        return {**head, "items": [it.to_json() for it in self.items]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Group":
        gid = str(d.get("id", "?"))[:60] if isinstance(d, dict) else "?"
        try:
            if not isinstance(d, dict) or not isinstance(d.get("items"), list):
                raise DatasetError("a group must be an object with an 'items' list")
            gid_, pos, ancestor, relation = (text_field(d, k) for k in ("id", "pos", "ancestor", "relation"))
            return cls(gid_, pos, ancestor, relation, tuple(Member.from_json(x) for x in d["items"]))
        except DatasetError as e:
            raise DatasetError(f"malformed {cls.what} {gid}: {e}") from None
        except KeyError as e:
            raise DatasetError(f"malformed {cls.what} {gid}: missing field {e}") from None
        except (TypeError, ValueError) as e:
            raise DatasetError(f"malformed {cls.what} {gid}: {e}") from None
