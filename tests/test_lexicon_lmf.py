"""WN-LMF through the ``wn`` package: a hand-written Spanish mini-wordnet read into the graph, and
round trips (graph -> WN-LMF file -> wn -> graph) on the fixture and on real WordNet 3.0."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from probegen.errors import ProbegenError
from probegen.lexicon.base import RELATIONS, LexicalResource
from probegen.lexicon.lmf import open_lmf
from probegen.lexicon.lmf_write import synset_id, write_lmf
from probegen.wordnet_graph import WordNetGraph, build_graph

ES_MINI = Path(__file__).parent / "data" / "lmf" / "es-mini.xml"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test gets its own probegen cache, so private wn databases are built fresh."""
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def es():
    res = open_lmf(str(ES_MINI))
    return res, WordNetGraph(build_graph(res))


def S(name: str) -> str:
    return f"esmini-{name}"


def test_fixture_graph_nodes_and_hierarchy(es):
    res, g = es
    assert (res.label, res.version, res.language) == ("Mini WordNet español (probegen tests)", "1.0", "es")
    assert res.describe()["lexicon"] == "esmini:1.0" and len(res.sha256) == 64
    assert len(g.g) == 43
    assert {g.pos(n) for n in g.g} == {"n", "v", "a"}
    # depths: entidad 0 > objeto 1 > ser vivo 2 > animal 3 > mamífero 4 > perro 5; Rocinante is an instance
    assert [g.depth(S(n)) for n in ("entidad-n", "objeto-n", "ser_vivo-n", "animal-n", "mamifero-n", "perro-n")] == list(range(6))
    assert g.depth(S("Rocinante-n")) == 6 and g.related(S("Rocinante-n"), "instance_hypernym") == [S("caballo-n")]
    assert g.parents(S("caballo-n")) == [S("mamifero-n")] and g.children(S("caballo-n")) == []
    assert g.children(S("caballo-n"), instances=True) == [S("Rocinante-n")]
    assert g.related(S("galopar-v"), "hypernym") == [S("correr-v")] and g.depth(S("galopar-v")) == 2
    # member order, spaces -> _, non-ASCII kept
    assert g.lemmas(S("ser_vivo-n")) == ("ser_vivo", "organismo")
    assert g.lemmas(S("objeto-n")) == ("objeto_físico", "objeto")
    assert g.definition(S("arbol-n")) == "planta de tronco leñoso que se ramifica a cierta altura"
    assert g.examples(S("perro-n")) == ("El perro del vecino ladra toda la noche.",
                                        "Los perros esperaban a su dueño en la puerta.")
    assert g.g.nodes[S("perro-n")]["lexname"] == "noun.animal"
    # offset is the position in the file
    assert g.g.nodes[S("entidad-n")]["offset"] == 0 and g.g.nodes[S("roncar-v")]["offset"] == 42


def test_fixture_relations_are_taken_as_given(es):
    _, g = es
    assert g.related(S("coche-n"), "part_meronym") == [S("motor-n"), S("rueda-n")]
    # given one way only: no inverse is invented
    assert g.related(S("rueda-n"), "part_holonym") == [] and g.related(S("petalo-n"), "part_holonym") == []
    # given both ways
    assert g.related(S("arbol-n"), "part_meronym") == [S("hoja-n")]
    assert g.related(S("hoja-n"), "part_holonym") == [S("arbol-n")]
    assert g.related(S("jauria-n"), "member_meronym") == [S("perro-n")]
    assert g.related(S("perro-n"), "member_holonym") == [S("jauria-n")]
    assert g.related(S("roncar-v"), "entailment") == [S("dormir-v")]
    assert g.related(S("grande-a"), "antonym") == [S("pequeno-a")]
    assert g.g.nodes[S("rapido-a")]["antonyms"] == (("rápido", S("lento-a"), "lento"),)
    assert g.related(S("lento-a"), "antonym") == [S("rapido-a")]


def test_fixture_morphology_and_sense_keys(es):
    res, _ = es
    assert res.base_forms("perros", "n") == {"perro"}  # listed as a <Form>
    assert res.base_forms("perro", "n") == {"perro"}
    assert res.base_forms("Perros", "n") == {"perro"}
    assert res.base_forms("se_mueve", "v") == {"moverse"}
    assert res.base_forms("pequeñas", "a") == {"pequeño"}
    assert res.base_forms("perritos", "n") == set()  # not listed: no rule-based Spanish lemmatizer
    assert res.base_forms("perros", "v") == set()
    with pytest.raises(ProbegenError, match="no sense keys"):
        res.sense_key_index()


