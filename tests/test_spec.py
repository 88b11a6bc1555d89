"""Probe specs: field-by-field validation, byte-identical built-ins, and the new specs on real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from probegen.errors import ProbegenError
from probegen.runner import Runner
from probegen.spec.build import build_spec, config_for
from probegen.spec.schema import builtin_specs, load_spec, parse_spec

# the library makes no runner of its own: a spec that loads a model (its context scorer) gets this one
QUIET = {"progress": False, "log": lambda m: None, "runner": Runner(log=lambda m: None)}


# ---- validation (no data) ---------------------------------------------------------------------------
def _spec_file(tmp_path: Path, body: dict | str, name: str = "probe.yaml") -> Path:
    p = tmp_path / name
    p.write_text(body if isinstance(body, str) else yaml.safe_dump(body), encoding="utf-8")
    return p


ALIGN = {"name": "x", "shape": "alignment"}
MC_NEW = {
    "name": "ent", "shape": "multiple_choice", "concepts": {"pos": ["verb"]},
    "relation": {"name": "entailment", "hops": [1, 2]}, "multiple_choice": {"probe": "entailment"},
    "templates": {"stems": ['In "{sentence}", "{word}" entails'], "word_stem": 'The verb "{word}" entails'},
}


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({**ALIGN, "colour": "red"}, "colour", "unknown key"),
        ({**ALIGN, "concepts": {"pos": ["noun"], "size": 3}}, "concepts.size", "unknown key"),
        ({**ALIGN, "concepts": {"pos": ["adverb"]}}, "concepts.pos", "unknown part of speech 'adverb'"),
        ({**ALIGN, "concepts": {"pos": 3}}, "concepts.pos", "expected a string, got int"),
        ({**ALIGN, "concepts": {"depth": "deep"}}, "concepts.depth", "expected an integer or a list"),
        ({**ALIGN, "concepts": {"depth": [9, 2]}}, "concepts.depth", "empty range"),
        ({**ALIGN, "concepts": {"lexfiles": ["noun.dragons"]}}, "concepts.lexfiles", "unknown lexicographer file"),
        ({**ALIGN, "concepts": {"min_semcor": 0}}, "concepts.min_semcor", "at least 1"),
        ({**ALIGN, "shape": "cloze"}, "shape", "unknown item shape 'cloze'"),
        ({"shape": "alignment"}, "name", "missing"),
        ({**ALIGN, "relation": {"name": "friendship"}}, "relation.name", "unknown relation 'friendship'"),
        ({**ALIGN, "relation": {"hops": 7}}, "relation.hops", "1..4 hops"),
        ({**ALIGN, "relation": {"hops": [1, 3]}}, "relation.hops", "1..4 hops"),
        ({**ALIGN, "alignment": {"k_min": 8, "k_max": 6}}, "alignment.k_min", "larger than"),
        ({**ALIGN, "alignment": {"k_min": "five"}}, "alignment.k_min", "expected an integer"),
        ({**ALIGN, "alignment": {"max_similarity": 2}}, "alignment.max_similarity", "out of bounds"),
        ({**ALIGN, "contexts": {"source": "wordnet"}}, "contexts.source", "takes semcor or examples"),
        ({**ALIGN, "multiple_choice": {}}, "multiple_choice", "belongs to shape multiple_choice"),
        ({**MC_NEW, "relation": {"name": "entailment", "hops": [0, 2]}}, "relation.hops", "hops away"),
        ({**MC_NEW, "relation": {"name": "entailment", "hops": [1, 11]}}, "relation.hops", "hops away"),
        ({**MC_NEW, "templates": {"word_stem": "x {word}"}}, "templates.stems", "at least one question stem"),
        ({**MC_NEW, "templates": {**MC_NEW["templates"], "choice": "{lemma} {colour}"}}, "templates.choice", "unknown placeholder {colour}"),
        ({**MC_NEW, "multiple_choice": {"probe": "entailment", "distractors": ["random", "twin"]}},
         "multiple_choice.distractors", "unknown distractor type 'twin'"),
        ({"name": "h", "shape": "multiple_choice", "multiple_choice": {"probe": "hypernymy"}, "relation": {"name": "hyponym"}},
         "relation.name", "follows hypernym"),
        ({"name": "d", "shape": "multiple_choice", "templates": {"stems": ["x"]}}, "templates", "built in"),
        ({"name": "w", "shape": "wic_pair", "concepts": {"lexfiles": ["verb.body"]}}, "concepts", "part of speech only"),
    ],
)
def test_each_bad_field_is_one_error_naming_file_and_field(tmp_path, body, field, words):
    path = _spec_file(tmp_path, body)
    with pytest.raises(ProbegenError) as e:
        load_spec(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: {field}:"), msg
    assert words in msg and "\n" not in msg


def test_file_errors_are_one_line(tmp_path):
    with pytest.raises(ProbegenError, match="not found: not a file, nor a built-in spec"):
        load_spec(tmp_path / "missing.yaml")
    bad = _spec_file(tmp_path, "name: x\nshape: [alignment\n")
    with pytest.raises(ProbegenError, match=r"not valid YAML .* at line \d"):
        load_spec(bad)
    with pytest.raises(ProbegenError, match="not valid JSON"):
        load_spec(_spec_file(tmp_path, "{'name': 1", "probe.json"))
    with pytest.raises(ProbegenError, match="expected KEY=VALUE"):
        load_spec("coda21-clean-hard", ["contexts.scorer"])
    with pytest.raises(ProbegenError, match="contexts.scorerr: unknown key"):
        load_spec("coda21-clean-hard", ["contexts.scorerr=first"])


def test_overrides_and_canonical_json():
    a = load_spec("coda21-clean-hard", ["contexts.scorer=first", "concepts.pos=[verb]"])
    assert a.contexts.scorer == "first" and a.concepts.pos == ("verb",)
    b = parse_spec(json.loads(a.canonical()), "elsewhere.json")
    assert b == a and b.sha256 == a.sha256  # the canonical JSON is the spec, whatever file it came from
    assert load_spec("coda21-clean-hard").sha256 != a.sha256


def test_every_builtin_spec_checks_and_maps_onto_a_generator():
    specs = builtin_specs()
    assert {"coda21-clean-hard", "coda21-clean-easy", "coda21-noisy-hard", "coda21-noisy-easy", "wordnetqa-definitions",
            "wordnetqa-hypernymy", "wordnetqa-hyponymy", "wordnetqa-synonymy", "coda21-3hops", "coda21-part-meronyms",
            "verb-entailment-mc", "wic-semcor"} <= set(specs)
    for name, path in specs.items():
        s = load_spec(path)
        assert s.name == name
        cfg = config_for(s)
        if name.startswith("coda21-") and name.split("-", 1)[1] in ("clean-hard", "clean-easy", "noisy-hard", "noisy-easy"):
            from probegen.coda21.config import Coda21Config

            v = name.split("-", 1)[1]
            assert cfg == Coda21Config(easy=v.endswith("easy"), clean=v.startswith("clean"))  # = make coda21's defaults
        if name.startswith("wordnetqa-"):
            from probegen.wordnetqa.config import WordNetQAConfig

            assert cfg == WordNetQAConfig(probes=(name.split("-")[1],))  # = make wordnetqa --probe <p>'s defaults
        if name == "wic-semcor":
            from probegen.wordincontext.wic import WicConfig

            assert cfg == WicConfig()  # = make wic's defaults


def test_cli_make_spec_check_list_and_errors(tmp_path):
    from probegen.commands.cli import cli

    r = CliRunner().invoke(cli, ["make", "spec", "--list"])
    assert r.exit_code == 0 and "verb-entailment-mc" in r.output and "multiple_choice" in r.output
    r = CliRunner().invoke(cli, ["make", "spec", "coda21-3hops", "--check", "--seed", "3"])
    assert r.exit_code == 0 and json.loads(r.stdout)["seed"] == 3
    bad = _spec_file(tmp_path, {**ALIGN, "relation": {"name": "hyponym", "hops": 9}})
    r = CliRunner().invoke(cli, ["make", "spec", str(bad)])
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"probegen: error: {bad}: relation.hops: alignment members sit 1..4 hops from the shared synset, got 9"]
    r = CliRunner().invoke(cli, ["make", "spec", "--help"])
    assert r.exit_code == 0 and "Examples:" in r.output and "--set" in r.output


# ---- real data: byte identity of the built-ins -------------------------------------------------------
def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.mark.real
def test_coda21_builtin_spec_writes_what_make_coda21_writes(tmp_path):
    from probegen.commands.cli import cli

    run = CliRunner().invoke
    a = run(cli, ["make", "coda21", "--pos", "verb", "--context-scorer", "first", "--seed", "2", "--out", str(tmp_path / "a")])
    b = run(cli, ["make", "spec", "coda21-clean-hard", "--set", "concepts.pos=[verb]", "--set", "contexts.scorer=first",
                  "--seed", "2", "--out", str(tmp_path / "b")])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    fa, fb = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert fa["groups.jsonl"] == fb["groups.jsonl"] and len(fa["groups.jsonl"]) > 1000
    ma, mb = json.loads(fa["manifest.json"]), json.loads(fb["manifest.json"])
    spec = mb.pop("spec")  # the one addition: the spec itself
    assert ma == mb
    assert spec["name"] == "coda21-clean-hard" and spec["spec"]["contexts"]["scorer"] == "first"
    assert spec["sha256"] == load_spec("coda21-clean-hard", ["concepts.pos=[verb]", "contexts.scorer=first", "seed=2"]).sha256


@pytest.mark.real
def test_wordnetqa_builtin_spec_writes_what_make_wordnetqa_writes(tmp_path):
    from probegen.commands.cli import cli

    run = CliRunner().invoke
    a = run(cli, ["make", "wordnetqa", "--probe", "hypernymy", "--pos", "verb", "--limit", "200", "--out", str(tmp_path / "a")])
    b = run(cli, ["make", "spec", "wordnetqa-hypernymy", "--set", "concepts.pos=[verb]", "--set",
                  "multiple_choice.max_concepts=200", "--out", str(tmp_path / "b")])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    fa, fb = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert fa["items.jsonl"] == fb["items.jsonl"] and len(fa["items.jsonl"]) > 1000
    ma, mb = json.loads(fa["manifest.json"]), json.loads(fb["manifest.json"])
    assert mb.pop("spec")["name"] == "wordnetqa-hypernymy"
    assert ma == mb


@pytest.mark.real
def test_wic_builtin_spec_writes_what_make_wic_writes(tmp_path):
    from probegen.commands.cli import cli

    run = CliRunner().invoke
    a = run(cli, ["make", "wic", "--pos", "verb", "--max-pairs", "200", "--out", str(tmp_path / "a")])
    b = run(cli, ["make", "spec", "wic-semcor", "--set", "concepts.pos=[verb]", "--set", "wic_pair.max_pairs=200",
                  "--out", str(tmp_path / "b")])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    fa, fb = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert fa["items.jsonl"] == fb["items.jsonl"]
    ma, mb = json.loads(fa["manifest.json"]), json.loads(fb["manifest.json"])
    assert mb.pop("spec")["name"] == "wic-semcor" and ma == mb


# ---- real data: the new specs ------------------------------------------------------------------------
@pytest.mark.real
def test_meronymy_groups_share_their_holonym(graph):
    s = load_spec("coda21-part-meronyms", ["contexts.scorer=first"])
    ds = build_spec(s, **QUIET).dataset
    assert len(ds.groups) >= 10
    for g in ds.groups:
        assert g.relation == "part_holonym" and g.id.startswith("part-meronyms-n-")
        parts = set(graph.related(g.ancestor, "part_meronym"))
        assert 4 <= g.k <= 10
        for it in g.items:
            assert it.synset in parts, f"{it.synset} is not a part of {g.ancestor}"
            assert g.ancestor in graph.related(it.synset, "part_holonym")
    assert ds.manifest["spec"]["sha256"] == s.sha256


@pytest.mark.real
def test_three_hop_groups_are_great_grandchildren(graph):
    ds = build_spec(load_spec("coda21-3hops", ["contexts.scorer=first", "concepts.pos=[verb]"]), **QUIET).dataset
    assert ds.groups
    for g in ds.groups:
        assert g.relation == "great-grandparent"
        below = {g.ancestor}
        for _ in range(3):
            below = {c for n in below for c in graph.children(n)}
        assert {it.synset for it in g.items} <= below


@pytest.mark.real
def test_verb_entailment_items_are_sound(graph, tmp_path):
    from probegen.wordnetqa import dataset as mcd
    from probegen.wordnetqa.distractors import Relations

    built = build_spec(load_spec("verb-entailment-mc"), **QUIET)
    assert built.kind == "wordnetqa"
    built.write(tmp_path / "ent")
    ds = mcd.load(tmp_path / "ent")  # its manifest brings the spec's probe templates back (as in a fresh process)
    assert len(ds.items) > 300 and {it.probe for it in ds.items} == {"entailment"}
    rel = Relations(graph, relation="entailment")
    for it in ds.items:
        reach1 = set(graph.related(it.synset, "entailment"))
        reach2 = reach1 | {y for x in reach1 for y in graph.related(x, "entailment")}
        assert it.gold_synset in (reach1 if it.hops == 1 else reach2)
        assert len(it.choices) == 5 and len(set(it.choices)) == 5
        for m in it.choice_meta:
            if m.type != "gold":
                assert m.synset not in rel.inherited(it.synset), f"{it.id}: distractor {m.synset} is entailed"
        q = ds.templates.query(it, "pattern", "full", "bkatuhla")  # what eval scores
        assert it.question in q
        assert ds.templates.query(it, "pattern", "word", "bkatuhla").startswith("The verb")  # bias's word-only query
    assert ds.manifest["probe_templates"]["entailment"]["templates"][0]["id"] == "entailment-1"


@pytest.mark.real
def test_concept_filters_hold_on_every_target(graph):
    from probegen.data import locate_semcor
    from probegen.lexicon.sources import open_resource
    from probegen.semcor import context_index

    s = parse_spec({"name": "body-verbs", "shape": "multiple_choice",
                    "concepts": {"pos": ["verb"], "lexfiles": ["verb.body", "verb.motion"], "depth": [1, None], "min_semcor": 3},
                    "multiple_choice": {"probe": "definitions", "distractors": ["random"]}})
    ds = build_spec(s, **QUIET).dataset
    index = context_index(locate_semcor(None), open_resource(None), open_resource(None))
    concepts = {it.synset for it in ds.items}
    assert len(concepts) > 100
    for c in concepts:
        assert graph.g.nodes[c]["lexname"] in ("verb.body", "verb.motion") and graph.depth(c) >= 1
        assert len(index.get(c, ())) >= 3
    a = load_spec("coda21-clean-hard", ["concepts.pos=[verb]", "contexts.scorer=first", "concepts.lexfiles=[verb.motion]"])
    groups = build_spec(a, **QUIET).dataset.groups
    assert groups and all(graph.g.nodes[it.synset]["lexname"] == "verb.motion" for g in groups for it in g.items)
    assert all(g.id.startswith("clean-hard-v-") for g in groups)


def test_nonce_word_must_be_a_made_up_word(tmp_path):
    assert parse_spec({**ALIGN, "nonce": "wugaflor"}).nonce == "wugaflor"
    with pytest.raises(ProbegenError, match=r"nonce: a made-up word is 2-30 ASCII letters"):
        load_spec(str(_spec_file(tmp_path, {**ALIGN, "nonce": "two words"})))


@pytest.mark.real
def test_a_specs_nonce_word_reaches_the_manifest_and_the_export(tmp_path):
    from probegen.commands.cli import cli

    run = CliRunner().invoke
    r = run(cli, ["make", "spec", "coda21-clean-hard", "--set", "concepts.pos=[verb]", "--set", "contexts.scorer=first",
                  "--set", "nonce=wugaflor", "--out", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "d" / "manifest.json").read_text())["nonce"] == "wugaflor"
    r = run(cli, ["export", str(tmp_path / "d"), "--format", "lm-eval", "--out", str(tmp_path / "task")])
    assert r.exit_code == 0, r.output
    docs = "".join(p.read_text() for p in (tmp_path / "task").glob("*.jsonl"))
    assert "wugaflor" in docs and "bkatuhla" not in docs


@pytest.mark.real
def test_max_concepts_counts_concepts_that_pass_the_specs_filters():
    """verb-entailment-mc with max_concepts 60: 60 verbs that entail something, not 60 verbs of which
    a handful do (issue 18: 120 sampled verbs gave 6 questions)."""
    spec = load_spec("verb-entailment-mc")
    raw = {**spec.to_dict(), "contexts": {"source": "wordnet", "max": 3}}
    raw["multiple_choice"] = {**raw["multiple_choice"], "max_concepts": 60}
    ds = build_spec(parse_spec(raw), **QUIET).dataset
    c = ds.manifest["counts"]["entailment"]
    assert c["skipped"]["concepts_without_question"] == 0
    assert c["synsets"] == 60 and c["unique_questions"] >= 60
