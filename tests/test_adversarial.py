"""Adversarial construction: confusable member selection, the twin, AFLite filtering, paired comparison."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

from diagnostics import baselines as B
from probegen.adversarial import aflite as A
from probegen.adversarial import confusable as C


@pytest.mark.parametrize("mod", [C, A], ids=lambda m: m.__name__)
def test_docstring_examples(mod):
    assert doctest.testmod(mod).failed == 0


def test_alignment_errors_matches_exhaustive_search():
    rng = np.random.default_rng(0)
    for _ in range(50):
        m = rng.normal(size=(5, 5))
        best = max(itertools.permutations(range(5)), key=lambda p: sum(m[i, p[i]] for i in range(5)))
        assert C.alignment_errors(m) == sum(best[i] != i for i in range(5))


def test_most_confusable_respects_the_cap_and_is_worse_for_the_model():
    rng = np.random.default_rng(1)
    n, k = 14, 6
    scores = rng.normal(size=(n, n)) + 2 * np.eye(n)
    vec = rng.normal(size=(n, 8))
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    sim = vec @ vec.T
    pick = C.most_confusable(scores, sim, k, 0.5)
    assert pick is not None and len(pick) == k == len(set(pick))
    sub = sim[np.ix_(pick, pick)] - np.eye(k) * 9
    assert sub.max() <= 0.5
    # on average over random valid sets, the chosen set has at least as many reference errors
    errs = []
    for _ in range(200):
        cand = sorted(rng.choice(n, k, replace=False))
        if (sim[np.ix_(cand, cand)] - np.eye(k) * 9).max() <= 0.5:
            errs.append(C.alignment_errors(scores[np.ix_(cand, cand)]))
    assert errs and C.alignment_errors(scores[np.ix_(pick, pick)]) >= np.mean(errs)


def test_most_confusable_gives_none_when_the_cap_cannot_be_met():
    sim = np.ones((6, 6))
    assert C.most_confusable(np.eye(6), sim, 5, 0.8) is None


# ---- AFLite on synthetic multiple-choice items --------------------------------------------------
def _synthetic(n: int, artefact: bool, seed: int = 0) -> list[B.MCView]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    out = []
    for i in range(n):
        choices = [" ".join(rng.choice(words, 3)) for _ in range(5)]
        ans = int(rng.integers(5))
        if artefact and i % 2 == 0:  # half the items: the gold choice gives itself away
            choices[ans] = choices[ans] + " that is especially notable"
        out.append(B.MCView(f"q{i}", tuple(choices), ans, f"c{i // 2}", "synthetic", "", ""))
    return out


def _filter(views, budget):
    s = A.FilterSettings(budget=budget, splits=10, step=0.2, seed=0)
    chance = lambda alive: 0.2  # noqa: E731
    return A.aflite(A.mc_predictor(views), [1] * len(views), [v.cluster for v in views], 1, chance, s, log=lambda m: None)


def test_aflite_removes_a_planted_artefact():
    views = _synthetic(240, artefact=True)
    res = _filter(views, budget=200)
    first, last = res["rounds"][0]["heldout_accuracy"], res["rounds"][-1]["heldout_accuracy"]
    assert first > 0.45 and last < first - 0.15
    removed = {i for i, _ in res["removed"]}
    planted = {i for i in range(len(views)) if i % 2 == 0}
    assert len(removed & planted) >= 0.8 * len(removed)  # it removes the giveaway items, not the others


def test_aflite_leaves_a_clean_set_alone():
    res = _filter(_synthetic(240, artefact=False), budget=200)
    assert res["rounds"][0]["heldout_accuracy"] < 0.3
    assert len(res["removed"]) <= 24


# ---- real data ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def adversarial_verbs():
    from probegen.adversarial.coda21 import AdversarialSettings, build_adversarial
    from probegen.coda21.config import Coda21Config

    cfg = Coda21Config(easy=True, clean=True, pos=("v",), context_scorer="first")
    return cfg, build_adversarial(cfg, AdversarialSettings("glove-50d", pool_max=25), progress=False, log=lambda m: None)


@pytest.mark.real
def test_adversarial_groups_keep_every_constraint(adversarial_verbs, graph):
    from probegen.coda21.vectors import definition_vectors

    cfg, (adv, twin) = adversarial_verbs
    rec = adv.manifest["adversarial"]
    assert rec["reference_model"] == "glove-50d" and rec["groups_changed"] > 0
    assert rec["reference_errors"]["adversarial"] > rec["reference_errors"]["twin"]
    members = [it.synset for g in adv.groups for it in g.items]
    assert len(members) == len(set(members)), "a synset is used in more than one adversarial group"
    twin_by_id = {g.id: g for g in twin.groups}
    vec = definition_vectors(graph, sorted(set(members)), "minilm-l6", "test-adversarial")
    for g in adv.groups:
        t = twin_by_id[g.id]
        assert (g.ancestor, g.relation, g.pos, g.k) == (t.ancestor, t.relation, t.pos, t.k)
        syn = [it.synset for it in g.items]
        for s in syn:
            assert g.ancestor in {gp for p in graph.parents(s) for gp in graph.parents(p)}
        v = vec(syn)
        sim = v @ v.T - 9 * np.eye(len(syn))
        assert sim.max() <= cfg.max_similarity + 1e-6


@pytest.mark.real
def test_twin_is_the_standard_build_and_construction_is_deterministic(adversarial_verbs, tmp_path):
    from probegen.adversarial.coda21 import AdversarialSettings, build_adversarial
    from probegen.coda21 import dataset as D

    cfg, (adv, twin) = adversarial_verbs
    D.write(D.build(cfg, progress=False, log=lambda m: None), tmp_path / "std")
    D.write(twin, tmp_path / "twin")
    assert (tmp_path / "std/groups.jsonl").read_bytes() == (tmp_path / "twin/groups.jsonl").read_bytes()
    adv2, _ = build_adversarial(cfg, AdversarialSettings("glove-50d", pool_max=25), progress=False, log=lambda m: None)
    D.write(adv, tmp_path / "a1")
    D.write(adv2, tmp_path / "a2")
    for f in ("groups.jsonl", "manifest.json"):
        assert (tmp_path / "a1" / f).read_bytes() == (tmp_path / "a2" / f).read_bytes()


@pytest.mark.real
def test_compare_and_filter_from_the_cli(adversarial_verbs, tmp_path):
    import json

    from click.testing import CliRunner

    from cli import cli
    from probegen.coda21 import dataset as D

    _, (adv, twin) = adversarial_verbs
    D.write(adv, tmp_path / "adv")
    D.write(twin, tmp_path / "twin")
    r = CliRunner().invoke(cli, ["compare", str(tmp_path / "twin"), str(tmp_path / "adv"), "--model", "glove-50d",
                                 "--bootstrap", "200", "--out", str(tmp_path / "cmp")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "cmp/results.json").read_text())
    row = res["models"][0]
    assert row["used_in_construction"] and row["diff"]["value"] < 0
    assert (tmp_path / "cmp/comparison.png").stat().st_size > 1000

    r = CliRunner().invoke(cli, ["filter", str(tmp_path / "twin"), "--artefacts", "--budget", "30", "--splits", "4",
                                 "--out", str(tmp_path / "filtered")])
    assert r.exit_code == 0, r.output
    filtered = D.load(tmp_path / "filtered")
    rec = filtered.manifest["filter"]
    assert 0 < len(rec["removed"]) <= 30
    assert all(g.k >= 5 for g in filtered.groups)
    kept = {it.synset for g in filtered.groups for it in g.items}
    assert not kept & {r.split("/")[1] for r in rec["removed"]}


# ---- WordNetQA: adversarial distractors -----------------------------------------------------------
@pytest.fixture(scope="module")
def adversarial_mc():
    from probegen.adversarial.wordnetqa import AdversarialSettings, build_adversarial
    from probegen.wordnetqa.config import WordNetQAConfig

    cfg = WordNetQAConfig(probes=("hypernymy", "hyponymy"), max_concepts=60)
    return cfg, build_adversarial(cfg, AdversarialSettings("glove-50d"), progress=False, log=lambda m: None)


@pytest.mark.real
def test_adversarial_distractors_stay_valid(adversarial_mc, graph):
    from probegen.wordnetqa.dataset import choice_renderer
    from probegen.wordnetqa.distractors import Relations

    cfg, (adv, twin) = adversarial_mc
    rel = Relations(graph, cfg.instances)
    assert adv.manifest["adversarial"]["items_changed"] > 0
    assert [it.id for it in adv.items] == [it.id for it in twin.items]
    for a, t in zip(adv.items, twin.items):
        render = choice_renderer(graph, a.probe)
        assert (a.answer, a.choices[a.answer], a.gold_synset, a.question) == (t.answer, t.choices[t.answer], t.gold_synset, t.question)
        assert len(set(a.choices)) == len(a.choices)
        typed = lambda it: sorted(m.type for m in it.choice_meta)  # noqa: E731
        assert typed(a) == typed(t), "the mix of distractor types changed"
        for j, m in enumerate(a.choice_meta):
            if j == a.answer:
                continue
            assert rel.valid(a.probe, a.synset, a.gold_synset, m.synset, render), f"{a.id}: {m.synset} is a correct answer"
            assert a.choices[j] == render(m.synset)
            if m.type == "isa_down":
                assert graph.descendants(a.synset, cfg.max_hops).get(m.synset) == m.distance
            elif m.type == "isa_up":
                assert graph.ancestors(a.synset, cfg.max_hops).get(m.synset) == m.distance
            elif m.type == "sister":
                assert graph.sister_family(a.synset, cfg.sister_depth).get(m.synset) == m.distance - 1


@pytest.mark.real
def test_adversarial_mc_is_deterministic_and_harder_for_the_reference(adversarial_mc, tmp_path):
    from probegen.adversarial.wordnetqa import AdversarialSettings, build_adversarial
    from probegen.models import load_scorer
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.evaluate import evaluate_mc

    cfg, (adv, twin) = adversarial_mc
    again, _ = build_adversarial(cfg, AdversarialSettings("glove-50d"), progress=False, log=lambda m: None)
    D.write(adv, tmp_path / "a")
    D.write(again, tmp_path / "b")
    assert (tmp_path / "a/items.jsonl").read_bytes() == (tmp_path / "b/items.jsonl").read_bytes()
    ref = load_scorer("glove-50d")
    acc = lambda ds: np.mean([r["correct"] for r in evaluate_mc(ds, ref)["items"]])  # noqa: E731
    assert acc(adv) < acc(twin)
