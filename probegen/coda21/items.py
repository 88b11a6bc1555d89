"""The CoDA21 item model: plain dataclasses, serialised as one JSON object per group."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import DatasetError
from ..text import detokenize


@dataclass(frozen=True)
class Context:
    """A sentence with the target word located by character span (and token span if known)."""

    text: str
    char_span: tuple[int, int]
    tokens: tuple[str, ...] | None = None
    span: tuple[int, int] | None = None
    sent_id: str | None = None

    @property
    def word(self) -> str:
        a, b = self.char_span
        return self.text[a:b]

    @classmethod
    def from_tokens(cls, tokens: tuple[str, ...], span: tuple[int, int], sent_id: str | None = None) -> "Context":
        """Build from SemCor tokens; the character span is derived from the token span."""
        text, spans = detokenize(tokens)
        return cls(text, (spans[span[0]][0], spans[span[1] - 1][1]), tuple(tokens), tuple(span), sent_id)

    @classmethod
    def from_text(cls, text: str, word: str) -> "Context":
        """Locate ``word`` as a whole word (never inside another word) in ``text``.

        >>> Context.from_text("The mice saw ice.", "ice").char_span
        (13, 16)
        """
        for flags in (0, re.IGNORECASE):
            m = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags)
            if m:
                return cls(text, (m.start(), m.end()))
        raise DatasetError(f"target word {word!r} not found as a whole word in context {text[:60]!r}")

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text, "char_span": list(self.char_span)}
        if self.tokens is not None:
            d["tokens"] = list(self.tokens)
            d["span"] = list(self.span or ())
        if self.sent_id is not None:
            d["sent_id"] = self.sent_id
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Context":
        text = d["text"]
        a, b = (int(x) for x in d["char_span"])
        if not (0 <= a < b <= len(text)):
            raise DatasetError(f"char_span {[a, b]} outside context {text[:60]!r}")
        return cls(
            text,
            (a, b),
            tuple(d["tokens"]) if "tokens" in d else None,
            tuple(d["span"]) if "span" in d else None,
            d.get("sent_id"),
        )


@dataclass(frozen=True)
class Item:
    """One synset of a group: its lemma, definition and one context where it occurs."""

    synset: str
    lemma: str
    definition: str
    context: Context

    def to_json(self) -> dict[str, Any]:
        return {
            "synset": self.synset,
            "lemma": self.lemma,
            "definition": self.definition,
            "context": self.context.to_json(),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Item":
        return cls(d["synset"], d.get("lemma", d["synset"].split(".")[0]), d["definition"], Context.from_json(d["context"]))


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
