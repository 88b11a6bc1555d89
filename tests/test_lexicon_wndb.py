"""Any wordnet, WNDB half: WordNet 3.1 beside 3.0, SemCor through sense keys, --wordnet-source and
--contexts examples (real data)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from probegen.errors import ProbegenError
from probegen.lexicon.base import LexicalResource, SynsetRecord
from probegen.lexicon.sources import context_source, open_resource, parse_source

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def wn30():
    return open_resource(None)


@pytest.fixture(scope="module")
def wn31():
    return open_resource("pwn31")


@pytest.fixture(scope="module")
def graphs():
    from probegen.wordnet_graph import load_graph

    return load_graph(None), load_graph("pwn31")


def _sense_key_synsets(resource, graph) -> dict[str, str]:
    """Every sense key of index.sense -> graph node, through (data file, offset)."""
    node_at = {(d["pos"], d["offset"]): n for n, d in graph.g.nodes(data=True)}
    out = {}
    with open(Path(resource.reader.root.path) / "index.sense", encoding="utf-8") as fh:
        for line in fh:
            key, offset = line.split()[:2]
            pos = "nvara"[int(key.split("%")[1].split(":")[0]) - 1]  # satellites live in data.adj
            node = node_at.get((pos, int(offset)))
            if node:
                out[key] = node
    return out


def test_wordnet31_is_read_as_31(wn31):
    assert wn31.version == "3.1" and wn31.source == "pwn31" and wn31.reader.get_version() == "3.1"
    assert wn31.sha256 == "861310a2ba7e6a856f0fc959123ec3c587b4a9aa87b8009ecacab1d9dcb927ef"  # the archive's
    folder = Path(wn31.reader.root.path)
    assert (folder / "lexnames").is_file() and (folder / "verb.exc").is_file()  # added from 3.0
    assert wn31.base_forms("geese", "n") == {"goose"}  # 3.0's exception lists serve 3.1
    assert open_resource("pwn31") is wn31  # opened once per process
    assert wn31.describe()["label"] == "WordNet 3.1"


def test_graph_from_31_agrees_with_30(graphs, wn30, wn31):
    """Synsets mapped through shared sense keys agree on POS and lemmas, and hypernymy survives.

    Measured: 206,559 of 206,941 3.0 sense keys are in 3.1; 117,533 of 117,659 synsets map;
    POS agree 100%, lemma sets equal 99.6%, 88,887 of 88,986 mapped hypernym edges (99.9%) are
    3.1 hypernym edges.
    """
    g30, g31 = graphs
    assert len(g31.synsets("n")) == 82192 and len(g31.synsets("v")) == 13789  # the README's counts
    k30, k31 = _sense_key_synsets(wn30, g30), _sense_key_synsets(wn31, g31)
    assert len(k30) == 206941
    shared = k30.keys() & k31.keys()
    assert len(shared) / len(k30) > 0.995
    votes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for key in shared:
        votes[k30[key]][k31[key]] += 1
    m = {s: c.most_common(1)[0][0] for s, c in votes.items()}
    assert len(m) / g30.g.number_of_nodes() > 0.995
    assert all(g30.pos(s) == g31.pos(t) for s, t in m.items())
    same_lemmas = sum(set(g30.lemmas(s)) == set(g31.lemmas(t)) for s, t in m.items())
    assert same_lemmas / len(m) > 0.99
    edges = [(p, c) for p, c, d in g30.g.edges(data=True) if d["type"] == "hypernym" and p in m and c in m]
    kept = sum(g31.g.has_edge(m[p], m[c]) and g31.g.edges[m[p], m[c]]["type"] == "hypernym" for p, c in edges)
    assert len(edges) > 88000 and kept / len(edges) > 0.995
    # the resource's own sense-key index agrees with the offsets
    index = wn31.sense_key_index()
    sample = sorted(k31)[::500]
    assert all(index.get(k) == k31[k] for k in sample)
    assert index.get("dog%1:05:00::") == "dog.n.01" and index.get("no_such%1:05:00::") is None


def test_semcor_tags_map_to_31(wn30, wn31, graphs):
    """SemCor 3.0's tags reach 3.1 synsets through sense keys: 216,603 of 217,264 (99.7%)."""
    from probegen.data import locate_semcor
    from probegen.semcor import context_index, semcor_stats

    sc = locate_semcor()
    s30, s31 = semcor_stats(sc, wn30, wn30), semcor_stats(sc, wn31, wn31)
    assert s30["unresolved"] == 0
    assert s31["tagged"] + s31["unresolved"] == s30["tagged"]
    assert s31["tagged"] / s30["tagged"] > 0.995
    i30 = context_index(sc, wn30, wn30)
    jury30 = {(o.sent_id, o.span) for o in i30["jury.n.01"]}
    i31 = context_index(sc, wn31, wn31)
    assert set(i31) <= set(graphs[1].g)  # every tag is a 3.1 synset
    # the same tokens, tagged with the same sense, land on the 3.1 synset of that sense
    occ = {(o.sent_id, o.span) for o in i31["jury.n.01"]}
    assert occ and occ <= jury30


