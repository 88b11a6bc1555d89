"""Lexical resources (wordnets) behind one interface; see :mod:`probegen.lexicon.base`."""

from .base import QUERYABLE, RELATIONS, LexicalResource, SynsetRecord
from .lmf import open_lmf
from .lmf_write import write_lmf

__all__ = ["LexicalResource", "SynsetRecord", "RELATIONS", "QUERYABLE", "open_lmf", "write_lmf"]
