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

from ..errors import DatasetError, ProbegenError
from ..io import read_jsonl, sha256_file, sha256_text, write_json, write_jsonl
from ..manifest import CANARY, data_block, make_manifest
from .config import N_CHOICES, PROBES, WordNetQAConfig
from .items import LABELS, ChoiceMeta, MCItem
from .reference import PAPER_SIZES

ITEMS_FILE = "items.jsonl"
MANIFEST_FILE = "manifest.json"
RELEASE_DIR = "release"
SPLITS = ("train", "dev", "test")


@dataclass
class WordNetQADataset:
    """Items plus the manifest that says how they were made."""

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


def build(
    cfg: WordNetQAConfig,
    wordnet: str | None = None,
    semcor: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> WordNetQADataset:
    """Generate a WordNetQA dataset from WordNet (and SemCor if asked) with the given configuration."""
    from tqdm import tqdm

    from ..data import load_wordnet, locate_semcor, locate_wordnet
    from ..wordnet_graph import load_graph
    from . import render
    from .contexts import collect_contexts
    from .distractors import Relations, sample
    from .probes import questions

    cfg.validate()
    wn_info = locate_wordnet(wordnet)
    sc_info = locate_semcor(semcor) if cfg.contexts == "wordnet+semcor" else None
    log(f"WordNet {wn_info.version} ({wn_info.source}: {wn_info.path})" + (f"; SemCor {sc_info.version} ({sc_info.source})" if sc_info else ""))
    graph = load_graph(wordnet)
    wn = load_wordnet(wordnet)
    index = None
    if sc_info is not None:
        from ..semcor import context_index

        index = context_index(sc_info, wn, wn_info)

    contexts: dict[str, list] = {}
    ctx_stats = {}
    for pos in cfg.pos:
        found, st = collect_contexts(graph, graph.synsets(pos), wn, cfg.max_contexts, index)
        contexts.update(found)
        ctx_stats[pos] = st.to_json()
        log(f"{pos}: {st.with_context} of {st.concepts} synsets have a usable context "
            f"({st.with_examples} with WordNet examples, {st.semcor_filled} filled from SemCor; {st.skipped_no_context} skipped)")
    concepts = select_concepts([s for pos in cfg.pos for s in graph.synsets(pos) if s in contexts], cfg)
    splits = assign_splits(concepts, cfg)

    rel = Relations(graph, cfg.instances)
    renderers = {p: choice_renderer(graph, p) for p in cfg.probes}
    # concepts with no question of a probe (a leaf has no hyponyms), and (question, perturbation)
    # pairs dropped because no distractor of that type is valid
    skipped: dict[str, dict[str, int]] = {
        p: {"concepts_without_question": 0, **{f"no_{d}_distractor": 0 for d in cfg.distractors if d != "random"}} for p in cfg.probes
    }
    pending: list[dict[str, Any]] = []
    for concept in tqdm(concepts, desc="wordnetqa questions", unit="concept", disable=not progress):
        sister = rel.candidates("definitions", concept, "sister", cfg.max_hops, cfg.sister_depth)
        isa_all = rel.candidates("definitions", concept, "isa", cfg.max_hops, cfg.sister_depth)
        related = set(sister) | set(isa_all)
        for probe in cfg.probes:
            qs = questions(probe, concept, contexts[concept], graph, cfg)
            if not qs:
                skipped[probe]["concepts_without_question"] += 1
                continue
            fam = {"random": {}, "sister": sister, "isa": isa_family(probe, isa_all)}
            render_choice = renderers[probe]
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
                        skipped[probe][f"no_{dtype}_distractor"] += 1
                        continue
                    if len(chosen) < cfg.n_distractors:
                        raise ProbegenError(f"{iid}: only {len(chosen)} distractors found (the random pool is too small)")
                    pending.append(
                        {
                            "q": q,
                            "id": iid,
                            "dtype": dtype,
                            "dhops": min(typed) if typed else None,
                            "stem": stem,
                            "template": tmpl["id"],
                            "chosen": chosen,
                            "order": rng.permutation(len(chosen)).tolist(),
                            "split": splits[concept],
                        }
                    )
    items = _assemble(pending, graph, renderers, cfg)
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
    """Write ``items.jsonl`` and ``manifest.json`` into ``out`` (atomically, file by file).

    ``release``: also ``release/<split>.jsonl`` in the WordNetQA release schema.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ProbegenError(f"--out {out} exists and is not a directory")
    write_jsonl(out / ITEMS_FILE, (it.to_json() for it in ds.items))
    files = {ITEMS_FILE: sha256_file(out / ITEMS_FILE)}
    if release:
        for split in SPLITS:
            rel = f"{RELEASE_DIR}/{split}.jsonl"
            write_jsonl(out / rel, export_release(ds, split))
            files[rel] = sha256_file(out / rel)
    manifest = dict(ds.manifest)
    manifest["files"] = files
    write_json(out / MANIFEST_FILE, manifest)
    return out


def load(path: str | Path) -> WordNetQADataset:
    """Read a probegen WordNetQA directory, its ``items.jsonl``, or a release-format JSONL file."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"dataset {p} does not exist")
    manifest: dict[str, Any] = {}
    if p.is_dir():
        mf = p / MANIFEST_FILE
        if mf.exists():
            try:
                manifest = json.loads(mf.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise DatasetError(f"{mf}: not valid JSON ({e.msg})") from None
        p = p / ITEMS_FILE
        if not p.exists():
            raise DatasetError(f"{path} is not a WordNetQA dataset: no {ITEMS_FILE}")
    rows = read_jsonl(p)
    if not rows:
        raise DatasetError(f"dataset {path} has no items")
    if not all(isinstance(r, dict) for r in rows):
        raise DatasetError(f"{p}: every line must be a JSON object")
    if isinstance(rows[0].get("question"), dict):
        items = [_from_release(r) for r in rows]
        manifest = manifest or {"kind": "wordnetqa", "source_format": "wordnetqa-release"}
    else:
        items = [MCItem.from_json(r) for r in rows]
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{path}: item ids repeat")
    if not manifest:
        manifest = {"kind": "wordnetqa", "counts": counts(items)}
    return WordNetQADataset(items, manifest, str(path))


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


def _from_release(r: dict[str, Any]) -> MCItem:
    """An item from a release-format row (probegen's own export or the original release)."""
    try:
        q = r["question"]
        choices = tuple(c["text"] if isinstance(c, dict) else str(c) for c in q["choices"])
        labels = [c.get("label", LABELS[i]) if isinstance(c, dict) else LABELS[i] for i, c in enumerate(q["choices"])]
        answer = labels.index(r["answerKey"])
        notes = r.get("notes") or {}
        rid = str(r["id"])
        probe = notes.get("probe") or next((p for p in PROBES if p in rid.lower()), "unknown")
        concept = notes.get("concept") or notes.get("gold_synset") or rid
        types = notes.get("choice_types") or []
        meta = tuple(
            ChoiceMeta(s, t, d)
            for s, t, d in zip(notes.get("choice_synsets") or [], types, notes.get("choice_distances") or [None] * len(types))
        )
        return MCItem(
            id=rid,
            probe=probe,
            pos=notes.get("pos", ""),
            synset=concept,
            word=notes.get("word", ""),
            question=q["stem"],
            template="",  # no context or definition travels with a release row: full input only
            choices=choices,
            answer=answer,
            choice_meta=meta if len(meta) == len(choices) else (),
            gold_synset=notes.get("gold_synset", concept),
            hops=int(notes.get("hops") or 0),
            chain=tuple(notes.get("chain") or ()),
            distractor_type=str(notes.get("distractor_type") or ""),
            distractor_hops=notes.get("distractor_hops"),
            cluster=str(notes.get("cluster") or f"{probe}:{concept}"),
            split=str(notes.get("split") or "test"),
            question_id=str(notes.get("question_id") or rid),
        )
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise DatasetError(f"malformed WordNetQA release row {r.get('id', '?') if isinstance(r, dict) else '?'}: {e}") from None


def fingerprint(ds: WordNetQADataset) -> str:
    """A hash of the items' content."""
    return sha256_text("\n".join(json.dumps(it.to_json(), sort_keys=True) for it in ds.items))
