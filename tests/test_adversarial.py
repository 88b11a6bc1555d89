"""Adversarial construction: confusable member selection, the twin, AFLite filtering, paired comparison."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

from probegen.adversarial import confusable as C
from probegen.diagnostics import aflite as A
from probegen.diagnostics import baselines as B
from probegen.diagnostics import filtering as F
from probegen.runner import Runner
from probegen.tasks.bias_inputs import ChoiceView, choice_view

# the runner every library call gets (the library makes none of its own)
QUIET_RUNNER = Runner(log=lambda m: None)


@pytest.mark.parametrize("mod", [C, A, F], ids=lambda m: m.__name__)
def test_docstring_examples(mod):
    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0


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
def _synthetic(n: int, artefact: bool, seed: int = 0) -> list[ChoiceView]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    out = []
    for i in range(n):
        choices = [" ".join(rng.choice(words, 3)) for _ in range(5)]
        ans = int(rng.integers(5))
        if artefact and i % 2 == 0:  # half the items: the gold choice gives itself away
            choices[ans] = choices[ans] + " that is especially notable"
        out.append(ChoiceView(f"q{i}", tuple(choices), ans, f"c{i // 2}", "synthetic", "", ""))
    return out


def _filter(views, budget):
    s = A.FilterSettings(budget=budget, splits=10, step=0.2, seed=0)
    chance = lambda alive: 0.2  # noqa: E731
    return A.aflite(A.choice_predictor(views), [1] * len(views), [v.cluster for v in views], 1, chance, s, log=lambda m: None)


def test_aflite_removes_a_planted_artefact():
    views = _synthetic(240, artefact=True)
    res = _filter(views, budget=200)
    first, last = res["rounds"][0]["split_accuracy"], res["rounds"][-1]["split_accuracy"]
    assert first > 0.45 and last < first - 0.15
    removed = {i for i, _ in res["removed"]}
    planted = {i for i in range(len(views)) if i % 2 == 0}
    assert len(removed & planted) >= 0.8 * len(removed)  # it removes the giveaway items, not the others


def test_aflite_leaves_a_clean_set_alone():
    res = _filter(_synthetic(240, artefact=False), budget=200)
    assert res["rounds"][0]["split_accuracy"] < 0.3
    assert len(res["removed"]) <= 24


# ---- real data ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def adversarial_verbs():
    from probegen.coda21.adversarial import AdversarialSettings, build_adversarial
    from probegen.coda21.config import Coda21Config

    cfg = Coda21Config(easy=True, clean=True, pos=("v",), context_scorer="first")
    return cfg, build_adversarial(cfg, AdversarialSettings("glove-50d", pool_max=25), progress=False, log=lambda m: None, runner=QUIET_RUNNER)


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
    vec = definition_vectors(graph, sorted(set(members)), "minilm-l6", "test-adversarial", runner=QUIET_RUNNER)
    how = {d["id"]: d["how"] for d in rec["decisions"]}
    for g in adv.groups:
        t = twin_by_id[g.id]
        assert (g.ancestor, g.relation, g.pos) == (t.ancestor, t.relation, t.pos)
        syn = [it.synset for it in g.items]
        if how[g.id] == "shrunk":  # the twin's members left after earlier groups took some
            assert cfg.k_min <= g.k < t.k and set(syn) < {it.synset for it in t.items}
        else:
            assert g.k == t.k
        for s in syn:
            assert g.ancestor in {gp for p in graph.parents(s) for gp in graph.parents(p)}
        v = vec(syn)
        sim = v @ v.T - 9 * np.eye(len(syn))
        assert sim.max() <= cfg.max_similarity + 1e-6


@pytest.mark.real
def test_shrunk_groups_keep_their_twin_id_and_none_is_lost(monkeypatch):
    """Defect 3: a group that keeps fewer twin members (some taken by an earlier adversarial group)
    must keep its own id, so ``probegen compare`` pairs each group with the same ancestor's twin."""
    from probegen.coda21 import adversarial as AC
    from probegen.coda21.config import Coda21Config

    real, calls = AC.most_confusable, []

    def first_only(*a, **k):  # the first group goes adversarial, every later one falls back to its twin members
        calls.append(1)
        return real(*a, **k) if len(calls) == 1 else None

    monkeypatch.setattr(AC, "most_confusable", first_only)
    cfg = Coda21Config(easy=True, clean=True, pos=("v",), context_scorer="first")
    adv, twin = AC.build_adversarial(cfg, AC.AdversarialSettings("glove-50d", pool_max=25), progress=False, log=lambda m: None, runner=QUIET_RUNNER)
    first = twin.groups[0].id  # twin groups are in generation order, the order of the decisions
    taken = {it.synset for it in next(g for g in adv.groups if g.id == first).items}
    adv_by_id = {g.id: g for g in adv.groups}
    for t in twin.groups:  # expected outcome, worked out independently from the twin
        left = {it.synset for it in t.items} - taken
        if t.id == first:
            continue
        if len(left) < cfg.k_min:
            assert t.id not in adv_by_id, f"{t.id} keeps too few members"
            continue
        g = adv_by_id.get(t.id)
        assert g is not None, f"{t.id} ({len(left)} free twin members) was lost"
        assert g.ancestor == t.ancestor and {it.synset for it in g.items} == left, f"{t.id} pairs a different group"
    dec = adv.manifest["adversarial"]["decisions"]
    assert sum(d["how"] == "shrunk" for d in dec) > 0, "the case under test did not occur"
    assert [d["id"] for d in dec if d["how"] != "dropped"] == [g.id for g in adv.groups]
    assert adv.manifest["adversarial"]["groups_shrunk"] == sum(d["how"] == "shrunk" for d in dec)


