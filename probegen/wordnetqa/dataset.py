"""Building, writing and reading WordNetQA datasets (probegen's directory of ``items.jsonl`` and
``manifest.json``, and the release format).

Construction (``probes.py``, ``distractors.py``): each concept with a usable context gets its
unique questions per probe type, each one item per distractor perturbation with a valid
distractor. Gold positions are balanced across A-E within every (probe, perturbation, split).
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, cast

import numpy as np

from ..dataset import MANIFEST_FILE, ItemsDataset, find  # noqa: F401 - MANIFEST_FILE: importable from here as before
from ..errors import DatasetError, NothingBuilt, ProbegenError
from ..io import UNPARSED, first_jsonl_row, iter_jsonl, sha256_text, write_jsonl
from ..manifest import CANARY, data_block, make_manifest
from ..templating import question_templates
from .config import N_CHOICES, PROBES, WordNetQAConfig
from .items import LABELS, ChoiceMeta, MCItem
from .reference import PAPER_SIZES

if TYPE_CHECKING:
    from ..contexts import Context
    from ..data import DataInfo
    from ..lexicon.base import LexicalResource
    from ..spec.concepts import ConceptFilter
    from ..wordnet_graph import WordNetGraph
    from .distractors import Relations
    from .render import Templates

Contexts = dict[str, list[tuple[str, "Context"]]]  # synset -> its usable (lemma, context) pairs

ITEMS_FILE = "items.jsonl"
RELEASE_DIR = "release"
SPLITS = ("train", "dev", "test")


class WordNetQADataset(ItemsDataset[MCItem]):
    """WordNetQA items and their manifest."""

    title = "WordNetQA"
    record = MCItem

    def split(self, name: str | None) -> list[MCItem]:
        """The items of split ``name`` (None: every item)."""
        return self.items if name is None else [it for it in self.items if it.split == name]

    @cached_property
    def templates(self) -> Templates:
        """The question templates its items render with (eval, bias, study, export): those its
        manifest records, so each dataset renders its own items whatever else a process loaded."""
        from .render import Templates

        return Templates.of_manifest(self.manifest)


def item_rng(seed: int, key: str) -> np.random.Generator:
    """A generator that depends only on the seed and a key (an item or question id)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


# ---- construction --------------------------------------------------------------------------------
def select_concepts(concepts: list[str], cfg: WordNetQAConfig,
                    eligible: Callable[[str], bool] | None = None) -> list[str]:
    """All concepts, or the first ``max_concepts`` of a seeded permutation that ``eligible`` admits (kept
    in WordNet order)."""
    if cfg.max_concepts is None or cfg.max_concepts >= len(concepts):
        return list(concepts)
    keep: set[int] = set()
    for i in item_rng(cfg.seed, "concepts").permutation(len(concepts)).tolist():
        if len(keep) == cfg.max_concepts:
            break
        if eligible is None or eligible(concepts[i]):
            keep.add(i)
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
    order = item_rng(cfg.seed, "splits").permutation(n).tolist()
    return {concepts[i]: "test" if r < n_test else "dev" if r < n_test + n_dev else "train"
            for r, i in enumerate(order)}


def balanced_positions(n: int, seed: int, key: str) -> np.ndarray:
    """``n`` gold positions in 0..4 whose counts differ by at most one, in seeded order.

    >>> np.bincount(balanced_positions(12, 0, "x"), minlength=5).tolist()
    [3, 3, 2, 2, 2]
    """
    return item_rng(seed, f"gold/{key}").permutation(np.resize(np.arange(N_CHOICES), n))


def _nothing_built(cfg: WordNetQAConfig, n_concepts: int, skipped: dict[str, dict[str, int]]) -> str:
    """Why a build has no item: the settings that decide it and what was skipped."""
    why = "; ".join(f"{p}: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sk.items() if n)
                    for p, sk in skipped.items())
    return (f"no WordNetQA item met the criteria (probes={','.join(cfg.probes)}, pos={','.join(cfg.pos)}, "
            f"max_hops={cfg.max_hops}, min_answer_depth={cfg.min_answer_depth}, "
            f"distractors={','.join(cfg.distractors)}; {n_concepts} concepts with a "
            "context" + (f"; {why}" if why.strip("; :") else "") + "); nothing was written")