def test_private_database_is_cached_and_user_wn_data_untouched(tmp_path):
    import wn

    user = tmp_path / "user-wn"
    before = wn.config.database_path.parent
    wn.config.data_directory = user
    try:
        first = open_lmf(str(ES_MINI))
        built = first.db_dir / "wn.db"
        stamp = built.stat().st_mtime_ns
        second = open_lmf(str(ES_MINI))
        assert second.db_dir == first.db_dir and built.stat().st_mtime_ns == stamp
        assert first.db_dir.is_relative_to(tmp_path / "cache")
        assert len(list(second.synsets())) == 43
        assert wn.config.database_path.parent == user and not user.exists()
        assert [p.name for p in first.db_dir.parent.iterdir()] == [first.db_dir.name]  # no temp folder left
    finally:
        wn.config.data_directory = before


def test_bad_sources_are_one_line_errors(tmp_path):
    with pytest.raises(ProbegenError, match="not found"):
        open_lmf(str(tmp_path / "nope.xml"))
    bad = tmp_path / "bad.xml"
    bad.write_text('<?xml version="1.0"?><html></html>')
    with pytest.raises(ProbegenError) as e:
        open_lmf(str(bad))
    assert "not a WN-LMF file" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ProbegenError) as e:
        open_lmf("wn:nonesuch:9")
    assert "python -m wn download nonesuch:9" in str(e.value) and "\n" not in str(e.value)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _relabeled(g: WordNetGraph, lexicon_id: str):
    """``g``'s nodes and edges under :func:`synset_id`, offsets replaced by rank and text whitespace
    normalised: what a round trip gives."""
    m = {n: synset_id(n, lexicon_id) for n in g.g}
    rank = {n: i for i, n in enumerate(g.synsets())}
    nodes = {}
    for n, d in g.g.nodes(data=True):
        d = dict(d)
        d["relations"] = {k: tuple(sorted(m[t] for t in v)) for k, v in d["relations"].items()}
        d["antonyms"] = tuple(sorted((a, m[t], b) for a, t, b in d["antonyms"]))
        d["offset"] = rank[n]
        d["definition"] = _squash(d["definition"])
        d["examples"] = tuple(_squash(e) for e in d["examples"])
        nodes[m[n]] = d
    edges = {(m[u], m[v], t) for u, v, t in g.g.edges(data="type")}
    return nodes, edges


def _as_read(g: WordNetGraph):
    rank = {n: i for i, n in enumerate(g.synsets())}
    nodes = {n: {**d, "offset": rank[n]} for n, d in g.g.nodes(data=True)}
    return nodes, set(g.g.edges(data="type"))


def _round_trip(g: WordNetGraph, path: Path, lexicon_id: str) -> WordNetGraph:
    write_lmf(g, path, lexicon_id, "round trip", version="1")
    return WordNetGraph(build_graph(open_lmf(str(path))))


def test_fixture_round_trip(es, tmp_path):
    _, g = es
    back = _round_trip(g, tmp_path / "es.xml", "rt")
    assert _as_read(back) == _relabeled(g, "rt")


class _Subset(LexicalResource):
    """Records restricted to ``keep``, their pointers and antonyms cut to it (a closed sub-wordnet)."""

    def __init__(self, records):
        self.records = records

    def synsets(self):
        keep = {r.name for r in self.records}
        for r in self.records:
            yield dataclasses.replace(r, pointers=tuple(p for p in r.pointers if p[1] in keep),
                                      antonyms=tuple(a for a in r.antonyms if a[1] in keep))

    def base_forms(self, word, pos):
        return set()


@pytest.mark.real
def test_wordnet30_subgraph_round_trip(tmp_path):
    """Everything under vehicle.n.01 and its ancestors, plus whatever those point to, survives
    graph -> WN-LMF -> wn -> graph: every node attribute and every edge."""
    from probegen.data import load_wordnet
    from probegen.lexicon.wndb import record_from_nltk

    wn = load_wordnet()
    core = {wn.synset("water.n.01"), wn.synset("reductive.s.01")}  # substance meronyms; a double space
    for name in ("vehicle.n.01", "travel.v.01", "fast.a.01", "good.a.01", "kill.v.01", "snore.v.01"):
        root = wn.synset(name)
        core |= {root} | set(root.closure(lambda s: s.hyponyms() + s.instance_hyponyms()))
        core |= set(root.closure(lambda s: s.hypernyms()))
    recs = {s.name(): record_from_nltk(s) for s in core}
    for r in list(recs.values()):
        for t in {t for _, t in r.pointers} | {t for _, t, _ in r.antonyms}:
            recs.setdefault(t, record_from_nltk(wn.synset(t)))
    g = WordNetGraph(build_graph(_Subset(sorted(recs.values(), key=lambda r: r.name))))
    assert 1000 < len(g.g) < 3000 and {"n", "v", "a"} <= {g.pos(n) for n in g.g}
    assert sum(bool(d["antonyms"]) for _, d in g.g.nodes(data=True)) > 20
    assert any(t == "instance" for *_, t in g.g.edges(data="type"))
    rels = {k for _, d in g.g.nodes(data=True) for k in d["relations"]}
    assert rels == set(RELATIONS) - {"hypernym", "instance_hypernym"}  # every other relation is exercised
    assert g.definition("reductive.s.01").endswith(";  - R.H.Rovere")  # WordNet's own double space

    path = tmp_path / "vehicle.xml"
    back = _round_trip(g, path, "pwn30")
    assert _as_read(back) == _relabeled(g, "pwn30")
    assert back.depth("pwn30-car.n.01") == g.depth("car.n.01") > 5
    # same graph, same bytes
    first = path.read_bytes()
    write_lmf(g, path, "pwn30", "round trip", version="1")
    assert path.read_bytes() == first


