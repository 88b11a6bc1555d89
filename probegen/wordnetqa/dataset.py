"""Building, writing and reading WordNetQA datasets (probegen's JSONL directory and the
WordNetQA release format).

A probegen dataset is a directory with ``items.jsonl`` (one 5-way item a line, every split,
each with its ``split``) and ``manifest.json``. ``export_release`` gives the items in the
schema of the WordNetQA release (``{"id", "question": {"stem", "choices": [{"text", "label"}]},
"answerKey", "notes"}``); ``load`` reads both.

Construction (see ``probes.py`` and ``distractors.py``): concepts are the synsets of the chosen
parts of speech with a usable context; each gets its unique questions per probe type; each
unique question becomes one item per distractor perturbation (random, sister, isa) for which
at least one distractor of that type is valid. Gold positions are balanced across A-E within
every (probe, perturbation, split) by a seeded shuffle of a repeating A..E sequence; the
distractors fill the other places in a seeded per-item order.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..dataset import MANIFEST_FILE, Dataset, find  # noqa: F401 - MANIFEST_FILE: importable from here as before
from ..errors import DatasetError, NothingBuilt, ProbegenError
from ..io import UNPARSED, first_jsonl_row, iter_jsonl, json_type, sha256_text, write_jsonl
from ..manifest import CANARY, data_block, make_manifest
from .config import N_CHOICES, PROBES, WordNetQAConfig
from .items import LABELS, ChoiceMeta, Context, MCItem
from .reference import PAPER_SIZES

ITEMS_FILE = "items.jsonl"
RELEASE_DIR = "release"
SPLITS = ("train", "dev", "test")


@dataclass
class WordNetQADataset(Dataset):
    """Items plus the manifest that says how they were made (the shared container,
    :class:`probegen.dataset.Dataset`: ``fingerprint``, ``write``)."""

    title = "WordNetQA"
    records_file = ITEMS_FILE
    record = MCItem

    items: list[MCItem]
    manifest: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def split(self, name: str) -> list[MCItem]:
        return [it for it in self.items if it.split == name]

    def probe(self, name: str) -> list[MCItem]:
        return [it for it in self.items if it.probe == name]


def item_rng(seed: int, key: str) -> np.random.Generator:
    """A generator that depends only on the seed and a key (an item or question id)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


# ---- construction --------------------------------------------------------------------------------
def select_concepts(concepts: list[str], cfg: WordNetQAConfig) -> list[str]:
    """All concepts, or a seeded sample of ``max_concepts`` of them (kept in WordNet order)."""
    if cfg.max_concepts is None or cfg.max_concepts >= len(concepts):
        return list(concepts)
    keep = set(item_rng(cfg.seed, "concepts").permutation(len(concepts))[: cfg.max_concepts].tolist())
    return [c for i, c in enumerate(concepts) if i in keep]


def assign_splits(concepts: list[str], cfg: WordNetQAConfig) -> dict[str, str]:
    """concept -> train/dev/test: a seeded permutation cut by the fractions (disjoint by concept).

    >>> sp = assign_splits([f"c{i}" for i in range(10)], WordNetQAConfig(dev_frac=0.2, test_frac=0.3))
    >>> sorted(sp.values()).count("test"), sorted(sp.values()).count("dev")
    (3, 2)
    """
    n = len(concepts)
    n_test = int(round(cfg.test_frac * n))
    n_dev = int(round(cfg.dev_frac * n))
    order = item_rng(cfg.seed, "splits").permutation(n)
    out = {}
    for rank, i in enumerate(order.tolist()):
        out[concepts[i]] = "test" if rank < n_test else "dev" if rank < n_test + n_dev else "train"
    return out


def balanced_positions(n: int, seed: int, key: str) -> np.ndarray:
    """``n`` gold positions in 0..4 whose counts differ by at most one, in seeded order.

    >>> np.bincount(balanced_positions(12, 0, "x"), minlength=5).tolist()
    [3, 3, 2, 2, 2]
    """
    return item_rng(seed, f"gold/{key}").permutation(np.resize(np.arange(N_CHOICES), n))