@pytest.mark.real
def test_twin_is_the_standard_build_and_construction_is_deterministic(adversarial_verbs, tmp_path):
    from probegen.coda21 import dataset as D
    from probegen.coda21.adversarial import AdversarialSettings, build_adversarial

    cfg, (adv, twin) = adversarial_verbs
    D.write(D.build(cfg, progress=False, log=lambda m: None, runner=QUIET_RUNNER), tmp_path / "std")
    D.write(twin, tmp_path / "twin")
    assert (tmp_path / "std/groups.jsonl").read_bytes() == (tmp_path / "twin/groups.jsonl").read_bytes()
    adv2, _ = build_adversarial(cfg, AdversarialSettings("glove-50d", pool_max=25), progress=False, log=lambda m: None, runner=QUIET_RUNNER)
    D.write(adv, tmp_path / "a1")
    D.write(adv2, tmp_path / "a2")
    for f in ("groups.jsonl", "manifest.json"):
        assert (tmp_path / "a1" / f).read_bytes() == (tmp_path / "a2" / f).read_bytes()


@pytest.mark.real
def test_compare_and_filter_from_the_cli(adversarial_verbs, tmp_path):
    import json

    from click.testing import CliRunner

    from probegen.coda21 import dataset as D
    from probegen.commands.cli import cli

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
    # held out by ancestor: whole ancestors, never filtered, not in the output; the controls are measured on them
    held = set(rec["held_out"]["ids"])
    assert rec["held_out"]["unit"] == "ancestor" and "held out" in r.output
    assert {g.ancestor for g in twin.groups if g.id in held} == set(rec["held_out"]["concepts"])
    assert not {g.ancestor for g in twin.groups if g.id not in held} & set(rec["held_out"]["concepts"])
    assert not held & {g.id for g in filtered.groups} and not held & {r.split("/")[0] for r in rec["removed"]}
    for res in (rec["controls_before"][0], rec["controls_after"][0]):
        assert (res["control"], res["n_items"], res["n_units"]) == ("word-overlap", len(held), len(rec["held_out"]["concepts"]))


