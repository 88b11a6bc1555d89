"""`probegen bias`: ratios, undefined cases, chance-level ablations, trained controls, outputs."""

from __future__ import annotations

import json
import re
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from probegen import tasks
from probegen.coda21.bias import alignment_views
from probegen.coda21.dataset import Coda21Dataset, write
from probegen.coda21.evaluate import evaluate
from probegen.coda21.items import Context, Group, Item
from probegen.diagnostics import baselines, bias, entropy
from probegen.diagnostics.baselines import alignment_controls, choice_only_control
from probegen.diagnostics.bias import UnitTable, bias_ratio, bootstrap_bias, fmt_ratio, unit_sums
from probegen.run import run_bias
from probegen.tasks.bias_inputs import choice_view


# ---- a deterministic scorer and synthetic data --------------------------------------------------
class OverlapScorer:
    """Scores a candidate by the content words it shares with the query, plus a tiny hash jitter.

    Like a real LM scorer, its score depends only on (query, candidate) text, so identical
    queries give identical rows.
    """

    kind = "causal"
    query_style = "pattern"

    def __init__(self) -> None:
        self.calls = 0

    def score(self, queries, candidates, progress=False):
        self.calls += 1
        out = []
        for q, cands in zip(queries, candidates):
            qt = set(re.findall(r"\w+", q.lower()))
            out.append(
                np.array([len(qt & set(re.findall(r"\w+", c.lower()))) + zlib.crc32(f"{q}|{c}".encode()) / 2**32 * 1e-3 for c in cands])
            )
        return out

    def settings(self):
        return {"model": "overlap-fake"}


def synthetic_coda21(n_groups: int = 40, k: int = 5, word_in_def: float = 0.5, cue: float = 0.9, seed: int = 0) -> Coda21Dataset:
    """Groups whose contexts carry a cue word of their definition (with probability ``cue``) and
    whose definitions contain the target word (with probability ``word_in_def``)."""
    rng = np.random.default_rng(seed)
    groups = []
    for g in range(n_groups):
        items = []
        for i in range(k):
            word, clue = f"zorp{g}x{i}", f"cue{g}y{i}"
            ctx_clue = clue if rng.random() < cue else f"noise{g}z{i}"
            text = f"The {word} was near a {ctx_clue} today ."
            defn = f"a kind of {clue} thing" + (f" like {word}" if rng.random() < word_in_def else "")
            items.append(Item(f"{word}.n.01", word, defn, Context(text=text, char_span=(4, 4 + len(word)))))
        items = [items[j] for j in rng.permutation(k)]  # names carry their index: store rows shuffled, as build() does
        groups.append(Group(f"syn-n-{g:04d}", "n" if g % 4 else "v", "root.n.01", "grandparent", tuple(items)))
    return Coda21Dataset(groups, {"kind": "coda21"}, "synthetic")


