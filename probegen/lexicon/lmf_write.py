"""Write a probegen WordNet graph as a WN-LMF file that ``wn`` (and other WN-LMF tools) read.

Everything the graph holds goes in; :func:`probegen.lexicon.lmf.open_lmf` reads back the same graph
but for synset ids (:func:`synset_id`) and ``offset`` (WN-LMF has no place for a WNDB byte offset:
it becomes the position in the file, kept in graph order). Runs of whitespace are collapsed, as
``wn`` reads them anyway. Verb groups are written as ``similar`` between verbs, as Open English
WordNet does (WN-LMF has no verb-group relation).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProbegenError
from ..io import atomic_path

if TYPE_CHECKING:
    from ..wordnet_graph import WordNetGraph

log = logging.getLogger(__name__)

#: WN-LMF version written (1.1 is the first with ``members`` and ``lexfile``; wn reads 1.0-1.4)
LMF_VERSION = "1.1"

#: probegen relation -> WN-LMF synset relType (``verb_group`` is special-cased: see the module doc)
LMF_RELTYPES: dict[str, str] = {
    "hypernym": "hypernym",
    "instance_hypernym": "instance_hypernym",
    "part_meronym": "mero_part",
    "member_meronym": "mero_member",
    "substance_meronym": "mero_substance",
    "part_holonym": "holo_part",
    "member_holonym": "holo_member",
    "substance_holonym": "holo_substance",
    "entailment": "entails",
    "cause": "causes",
    "similar_to": "similar",
    "also_see": "also",
    "verb_group": "similar",
    "attribute": "attribute",
}

_KEEP = re.compile(r"[A-Za-z0-9._]")
_LEXICON_ID = re.compile(r"[A-Za-z_][A-Za-z0-9._]*")


def _squash(text: str) -> str:
    return " ".join(text.split())


def escape_id(text: str) -> str:
    """``text`` as a valid XML id fragment, reversibly: ASCII letters, digits, ``.`` and ``_`` stay,
    any other character becomes ``-<hex code point>-``.

    >>> escape_id("jack-o'-lantern.n.01")
    'jack-2d-o-27--2d-lantern.n.01'
    """
    return "".join(c if _KEEP.match(c) else f"-{ord(c):x}-" for c in text)


def synset_id(name: str, lexicon_id: str) -> str:
    """The WN-LMF synset id :func:`write_lmf` gives graph node ``name`` (one-to-one).

    >>> synset_id("dog.n.01", "pwn30")
    'pwn30-dog.n.01'
    """
    return f"{lexicon_id}-{escape_id(name)}"


def write_lmf(graph: WordNetGraph, path: str | Path, lexicon_id: str, label: str, language: str = "en",
              version: str = "1.0", email: str = "", license: str = "") -> Path:
    """Write ``graph`` (a :class:`~probegen.wordnet_graph.WordNetGraph`) to ``path`` as one WN-LMF lexicon.

    Ids: synsets :func:`synset_id`, entries ``<lexicon>-<lemma>-<pos>``, senses ``<synset id>-<k>``. Relation
    targets outside the graph are dropped with a warning. The output is byte-identical for the same input.

    >>> import os, tempfile
    >>> import networkx as nx
    >>> from probegen.wordnet_graph import WordNetGraph
    >>> g = nx.DiGraph()
    >>> g.add_node("dog.n.01", pos="n", lemmas=("dog",), definition="a domestic canine", examples=(),
    ...            offset=1, lexname="noun.animal", relations={}, antonyms=(), ili="")
    >>> path = write_lmf(WordNetGraph(g), os.path.join(tempfile.mkdtemp(), "mini.xml"), "mini", "Mini")
    >>> print(next(line.strip() for line in path.read_text().splitlines() if "<Synset" in line))
    <Synset id="mini-dog.n.01" ili="" partOfSpeech="n" members="mini-dog.n.01-1" lexfile="noun.animal">
    """
    import wn.lmf

    if not _LEXICON_ID.fullmatch(lexicon_id):
        raise ProbegenError(f"lexicon id {lexicon_id!r} must be a letter or _ followed by letters, digits, . or _")
    names = graph.synsets()  # (pos, offset) order: the reader's order is the position in the file
    sid = {n: synset_id(n, lexicon_id) for n in names}
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    synsets, dropped = [], 0
    for n in names:
        senses, lost_senses = _add_senses(graph.g, n, sid, lexicon_id, entries)
        rels, lost_synsets = _synset_relations(graph, n, sid)
        dropped += lost_senses + lost_synsets
        synsets.append(_synset(graph.g.nodes[n], sid[n], senses, rels))
    if dropped:
        log.warning("write_lmf: dropped %d relation(s) to synsets outside the graph", dropped)
    lexicon: Any = {"id": lexicon_id, "label": label, "language": language, "email": email,
               "license": license, "version": version, "entries": list(entries.values()),
               "synsets": synsets}
    path = Path(path)
    with atomic_path(path) as tmp:  # wn.lmf.dump opens the path itself
        wn.lmf.dump({"lmf_version": LMF_VERSION, "lexicons": [lexicon]}, str(tmp))
    return path


def _antonyms(g: Any, sid: dict[str, str], name: str, lemma: str) -> tuple[list[dict[str, str]], int]:
    """The antonym sense relations of ``lemma`` in synset ``name``, and how many were dropped."""
    rels, dropped = [], 0
    for src, tgt, tlemma in g.nodes[name].get("antonyms", ()):
        if src != lemma:
            continue
        lemmas = g.nodes[tgt]["lemmas"] if tgt in sid else ()
        if tlemma in lemmas:
            rels.append({"target": f"{sid[tgt]}-{lemmas.index(tlemma) + 1}", "relType": "antonym"})
        else:
            dropped += 1
    return rels, dropped


def _add_senses(g: Any, name: str, sid: dict[str, str], lexicon_id: str,
                entries: dict[tuple[str, str], dict[str, Any]]) -> tuple[list[str], int]:
    """Add synset ``name``'s senses to their lexical ``entries``; the sense ids and the antonyms dropped."""
    d = g.nodes[name]
    senses, dropped = [], 0
    for k, lemma in enumerate(d["lemmas"], 1):
        rels, lost = _antonyms(g, sid, name, lemma)
        dropped += lost
        sense: dict[str, Any] = {"id": f"{sid[name]}-{k}", "synset": sid[name], "relations": rels}
        senses.append(sense["id"])
        key = (lemma, d["pos"])
        if key not in entries:
            entries[key] = {"id": f"{lexicon_id}-{escape_id(lemma)}-{d['pos']}",
                            "lemma": {"writtenForm": lemma.replace("_", " "), "partOfSpeech": d["pos"]},
                            "senses": []}
        entries[key]["senses"].append(sense)
    return senses, dropped


