"""Building, writing and reading CoDA21 datasets: probegen's directory (``groups.jsonl``, one group a line,
and ``manifest.json``) and the original release's one JSON file ``{"canary": str, "n": [group], "v": [group]}``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

import numpy as np

from ..dataset import MANIFEST_FILE, Dataset, find  # noqa: F401 - MANIFEST_FILE: importable from here as before
from ..errors import DatasetError, NothingBuilt, ProbegenError
from ..io import json_type, parse_json, read_text
from ..leaks import Morphology, default_morphology
from ..manifest import CANARY, data_block, make_manifest
from .config import Coda21Config
from .items import Context, Group, Item, text_field

if TYPE_CHECKING:
    from ..runner import Runner
    from ..scorers.base import Scorer
    from ..wordnet_graph import WordNetGraph
    from .grouping import SynsetGroup

GROUPS_FILE = "groups.jsonl"


@dataclass
class Coda21Dataset(Dataset):
    """CoDA21 groups and their manifest."""

    title = "CoDA21"
    records_file = GROUPS_FILE
    record = Group
    records_field = "groups"
    fingerprint_sep = ""

    groups: list[Group]
    manifest: dict[str, Any] = field(default_factory=dict)
    source: str = ""


def group_rng(seed: int, group_id: str) -> np.random.Generator:
    """A generator for one group that depends only on the seed and the group id."""
    return np.random.default_rng([seed, zlib.crc32(group_id.encode())])


def counts(groups: list[Group]) -> dict[str, dict[str, int]]:
    """Groups and unique synsets per POS (the figures of CoDA21's Table 1)."""
    out = {}
    for pos in ("n", "v"):
        gs = [g for g in groups if g.pos == pos]
        out[pos] = {
            "groups": len(gs),
            "unique_synsets": len({it.synset for g in gs for it in g.items}),
            "items": sum(g.k for g in gs),
        }
    return out


@dataclass
class Plan:
    """What a build knows before contexts are chosen: data, graph, SemCor index and synset groups."""

    cfg: Coda21Config
    wn_info: Any
    sc_info: Any
    graph: WordNetGraph
    index: dict[str, list[Context]]  # synset -> its first usable occurrences (no visible target form), corpus order
    synset_groups: list[SynsetGroup]  # in generation order
    pools: dict[str, set[str]]  # eligible members per POS
    vectors: dict[str, Any]  # per POS: synset names -> L2-normalised definition embeddings
    contexts: str = "semcor"  # where contexts come from: semcor | examples (the synsets' own)
    eligibility: dict[str, Any] = field(default_factory=dict)  # per POS: eligible_pool's counts (manifest)


def plan(cfg: Coda21Config, wordnet: str | None, semcor: str | None, progress: bool, log: Callable[[str], None],
         contexts: str | None = None, *, runner: Runner) -> Plan:
    """Locate the data and form the synset groups: the context-free half of a build (arguments as
    :func:`build`; eligibility: :func:`eligible_pool`)."""
    from ..contexts import example_occurrences
    from ..data import locate_semcor
    from ..lexicon.sources import context_source, open_resource, where
    from ..semcor import context_index
    from ..wordnet_graph import load_graph
    from .grouping import form_groups
    from .vectors import definition_vectors

    cfg.validate()
    wn_info = open_resource(wordnet)
    contexts = context_source(wn_info, contexts)
    sc_info = locate_semcor(semcor) if contexts == "semcor" else None
    log(f"{where(wn_info)}; "
        + (f"SemCor {sc_info.version} ({sc_info.source})" if sc_info else "contexts: the synsets' examples"))
    graph = load_graph(wordnet)
    if sc_info is not None:
        occurrences = context_index(sc_info, wn_info, wn_info)
    else:
        occurrences = example_occurrences(graph, [s for pos in cfg.pos for s in graph.synsets(pos)],
                                          default_morphology(wordnet))
    morph = default_morphology(wordnet)
    synset_groups, pools, vectors, index, eligibility = [], {}, {}, {}, {}
    for pos in cfg.pos:
        occs = {s: o for s, o in occurrences.items() if s in graph and graph.pos(s) == pos}
        pos_index, pools[pos], eligibility[pos] = eligible_pool(occs, cfg.min_contexts, cfg.max_contexts, morph)
        index.update(pos_index)
        # embedded: every synset with a usable context (a superset of the pool; the cache key as before)
        with_usable = sorted(s for s, ctxs in pos_index.items() if ctxs)
        vectors[pos] = definition_vectors(graph, with_usable, cfg.embedder, wn_info.sha256, progress=progress,
                                          runner=runner)
        found = form_groups(graph, pools[pos], pos, cfg, vectors[pos], progress=progress)
        dropped = eligibility[pos]["dropped_no_leak_free_context"]
        log(f"{pos}: {len(found)} groups from {len(pools[pos])} eligible synsets "
            f"({dropped} with >= {cfg.min_contexts} occurrences dropped: no leak-free context)")
        if not found:  # a requested part of speech with no group is a failed build, not a smaller one
            raise NothingBuilt(_nothing_built(cfg, pools, pos))
        synset_groups.extend(found)
    return Plan(cfg, wn_info, sc_info, graph, index, synset_groups, pools, vectors, contexts, eligibility)


def eligible_pool(
    occurrences: Mapping[str, Sequence[Context]], min_occurrences: int, max_contexts: int, morph: Morphology
) -> tuple[dict[str, list[Context]], set[str], dict[str, int]]:
    """(synset -> its first ``max_contexts`` usable occurrences, the eligible pool, counts) for one part
    of speech: eligible with ``min_occurrences`` occurrences, leaky ones included (the paper's count).

    >>> class Occ:  # a SemCor-like occurrence: its lemma hidden at (4, 7)
    ...     def __init__(self, text): self.text, self.lemma = text, text[4:7]
    ...     def context(self): return Context(self.text, (4, 7))
    >>> occs = {"dog.n.01": [Occ("the dog saw a dog"), Occ("the dog ran")], "cat.n.01": [Occ("the cat saw a cat")] * 2}
    >>> index, pool, counts = eligible_pool(occs, 2, 10, default_morphology())
    >>> sorted(pool), [o.text for o in index["dog.n.01"]], counts["dropped_no_leak_free_context"]
    (['dog.n.01'], ['the dog ran'], 1)
    """
    from .contexts import usable_occurrences

    # as many usable occurrences as candidate choice and the count below ever look at
    usable = {s: usable_occurrences(occs, max(min_occurrences, max_contexts), morph) for s, occs in occurrences.items()}
    qualified = {s for s, occs in occurrences.items() if len(occs) >= min_occurrences}
    pool = {s for s in qualified if usable[s]}
    return {s: u[:max_contexts] for s, u in usable.items()}, pool, {
        "min_occurrences": min_occurrences,
        "qualified": len(qualified),
        "dropped_no_leak_free_context": len(qualified) - len(pool),
        # admitted by the paper's count where a count of leak-free contexts alone would refuse them
        "kept_with_fewer_leak_free_contexts": sum(len(usable[s]) < min_occurrences for s in pool),
    }


def _nothing_built(cfg: Coda21Config, pools: dict[str, set[str]], pos: str) -> str:
    """Why no ``pos`` group was formed: the criteria, the eligible synsets, and what to loosen."""
    hint = (f"no synset has {cfg.min_contexts} occurrences and a usable context"
            + ("; try --noisy" if cfg.clean else "") if not pools[pos]
            else "try a higher --max-similarity or a smaller --k-min")
    names = {"n": "noun", "v": "verb"}
    others = [names.get(p, p) for p in cfg.pos if p != pos]
    if len(others) == 1:
        hint += f", or build the {others[0]}s alone with --pos {others[0]}"
    name = names.get(pos, pos)
    return (f"no {name} CoDA21 group met the criteria (k_min={cfg.k_min}, k_max={cfg.k_max}, max_similarity="
            f"{cfg.max_similarity} with embedder {cfg.embedder}, {cfg.variant}, relation {cfg.relation}; "
            f"{len(pools[pos])} eligible {name} synsets): {hint}; nothing was written")


def pick_contexts(
    p: Plan, members: list[str], progress: bool = True, log: Callable[[str], None] = print, *, runner: Runner
) -> tuple[dict[str, Context], Any]:
    """(synset -> chosen context, the context scorer or None) for ``members``, among the first
    ``max_contexts`` usable occurrences of each (``runner`` loads the scorer)."""
    from .contexts import choose_contexts

    cfg = p.cfg
    candidates = {
        m: [c.context() for c in p.index[m][: cfg.max_contexts]] for m in members
    }
    n_scored = sum(len(v) for v in candidates.values() if len(v) > 1)
    log(f"choosing contexts for {len(members)} synsets ({n_scored} candidate contexts, scorer {cfg.context_scorer})")
    if cfg.context_scorer == "first":  # no LM: the first SemCor occurrence (fast, for tests/drafts)
        return {m: c[0] for m, c in candidates.items()}, None
    scorer = _context_scorer(cfg.context_scorer, runner)
    return choose_contexts(candidates, scorer, progress=progress, runner=runner), scorer


def group_ids(cfg: Coda21Config, synset_groups: list[SynsetGroup]) -> list[str]:
    """``<variant>-<pos>-<serial>`` ids, numbered per POS in generation order."""
    serial = {pos: 0 for pos in cfg.pos}
    out = []
    for sg in synset_groups:
        serial[sg.pos] += 1
        out.append(f"{cfg.variant}-{sg.pos}-{serial[sg.pos]:04d}")
    return out


def assemble(
    p: Plan, synset_groups: list[SynsetGroup], chosen: dict[str, Context], scorer: Scorer | None,
    ids: list[str] | None = None, **extra: Any
) -> Coda21Dataset:
    """Groups (items in a seeded shuffled order) plus the manifest, from chosen contexts."""
    cfg, graph = p.cfg, p.graph
    groups: list[Group] = []
    for sg, gid in zip(synset_groups, ids or group_ids(cfg, synset_groups)):
        items = [Item(m, _lemma_for(p, m, chosen[m]), graph.definition(m), chosen[m]) for m in sg.members]
        order = group_rng(cfg.seed, gid).permutation(len(items))
        groups.append(Group(gid, sg.pos, sg.ancestor, sg.relation, tuple(items[i] for i in order)))

    examples = p.contexts == "examples"
    manifest = make_manifest(
        "coda21",
        cfg.to_dict(),
        cfg.seed,
        data_block(p.wn_info, p.sc_info),
        counts(groups),
        embedder=cfg.embedder,
        context_scorer={"model": cfg.context_scorer, **(_settings(scorer) if scorer else {})},
        context_criterion=(_criterion(scorer).replace("SemCor context in corpus", "example in wordnet") if examples
                           else _criterion(scorer)),
        context_filter=("the synsets' own examples with a lemma found by the wordnet's morphology" if examples else
                        "SemCor occurrences only, no proper names (pn=)") + ", no form of the target lemma "
                       "visible outside the hidden span (probegen.leaks)",
        eligibility={"rule": f"at least {cfg.min_contexts} {'examples' if examples else 'SemCor occurrences'}, leaky "
                             "ones included (the paper's count); the context is chosen among the leak-free ones, "
                             "and a synset with none is dropped",
                     **{pos: p.eligibility[pos] for pos in cfg.pos if pos in p.eligibility}},
        **({"contexts": "examples"} if examples else {}),
        **extra,
    )
    return Coda21Dataset(groups, manifest)


def build(
    cfg: Coda21Config,
    wordnet: str | None = None,
    semcor: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    contexts: str | None = None,
    *,
    runner: Runner,
) -> Coda21Dataset:
    """Generate a CoDA21 dataset from a wordnet (``wordnet``: ``probegen.lexicon.sources``, None is WordNet
    3.0) and SemCor (or the wordnet's own examples, ``contexts="examples"``).

    ``runner`` loads the embedder and the context scorer (under ``torchrun`` every rank scores a share).
    """
    progress = progress and runner.progress  # one bar for the run: rank 0's
    log = runner.main_log(log)
    p = plan(cfg, wordnet, semcor, progress, log, contexts, runner=runner)
    # contexts are chosen only for synsets that ended up in groups (groups don't depend on them)
    members = sorted({m for g in p.synset_groups for m in g.members})
    chosen, scorer = pick_contexts(p, members, progress, log, runner=runner)
    return assemble(p, p.synset_groups, chosen, scorer)


def _criterion(scorer: Scorer | None) -> str:
    if scorer is None:
        return "first SemCor context in corpus order"
    if scorer.kind == "masked":
        return "masked target log-prob averaged over word pieces"
    return "mean log P(target tokens | left context) under a causal LM"


def _settings(scorer: Any) -> dict[str, Any]:
    try:
        return dict(scorer.settings())
    except Exception:  # a scorer without settings still generates
        return {}


def _context_scorer(name: str, runner: Runner) -> Scorer:
    from ..scorers import CAUSAL_KINDS, LM_KINDS

    causal = _kind(name, runner) in CAUSAL_KINDS
    scorer: Scorer = runner.load_scorer(name, reduction="mean") if causal else runner.load_scorer(name)
    if scorer.kind not in LM_KINDS:
        raise ProbegenError(f"--context-scorer must be a causal or masked LM; {name!r} is a {scorer.kind} model")
    return scorer


def _kind(name: str, runner: Any) -> str:
    return cast(str, runner.resolve(name).kind)


def _lemma_for(p: Plan, synset: str, ctx: Context) -> str:
    """SemCor's lemma for the chosen occurrence ("buffs" of fan.n.03 is buff, not fan), else the
    synset's first lemma."""
    lemmas = p.graph.lemmas(synset)
    if ctx.source == "wordnet" and ctx.lemma:  # an example: its lemma was located in it
        return ctx.lemma
    for occ in p.index.get(synset, ()):
        if occ.sent_id == ctx.sent_id and occ.lemma and tuple(occ.span or ()) == tuple(ctx.span or ()):
            return next((lem for lem in lemmas if lem.lower() == occ.lemma.lower()), occ.lemma)
    return lemmas[0]


# ---- files --------------------------------------------------------------------------------------
def write(ds: Coda21Dataset, out: str | Path) -> Path:
    """Write ``groups.jsonl`` and ``manifest.json`` into ``out`` (atomically, as a whole directory)."""
    return ds.write(out)


def load(path: str | Path) -> Coda21Dataset:
    """Read a probegen CoDA21 directory or a file in the original CoDA21 JSON schema."""
    p = find(path)
    ds = Coda21Dataset.read_dir(p) if p.is_dir() else import_coda21_json(p)
    check(ds)
    return ds


def check(ds: Coda21Dataset, k_max: int = 30) -> None:
    """Reject empty datasets, repeated group ids, and groups that are too small or large or repeat a
    synset or a definition (the gold alignment would be ambiguous).

    >>> ctx = Context(text="a w b", char_span=(2, 3))
    >>> g = Group("g1", "n", "a.n.01", "parent",
    ...           (Item("x.n.01", "x", "a thing", ctx), Item("y.n.01", "y", "A thing ", ctx)))
    >>> check(Coda21Dataset([g]))
    Traceback (most recent call last):
    probegen.errors.DatasetError: group g1 repeats the definition 'A thing ' (items 1 and 2)
    """
    if not ds.groups:
        raise DatasetError(f"dataset {ds.source} has no groups")
    where = f"{ds.source}: " if ds.source else ""
    seen_ids: set[str] = set()
    for g in ds.groups:
        if g.id in seen_ids:
            raise DatasetError(f"{where}group id {g.id!r} occurs more than once in {ds.source or 'the dataset'}")
        seen_ids.add(g.id)
        if g.k < 2:
            raise DatasetError(f"{where}group {g.id} has {g.k} item(s); a group needs at least 2")
        if g.k > k_max:
            raise DatasetError(f"{where}group {g.id} has {g.k} items; at most {k_max} are supported")
        if g.pos not in ("n", "v"):
            raise DatasetError(f"{where}group {g.id} has unknown pos {g.pos!r} (expected n or v)")
        synsets: dict[str, int] = {}
        definitions: dict[str, int] = {}
        for i, it in enumerate(g.items, 1):
            if it.synset in synsets:
                raise DatasetError(f"{where}group {g.id} repeats the synset {it.synset} (items {synsets[it.synset]} "
                                   f"and {i})")
            synsets[it.synset] = i
            key = " ".join(it.definition.split()).casefold()  # equal up to case and spacing
            if key in definitions:
                raise DatasetError(f"{where}group {g.id} repeats the definition {it.definition!r} (items "
                                   f"{definitions[key]} and {i})")
            definitions[key] = i


# ---- the original release's schema ---------------------------------------------------------------
def export_coda21_json(ds: Coda21Dataset) -> dict[str, Any]:
    """The dataset in the original CoDA21 schema; two extra keys its readers ignore make the round trip
    exact: the group ``id`` (it seeds column order) and ``target_char_spans`` (a word may occur twice)."""
    out: dict[str, Any] = {"canary": ds.manifest.get("canary", CANARY), "n": [], "v": []}
    for g in ds.groups:
        out[g.pos].append(
            {
                "id": g.id,
                "common_ancestor_info": {"relation": g.relation, "ancestor_name": g.ancestor},
                "candidates": [
                    {
                        "synset_name": it.synset,
                        "definition": it.definition,
                        "contexts": [it.context.text],
                        "words_in_contexts": [it.context.surface],
                        "target_char_spans": [list(it.context.char_span)],
                    }
                    for it in g.items
                ],
            }
        )
    return out


def _first(c: dict[str, Any], key: str) -> str:
    """The first string of a candidate's list field (``contexts``, ``words_in_contexts``)."""
    v = c.get(key)
    if not isinstance(v, list) or not v or not isinstance(v[0], str):
        raise DatasetError(f"'{key}' must be a non-empty list of strings")
    return v[0]


def _imported_context(c: dict[str, Any]) -> Context:
    """A candidate's first context; the target by its recorded span if it still covers the word, else
    as a whole word."""
    text, word = _first(c, "contexts"), _first(c, "words_in_contexts")
    if not text.strip():
        raise DatasetError("empty context")
    if not word.strip():
        raise DatasetError("empty target word ('words_in_contexts')")
    spans = c.get("target_char_spans")
    if spans:
        sp = spans[0] if isinstance(spans, list) else None
        if not (isinstance(sp, list) and len(sp) == 2 and all(type(x) is int for x in sp)):
            shown = " ".join(repr(spans)[:40].split())  # one line, however the value is spaced (repr: a blank shows)
            raise DatasetError(f"'target_char_spans' must be a list of [start, end] integer pairs, got {shown}")
        a, b = sp
        if not 0 <= a < b <= len(text):
            raise DatasetError(f"'target_char_spans' {sp} is empty or outside the context ({len(text)} characters)")
        if text[a:b] == word:
            return Context(text=text, char_span=(a, b), source="user")
    return Context.from_text(text, word, source="user")


def _imported_group(g: Any, pos: str) -> tuple[str, str, tuple[Item, ...]]:
    """(ancestor, relation, items) of one group of the release schema (DatasetError saying what is wrong)."""
    if not isinstance(g, dict):
        raise DatasetError("not a JSON object")
    info = g.get("common_ancestor_info")
    if not isinstance(info, dict):
        raise DatasetError("missing or invalid 'common_ancestor_info' (an object)")
    ancestor, relation = text_field(info, "ancestor_name"), text_field(info, "relation")
    cands = g.get("candidates")
    if not isinstance(cands, list):
        raise DatasetError("missing or invalid 'candidates' (a list)")
    items = []
    for j, c in enumerate(cands):
        try:
            if not isinstance(c, dict):
                raise DatasetError("not a JSON object")
            synset = text_field(c, "synset_name")
            items.append(Item(synset, synset.split(".")[0], text_field(c, "definition"), _imported_context(c)))
        except DatasetError as e:
            raise DatasetError(f"candidate {j}: {e}") from None
    return ancestor, relation, tuple(items)


def import_coda21_json(path: str | Path) -> Coda21Dataset:
    """Read a file in the original CoDA21 schema (a DatasetError names the file, group and candidate)."""
    path = Path(path)
    raw = parse_json(read_text(path), path)
    if not isinstance(raw, dict) or not ({"n", "v"} & raw.keys()):
        raise DatasetError(f"{path}: not a CoDA21 file (expected an object with 'n' and/or 'v' group lists)")
    groups = []
    for pos in ("n", "v"):
        listed = raw.get(pos, [])
        if not isinstance(listed, list):
            raise DatasetError(f"{path}: '{pos}' must be a list of groups, got {json_type(listed)}")
        for i, g in enumerate(listed):
            gid = g.get("id") if isinstance(g, dict) and isinstance(g.get("id"), str) and g["id"] else None
            try:
                ancestor, relation, items = _imported_group(g, pos)
            except DatasetError as e:
                raise DatasetError(f"{path}: group {pos}[{i}]{f' ({gid})' if gid else ''}: {e}") from None
            groups.append(Group(gid or f"{path.stem}-{pos}-{i + 1:04d}", pos, ancestor, relation, items))
    manifest = {"kind": "coda21", "canary": raw.get("canary", ""), "source_format": "coda21-json",
                "counts": counts(groups)}
    return Coda21Dataset(groups, manifest, str(path))
