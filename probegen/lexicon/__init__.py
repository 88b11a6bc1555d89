"""Lexical resources (wordnets) behind one interface; see :mod:`probegen.lexicon.base`."""

from .base import QUERYABLE, RELATIONS, LexicalResource, SynsetRecord

__all__ = ["LexicalResource", "SynsetRecord", "RELATIONS", "QUERYABLE"]
