"""A kind is one folder for bias (issue 38 part 2): its bias tables, subsets, controls and entropy inputs
come from its own package, and diagnostics keeps only engines generic to a unit shape.

- the test plugin kind (``tests/kind_plugin/synpick``, installed through an entry point; no probegen
  file names it) gets its lexicographer-file subsets, the choice-only control over its own choice
  views and its entropies in ``probegen bias``'s results.json and report.md;
- the built-in kinds' tables come from their packages (``probegen.coda21.bias``,
  ``probegen.wordnetqa.bias``) through :meth:`probegen.tasks.Task.bias_inputs`.
"""

from __future__ import annotations

import json
from collections import Counter

import kindplugin
import numpy as np
import pytest

from probegen import tasks


@pytest.fixture(scope="module")
def plugin_bias(tmp_path_factory, graph):
    root = tmp_path_factory.mktemp("synpick")
    plugin = kindplugin.install(root / "site")
    data = kindplugin.write_dataset(graph, root / "ds")
    out = root / "out"
    res = kindplugin.run(["bias", "--model", "glove-50d", "--dataset", data, "--bootstrap", 50, "--out", out],
                         plugin, cwd=root)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = [json.loads(line) for line in (data / "pairs.jsonl").read_text().splitlines()]
    return json.loads((out / "results.json").read_text()), (out / "report.md").read_text(), rows


def test_the_plugin_kind_gets_its_own_subsets_control_and_entropy(plugin_bias):
    results, report, rows = plugin_bias
    (entry,) = results["datasets"]
    assert entry["kind"] == kindplugin.KIND and entry["n_items"] == len(rows)
    # subsets: the lexicographer files with at least 5 items (the plugin's rule), each over its own items
    lexfiles = Counter(r["lexfile"] for r in rows)
    wanted = {f for f, n in lexfiles.items() if n >= 5}
    assert wanted and set(entry["subsets"]) == wanted
    for f in wanted:
        assert entry["subsets"][f]["n_units"] == lexfiles[f]
    # the choice-only control, run by diagnostics' choice engine on the plugin's choice views
    (control,) = entry["controls"]
    assert control["control"] == "choice-only" and control["applies_to"] == kindplugin.KIND
    assert control["n_items"] == len(rows) and control["chance"] == pytest.approx(0.25)
    # entropies over the plugin's (word, sense) and (word, gold synonym) pairs
    assert entry["entropy"]["sense"]["n_items"] == len(rows) and entry["entropy"]["label"]["n_items"] == len(rows)
    assert entry["entropy"]["sense_note"].startswith("a word's sense")
    for f in wanted:
        assert f"| {f} | {lexfiles[f]} |" in report
    assert f"| choice-only | {kindplugin.KIND} |" in report
    assert f"{len(rows)} words / {len(rows)} items" in report
    assert "lexicographer files with at least 5 items" in report


@pytest.fixture(scope="module")
def small_mc():
    """A real WordNetQA set: two probe types over a seeded sample of 60 noun concepts."""
    from probegen.wordnetqa.config import WordNetQAConfig
    from probegen.wordnetqa.dataset import build

    return build(WordNetQAConfig(max_concepts=60, probes=("definitions", "synonymy"), seed=3), progress=False,
                 log=lambda m: None)


def test_coda21_tables_come_from_the_kind_package(clean_hard_nouns):
    from probegen.coda21.bias import table

    task = tasks.get("coda21")
    groups = list(clean_hard_nouns.groups)
    rng = np.random.default_rng(0)
    records = {m: [{"id": g.id, "pos": g.pos, "k": g.k, "correct": float(rng.random())} for g in groups]
               for m in ("full", "context", "word", "definition")}
    got = task.bias_inputs(clean_hard_nouns, records)
    want = table(records)
    whole = got.table(None)
    assert whole.units == [g.id for g in groups] == want.units
    for m in (*records, "label"):
        assert np.array_equal(whole.correct[m], want.correct[m])
    assert np.allclose(whole.correct["label"], [1 / g.k for g in groups])
    assert got.unit == "group" and got.n_items == sum(g.k for g in groups)
    assert [v.id for v in got.alignment_views] == [g.id for g in groups]
    assert got.alignment_views[0].definitions == tuple(it.definition for it in groups[0].items)
    assert not got.choice_views and not got.subsets  # nouns only: no POS subsets


def test_wordnetqa_tables_come_from_the_kind_package(small_mc):
    from probegen.wordnetqa.bias import table

    task = tasks.get("wordnetqa")
    items = list(small_mc.items)
    rng = np.random.default_rng(1)
    records = {m: [{"id": it.id, "probe": it.probe, "synset": it.synset, "gold": [it.answer],
                    "choices": list(it.choices), "correct": bool(rng.random() < 0.5)} for it in items]
               for m in ("full", "context", "word", "choice")}
    got = task.bias_inputs(small_mc, records)
    whole, want = got.table(None), table(records, items)
    assert whole.units == want.units == list(dict.fromkeys(it.synset for it in items))
    assert np.array_equal(whole.label_counts, want.label_counts)
    assert got.strata == tuple(sorted({it.probe for it in items}))
    assert [v.id for v in got.choice_views] == [it.id for it in items]