def synthetic_mc(n: int = 300, artefact: bool = True, seed: int = 0) -> list[dict]:
    """5-way items in clusters of 3; with ``artefact`` the gold choice is always the longest."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(200)]
    items = []
    for i in range(n):
        choices = [" ".join(rng.choice(vocab, rng.integers(2, 6))) for _ in range(5)]
        ans = int(rng.integers(5))
        if artefact:
            choices[ans] = " ".join(rng.choice(vocab, 8))
        c = i // 3
        items.append({"id": f"q{i}", "question": f"what is word{c}?", "choices": choices, "answer": ans,
                      "cluster": f"c{c}", "probe": "definitions" if i % 2 else "synonymy", "word": f"word{c}", "synset": f"s{c}.n.01"})
    return items


def fake_evaluate_mc(mc, scorer, settings, mode="full", progress=False):
    """A stand-in for probegen.wordnetqa.evaluate.evaluate_mc: correctness rates fall with less input."""
    seed = settings.seed
    rate = {"full": 0.9, "context": 0.6, "word": 0.5, "choice": 0.3}[mode]
    rows = []
    for it in mc.items:
        u = zlib.crc32(f"{seed}/{mode}/{it['id']}".encode()) / 2**32
        rows.append({"id": it["id"], "cluster": it["cluster"], "probe": it["probe"], "choices": it["choices"],
                     "gold": [it["answer"]], "correct": float(u < rate)})
    return {"items": rows, "metrics": {}}


def table_evaluate_mc(correct: dict[str, np.ndarray]):
    """A stand-in for evaluate_mc that reports the correctness the test chose (per mode, per item)."""

    def ev(mc, scorer, settings=None, mode="full", progress=False):
        return {"items": [{"id": it["id"], "cluster": it["cluster"], "synset": it["synset"], "probe": it["probe"],
                           "choices": it["choices"], "gold": [it["answer"]], "correct": float(correct[mode][i])}
                          for i, it in enumerate(mc.items)]}

    return ev


# ---- pure measures (their docstring examples run in test_doctests.py) -----------------------------
def test_ratios_on_hand_made_tables():
    assert bias_ratio(0.6, 0.2, 1.0) == pytest.approx(0.5)
    assert bias_ratio(0.2, 0.2, 1.0) == 0.0
    assert bias_ratio(1.1, 0.2, 1.0) > 1.0
    assert bias_ratio(0.6, 0.2, 0.2) is None and bias_ratio(0.6, 0.3, 0.2) is None
    t = UnitTable(
        [f"g{i}" for i in range(20)], np.ones(20),
        {"full": np.linspace(0.8, 1.0, 20), "context": np.linspace(0.4, 0.6, 20), "word": np.full(20, 0.2), "label": np.full(20, 0.2)},
    )
    r = bootstrap_bias(t, {"bias_c": "context", "bias_w": "word"}, n_boot=500, seed=1)
    assert r["gap"]["defined"]
    assert r["ratios"]["bias_c"]["value"] == pytest.approx((0.5 - 0.2) / (0.9 - 0.2))
    lo, hi = r["ratios"]["bias_c"]["ci"]
    assert lo <= r["ratios"]["bias_c"]["value"] <= hi
    assert r["ratios"]["bias_w"]["value"] == pytest.approx(0.0)
    assert r["ablations"]["label"]["accuracy"] == pytest.approx(0.2)


def test_ratio_is_undefined_when_full_is_within_noise_of_label():
    rng = np.random.default_rng(0)
    full = rng.choice([0.0, 0.2, 0.4], size=30)  # mean about 0.2 = label, lots of noise
    t = UnitTable([str(i) for i in range(30)], np.ones(30), {"full": full, "context": full * 0.5, "label": np.full(30, 0.2)})
    r = bootstrap_bias(t, {"bias_c": "context"}, n_boot=500)
    assert not r["gap"]["defined"]
    assert r["ratios"]["bias_c"]["value"] is None and r["ratios"]["bias_c"]["ci"] is None
    assert fmt_ratio(r["ratios"]["bias_c"]) == "undefined"


def test_small_but_noisy_gap_is_undefined_not_huge():
    # M_Full barely above M_L on few units: the ratio would be ~10; it must be None instead
    t = UnitTable(list("abcd"), np.ones(4), {"full": [0.3, 0.1, 0.25, 0.2], "context": [0.9, 0.8, 0.9, 0.9], "label": [0.2] * 4})
    assert bootstrap_bias(t, {"bias_c": "context"}, n_boot=300)["ratios"]["bias_c"]["value"] is None


def test_bootstrap_pairs_ablations_on_the_same_units():
    # context == full on every unit: each paired replicate gives exactly 1
    rng = np.random.default_rng(3)
    full = rng.uniform(0.5, 1.0, 50)
    t = UnitTable([str(i) for i in range(50)], np.ones(50), {"full": full, "context": full.copy(), "label": np.full(50, 0.2)})
    ci = bootstrap_bias(t, {"bias_c": "context"}, n_boot=300)["ratios"]["bias_c"]["ci"]
    assert ci == pytest.approx([1.0, 1.0])


def test_majority_label_prior_from_gold_position_counts():
    gold = np.array([0, 0, 0, 1, 2, 3])
    t = unit_sums({"full": np.ones(6)}, ["a", "a", "b", "b", "c", "c"], np.eye(5)[gold])
    r = bootstrap_bias(t, {}, n_boot=100)
    assert r["ablations"]["label"]["accuracy"] == pytest.approx(0.5)


def test_entropies():
    e = entropy.sense_entropy([("Bank", "bank.n.01"), ("bank", "bank.n.02"), ("dog", "dog.n.01")])
    assert e["n_words"] == 2 and e["share_single"] == 0.5 and e["mean_multi"] == 1.0
    assert entropy.label_entropy([])["mean"] is None


# ---- CoDA21 ablations -----------------------------------------------------------------------------
def test_definition_only_ablation_gets_chance_not_one():
    ds = synthetic_coda21(n_groups=300, k=5)
    res = evaluate(ds, OverlapScorer(), mode="definition")
    acc = res["metrics"]["all"]["accuracy"]
    assert acc < 0.5
    # 300 groups of 5 under random matching: SE of accuracy = sqrt(1/25/300) = .0115; .06 is 5.2 SE (< 1e-6)
    assert abs(acc - 0.2) < 0.06
    # the same groups with context are solved: the scorer is not just noise
    assert evaluate(ds, OverlapScorer(), mode="context")["metrics"]["all"]["accuracy"] > 0.8


def test_coda21_analysis_orders_ablations_sensibly():
    ds = synthetic_coda21(n_groups=60)
    cfg = run_bias.BiasConfig.asked(n_boot=200, nonce="bkatuhla")
    task = tasks.get("coda21")
    records = task.score_ablations(ds, OverlapScorer(), cfg.settings, progress=False)
    res = run_bias.analyse(task, ds, records, cfg)
    a = res["all"]["ablations"]
    assert a["label"]["accuracy"] == pytest.approx(0.2)  # exactly 1/k
    assert a["full"]["accuracy"] > a["context"]["accuracy"] > a["definition"]["accuracy"]
    assert a["full"]["accuracy"] > a["word"]["accuracy"]
    assert 0.0 < res["all"]["ratios"]["bias_c"]["value"] < 1.2
    assert abs(res["all"]["ratios"]["bias_d"]["value"]) < 0.15
    assert set(res["subsets"]) == {"noun", "verb"}
    assert res["entropy"]["sense"]["share_single"] == 1.0


def max_false_flags(n: int, alpha: float = 0.05, rate: float = 1e-6) -> int:
    """The most false "artefact" flags that ``n`` independent null runs may raise before a test fails.

    A control flags an artefact when its 95% CI's lower end is above chance: on data with no
    artefact that happens with probability 2.5% per run. Allowing the bootstrap CI to be off by a
    factor of two (``alpha`` = 5%), a test that fails above this count fails falsely with
    probability below ``rate``; one seeded run, by contrast, fails for 2.5% of seeds by design.

    >>> max_false_flags(40)
    11
    """
    from scipy.stats import binom

    return int(next(k for k in range(n + 1) if binom.sf(k, n, alpha) < rate))


def test_alignment_controls_find_overlap():
    ds = synthetic_coda21(n_groups=60)
    _, word, context = alignment_controls(alignment_views(ds.groups), "coda21", n_boot=300)
    assert context["artefact"] and context["accuracy"] > 0.8  # contexts share a cue word with their definition
    assert word["artefact"]  # half the definitions contain the target word


def test_definition_order_control_raises_no_false_alarm_beyond_its_rate():
    # the decision, over 30 independent null data sets (definitions stored in random order)
    runs = [baselines.definition_order_control(alignment_views(synthetic_coda21(n_groups=60, seed=s).groups), "coda21",
                                             n_boot=300, seed=s)
            for s in range(30)]
    assert sum(r["artefact"] for r in runs) <= max_false_flags(len(runs))
    # pooled accuracy: 30 x 60 groups of 5; its SE is about .005, so .03 is ~6 SE (false-failure rate < 1e-8)
    assert abs(np.mean([r["accuracy"] for r in runs]) - 0.2) < 0.03


def test_definition_order_control_detects_a_leaky_order():
    # rows stored sorted by definition length: definition text alone reveals the gold order
    rng = np.random.default_rng(0)
    groups = []
    for g in range(60):
        defs = sorted((" ".join(f"t{x}" for x in rng.integers(0, 50, rng.integers(2, 20))) for _ in range(5)), key=len)
        items = tuple(Item(f"s{g}_{i}.n.01", f"s{g}_{i}", d, Context(text=f"a s{g}_{i} b", char_span=(2, 2 + len(f"s{g}_{i}")))) for i, d in enumerate(defs))
        groups.append(Group(f"leak-{g}", "n", "r.n.01", "parent", items))
    assert baselines.definition_order_control(alignment_views(groups), "coda21", n_boot=300)["artefact"]


# ---- WordNetQA choice-only control ----------------------------------------------------------------
def _views(items):
    return [choice_view(it, i) for i, it in enumerate(items)]


def test_choice_only_control_finds_a_planted_artefact():
    rows = choice_only_control(_views(synthetic_mc(artefact=True)), n_boot=300)
    assert {r["applies_to"] for r in rows} == {"definitions", "synonymy"}
    for r in rows:
        assert r["artefact"] and r["accuracy"] > 0.9 and r["ci"][0] > r["chance"]
        assert r["chance"] == pytest.approx(0.2)
        assert any(f["feature"] in ("is_longest", "len_z", "n_words", "len_rank", "n_chars") for f in r["top_features"][:3])


def test_choice_only_control_raises_no_false_alarm_beyond_its_rate():
    # Not "the CI of one seeded run contains chance", which fails for 5% of seeds by design: the
    # decision over 20 independent null data sets (2 probe types each), against a binomial bound.
    runs = [r for s in range(20) for r in choice_only_control(_views(synthetic_mc(artefact=False, seed=s)), n_boot=300, seed=s)]
    assert len(runs) == 40 and all(r["chance"] == pytest.approx(0.2) for r in runs)
    assert sum(r["artefact"] for r in runs) <= max_false_flags(len(runs))
    # pooled accuracy over 6,000 items in clusters of 3: SE about .007, so .035 is 5 SE (< 1e-6)
    assert abs(np.mean([r["accuracy"] for r in runs]) - 0.2) < 0.035


def test_choice_only_folds_keep_clusters_whole():
    from probegen.diagnostics.baselines import _folds

    clusters = [f"c{i // 3}" for i in range(30)]
    for tr, te in _folds(clusters, 5):
        assert not {clusters[i] for i in tr} & {clusters[i] for i in te}


def _ratio(m_part, m_label, m_full):
    return (m_part - m_label) / (m_full - m_label)


def test_mc_analysis_measures_what_the_records_say():
    # correctness drawn per item and mode at rates that differ by probe type; every figure is then
    # recomputed here from the records alone (accuracies, majority-position prior, ratios, units)
    items = synthetic_mc(artefact=True)
    probe = np.array([it["probe"] for it in items])
    rng = np.random.default_rng(7)
    rates = {"full": (0.9, 0.8), "context": (0.55, 0.8), "word": (0.4, 0.75), "choice": (0.3, 0.35)}  # (definitions, synonymy)
    correct = {m: rng.random(len(items)) < np.where(probe == "definitions", d, sy) for m, (d, sy) in rates.items()}
    mc = SimpleNamespace(items=items, manifest={"kind": "wordnetqa"})
    cfg = run_bias.BiasConfig.asked(n_boot=200, nonce="bkatuhla")
    task = tasks.get("wordnetqa")
    records = task.score_ablations(mc, OverlapScorer(), cfg.settings, progress=False, evaluator=table_evaluate_mc(correct))
    res = run_bias.analyse(task, mc, records, cfg)

    def label(mask):
        return np.bincount([it["answer"] for it, keep in zip(items, mask) if keep]).max() / mask.sum()

    every, defs = np.ones(len(items), bool), probe == "definitions"
    a, r = res["all"]["ablations"], res["all"]["ratios"]
    for m in rates:
        assert a[m]["accuracy"] == pytest.approx(correct[m].mean())
    assert a["label"]["accuracy"] == pytest.approx(label(every))
    # Bias_Choice over every item; Bias_C and Bias_W over definitions only (synonymy measures nothing there)
    assert r["bias_choice"]["value"] == pytest.approx(_ratio(correct["choice"].mean(), label(every), correct["full"].mean()))
    for name, mode in (("bias_c", "context"), ("bias_w", "word")):
        want = _ratio(correct[mode][defs].mean(), label(defs), correct["full"][defs].mean())
        assert r[name]["value"] == pytest.approx(want) and r[name]["over"] == ["definitions"]
        assert "synonymy" in r[name]["excluded"] and res["subsets"]["synonymy"]["ratios"][name]["not_applicable"]
        assert res["subsets"]["definitions"]["ratios"][name]["value"] == pytest.approx(want)
    assert {(e["probe"], e["ratio"]) for e in res["exclusions"]} == {("synonymy", "bias_c"), ("synonymy", "bias_w")}
    assert res["all"]["n_units"] == len({it["synset"] for it in items}) and res["unit"] == "concept"
    assert all(c["artefact"] for c in res["controls"])  # the planted longest-gold artefact
    assert res["entropy"]["label"]["n_words"] == 100


def concept_records(n_concepts: int = 40, seed: int = 0) -> list[dict]:
    """Items in 4 probe types x 3 perturbations per concept, each concept all right or all wrong."""
    rng = np.random.default_rng(seed)
    items = []
    for c in range(n_concepts):
        for p in ("definitions", "hypernymy", "hyponymy", "synonymy"):
            for d in range(3):
                items.append({"id": f"{p}:s{c}/{d}", "question": "q", "choices": list("abcde"), "answer": (c + d) % 5,
                              "cluster": f"{p}:s{c}.n.01", "probe": p, "word": f"w{c}", "synset": f"s{c}.n.01"})
    right = rng.random(n_concepts) < 0.6  # one draw per concept: its items are not independent
    correct = {m: np.array([right[int(it["synset"][1:-5])] for it in items]) for m in ("full", "context", "word", "choice")}
    correct["choice"] = np.zeros(len(items), bool)
    return items, correct


def test_wordnetqa_bootstrap_resamples_whole_concepts(tmp_path):
    items, correct = concept_records()
    full = correct["full"].astype(float)
    mc = run_bias.Loaded("concepts", "concepts", "wordnetqa", SimpleNamespace(items=items, manifest={}))
    cfg = run_bias.BiasConfig.asked(n_boot=2000, controls=False)
    res = run_bias.write_bias("fake", [mc], tmp_path, OverlapScorer(), cfg, log=lambda m: None, progress=False,
                              evaluate_mc=table_evaluate_mc(correct))
    d = res["datasets"][0]
    assert d["all"]["n_units"] == 40 and d["resampling_unit"].startswith("concept (synset)")

    def width(ci):
        return ci[1] - ci[0]

    by_concept = width(d["all"]["ablations"]["full"]["ci"])
    by_item = width(bias.bootstrap_accuracy(full, None, n_boot=2000)["ci"])
    by_cluster = width(bias.bootstrap_accuracy(full, [it["cluster"] for it in items], n_boot=2000)["ci"])
    assert by_concept > 2.5 * by_item and by_concept > 1.6 * by_cluster, (by_concept, by_cluster, by_item)
    # the unit is stated in results.json and in report.md
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["bootstrap"]["unit"]["wordnetqa"].startswith("concept (synset)")
    md = (tmp_path / "report.md").read_text()
    assert "Bootstrap resampling unit: concept (synset)" in md and "resampling wordnetqa by concept (synset)" in md
    assert "Bias_C leaves out synonymy" in md and "Bias_W leaves out synonymy" in md


def test_compare_pairs_and_resamples_wordnetqa_concepts(monkeypatch):
    import probegen.wordnetqa.evaluate as wev
    from probegen.diagnostics import compare as cmp

    items, correct = concept_records()
    monkeypatch.setattr(wev, "evaluate_mc", lambda data, scorer, *a, **kw: table_evaluate_mc(correct)(data, scorer))
    units = tasks.get("wordnetqa").unit_correctness(SimpleNamespace(items=items, manifest={}), OverlapScorer(), 0,
                                                    False)
    assert len(units) == 40 and all(n == 12 for _, n in units.values())
    res = cmp.paired_bootstrap(units, units, n_boot=2000)
    by_item = bias.bootstrap_accuracy(correct["full"].astype(float), None, n_boot=2000)["ci"]
    assert res["a"]["ci"][1] - res["a"]["ci"][0] > 2.5 * (by_item[1] - by_item[0])
    text = cmp.render({"a": {"label": "twin", "path": "a", "chance": 0.2}, "b": {"label": "adv", "path": "b", "chance": 0.2},
                       "kind": "wordnetqa", "resampling_unit": tasks.get("wordnetqa").resampling_unit,
                       "models": [{"model": "m", "used_in_construction": False, **res}]}, "c.png")
    assert "resampled whole (wordnetqa: concept (synset)" in text


# ---- end to end -----------------------------------------------------------------------------------
def test_end_to_end_writes_plot_report_and_results(tmp_path):
    easy = run_bias.Loaded("syn-easy", "syn-easy", "coda21", synthetic_coda21(n_groups=40, word_in_def=0.8, seed=1))
    hard = run_bias.Loaded("syn-hard", "syn-hard", "coda21", synthetic_coda21(n_groups=40, word_in_def=0.1, cue=0.6, seed=2))
    mc = run_bias.Loaded("syn-mc", "syn-mc", "wordnetqa", SimpleNamespace(items=synthetic_mc(), manifest={}))
    cfg = run_bias.BiasConfig.asked(n_boot=200)
    out = tmp_path / "bias"
    res = run_bias.write_bias("fake", [easy, hard, mc], out, OverlapScorer(), cfg, log=lambda m: None,
                              progress=False, evaluate_mc=fake_evaluate_mc)
    png = (out / "bias_plane.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    md = (out / "report.md").read_text()
    assert "![bias plane](bias_plane.png)" in md
    for needle in ("## syn-easy", "## syn-mc", "Bias_C", "Bias_D", "Bias_Choice", "choice-only", "definition-order", "sense entropy"):
        assert needle in md
    saved = json.loads((out / "results.json").read_text())
    assert [d["name"] for d in saved["datasets"]] == ["syn-easy", "syn-hard", "syn-mc"]
    assert saved["datasets"][0]["all"]["ratios"]["bias_w"]["value"] > saved["datasets"][1]["all"]["ratios"]["bias_w"]["value"]
    assert (out / "syn-easy" / "definition.jsonl").exists() and (out / "syn-mc" / "choice.jsonl").exists()
    assert res["eval"]["nonce"] == "bkatuhla"


def test_undefined_dataset_is_listed_not_plotted(tmp_path):
    # contexts carry no cue and definitions never contain the word: full input ~ chance
    flat = run_bias.Loaded("flat", "flat", "coda21", synthetic_coda21(n_groups=30, word_in_def=0.0, cue=0.0))
    res = run_bias.write_bias("fake", [flat], tmp_path, OverlapScorer(), run_bias.BiasConfig.asked(n_boot=200, controls=False),
                              log=lambda m: None, progress=False)
    assert res["datasets"][0]["all"]["ratios"]["bias_c"]["value"] is None
    assert "undefined" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "bias_plane.png").exists()


def test_command_runs_on_a_dataset_directory(tmp_path, monkeypatch):
    import probegen.run.evaluation
    from probegen.commands.bias import bias as bias_cmd

    write(synthetic_coda21(n_groups=20), tmp_path / "ds")
    scorer = OverlapScorer()
    import probegen.methods.base

    # the cloze method's scorer (every command loads it through the method registry)
    monkeypatch.setattr(probegen.methods.base.Method, "load_scorer", lambda self, runner, req: scorer)
    monkeypatch.setattr(probegen.run.evaluation, "resolve_models", lambda models, kind=None, api=None, runner=None: {m: "causal" for m in models})
    r = CliRunner().invoke(bias_cmd, ["--model", "fake", "--dataset", str(tmp_path / "ds"), "--out", str(tmp_path / "o"),
                                      "--bootstrap", "100", "--no-controls"])
    assert r.exit_code == 0, r.output
    assert "Bias_C" in r.stdout and (tmp_path / "o" / "report.md").exists()
    calls_first = scorer.calls
    # every ablation of a dataset goes into one request table: one scorer call per run
    assert calls_first == 1
    calls = scorer.calls
    CliRunner().invoke(bias_cmd, ["--model", "fake", "--dataset", str(tmp_path / "ds"), "--out", str(tmp_path / "o"), "--no-controls"])
    assert scorer.calls == calls + 1


def test_command_errors_are_probegen_errors(tmp_path):
    from probegen.commands.bias import bias as bias_cmd
    from probegen.errors import ProbegenError

    r = CliRunner().invoke(bias_cmd, ["--model", "fake", "--dataset", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert r.exit_code != 0 and isinstance(r.exception, ProbegenError) and "does not exist" in str(r.exception)


def test_registered_command_prints_one_line_errors(tmp_path):
    from probegen.commands.bias import bias as bias_cmd
    from probegen.commands.cli import cli

    if "bias" not in cli.commands:
        cli.add_command(bias_cmd)
    r = CliRunner().invoke(cli, ["bias", "--model", "fake", "--dataset", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert r.exit_code == 1 and len(lines) == 1 and lines[0].startswith("probegen: error:") and "does not exist" in lines[0]
    r = CliRunner().invoke(cli, ["bias", "--help"])
    assert r.exit_code == 0 and "Examples" in r.stdout and "--bootstrap" in r.stdout