def build(
    cfg: WordNetQAConfig,
    wordnet: str | None = None,
    semcor: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    probe_templates: Mapping[str, dict[str, Any]] | None = None,
) -> WordNetQADataset:
    """Generate a WordNetQA dataset (``wordnet``: ``probegen.lexicon.sources``, None is WordNet 3.0;
    ``probe_templates``: a probe spec's own probe's, recorded in the manifest)."""
    from .probes import explain_skipped, has_question
    from .render import Templates

    cfg.validate()
    wn_info, sc_info, graph, index = _sources(cfg, wordnet, semcor, log)
    qt = question_templates(getattr(wn_info, "language", "en"), cfg.templates)  # the wordnet's language, or --templates
    templates = Templates(qt, dict(probe_templates or {}))
    contexts, ctx_stats = _contexts(cfg, graph, wn_info, index, log)
    concepts = [s for pos in cfg.pos for s in graph.synsets(pos) if s in contexts]
    if cfg.concepts is not None:  # a probe spec's concept filter (SemCor counts only if it asks)
        concepts = _filtered(concepts, cfg.concepts, graph, wordnet, semcor, log)
    concepts = select_concepts(concepts, cfg, lambda s: has_question(s, contexts[s], graph, cfg))
    renderers = {p: choice_renderer(graph, p, templates) for p in cfg.probes}
    pending, skipped = _pending_items(cfg, graph, concepts, contexts, assign_splits(concepts, cfg), renderers,
                                      templates, progress)
    items = _assemble(pending, graph, renderers, cfg)
    if not items:
        raise NothingBuilt(_nothing_built(cfg, len(concepts), skipped))
    c = counts(items)
    for p in cfg.probes:
        c.setdefault(p, {})["skipped"] = skipped[p]
        if "items" not in c[p]:  # one probe of several gave nothing: say why, in one line
            c[p]["why_empty"] = explain_skipped(p, skipped[p], len(concepts), cfg)
            log(c[p]["why_empty"])
    log("; ".join(f"{p}: {c[p]['unique_questions']} questions / {c[p]['synsets']} synsets / {c[p]['items']} items"
                  for p in cfg.probes if "items" in c[p]))
    manifest = make_manifest(
        "wordnetqa",
        cfg.to_dict(),
        cfg.seed,
        data_block(wn_info, sc_info),
        c,
        name=cfg.name,
        contexts=ctx_stats,
        templates_sha256=sha256_text(json.dumps(qt.data, sort_keys=True)),
        question_templates=qt.record(),
        paper_sizes=PAPER_SIZES,
    )
    if probe_templates:
        manifest["probe_templates"] = dict(probe_templates)
    return WordNetQADataset(items, manifest)


def _sources(cfg: WordNetQAConfig, wordnet: str | None, semcor: str | None, log: Callable[[str], None]
             ) -> tuple[LexicalResource, DataInfo | None, WordNetGraph, dict[str, list[Context]] | None]:
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


def _contexts(cfg: WordNetQAConfig, graph: WordNetGraph, wn: LexicalResource, index: dict[str, list[Context]] | None,
              log: Callable[[str], None]) -> tuple[Contexts, dict[str, Any]]:
    """(synset -> usable contexts, per-POS context statistics for the manifest)."""
    from .contexts import collect_contexts

    contexts: Contexts = {}
    ctx_stats = {}
    for pos in cfg.pos:
        found, st = collect_contexts(graph, graph.synsets(pos), wn, cfg.max_contexts, index)
        contexts.update(found)
        ctx_stats[pos] = st.to_json()
        log(f"{pos}: {st.with_context} of {st.concepts} synsets have a usable context ({st.with_examples} with WordNet "
            f"examples, {st.semcor_filled} filled from SemCor; {st.skipped_no_context} skipped)")
    return contexts, ctx_stats


def _pending_items(cfg: WordNetQAConfig, graph: WordNetGraph, concepts: list[str], contexts: Contexts,
                   splits: dict[str, str], renderers: dict[str, Callable[[str], str]], templates: Templates,
                   progress: bool) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Every (question, perturbation) item before gold placement, and what was skipped per probe."""
    from ..progress import progress_bar
    from .distractors import Relations

    rel = Relations(graph, cfg.instances, cfg.relation)
    skipped: dict[str, dict[str, int]] = {
        p: {"concepts_without_question": 0,
            **{f"no_{d}_distractor": 0 for d in cfg.distractors if d != "random"}} for p in cfg.probes
    }
    pending: list[dict[str, Any]] = []
    for concept in progress_bar(concepts, desc="wordnetqa questions", unit="concept", disable=not progress):
        sister = rel.candidates("definitions", concept, "sister", cfg.max_hops, cfg.sister_depth)
        isa_all = rel.candidates("definitions", concept, "isa", cfg.max_hops, cfg.sister_depth)
        for probe in cfg.probes:
            fam = {"random": {}, "sister": sister, "isa": isa_family(probe, isa_all)}
            found = _concept_items(cfg, graph, rel, probe, concept, contexts[concept], fam, set(sister) | set(isa_all),
                                   renderers[probe], templates, skipped[probe])
            pending.extend({**item, "split": splits[concept]} for item in found)
    return pending, skipped


def _concept_items(cfg: WordNetQAConfig, graph: WordNetGraph, rel: Relations, probe: str, concept: str,
                   ctxs: list[tuple[str, Context]], fam: dict[str, dict[str, tuple[str, int]]], related: set[str],
                   render_choice: Callable[[str], str], templates: Templates,
                   skipped: dict[str, int]) -> list[dict[str, Any]]:
    """The pending items of one concept and probe (its stems from ``templates``): each question once
    per distractor perturbation that has a valid distractor of its type (``skipped`` counts the rest)."""
    from .distractors import sample
    from .probes import questions
    from .render import fill_stem

    qs = questions(probe, concept, ctxs, graph, cfg)
    if not qs:
        skipped["concepts_without_question"] += 1
        return []
    out = []
    for q in qs:
        tmpl = templates.pick_template(probe, q.qid, cfg.seed)
        stem = fill_stem(
            tmpl, q.context.text if q.context else "", q.context.surface if q.context else q.word,
            graph.definition(concept)
        )
        for dtype in cfg.distractors:
            iid = f"{q.qid}/{dtype}"
            rng = item_rng(cfg.seed, iid)
            chosen = sample(rel, probe, concept, q.gold, dtype, fam[dtype], related, cfg.n_distractors, rng,
                            render_choice)
            typed = [d for _, t, d in chosen if t != "random"]
            if dtype != "random" and not typed:
                skipped[f"no_{dtype}_distractor"] += 1
                continue
            # a small wordnet: too few unrelated synsets (counted, said if nothing is left)
            if len(chosen) < cfg.n_distractors:
                skipped["too_few_distractors"] = skipped.get("too_few_distractors", 0) + 1
                continue
            out.append({"q": q, "id": iid, "dtype": dtype, "dhops": min(cast("list[int]", typed)) if typed else None,
                        "stem": stem, "template": tmpl["id"], "chosen": chosen,
                        "order": rng.permutation(len(chosen)).tolist()})
    return out


def _filtered(concepts: list[str], flt: ConceptFilter, graph: WordNetGraph, wordnet: str | None, semcor: str | None,
              log: Callable[[str], None]) -> list[str]:
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


def choice_renderer(graph: WordNetGraph, probe: str, templates: Templates) -> Callable[[str], str]:
    """Synset -> its choice text in ``probe``'s format of ``templates`` (memoised)."""

    @cache
    def render(s: str) -> str:
        return templates.choice_text(probe, graph.lemmas(s), graph.definition(s))

    return render


