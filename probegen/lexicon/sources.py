"""Naming a wordnet: ``--wordnet-source pwn30|pwn31|PATH|wn:LEXICON`` -> a :class:`LexicalResource`.

``None``/``pwn30``: WordNet 3.0 as :func:`probegen.data.locate_wordnet` finds it; ``pwn31``: WordNet
3.1 from the shared archive; a folder: WNDB files of any version; a ``.xml``/``.xml.gz`` file or
``wn:LEXICON``: WN-LMF (:mod:`probegen.lexicon.lmf`). Resources are opened once per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProbegenError
from .base import LexicalResource

if TYPE_CHECKING:
    from ..data import DataInfo

#: what ``--wordnet-source`` accepts, for help texts and error messages
SOURCE_FORMS = "pwn30, pwn31, a WNDB folder, a WN-LMF .xml/.xml.gz file, or wn:LEXICON (e.g. wn:oewn:2024)"
DEFAULT_SOURCE = "pwn30"
#: the context sources a build can draw on
CONTEXT_SOURCES = ("semcor", "examples")


@dataclass(frozen=True)
class Source:
    """A parsed source: ``kind`` is pwn30, pwn31, wndb (a folder) or lmf (a file or ``wn:``)."""

    kind: str
    value: str = ""


def parse_source(source: str | None) -> Source:
    """What a ``--wordnet-source`` string names; an unusable one is a one-line ProbegenError.

    >>> parse_source(None), parse_source("pwn31"), parse_source("wn:oewn:2024")
    (Source(kind='pwn30', value=''), Source(kind='pwn31', value=''), Source(kind='lmf', value='wn:oewn:2024'))
    >>> parse_source("pwn99")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: unknown wordnet source 'pwn99' (no such file or folder); use pwn30, pwn31, a WNDB
    folder, a WN-LMF .xml/.xml.gz file, or wn:LEXICON (e.g. wn:oewn:2024)
    """
    s = (source or "").strip()
    if s.lower() in ("", DEFAULT_SOURCE):
        return Source("pwn30")
    if s.lower() == "pwn31":
        return Source("pwn31")
    if s.startswith("wn:"):
        if len(s) == 3:
            raise ProbegenError(f"wordnet source {s!r} names no lexicon; use wn:LEXICON, e.g. wn:oewn:2024")
        return Source("lmf", s)
    path = Path(s).expanduser()
    if s.lower().endswith((".xml", ".xml.gz")):
        if not path.is_file():
            raise ProbegenError(f"WN-LMF file {s} does not exist; use {SOURCE_FORMS}")
        return Source("lmf", s)
    if path.is_dir():
        return Source("wndb", s)
    why = "a file, but not .xml/.xml.gz" if path.exists() else "no such file or folder"
    raise ProbegenError(f"unknown wordnet source {s!r} ({why}); use {SOURCE_FORMS}")


def open_resource(source: str | None = None) -> LexicalResource:
    """The :class:`LexicalResource` a source string names, opened once per process; ``None`` is WordNet 3.0."""
    src = parse_source(source)
    return _open(src.kind, src.value)


@lru_cache(maxsize=8)
def _open(kind: str, value: str) -> LexicalResource:
    from ..data import load_wndb, locate_wndb, locate_wordnet, locate_wordnet31

    if kind == "lmf":
        return _open_lmf(value)
    if kind == "pwn30":
        info = locate_wordnet()
    elif kind == "pwn31":
        info = locate_wordnet31()
    else:
        info = locate_wndb(value)
    return _nltk_resource(info, load_wndb(info), value)


def _nltk_resource(info: DataInfo, reader: Any, path: str = "") -> LexicalResource:
    """NltkWordNet named by its version: any 3.0 copy is ``pwn30``, 3.1 ``pwn31``, another its path."""
    from .wndb import NltkWordNet

    source = {"3.0": "pwn30", "3.1": "pwn31"}.get(info.version, path or str(info.path))
    res = NltkWordNet(reader, source=source, label=f"WordNet {info.version}", version=info.version, sha256=info.sha256)
    res.location = f"{info.source}: {info.path}"
    return res


def _open_lmf(value: str) -> LexicalResource:
    try:
        from .lmf import open_lmf
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.lmf":
            raise
        raise ProbegenError(f"wordnet source {value!r} is WN-LMF, but this probegen has no WN-LMF reader "
                            "(probegen.lexicon.lmf); use pwn30, pwn31 or a WNDB folder") from None
    return open_lmf(value)


def where(resource: LexicalResource) -> str:
    """One log line naming the resource and where it was found."""
    loc = getattr(resource, "location", "") or resource.source
    return f"{resource.label or resource.source} ({loc})"


def has_sense_keys(resource: LexicalResource) -> bool:
    """Whether SemCor's sense keys can be mapped to the resource's synsets."""
    try:
        resource.sense_key_index()
    except ProbegenError:
        return False
    return True


def context_source(resource: LexicalResource, requested: str | None) -> str:
    """``semcor`` or ``examples``: the one asked for (SemCor needs sense keys), else SemCor if it has them."""
    if requested not in (None, *CONTEXT_SOURCES):
        raise ProbegenError(f"unknown context source {requested!r}; use {' or '.join(CONTEXT_SOURCES)}")
    keyed = has_sense_keys(resource)
    if requested is None:
        return "semcor" if keyed else "examples"
    if requested == "semcor" and not keyed:
        raise ProbegenError(f"{resource.label or resource.source} has no sense keys, so SemCor's tags cannot "
                            "be mapped to it: use --contexts examples")
    return requested


def effective_source(wordnet_source: str | None, wordnet_path: str | None) -> str | None:
    """The ``wordnet`` string builders get: the global ``--wordnet PATH`` (WordNet 3.0's folder) when
    the source is pwn30, else the source itself (checked now, before any work)."""
    src = parse_source(wordnet_source)
    if src.kind != "pwn30":
        return wordnet_source
    if wordnet_path:
        from ..data import locate_wordnet

        locate_wordnet(wordnet_path)  # a bad --wordnet fails now, with its own message
    return wordnet_path
