"""CoDA21 generation on the real WordNet and SemCor: group constraints, determinism, file IO."""

from __future__ import annotations

import json

import numpy as np
import pytest

from probegen.coda21 import dataset as D
from probegen.coda21.config import Coda21Config
from probegen.coda21.grouping import best_cluster
from probegen.coda21.items import Context, Group, Item
from probegen.errors import DatasetError

pytestmark = pytest.mark.real


def test_groups_satisfy_the_papers_constraints(clean_hard_nouns, graph):
    ds = clean_hard_nouns
    from probegen.coda21.vectors import definition_vectors

    members = [it.synset for g in ds.groups for it in g.items]
    assert len(members) == len(set(members)), "a synset is used in more than one group"
    vec = definition_vectors(graph, sorted(set(members)), "minilm-l6", "test-constraints")
    for g in ds.groups:
        assert 5 <= g.k <= 10
        assert g.relation == "parent"
        syn = [it.synset for it in g.items]
        for s in syn:
            assert g.ancestor in graph.parents(s), f"{s} is not a child of {g.ancestor}"
            assert graph.pos(s) == "n"
        v = vec(syn)
        sim = v @ v.T
        np.fill_diagonal(sim, -1)
        assert sim.max() <= 0.8 + 1e-6
        for it in g.items:
            assert it.definition == graph.definition(it.synset)
            assert it.context.text[slice(*it.context.char_span)] == it.context.word


def test_counts_are_near_table1(clean_hard_nouns):
    c = D.counts(clean_hard_nouns.groups)["n"]
    # the paper: 106 groups, 740 synsets (different embedder; see README)
    assert 0.85 <= c["groups"] / 106 <= 1.15
    assert 0.85 <= c["unique_synsets"] / 740 <= 1.15


def test_easy_groups_are_grandchildren(graph):
    ds = D.build(Coda21Config(easy=True, clean=True, pos=("v",), context_scorer="first"), progress=False, log=lambda m: None)
    assert ds.groups
    for g in ds.groups:
        assert g.relation == "grandparent"
        for it in g.items:
            assert g.ancestor in {gp for p in graph.parents(it.synset) for gp in graph.parents(p)}


def test_same_seed_gives_byte_identical_files(clean_hard_nouns, tmp_path):
    a = D.write(clean_hard_nouns, tmp_path / "a")
    again = D.build(Coda21Config(easy=False, clean=True, pos=("n",), context_scorer="first"), progress=False, log=lambda m: None)
    b = D.write(again, tmp_path / "b")
    for name in (D.GROUPS_FILE, D.MANIFEST_FILE):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    man = json.loads((a / D.MANIFEST_FILE).read_text())
    for key in ("probegen_version", "canary", "seed", "config", "data", "counts"):
        assert key in man
    assert len(man["data"]["wordnet"]["sha256"]) == 64 and len(man["data"]["semcor"]["sha256"]) == 64


def test_gold_is_not_recoverable_from_item_order(clean_hard_nouns):
    # items are shuffled: the alphabetical order of synsets must not be the stored order
    ordered = sum(
        [it.synset for it in g.items] == sorted(it.synset for it in g.items) for g in clean_hard_nouns.groups
    )
    assert ordered < 0.1 * len(clean_hard_nouns.groups)


def test_export_import_round_trip(clean_hard_nouns, tmp_path):
    path = tmp_path / "coda21.json"
    exported = D.export_coda21_json(clean_hard_nouns)
    assert set(exported) == {"canary", "n", "v"}
    assert {"common_ancestor_info", "candidates"} <= set(exported["n"][0])
    path.write_text(json.dumps(exported))
    back = D.load(path)
    assert len(back.groups) == len(clean_hard_nouns.groups)
    for g1, g2 in zip(clean_hard_nouns.groups, back.groups):
        assert [i.synset for i in g1.items] == [i.synset for i in g2.items]
        assert [i.context.text for i in g1.items] == [i.context.text for i in g2.items]
        assert g1.id == g2.id  # ids seed column order and tie breaking: same ids, same numbers
        for i1, i2 in zip(g1.items, g2.items):
            assert i2.context.char_span == i1.context.char_span
    # the same model gives the same accuracy on the exported file
    from probegen.coda21.evaluate import EvalConfig, evaluate
    from probegen.models import load_scorer

    glove = load_scorer("glove-50d")
    a, b = (evaluate(ds, glove, EvalConfig())["metrics"] for ds in (clean_hard_nouns, back))
    assert a == b


def test_import_without_spans_finds_the_whole_word(tmp_path):
    raw = {"n": [{"common_ancestor_info": {"relation": "parent", "ancestor_name": "x.n.01"},
                  "candidates": [{"synset_name": f"s{i}.n.01", "definition": f"d{i}", "contexts": ["The mice saw ice ."],
                                  "words_in_contexts": ["ice"]} for i in range(5)]}]}
    (tmp_path / "f.json").write_text(json.dumps(raw))
    g = D.load(tmp_path / "f.json").groups[0]
    assert all(it.context.char_span == (13, 16) for it in g.items)


def test_best_cluster_respects_the_similarity_cap():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(12, 8))
    v[1] = v[0] + 1e-3  # a near-duplicate pair can't be in one group
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    picked = best_cluster(v, 5, 10, 0.8)
    assert picked is not None and 5 <= len(picked) <= 10
    assert not {0, 1} <= set(picked)
    sim = v[picked] @ v[picked].T
    np.fill_diagonal(sim, -1)
    assert sim.max() <= 0.8


def _group(k: int) -> Group:
    items = tuple(Item(f"s{i}.n.01", f"s{i}", f"def {i}", Context(f"a word{i} here", (2, 2 + len(f"word{i}")))) for i in range(k))
    return Group("g1", "n", "a.n.01", "parent", items)


@pytest.mark.parametrize("k", [0, 1, 31])
def test_empty_or_oversized_groups_are_rejected(tmp_path, k):
    bad = D.Coda21Dataset([_group(k)] if k else [], {})
    with pytest.raises(DatasetError):
        D.check(bad)


def test_malformed_files_give_dataset_errors(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(DatasetError, match="not valid JSON"):
        D.load(tmp_path / "x.json")
    (tmp_path / "y.json").write_text(json.dumps({"n": [{"candidates": []}]}))
    with pytest.raises(DatasetError):
        D.load(tmp_path / "y.json")
    with pytest.raises(DatasetError, match="does not exist"):
        D.load(tmp_path / "missing")