def test_make_coda21_from_wordnet31(tmp_path, wn31):
    from probegen.commands.cli import cli

    out = tmp_path / "v31"
    r = CliRunner().invoke(cli, ["make", "coda21", "--wordnet-source", "pwn31", "--pos", "verb",
                                 "--context-scorer", "first", "--embedder", "glove-50d", "--out", str(out)])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["data"]["wordnet"] == wn31.describe()
    groups = [json.loads(line) for line in (out / "groups.jsonl").read_text().splitlines()]
    assert len(groups) >= 3  # glove-50d (fast) forms few; minilm-l6 forms 115 (3.0: 113)
    from probegen.wordnet_graph import load_graph

    g31 = load_graph("pwn31")
    for g in groups:
        for it in g["items"]:
            assert it["synset"] in g31 and g31.pos(it["synset"]) == "v"
            assert it["definition"] == g31.definition(it["synset"])
            a, b = it["context"]["char_span"]
            assert "sent_id" in it["context"] and it["context"]["text"][a:b]


def test_make_coda21_from_examples(tmp_path, graphs):
    """--contexts examples: each context is one of the synset's own examples, target found by the
    morphology and hidden by span, no form of it left visible elsewhere."""
    from probegen.coda21.dataset import load
    from probegen.commands.cli import cli
    from probegen.leaks import default_morphology, leaks

    g30 = graphs[0]
    out = tmp_path / "ex"
    r = CliRunner().invoke(cli, ["make", "coda21", "--contexts", "examples", "--noisy", "--pos", "verb",
                                 "--context-scorer", "first", "--embedder", "glove-50d", "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = load(out)
    assert ds.manifest["contexts"] == "examples" and "semcor" not in ds.manifest["data"]
    assert ds.manifest["data"]["wordnet"] == {"version": "3.0", "sha256": open_resource(None).sha256}
    morph = default_morphology()
    assert len(ds.groups) > 20
    for g in ds.groups:
        for it in g.items:
            c = it.context
            assert c.source == "wordnet" and c.text == g30.examples(it.synset)[int(c.ref)]
            assert it.lemma in g30.lemmas(it.synset)
            assert not leaks(c.text, c.char_span, it.lemma, morph)


def test_examples_contexts_score_without_tokens():
    """An example context has no SemCor tokens: LM scoring splits it by characters."""
    from probegen.coda21.contexts import causal_queries
    from probegen.contexts import ExampleOccurrence

    c = ExampleOccurrence("bark.v.01", 0, "the dog barked loudly", (8, 14), "bark").context()
    assert causal_queries([c]) == (["the dog"], [[" barked"]])


class _Keyless(LexicalResource):
    source, label = "test", "a keyless wordnet"

    def synsets(self):
        yield SynsetRecord("x", "n", ("x",), "a thing")

    def base_forms(self, word, pos):
        return set()


def test_bad_sources_and_keyless_semcor_are_one_line_errors(tmp_path):
    from probegen.commands.cli import cli

    for bad in ("pwn99", str(tmp_path / "nowhere"), "wn:"):
        r = CliRunner().invoke(cli, ["make", "coda21", "--wordnet-source", bad, "--out", str(tmp_path / "o")])
        assert r.exit_code == 1, r.output
        assert len(r.output.strip().splitlines()) == 1 and "wordnet source" in r.output
    with pytest.raises(ProbegenError, match="pwn30, pwn31"):
        parse_source("pwn99")
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ProbegenError, match="not .xml"):
        parse_source(str(tmp_path / "x.txt"))
    assert parse_source(str(tmp_path)).kind == "wndb" and parse_source("wn:oewn:2024").kind == "lmf"
    with pytest.raises(ProbegenError) as e:
        open_resource(str(tmp_path))  # a folder, but no WNDB files
    assert "no data.noun" in str(e.value)
    res = _Keyless()
    assert context_source(res, None) == "examples"
    with pytest.raises(ProbegenError, match="--contexts examples") as e:
        context_source(res, "semcor")
    assert "\n" not in str(e.value)


def test_wordnet_source_on_every_make_command():
    from probegen.commands.cli import cli

    for cmd in ("coda21", "wordnetqa", "wic", "wsd", "spec"):
        r = CliRunner().invoke(cli, ["make", cmd, "--help"])
        assert r.exit_code == 0 and "--wordnet-source" in r.output, cmd
