"""WordNetQA generation and evaluation on the real WordNet: distractor validity checked against
the graph item by item, gold balance, determinism, splits, templates, tie safety, end to end."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

from probegen import tasks
from probegen.errors import DatasetError, ProbegenError
from probegen.settings import Settings
from probegen.wordnetqa import config as C
from probegen.wordnetqa import contexts, distractors, evaluate, items, probes, render
from probegen.wordnetqa import dataset as D
from probegen.wordnetqa.config import WordNetQAConfig
from probegen.wordnetqa.distractors import norm_lemma

pytestmark = pytest.mark.real

QUIET = {"progress": False, "log": lambda m: None}
SMALL = WordNetQAConfig(max_concepts=600, seed=3)


@pytest.fixture(scope="module")
def small():
    """A real set: all four probes over a seeded sample of 600 noun concepts."""
    return D.build(SMALL, **QUIET)


VERBS = WordNetQAConfig(pos=("v",), max_concepts=150, probes=("hypernymy", "hyponymy", "definitions"), contexts="wordnet+semcor", seed=1)


@pytest.fixture(scope="module")
def verbs():
    """Verbs, with SemCor sentences filling in where WordNet has no usable example."""
    return D.build(VERBS, **QUIET)


class ConstantScorer:
    """Every choice gets the same score: only tie-breaking decides."""

    kind = "static"
    query_style = "plain"

    def __init__(self):
        self.queries = []

    def score(self, queries, candidates, progress=False):
        self.queries = list(queries)
        return [np.zeros(len(c)) for c in candidates]


# ---- contexts --------------------------------------------------------------------------------------
def test_words_are_located_as_whole_inflected_words():
    from probegen.data import load_wordnet

    morph = contexts.Morphology(load_wordnet())
    assert contexts.locate("The mice saw ice.", ["ice"], "n", morph)[1] == (13, 16)
    text = "the geese flew south"
    lemma, (a, b) = contexts.locate(text, ["goose"], "n", morph)
    assert (lemma, text[a:b]) == ("goose", "geese")
    text = "the plane took off at noon"
    lemma, (a, b) = contexts.locate(text, ["take_off"], "v", morph)
    assert text[a:b] == "took off"
    text = "the potter's wheel was invented"
    assert text[slice(*contexts.locate(text, ["potter's_wheel"], "n", morph)[1])] == "potter's wheel"
    assert contexts.locate("a double-decker bus", ["decker"], "n", morph) is None


# ---- the distractor validity walk ----------------------------------------------------------------
def _relatives(graph, c, cfg, memo):
    """Everything the walk needs about concept ``c``, straight from the graph (memoised per concept)."""
    if c not in memo:
        K = cfg.max_hops
        memo[c] = {
            "all_anc": nx.ancestors(graph.g, c),  # any distance, instance links included
            "sister": graph.sister_family(c, cfg.sister_depth),
            "anc_k": graph.ancestors(c, K, instances=cfg.instances),
            "desc_k": graph.descendants(c, K, instances=cfg.instances),
        }
    return memo[c]


def _check_item(it, graph, cfg, memo, templates):
    c, g = it.synset, it.gold_synset
    assert len(it.choices) == 5 and len(set(it.choices)) == 5
    assert len(it.choice_meta) == 5 and it.choice_meta[it.answer].type == "gold"
    assert it.choice_meta[it.answer].synset == g
    assert it.choices[it.answer] == templates.choice_text(it.probe, graph.lemmas(g), graph.definition(g))
    assert it.cluster == f"{it.probe}:{c}" and graph.pos(c) == it.pos
    # the gold answer and its recorded hops / chain
    r = _relatives(graph, c, cfg, memo)
    anc_k, desc_k, sister, all_anc = r["anc_k"], r["desc_k"], r["sister"], r["all_anc"]
    anc_up = anc_k
    if it.probe == "hypernymy":
        assert anc_k[g] == it.hops and (it.pos == "v" or graph.depth(g) >= cfg.min_answer_depth)
    elif it.probe == "hyponymy":
        assert desc_k[g] == it.hops
    else:
        assert g == c and it.hops == 0 and it.chain == (c,)
    assert it.chain[0] == c and it.chain[-1] == g and len(it.chain) == it.hops + 1
    for a, b in zip(it.chain, it.chain[1:]):
        assert graph.g.has_edge(b, a) if it.probe == "hypernymy" else graph.g.has_edge(a, b)
    if it.context is not None:
        word = it.context.surface
        assert word and it.context.text[slice(*it.context.char_span)] == word
        assert f'"{word}"' in it.question
    # every distractor: never a correct answer; type and distance as recorded
    typed = []
    for i, m in enumerate(it.choice_meta):
        if i == it.answer:
            continue
        x = m.synset
        assert x not in (c, g) and graph.pos(x) == it.pos
        lx = {norm_lemma(s) for s in graph.lemmas(x)}
        assert not lx & {norm_lemma(s) for s in graph.lemmas(g)}, f"{it.id}: {x} shares a lemma with the gold"
        assert not lx & {norm_lemma(s) for s in graph.lemmas(c)}, f"{it.id}: {x} shares a lemma with the concept"
        if it.probe == "hypernymy":
            assert x not in all_anc, f"{it.id}: {x} is also an ancestor of {c}"
        if it.probe == "hyponymy":
            assert c not in nx.ancestors(graph.g, x), f"{it.id}: {x} is also a descendant of {c}"
        if it.probe == "definitions":
            assert graph.definition(x).lower() != graph.definition(g).lower()
        assert it.choices[i] == templates.choice_text(it.probe, graph.lemmas(x), graph.definition(x))
        if m.type == "random":
            assert m.distance is None
            assert x not in sister and x not in anc_up and x not in desc_k
        elif m.type == "sister":
            assert sister[x] + 1 == m.distance
            typed.append(m.distance)
        elif m.type == "isa_up":
            assert it.probe != "hypernymy" and anc_up[x] == m.distance
            typed.append(m.distance)
        elif m.type == "isa_down":
            assert it.probe != "hyponymy" and desc_k[x] == m.distance
            typed.append(m.distance)
        else:
            raise AssertionError(f"{it.id}: unknown distractor type {m.type}")
    types = {m.type for i, m in enumerate(it.choice_meta) if i != it.answer}
    if it.distractor_type == "random":
        assert types == {"random"} and it.distractor_hops is None
    else:
        want = {"sister"} if it.distractor_type == "sister" else {"isa_up", "isa_down"}
        assert typed and types <= want | {"random"} and it.distractor_hops == min(typed)


def test_every_distractor_is_checked_against_the_graph(small, verbs, graph):
    n, memo = 0, {}
    for ds, cfg in ((small, SMALL), (verbs, VERBS)):
        for it in ds.items:
            _check_item(it, graph, cfg, memo, ds.templates)
            n += 1
    assert {it.context.source for it in verbs.items if it.context} == {"wordnet", "semcor"}
    probes_seen = Counter(it.probe for it in small.items)
    assert set(probes_seen) == set(C.PROBES)
    assert n > 2000
    # all three perturbations occur for every probe type
    for p in C.PROBES:
        assert {it.distractor_type for it in small.items if it.probe == p} == {"random", "sister", "isa"}


def test_contexts_and_skips_are_counted(small):
    st = small.manifest["contexts"]["n"]
    assert st["with_examples"] > 8000 and st["with_context"] <= st["with_examples"]
    assert st["skipped_no_context"] == st["concepts"] - st["with_context"]
    for p in C.PROBES:
        sk = small.manifest["counts"][p]["skipped"]
        assert set(sk) == {"concepts_without_question", "no_sister_distractor", "no_isa_distractor"}
        assert sk["concepts_without_question"] + small.manifest["counts"][p]["synsets"] == 600
    assert small.manifest["counts"]["hyponymy"]["skipped"]["concepts_without_question"] > 50  # leaves


# ---- positions, clusters, splits, determinism -----------------------------------------------------
def test_gold_positions_are_balanced(small):
    groups = Counter((it.probe, it.distractor_type, it.split) for it in small.items)
    for key in groups:
        counts = np.bincount([it.answer for it in small.items if (it.probe, it.distractor_type, it.split) == key], minlength=5)
        assert counts.max() - counts.min() <= 1, (key, counts)
    overall = np.bincount([it.answer for it in small.items], minlength=5)
    assert overall.max() - overall.min() <= len(groups)


def test_splits_are_disjoint_by_concept_and_clusters_whole(small):
    by_split = {s: {it.synset for it in small.items if it.split == s} for s in D.SPLITS}
    assert not by_split["train"] & by_split["dev"] and not by_split["train"] & by_split["test"]
    assert not by_split["dev"] & by_split["test"]
    n = sum(len(v) for v in by_split.values())
    assert abs(len(by_split["test"]) - 0.1 * n) <= 3 and abs(len(by_split["dev"]) - 0.1 * n) <= 3
    cluster_split = {}
    for it in small.items:
        assert cluster_split.setdefault(it.cluster, it.split) == it.split
    # perturbations of one question share stem and gold, differ in distractors
    by_q = {}
    for it in small.items:
        by_q.setdefault(it.question_id, []).append(it)
    for its in by_q.values():
        assert len({(it.question, it.choices[it.answer]) for it in its}) == 1
        assert len({it.distractor_type for it in its}) == len(its)


def test_same_seed_gives_byte_identical_files(small, tmp_path):
    a = D.write(small, tmp_path / "a", release=True)
    b = D.write(D.build(SMALL, **QUIET), tmp_path / "b", release=True)
    for name in (D.ITEMS_FILE, D.MANIFEST_FILE, "release/test.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    man = json.loads((a / D.MANIFEST_FILE).read_text())
    assert man["kind"] == "wordnetqa" and man["seed"] == 3 and len(man["data"]["wordnet"]["sha256"]) == 64
    other = D.build(WordNetQAConfig(max_concepts=600, seed=4), **QUIET)
    assert [it.to_json() for it in other.items] != [it.to_json() for it in small.items]


def test_templates_are_picked_by_seed(small):
    spec = small.templates.questions.data["probes"]
    for p in C.PROBES:
        assert len(spec[p]["templates"]) >= 2
        used = {it.template for it in small.items if it.probe == p}
        assert used == {t["id"] for t in spec[p]["templates"]}, "every template is used on a few hundred questions"
    for it in small.items[:200]:
        t = small.templates.template_by_id(it.template)
        assert small.templates.pick_template(it.probe, it.question_id, 3) == t
        ctx = it.context
        assert it.question == render.fill_stem(t, ctx.text if ctx else "", ctx.surface if ctx else it.word, it.definition)
    keys = [f"definitions:k{i}" for i in range(60)]
    picks = lambda seed: [small.templates.pick_template("definitions", k, seed)["id"] for k in keys]  # noqa: E731
    assert picks(0) == picks(0) and picks(0) != picks(1)


def test_config_names_and_errors():
    assert WordNetQAConfig(probes=("definitions",)).name == "wordnetqa-definitions"
    assert WordNetQAConfig(probes=("all",)).probes == C.PROBES
    with pytest.raises(ProbegenError, match="unknown probe"):
        WordNetQAConfig(probes=("meronymy",)).validate()
    with pytest.raises(ProbegenError, match="distractor"):
        WordNetQAConfig(distractors=("random", "antonym")).validate()


# ---- evaluation -------------------------------------------------------------------------------------
def test_ties_never_favour_the_gold(small):
    res = evaluate.evaluate_mc(small, ConstantScorer(), Settings(seed=0))
    acc, n = res["metrics"]["accuracy"], len(res["items"])
    # ties broken at random: accuracy ~ Binomial(n, 1/5) / n; 5 SD is a false-failure rate < 1e-6
    assert acc < 0.3 and abs(acc - 0.2) < 5 * np.sqrt(0.16 / n)
    preds = np.bincount([r["pred"][0] for r in res["items"]], minlength=5)
    assert preds.min() > 0.15 * len(res["items"])
    again = evaluate.evaluate_mc(small, ConstantScorer(), Settings(seed=0))
    assert [r["pred"] for r in again["items"]] == [r["pred"] for r in res["items"]]


def test_modes_render_partial_inputs(small):
    its = [it for it in small.items if it.context is not None][:50]
    sub = SimpleNamespace(items=its, manifest={})
    out = {}
    for mode in render.MODES:
        sc = ConstantScorer()
        sc.query_style = "pattern"
        recs = evaluate.evaluate_mc(sub, sc, Settings(seed=1, nonce="bkatuhla"), mode=mode)["items"]
        assert [r["id"] for r in recs] == [it.id for it in its]
        for r, it in zip(recs, its):
            assert r["choices"] == list(it.choices) and r["gold"] == [it.answer] and r["cluster"] == it.cluster
        out[mode] = sc.queries
    for q, it in zip(out["context"], its):
        a, b = it.context.char_span
        hidden = it.context.text[:a] + "bkatuhla" + it.context.text[b:]
        assert hidden in q and '"bkatuhla"' in q
    for q, it in zip(out["word"], its):
        assert it.context.text not in q and it.context.surface in q
    assert len(set(out["choice"])) == 1
    for q, it in zip(out["full"], its):
        # the full query is the stem as generated (sentence and target shown), in the probe's LM wrapper
        assert q == small.templates.probe_spec(it.probe)["lm_query"].format(stem=it.question)
        assert it.context.text in q and f'"{it.context.surface}"' in q and "bkatuhla" not in q


def test_length_normalisation_options(small):
    # summed log-prob: -1 per character for the gold choice, -2 per character (+ a small bonus so
    # longer distractors are not always worse) for the others. Per character the gold always wins;
    # summed, the longest-scoring choice depends on lengths.
    class LM(ConstantScorer):
        kind = "causal"
        query_style = "pattern"

        def settings(self):
            return {"reduction": "sum"}

        def score(self, queries, candidates, progress=False):
            return [np.array([raw(c, gold) for c in cands]) for cands, gold in zip(candidates, self.golds)]

    def raw(c, gold):
        n = len(c.strip())
        return -1.0 * n if c == gold else -2.0 * n + 0.5 * n ** 0.5

    its = [it for it in small.items if it.probe == "definitions"][:60]
    sub = SimpleNamespace(items=its, manifest={})
    lm = LM()
    lm.golds = [it.choices[it.answer] for it in its]
    plain = evaluate.evaluate_mc(sub, lm, Settings(length_norm="none"))
    chars = evaluate.evaluate_mc(sub, lm, Settings(length_norm="chars"))
    assert chars["metrics"]["length_norm"] == "chars" and plain["metrics"]["length_norm"] == "none"
    for it, p, c in zip(its, plain["items"], chars["items"]):
        sums = [raw(x, it.choices[it.answer]) for x in it.choices]
        assert p["scores"][0] == pytest.approx(sums, abs=1e-6) and p["pred"] == [int(np.argmax(sums))]
        assert c["scores"][0] == pytest.approx([s / len(x.strip()) for s, x in zip(sums, it.choices)], abs=1e-6)
        assert c["pred"] == [it.answer]
    assert chars["metrics"]["accuracy"] == 1.0
    want = np.mean([np.argmax([raw(x, it.choices[it.answer]) for x in it.choices]) == it.answer for it in its])
    assert plain["metrics"]["accuracy"] == pytest.approx(want) and want < 0.9  # the summed scores disagree
    with pytest.raises(ProbegenError, match="reduction mean"):
        evaluate.evaluate_mc(sub, lm, Settings(length_norm="tokens"))
    # cosine scores are never normalised
    lm.kind = "embedding"
    assert evaluate.evaluate_mc(sub, lm, Settings(length_norm="chars"))["items"][0]["scores"] == plain["items"][0]["scores"]


def test_eval_end_to_end_with_glove(small, tmp_path):
    from probegen.run.evaluation import EvalRequest, run_eval
    from probegen.runner import Runner

    sub = D.WordNetQADataset([it for it in small.items if it.split != "train"][:600], small.manifest)
    data = D.write(sub, tmp_path / "set")
    from probegen.run.api import eval_figures

    table = run_eval(EvalRequest("glove-50d", str(data)), tmp_path / "run", figures=eval_figures("glove-50d", str(data)),
                     runner=Runner(log=lambda m: None))
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    m = res["metrics"]
    assert 0.2 < m["accuracy"] < 1.0 and m["strict_cluster_accuracy"] <= m["accuracy"]
    assert m["n_items"] == len(sub.items)
    assert set(m["by_hops_distractor"]) <= set(C.PROBES)
    assert (tmp_path / "run" / "hops_heatmap.png").stat().st_size > 5000
    rows = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert len(rows) == len(sub.items) and {"id", "correct", "probe", "cluster", "gold", "choices"} <= rows[0].keys()
    assert "accuracy" in table and "hops" in table


def test_release_export_round_trip(small, tmp_path):
    rows = D.export_release(small, "test")
    assert rows and all(r["answerKey"] in "ABCDE" and len(r["question"]["choices"]) == 5 for r in rows)
    r = rows[0]
    assert {"gold_synset", "hops", "chain", "distractor_type", "distractor_hops"} <= r["notes"].keys()
    path = tmp_path / "release.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    back = D.load(path)
    test_items = small.split("test")
    assert [(it.choices, it.answer, it.probe, it.cluster) for it in back.items] == [
        (it.choices, it.answer, it.probe, it.cluster) for it in test_items
    ]
    recs = evaluate.evaluate_mc(back, ConstantScorer(), mode="full")["items"]
    assert len(recs) == len(test_items)
    # the stem's quoted sentence and the surface form are found again: every ablation's query
    # is the one the original item gives
    for mode in ("context", "word"):
        for style in ("pattern", "plain"):
            assert [back.templates.query(it, style, mode, "bkatuhla") for it in back.items] == [
                small.templates.query(it, style, mode, "bkatuhla") for it in test_items
            ]


def test_malformed_items_fail_cleanly(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "items.jsonl").write_text('{"id": "x", "probe": "definitions", "synset": "a.n.01", "question": "q", "choices": ["a", "a"], "answer": 0}\n')
    with pytest.raises(DatasetError, match="repeats a choice"):
        D.load(tmp_path / "d")
    (tmp_path / "d" / "items.jsonl").write_text('{"id": "x", "probe": "definitions", "synset": "a.n.01", "question": "q", "choices": ["a", "b"], "answer": 7}\n')
    with pytest.raises(DatasetError, match="answer 7"):
        D.load(tmp_path / "d")


def test_cli_make_wordnetqa(tmp_path):
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    out = tmp_path / "wnqa"
    r = CliRunner().invoke(cli, ["make", "wordnetqa", "--probe", "hyponymy", "--limit", "60", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "hyponymy" in r.stdout and "paper" in r.stdout
    ds = D.load(out)
    assert ds.items and {it.probe for it in ds.items} == {"hyponymy"}
    r = CliRunner().invoke(cli, ["make", "wordnetqa", "--distractors", "random,antonym", "--out", str(out)])
    assert r.exit_code != 0 and r.stderr.strip().startswith("probegen: error:") and len(r.stderr.strip().splitlines()) == 1


def test_hypernym_cycles_terminate(graph):
    # WordNet 3.0 has one verb hypernym cycle: restrain.v.01 <-> inhibit.v.04
    rel = distractors.Relations(graph)
    assert "inhibit.v.04" in rel.all_ancestors("restrain.v.01")
    assert "restrain.v.01" not in rel.all_ancestors("restrain.v.01")
    qs = probes.questions("hypernymy", "restrain.v.01", [("restrain", items.Context(text="restrain him", char_span=(0, 8), source="wordnet", ref="0"))], graph, WordNetQAConfig(pos=("v",)))
    assert all(q.hops >= 1 and q.gold != "restrain.v.01" for q in qs)


# ---- bias diagnostics on the real set ---------------------------------------------------------------
class OverlapLM(ConstantScorer):
    """A deterministic stand-in LM: a choice scores by the words it shares with the query."""

    kind = "causal"
    query_style = "pattern"

    def score(self, queries, candidates, progress=False):
        self.queries = list(queries)
        out = []
        for q, cands in zip(queries, candidates):
            qt = set(q.lower().replace('"', " ").split())
            out.append(np.array([len(qt & set(c.lower().replace(",", " ").split())) for c in cands], dtype=float))
        return out


def test_synonymy_ablations_measure_nothing_and_are_left_out(small):
    from probegen.run import run_bias

    syn = [it for it in small.items if it.probe == "synonymy"][:100]
    other = [it for it in small.items if it.probe != "synonymy" and it.context is not None][:100]
    for it in syn:  # why synonymy is excluded: Context = Full, and the Word query names a gold lemma
        full, ctx, word = (small.templates.query(it, "pattern", m, "bkatuhla") for m in ("full", "context", "word"))
        assert ctx == full and it.context is None
        assert f'"{it.word}"' in word and it.word in it.choices[it.answer].split(", ")
    for it in other:  # every other probe hides its target in the Context query
        assert small.templates.query(it, "pattern", "context", "bkatuhla") != small.templates.query(it, "pattern", "full", "bkatuhla")

    cfg = run_bias.BiasConfig.asked(n_boot=200, controls=False, nonce="bkatuhla")
    task = tasks.get("wordnetqa")
    records = task.score_ablations(small, OverlapLM(), cfg.settings, progress=False)
    res = run_bias.analyse(task, small, records, cfg)
    ctx_right = [r["correct"] for r in records["context"] if r["probe"] == "synonymy"]
    assert ctx_right == [r["correct"] for r in records["full"] if r["probe"] == "synonymy"]
    s = res["subsets"]["synonymy"]["ratios"]
    assert s["bias_c"]["not_applicable"] and s["bias_w"]["not_applicable"] and s["bias_choice"].get("excluded") is None
    for name in ("bias_c", "bias_w"):
        r = res["all"]["ratios"][name]
        assert r["over"] == ["definitions", "hypernymy", "hyponymy"] and set(r["excluded"]) == {"synonymy"}
    # the bootstrap unit is the concept: fewer units than probe:concept clusters
    assert res["all"]["n_units"] == len({it.synset for it in small.items}) < len({it.cluster for it in small.items})