def _nothing_built(cfg: WordNetQAConfig, n_concepts: int, skipped: dict[str, dict[str, int]]) -> str:
    """Why a build has no item: the settings that decide it and what was skipped."""
    why = "; ".join(f"{p}: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sk.items() if n) for p, sk in skipped.items())
    return (f"no WordNetQA item met the criteria (probes={','.join(cfg.probes)}, pos={','.join(cfg.pos)}, "
            f"max_hops={cfg.max_hops}, min_answer_depth={cfg.min_answer_depth}, distractors={','.join(cfg.distractors)}; "
            f"{n_concepts} concepts with a context" + (f"; {why}" if why.strip("; :") else "") + "); nothing was written")


def build(
    cfg: WordNetQAConfig,
    wordnet: str | None = None,
    semcor: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> WordNetQADataset:
    """Generate a WordNetQA dataset from a wordnet (``wordnet``: a source string, see
    ``probegen.lexicon.sources``; None is WordNet 3.0) and SemCor if asked, with the given configuration."""
    from . import render

    cfg.validate()
    wn_info, sc_info, graph, index = _sources(cfg, wordnet, semcor, log)
    contexts, ctx_stats = _contexts(cfg, graph, wn_info, index, log)
    concepts = [s for pos in cfg.pos for s in graph.synsets(pos) if s in contexts]
    if cfg.concepts is not None:  # a probe spec's concept filter (SemCor counts only if it asks)
        concepts = _filtered(concepts, cfg.concepts, graph, wordnet, semcor, log)
    concepts = select_concepts(concepts, cfg)
    renderers = {p: choice_renderer(graph, p) for p in cfg.probes}
    pending, skipped = _pending_items(cfg, graph, concepts, contexts, assign_splits(concepts, cfg), renderers, progress)
    items = _assemble(pending, graph, renderers, cfg)
    if not items:
        raise NothingBuilt(_nothing_built(cfg, len(concepts), skipped))
    c = counts(items)
    for p in cfg.probes:
        c.setdefault(p, {})["skipped"] = skipped[p]
    log("; ".join(f"{p}: {c[p]['unique_questions']} questions / {c[p]['synsets']} synsets / {c[p]['items']} items" for p in cfg.probes if p in c))
    manifest = make_manifest(
        "wordnetqa",
        cfg.to_dict(),
        cfg.seed,
        data_block(wn_info, sc_info),
        c,
        name=cfg.name,
        contexts=ctx_stats,
        templates_sha256=sha256_text(json.dumps(render.spec(), sort_keys=True)),
        paper_sizes=PAPER_SIZES,
    )
    return WordNetQADataset(items, manifest)


def _sources(cfg: WordNetQAConfig, wordnet: str | None, semcor: str | None, log: Callable[[str], None]):
    """(wordnet info, SemCor info or None, graph, SemCor context index or None) of a build."""
    from ..data import locate_semcor
    from ..lexicon.sources import context_source, open_resource, where
    from ..wordnet_graph import load_graph

    wn_info = open_resource(wordnet)
    if cfg.contexts == "wordnet+semcor":
        context_source(wn_info, "semcor")  # a wordnet without sense keys: one line, before any work
    sc_info = locate_semcor(semcor) if cfg.contexts == "wordnet+semcor" else None
    log(where(wn_info) + (f"; SemCor {sc_info.version} ({sc_info.source})" if sc_info else ""))
    graph = load_graph(wordnet)
    index = None
    if sc_info is not None:
        from ..semcor import context_index

        index = context_index(sc_info, wn_info, wn_info)
    return wn_info, sc_info, graph, index


def _contexts(cfg: WordNetQAConfig, graph, wn, index, log: Callable[[str], None]) -> tuple[dict[str, list], dict[str, Any]]:
    """(synset -> usable contexts, per-POS context statistics for the manifest)."""
    from .contexts import collect_contexts

    contexts: dict[str, list] = {}
    ctx_stats = {}
    for pos in cfg.pos:
        found, st = collect_contexts(graph, graph.synsets(pos), wn, cfg.max_contexts, index)
        contexts.update(found)
        ctx_stats[pos] = st.to_json()
        log(f"{pos}: {st.with_context} of {st.concepts} synsets have a usable context "
            f"({st.with_examples} with WordNet examples, {st.semcor_filled} filled from SemCor; {st.skipped_no_context} skipped)")
    return contexts, ctx_stats


def _pending_items(cfg: WordNetQAConfig, graph, concepts: list[str], contexts: dict[str, list], splits: dict[str, str],
                   renderers: dict[str, Callable[[str], str]], progress: bool) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Every (question, perturbation) item before gold placement, and what was skipped per probe:
    concepts with no question of a probe (a leaf has no hyponyms), and (question, perturbation)
    pairs dropped because no distractor of that type is valid."""
    from ..progress import progress_bar
    from .distractors import Relations

    rel = Relations(graph, cfg.instances, cfg.relation)
    skipped: dict[str, dict[str, int]] = {
        p: {"concepts_without_question": 0, **{f"no_{d}_distractor": 0 for d in cfg.distractors if d != "random"}} for p in cfg.probes
    }
    pending: list[dict[str, Any]] = []
    for concept in progress_bar(concepts, desc="wordnetqa questions", unit="concept", disable=not progress):
        sister = rel.candidates("definitions", concept, "sister", cfg.max_hops, cfg.sister_depth)
        isa_all = rel.candidates("definitions", concept, "isa", cfg.max_hops, cfg.sister_depth)
        for probe in cfg.probes:
            fam = {"random": {}, "sister": sister, "isa": isa_family(probe, isa_all)}
            found = _concept_items(cfg, graph, rel, probe, concept, contexts[concept], fam, set(sister) | set(isa_all),
                                   renderers[probe], skipped[probe])
            pending.extend({**item, "split": splits[concept]} for item in found)
    return pending, skipped


def _concept_items(cfg: WordNetQAConfig, graph, rel, probe: str, concept: str, ctxs: list, fam: dict, related: set[str],
                   render_choice: Callable[[str], str], skipped: dict[str, int]) -> list[dict[str, Any]]:
    """The pending items of one concept and probe: each question once per distractor perturbation
    that has a valid distractor of its type (``skipped`` counts the rest)."""
    from . import render
    from .distractors import sample
    from .probes import questions

    qs = questions(probe, concept, ctxs, graph, cfg)
    if not qs:
        skipped["concepts_without_question"] += 1
        return []
    out = []
    for q in qs:
        tmpl = render.pick_template(probe, q.qid, cfg.seed)
        stem = render.fill_stem(
            tmpl, q.context.text if q.context else "", q.context.surface if q.context else q.word, graph.definition(concept)
        )
        for dtype in cfg.distractors:
            iid = f"{q.qid}/{dtype}"
            rng = item_rng(cfg.seed, iid)
            chosen = sample(rel, probe, concept, q.gold, dtype, fam[dtype], related, cfg.n_distractors, rng, render_choice)
            typed = [d for _, t, d in chosen if t != "random"]
            if dtype != "random" and not typed:
                skipped[f"no_{dtype}_distractor"] += 1
                continue
            if len(chosen) < cfg.n_distractors:
                raise ProbegenError(f"{iid}: only {len(chosen)} distractors found (the random pool is too small)")
            out.append({"q": q, "id": iid, "dtype": dtype, "dhops": min(typed) if typed else None, "stem": stem,
                        "template": tmpl["id"], "chosen": chosen, "order": rng.permutation(len(chosen)).tolist()})
    return out


def _filtered(concepts: list[str], flt, graph, wordnet: str | None, semcor: str | None, log) -> list[str]:
    """The concepts a spec's filter admits; ``min_semcor`` counts sense-tagged SemCor occurrences."""
    counts = None
    if flt.min_semcor > 0:
        from ..data import locate_semcor
        from ..lexicon.sources import open_resource
        from ..semcor import context_index

        index = context_index(locate_semcor(semcor), open_resource(wordnet), open_resource(wordnet))
        counts = {s: len(index.get(s, ())) for s in concepts}
    out = [s for s in concepts if flt.admits(graph, s, counts[s] if counts is not None else None)]
    log(f"concept filter: {len(out)} of {len(concepts)} concepts kept")
    return out


def isa_family(probe: str, isa_all: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """The ISA family a probe draws from: descendants for hypernymy, ancestors for hyponymy."""
    if probe == "hypernymy":
        return {x: v for x, v in isa_all.items() if v[0] == "isa_down"}
    if probe == "hyponymy":
        return {x: v for x, v in isa_all.items() if v[0] == "isa_up"}
    return isa_all


def choice_renderer(graph, probe: str) -> Callable[[str], str]:
    from .render import choice_text

    memo: dict[str, str] = {}

    def render(s: str) -> str:
        got = memo.get(s)
        if got is None:
            got = memo[s] = choice_text(probe, graph.lemmas(s), graph.definition(s))
        return got

    return render


def _assemble(pending: list[dict[str, Any]], graph, renderers, cfg: WordNetQAConfig) -> list[MCItem]:
    """Place gold and distractors (gold positions balanced per probe, perturbation and split)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, p in enumerate(pending):
        groups.setdefault((p["q"].probe, p["dtype"], p["split"]), []).append(i)
    gold_pos = np.zeros(len(pending), dtype=int)
    for key, idx in sorted(groups.items()):
        idx = sorted(idx, key=lambda i: pending[i]["id"])
        gold_pos[idx] = balanced_positions(len(idx), cfg.seed, "/".join(key))
    items = []
    for i, p in enumerate(pending):
        q = p["q"]
        render = renderers[q.probe]
        distractors = [p["chosen"][j] for j in p["order"]]
        g = int(gold_pos[i])
        slots: list[tuple[str, str, int | None]] = distractors[:g] + [(q.gold, "gold", q.hops)] + distractors[g:]
        items.append(
            MCItem(
                id=p["id"],
                probe=q.probe,
                pos=graph.pos(q.concept),
                synset=q.concept,
                word=q.word,
                question=p["stem"],
                template=p["template"],
                choices=tuple(render(s) for s, _, _ in slots),
                answer=g,
                choice_meta=tuple(ChoiceMeta(s, t, d) for s, t, d in slots),
                gold_synset=q.gold,
                hops=q.hops,
                chain=q.chain,
                distractor_type=p["dtype"],
                distractor_hops=p["dhops"],
                cluster=f"{q.probe}:{q.concept}",
                split=p["split"],
                question_id=q.qid,
                definition=graph.definition(q.concept),
                context=q.context,
            )
        )
    for it in items:
        it.check()
    return items


def counts(items: list[MCItem]) -> dict[str, dict[str, Any]]:
    """Per probe: unique questions, synsets, clusters, items, items per split / perturbation / hop."""
    out: dict[str, dict[str, Any]] = {}
    for probe in PROBES + tuple(sorted({it.probe for it in items} - set(PROBES))):
        its = [it for it in items if it.probe == probe]
        if not its:
            continue
        qs = {it.question_id: it for it in its}
        out[probe] = {
            "unique_questions": len(qs),
            "synsets": len({it.synset for it in its}),
            "clusters": len({it.cluster for it in its}),
            "items": len(its),
            "by_split": {s: sum(it.split == s for it in its) for s in SPLITS},
            "by_distractor_type": _tally(it.distractor_type for it in its),
            "questions_by_hops": _tally(str(q.hops) for q in qs.values()),
            "gold_positions": _tally(LABELS[it.answer] for it in its),
        }
    return out


def _tally(xs) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))


# ---- files ---------------------------------------------------------------------------------------
def write(ds: WordNetQADataset, out: str | Path, release: bool = False) -> Path:
    """Write ``items.jsonl`` and ``manifest.json`` (with every file's sha256) into ``out``.

    ``release``: also ``release/<split>.jsonl`` in the WordNetQA release schema. The directory
    is written beside ``out`` and renamed into place once, so an interrupted write leaves an
    earlier dataset at ``out`` whole.
    """

    def release_files(tmp: Path) -> list[str]:
        names = []
        for split in SPLITS:
            names.append(f"{RELEASE_DIR}/{split}.jsonl")
            write_jsonl(tmp / names[-1], export_release(ds, split))
        return names

    return ds.write(out, release_files if release else None)


def load(path: str | Path, ablations: bool = False) -> WordNetQADataset:
    """Read a probegen WordNetQA directory (its files checked against the manifest), its
    ``items.jsonl``, or a release-format JSONL file.

    A release file is validated line by line (errors name ``FILE:LINE``). ``ablations``: every
    release row must also be one the bias ablations can cut (its quoted sentence located in the
    stem and the surface form a whole word of it); without it such a row is kept for full-input
    evaluation only.
    """
    p = find(path)
    manifest: dict[str, Any] = {}
    if p.is_dir():
        manifest = WordNetQADataset.read_manifest(p)
        from .render import register_probe

        for name, block in (manifest.get("probe_templates") or {}).items():  # a spec's own probe
            register_probe(name, block)
        p = WordNetQADataset.records_path(p, shown=path)
    if p.suffix == ".jsonl" and _first_is_release(p):
        items = read_release(p, ablations)
        return WordNetQADataset(items, manifest or {"kind": "wordnetqa", "source_format": "wordnetqa-release"}, str(path))
    rows = list(iter_jsonl(p))
    if not rows:
        raise DatasetError(f"dataset {path} has no items")
    release = isinstance(rows[0][1], dict) and isinstance(rows[0][1].get("question"), dict)
    parse = _from_release if release else MCItem.from_json

    def parse_object(r: Any) -> MCItem:
        if not isinstance(r, dict):
            raise DatasetError("every line must be a JSON object")
        return parse(r)

    items = WordNetQADataset.read_records(p, parse_object, rows)
    if release:
        manifest = manifest or {"kind": "wordnetqa", "source_format": "wordnetqa-release"}
    check_ids(items, str(path))
    return WordNetQADataset(items, manifest or {"kind": "wordnetqa", "counts": counts(items)}, str(path))


def check_ids(items: list[MCItem], source: str = "the dataset") -> None:
    """Reject repeated item ids (pairing, bootstrap units and scores are keyed by id).

    >>> from types import SimpleNamespace as Item
    >>> check_ids([Item(id="q1/random"), Item(id="q2/random"), Item(id="q1/random")], "x.jsonl")
    Traceback (most recent call last):
    probegen.errors.DatasetError: x.jsonl: item id 'q1/random' occurs 2 times
    """
    seen: dict[str, int] = {}
    for it in items:
        seen[it.id] = seen.get(it.id, 0) + 1
    repeated = [(i, n) for i, n in seen.items() if n > 1]
    if repeated:
        i, n = repeated[0]
        more = f" (and {len(repeated) - 1} more ids)" if len(repeated) > 1 else ""
        raise DatasetError(f"{source}: item id {i!r} occurs {n} times{more}")


# ---- the release schema --------------------------------------------------------------------------
def export_release(ds: WordNetQADataset, split: str | None = None) -> list[dict[str, Any]]:
    """Items in the WordNetQA release schema (one dict per item, optionally one split)."""
    out = []
    for it in ds.items:
        if split is not None and it.split != split:
            continue
        out.append(
            {
                "id": it.id,
                "question": {
                    "stem": it.question,
                    "choices": [{"text": t, "label": LABELS[i]} for i, t in enumerate(it.choices)],
                },
                "answerKey": it.answer_key,
                "notes": {
                    "probe": it.probe,
                    "concept": it.synset,
                    "word": it.word,
                    "surface_form": it.surface,
                    "pos": it.pos,
                    "gold_synset": it.gold_synset,
                    "hops": it.hops,
                    "chain": list(it.chain),
                    "distractor_type": it.distractor_type,
                    "distractor_hops": it.distractor_hops,
                    "choice_synsets": [m.synset for m in it.choice_meta],
                    "choice_types": [m.type for m in it.choice_meta],
                    "choice_distances": [m.distance for m in it.choice_meta],
                    "cluster": it.cluster,
                    "split": it.split,
                    "question_id": it.question_id,
                    "template": it.template,
                    "context": it.context.text if it.context else None,
                    "canary": ds.manifest.get("canary", CANARY),
                },
            }
        )
    return out


def _first_is_release(p: Path) -> bool:
    """True if the first non-blank line of ``p`` parses as a release row (a ``question`` object);
    a first line that does not parse counts as release, so its error names its line."""
    row = first_jsonl_row(p)
    return row is UNPARSED or (isinstance(row, dict) and isinstance(row.get("question"), dict))


def read_release(path: str | Path, ablations: bool = False) -> list[MCItem]:
    """Every row of a WordNetQA release JSONL file, validated in full before any is used.

    The first bad line raises ``DatasetError("FILE:LINE: why")``: malformed JSON, a missing or
    ill-typed field, a repeated id, a probe type that cannot be told (``notes.probe``, else the
    id or the file name must name one) and, with ``ablations``, a row the ablations cannot cut.
    """
    p = Path(path)
    items: list[MCItem] = []
    seen: dict[str, int] = {}
    for n, r in iter_jsonl(p):
        try:
            if not isinstance(r, dict):
                raise DatasetError("not a JSON object")
            it = _from_release(r, p.name, ablations)
        except DatasetError as e:
            raise DatasetError(f"{p}:{n}: {e}") from None
        if it.id in seen:
            raise DatasetError(f"{p}:{n}: item id {it.id!r} repeats line {seen[it.id]}")
        seen[it.id] = n
        items.append(it)
    if not items:
        raise DatasetError(f"dataset {p} has no items")
    return items


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    """``obj[key]`` if present and of type ``kind``, else a DatasetError naming the field."""
    v = obj.get(key) if isinstance(obj, dict) else None
    if v is None or not isinstance(v, kind) or (isinstance(v, (str, list)) and not v):
        raise DatasetError(f"missing or invalid field {where}{key}")
    return v


def _release_probe(notes: dict[str, Any], rid: str, filename: str) -> str:
    """The probe type of a release row: ``notes.probe``, else named by the id, else by the file."""
    if notes.get("probe"):
        return str(notes["probe"])
    for where in (rid.lower(), filename.lower()):
        found = [pr for pr in PROBES if pr in where]
        if len(found) == 1:
            return found[0]
    raise DatasetError(f"cannot tell the probe type of {rid!r} (no notes.probe; neither the id nor the file name names one of {', '.join(PROBES)})")


#: the type of each ``notes`` field probegen reads (any may be missing or null)
_NOTE_TYPES: dict[str, type | tuple[type, ...]] = {
    **dict.fromkeys(("probe", "concept", "gold_synset", "word", "surface_form", "pos", "distractor_type", "cluster",
                     "split", "question_id"), str),
    **dict.fromkeys(("hops", "distractor_hops"), int),
    **dict.fromkeys(("choice_synsets", "choice_types", "choice_distances"), list),
    "chain": (list, str),  # probegen writes a list, the original release a string
}


def _check_notes(notes: dict[str, Any]) -> None:
    """Reject a ``notes`` field of the wrong type (``"pos": 3``, ``"hops": "x"``) with its name."""
    for key, kind in _NOTE_TYPES.items():
        v = notes.get(key)
        if v is not None and (not isinstance(v, kind) or isinstance(v, bool)):
            want = {str: "a string", int: "an integer", list: "a list"}.get(kind, "a list or a string")
            raise DatasetError(f"notes.{key} must be {want}, got {json_type(v)}")


def _check_release_row(r: dict[str, Any]) -> None:
    """The strict checks of an original-release row (one with ``question`` or ``answerKey``)."""
    if "question" in r or "answerKey" in r:
        q = _need(r, "question", dict)
        _need(q, "stem", str, "question.")
        for i, c in enumerate(_need(q, "choices", list, "question.")):
            _need(c, "text", str, f"question.choices[{i}].")
        _need(r, "answerKey", str)
        if not isinstance(r.get("id"), (str, int)) or r.get("id") == "":
            raise DatasetError("missing or invalid field id")


def _release_choices(r: dict[str, Any]) -> tuple[tuple[str, ...], int]:
    """(choice texts, gold index) of a release row."""
    q = r["question"]
    choices = tuple(c["text"] if isinstance(c, dict) else str(c) for c in q["choices"])
    labels = [c.get("label", LABELS[i]) if isinstance(c, dict) else LABELS[i] for i, c in enumerate(q["choices"])]
    if r["answerKey"] not in labels:
        raise DatasetError(f"answerKey {r['answerKey']!r} is not one of the choice labels {''.join(map(str, labels))}")
    return choices, labels.index(r["answerKey"])


def _release_notes(r: dict[str, Any], filename: str, ablations: bool) -> tuple[dict[str, Any], str, str]:
    """(notes, id, probe type) of a release row, the notes' types checked."""
    notes = r.get("notes") or {}
    rid = str(r["id"])
    if not isinstance(notes, dict):
        raise DatasetError("notes is not a JSON object")
    _check_notes(notes)
    probe = _release_probe(notes, rid, filename)
    if probe not in PROBES:
        raise DatasetError(f"unknown probe type {probe!r} (one of {', '.join(PROBES)})")
    if ablations and not (notes.get("concept") or notes.get("gold_synset")):
        raise DatasetError("missing field notes.gold_synset (the bootstrap resamples by concept)")
    return notes, rid, probe


def _release_context(probe: str, stem: str, notes: dict[str, Any], surface: str, rid: str,
                     ablations: bool) -> tuple[str, Context | None, str]:
    """(template, context, definition) cut from the stem: the quoted sentence with the surface
    form located (template ``release``), or ("", None, "") for a full-input item (with
    ``ablations``, an error)."""
    from . import render

    try:
        if ablations and not notes.get("surface_form") and not notes.get("word"):
            raise DatasetError("missing field notes.surface_form (the ablations mask it)")
        sentence, spans, definition = render.release_parts(probe, stem, surface)
        context = Context(text=sentence, char_span=spans[0], source="release") if spans else None
        return render.RELEASE_TEMPLATE, context, definition
    except DatasetError as e:
        if ablations:
            raise DatasetError(f"item {rid} cannot be ablated: {e}") from None
        return "", None, ""


def _release_meta(notes: dict[str, Any]) -> tuple[ChoiceMeta, ...]:
    types = notes.get("choice_types") or []
    return tuple(
        ChoiceMeta(s, t, d)
        for s, t, d in zip(notes.get("choice_synsets") or [], types, notes.get("choice_distances") or [None] * len(types))
    )


def _from_release(r: dict[str, Any], filename: str = "", ablations: bool = False) -> MCItem:
    """An item from a release-format row (probegen's own export or the original release).

    When the stem's quoted sentence and the surface form in it are found (``render.release_parts``)
    the item carries them as its context, and the bias ablations can be cut from the stem
    (template ``release``); else it is a full-input item, or with ``ablations`` an error.
    """
    _check_release_row(r)
    try:
        choices, answer = _release_choices(r)
        notes, rid, probe = _release_notes(r, filename, ablations)
        concept = notes.get("concept") or notes.get("gold_synset") or rid
        surface = str(notes.get("surface_form") or notes.get("word") or "")
        stem = r["question"]["stem"]
        template, context, definition = _release_context(probe, stem, notes, surface, rid, ablations)
        meta = _release_meta(notes)
        item = MCItem(
            id=rid, probe=probe, pos=notes.get("pos", ""), synset=concept, word=str(notes.get("word") or surface),
            question=stem, template=template, choices=choices, answer=answer,
            choice_meta=meta if len(meta) == len(choices) else (),
            gold_synset=notes.get("gold_synset", concept), hops=int(notes.get("hops") or 0),
            chain=tuple(notes.get("chain") or ()), distractor_type=str(notes.get("distractor_type") or ""),
            distractor_hops=notes.get("distractor_hops"), cluster=str(notes.get("cluster") or f"{probe}:{concept}"),
            split=str(notes.get("split") or "test"), question_id=str(notes.get("question_id") or rid),
            definition=definition, context=context,
        )
        item.check()
        return item
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise DatasetError(f"malformed WordNetQA release row {r.get('id', '?') if isinstance(r, dict) else '?'}: {e}") from None


def fingerprint(ds: WordNetQADataset) -> str:
    """A hash of the items' content (:attr:`probegen.dataset.Dataset.fingerprint`)."""
    return ds.fingerprint