def _synset_relations(graph: WordNetGraph, name: str, sid: dict[str, str]) -> tuple[list[dict[str, str]], int]:
    """Synset ``name``'s relations as WN-LMF synset relations, and how many were dropped."""
    pointers = [("hypernym", p) for p in graph.parents(name)]
    pointers += [("instance_hypernym", p) for p in graph.related(name, "instance_hypernym")]
    pointers += [(rel, t) for rel, targets in graph.g.nodes[name].get("relations", {}).items() for t in targets]
    rels, dropped = [], 0
    for rel, t in pointers:
        if t not in sid:
            dropped += 1
            continue
        if rel not in LMF_RELTYPES:
            raise ProbegenError(f"{name}: relation {rel!r} has no WN-LMF counterpart")
        rels.append({"target": sid[t], "relType": LMF_RELTYPES[rel]})
    return rels, dropped


def _synset(d: dict[str, Any], synset_id_: str, senses: list[str], rels: list[dict[str, str]]) -> dict[str, Any]:
    """One WN-LMF synset from a graph node's attributes ``d``."""
    definition = _squash(d["definition"])
    synset = {"id": synset_id_, "ili": d.get("ili", ""), "partOfSpeech": d["pos"], "members": senses,
              "definitions": [{"text": definition}] if definition else [],
              "relations": rels, "examples": [{"text": _squash(e)} for e in d["examples"]]}
    if d.get("lexname"):
        synset["lexfile"] = d["lexname"]
    return synset