@pytest.mark.real
def test_filter_holds_out_concepts_and_measures_the_controls_on_them(tmp_path, monkeypatch):
    """Defect 9: held-out synsets are never shown to the filter nor removed, and the controls before / after are
    trained on the rest before / after filtering and tested on exactly the held-out items."""
    from probegen.aligner import argmax_random_ties
    from probegen.diagnostics import filtering as F
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.config import WordNetQAConfig

    src = D.build(WordNetQAConfig(probes=("hypernymy",), max_concepts=120), progress=False, log=lambda m: None)
    D.write(src, tmp_path / "src")
    shown = []
    real = F.per_probe_predictor
    monkeypatch.setattr(F, "per_probe_predictor", lambda views: shown.extend(views) or real(views))
    from probegen.run.filtering import filter_dataset

    rec = filter_dataset(tmp_path / "src", tmp_path / "out", A.FilterSettings(budget=60, splits=4), log=lambda m: None)
    out = D.load(tmp_path / "out")

    held = set(rec["held_out"]["ids"])
    assert rec["held_out"]["unit"] == "synset"
    assert held and {it.synset for it in src.items if it.id in held} == set(rec["held_out"]["concepts"])
    assert not {it.synset for it in src.items if it.id not in held} & set(rec["held_out"]["concepts"]), "a concept is split"
    assert shown and not {v.id for v in shown} & held, "the filter saw held-out items"
    assert 0 < len(rec["removed"]) <= 60 and not set(rec["removed"]) & held
    kept = {it.id for it in out.items}
    assert not kept & held and kept | set(rec["removed"]) | held == {it.id for it in src.items}

    def control(train_items) -> float:  # the choice-only control, worked out here: trained on train_items, tested on held
        tr = [choice_view(it) for it in train_items]
        te = [(i, choice_view(it)) for i, it in enumerate(src.items) if it.id in held]
        tr_t, tr_n, y, _ = B.choice_rows(tr)
        te_t, te_n, _, owner = B.choice_rows([v for _, v in te])
        _, s, _ = B.choice_model(tr_t, tr_n, y, te_t, te_n)
        return float(np.mean([argmax_random_ties(s[owner == t], seed=np.random.default_rng([0, i])) == v.answer
                              for t, (i, v) in enumerate(te)]))

    before, after = rec["controls_before"][0], rec["controls_after"][0]
    assert before["n_items"] == after["n_items"] == len(held)
    assert before["n_units"] == len(rec["held_out"]["concepts"])
    assert before["accuracy"] == pytest.approx(control([it for it in src.items if it.id not in held]))
    assert after["accuracy"] == pytest.approx(control(out.items))
    assert after["diff"]["value"] == pytest.approx(after["accuracy"] - before["accuracy"])
    assert "held out" in F.summary(rec)


# ---- WordNetQA: adversarial distractors -----------------------------------------------------------
@pytest.fixture(scope="module")
def adversarial_mc():
    from probegen.wordnetqa.adversarial import AdversarialSettings, build_adversarial
    from probegen.wordnetqa.config import WordNetQAConfig

    cfg = WordNetQAConfig(probes=("hypernymy", "hyponymy"), max_concepts=60)
    return cfg, build_adversarial(cfg, AdversarialSettings("glove-50d"), progress=False, log=lambda m: None, runner=QUIET_RUNNER)


@pytest.mark.real
def test_adversarial_distractors_stay_valid(adversarial_mc, graph):
    from probegen.wordnetqa.dataset import choice_renderer
    from probegen.wordnetqa.distractors import Relations

    cfg, (adv, twin) = adversarial_mc
    rel = Relations(graph, cfg.instances)
    assert adv.manifest["adversarial"]["items_changed"] > 0
    assert [it.id for it in adv.items] == [it.id for it in twin.items]
    for a, t in zip(adv.items, twin.items):
        render = choice_renderer(graph, a.probe, twin.templates)
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
    from probegen.models import load_scorer
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.adversarial import AdversarialSettings, build_adversarial
    from probegen.wordnetqa.evaluate import evaluate_mc

    cfg, (adv, twin) = adversarial_mc
    again, _ = build_adversarial(cfg, AdversarialSettings("glove-50d"), progress=False, log=lambda m: None, runner=QUIET_RUNNER)
    D.write(adv, tmp_path / "a")
    D.write(again, tmp_path / "b")
    assert (tmp_path / "a/items.jsonl").read_bytes() == (tmp_path / "b/items.jsonl").read_bytes()
    ref = load_scorer("glove-50d")
    acc = lambda ds: np.mean([r["correct"] for r in evaluate_mc(ds, ref)["items"]])  # noqa: E731
    assert acc(adv) < acc(twin)