def _assemble(pending: list[dict[str, Any]], graph: WordNetGraph, renderers: dict[str, Callable[[str], str]],
              cfg: WordNetQAConfig) -> list[MCItem]:
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


def _tally(xs: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(xs).items()))


# ---- files ---------------------------------------------------------------------------------------
def write(ds: WordNetQADataset, out: str | Path, release: bool = False) -> Path:
    """Write ``items.jsonl`` and ``manifest.json`` (``release``: and ``release/<split>.jsonl``) into ``out``,
    atomically as a whole directory."""

    def release_files(tmp: Path) -> list[str]:
        names = []
        for split in SPLITS:
            names.append(f"{RELEASE_DIR}/{split}.jsonl")
            write_jsonl(tmp / names[-1], export_release(ds, split))
        return names

    return ds.write(out, release_files if release else None)


def load(path: str | Path, ablations: bool = False, on_invalid: str = "error",
         probe: str | None = None) -> WordNetQADataset:
    """Read a probegen WordNetQA directory, its ``items.jsonl``, or a release-format JSONL file.

    ``on_invalid``, ``probe``: as :func:`~probegen.wordnetqa.release.read_release`. ``ablations``: rows
    must also carry their concept, and DictionaryQA rows a quoted sentence holding the word.
    """
    from .release import ON_INVALID, read_release

    if on_invalid not in ON_INVALID:
        raise DatasetError(f"unknown on_invalid {on_invalid!r}; choose from {', '.join(ON_INVALID)}")
    p = find(path)
    manifest: dict[str, Any] = {}
    if p.is_dir():
        manifest = WordNetQADataset.read_manifest(p)
        from .render import Templates

        Templates.of_manifest(manifest)  # a spec's probe or a --templates file that clashes: one line, now
        p = WordNetQADataset.records_path(p, shown=path)
    if p.suffix == ".jsonl" and _first_is_release(p):
        items, invalid = read_release(p, ablations, probe, on_invalid)
        manifest = dict(manifest or {"kind": "wordnetqa", "source_format": "wordnetqa-release"})
        if invalid is not None:
            manifest["invalid"] = invalid
        return WordNetQADataset(items, manifest, str(path))
    return _load_records(p, path, manifest, ablations, probe)


def _load_records(p: Path, path: str | Path, manifest: dict[str, Any], ablations: bool,
                  probe: str | None) -> WordNetQADataset:
    """A records file that is not release JSONL: probegen items, or release rows in another file."""
    from .release import read_row

    rows = list(iter_jsonl(p))
    if not rows:
        raise DatasetError(f"dataset {path} has no items")
    release = isinstance(rows[0][1], dict) and isinstance(rows[0][1].get("question"), dict)
    if probe is not None and not release:  # probegen items name their own probe: --probe would change nothing
        raise ProbegenError(f"--probe applies to WordNetQA release files; {path} holds probegen items, each naming its "
                            "probe")

    def parse_object(r: Any) -> MCItem:
        if not isinstance(r, dict):
            raise DatasetError("every line must be a JSON object")
        return read_row(r, p, probe, ablations) if release else MCItem.from_json(r)

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
    return [
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
        for it in ds.split(split)
    ]


def _first_is_release(p: Path) -> bool:
    """True if the first line of ``p`` is a release row (or does not parse: its error names its line)."""
    row = first_jsonl_row(p)
    return row is UNPARSED or (isinstance(row, dict) and isinstance(row.get("question"), dict))