def test_cli_wordnetqa_from_the_fixture(tmp_path):
    """End to end: `make wordnetqa` builds probes from the Spanish WN-LMF file, contexts from its examples."""
    pytest.importorskip("probegen.lexicon.sources", reason="--wordnet-source not in this checkout yet")
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    out = tmp_path / "wnqa"
    r = CliRunner().invoke(cli, ["make", "wordnetqa", "--wordnet-source", str(ES_MINI), "--contexts", "examples",
                                 "--probe", "hypernymy", "--distractors", "isa,sister", "--out", str(out)])
    assert r.exit_code == 0, r.output
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert len(items) > 20 and all(it["synset"].startswith("esmini-") for it in items)
    # the context's target is the inflected form the fixture lists ("Los animales del bosque ...")
    animal = next(it for it in items if it["synset"] == S("animal-n"))
    ctx = animal["context"]
    assert ctx["text"][slice(*ctx["char_span"])] == "animales"
    gold = [c for c, m in zip(animal["choices"], animal["choice_meta"]) if m["type"] == "gold"][0]
    assert gold.startswith("ser vivo") or gold.startswith("organismo")
    manifest = json.loads((out / "manifest.json").read_text())
    assert "esmini" in json.dumps(manifest)


def test_hyponym_links_give_the_same_hierarchy_edges(tmp_path):
    """A file that states the hierarchy from above (hyponym) or both ways gives one edge per link."""
    entries = "".join(
        f'<LexicalEntry id="t-{w}-n"><Lemma writtenForm="{w}" partOfSpeech="n"/>'
        f'<Sense id="t-{w}-n-1" synset="t-{w}"/></LexicalEntry>' for w in ("top", "mid", "low", "inst"))
    path = tmp_path / "hypo.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE LexicalResource SYSTEM "http://globalwordnet.github.io/schemas/WN-LMF-1.0.dtd">\n'
        '<LexicalResource xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<Lexicon id="t" label="t" language="de" email="a@b.c" license="x" version="1">' + entries +
        '<Synset id="t-top" ili="" partOfSpeech="n"><SynsetRelation relType="hyponym" target="t-mid"/>'
        '<SynsetRelation relType="instance_hyponym" target="t-inst"/></Synset>'
        '<Synset id="t-mid" ili="" partOfSpeech="n"><SynsetRelation relType="hyponym" target="t-low"/></Synset>'
        '<Synset id="t-low" ili="" partOfSpeech="n"><SynsetRelation relType="hypernym" target="t-mid"/></Synset>'
        '<Synset id="t-inst" ili="" partOfSpeech="n"/>'
        '</Lexicon></LexicalResource>\n')
    g = WordNetGraph(build_graph(open_lmf(str(path))))
    assert sorted(g.g.edges(data="type")) == [("t-mid", "t-low", "hypernym"), ("t-top", "t-inst", "instance"),
                                              ("t-top", "t-mid", "hypernym")]
    assert [g.depth(n) for n in ("t-top", "t-mid", "t-low", "t-inst")] == [0, 1, 2, 1]
    assert g.g.nodes["t-top"]["relations"] == {} and g.lemmas("t-low") == ("low",)


def test_wn_lexicon_from_the_users_database(tmp_path, es):
    """``wn:ID:VERSION`` reads a lexicon already in the user's wn database: the same graph as the file."""
    import wn

    _, from_file = es
    before = wn.config.database_path.parent
    wn.config.data_directory = tmp_path / "user-wn"
    try:
        wn.add(str(ES_MINI), progress_handler=None)
        res = open_lmf("wn:esmini:1.0")
        assert res.describe()["lexicon"] == "esmini:1.0" and res.source == "wn:esmini:1.0" and len(res.sha256) == 64
        g = WordNetGraph(build_graph(res))
        assert _as_read(g) == _as_read(from_file)
        assert res.base_forms("perros", "n") == {"perro"}
        with pytest.raises(ProbegenError, match="have: esmini:1.0"):
            open_lmf("wn:oewn:2024")
    finally:
        wn.config.data_directory = before


def test_word_in_context_sets_refuse_a_wordnet_without_sense_keys(tmp_path):
    """make wic/wsd have no example-sentence variant: the error must not suggest --contexts examples."""
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    for cmd in ("wic", "wsd"):
        r = CliRunner().invoke(cli, ["make", cmd, "--wordnet-source", str(ES_MINI), "--out", str(tmp_path / cmd)])
        assert r.exit_code == 1 and "has no WordNet sense keys" in r.output and "--contexts" not in r.output, r.output
        assert not (tmp_path / cmd).exists()
