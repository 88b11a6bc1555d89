"""The SemCor reader: SGML parsing on synthetic tagfiles, and the real corpus's counts and index."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from probegen import semcor as sc
from probegen.data import load_wordnet, locate_semcor, locate_wordnet
from probegen.semcor import (
    Occurrence,
    ParseStats,
    Sentence,
    Tag,
    context_index,
    iter_sentences,
    parse_tagfile,
    semcor_stats,
)

TAGFILE = """<contextfile concordance=brown>
<context filename=br-x01 paras=yes>
<p pnum=1>
<s snum=1>
<wf cmd=ignore pos=DT>The</wf>
<wf cmd=done rdf=group pos=NNP lemma=group wnsn=1 lexsn=1:03:00:: pn=group>Fulton_County_Grand_Jury</wf>
<wf cmd=done pos=VB lemma=say wnsn=1 lexsn=2:32:00::>said</wf>
<wf cmd=done pos=NN lemma=year wnsn=2;1 lexsn=1:28:02::;1:28:01::>year</wf>
<wf cmd=done pos=JJ lemma=previous wnsn=1 lexsn=5:00:00:preceding(a):00>previous</wf>
<wf cmd=done pos=JJ lemma=such wnsn=0 lexsn=5:00:01:specified:00>such</wf>
<wf cmd=tag pos=NN lemma=bogus wnsn=1 lexsn=1:99:00::>bogus</wf>
<wf cmd=done pos=NN lemma=thing>thing</wf>
<punc>.</punc>
</s>
</p>
<p pnum=2>
<s snum=2>
<wf cmd=done pos=VB lemma=take_place wnsn=1 lexsn=2:30:00::>took_place</wf>
<wf cmd=ignore pos=NN ot=notag>O_'_Banion</wf>
<punc>''</punc>
</s>
</p>
</context>
</contextfile>
"""

FAKE_SENSES = {
    "group%1:03:00::": "group.n.01",
    "say%2:32:00::": "state.v.01",
    "year%1:28:02::": "year.n.03",
    "previous%5:00:00:preceding:00": "previous.s.01",
    "take_place%2:30:00::": "happen.v.01",
}


def test_parse_synthetic_tagfile():
    asked: list[str] = []

    def resolve(key):
        asked.append(key)
        return FAKE_SENSES.get(key)

    stats = ParseStats()
    s1, s2 = parse_tagfile(TAGFILE, "brown1/br-x01", resolve, stats)
    assert s1.id == "brown1/br-x01#1" and s2.id == "brown1/br-x01#2"
    assert s1.tokens == ("The", "Fulton", "County", "Grand", "Jury", "said", "year", "previous", "such", "bogus",
                         "thing", ".")
    assert s1.tags == (  # the proper name "Fulton County Grand Jury" (pn=group) gives no tag; its words stay
        Tag(5, 6, "say", "state.v.01"),
        Tag(6, 7, "year", "year.n.03"),  # first of several senses
        Tag(7, 8, "previous", "previous.s.01"),  # (a) marker stripped from the key
    )
    assert "previous%5:00:00:preceding:00" in asked and "year%1:28:02::" in asked
    assert not any(k.startswith("such%") for k in asked)  # wnsn=0: never looked up
    assert s2.tokens == ("took", "place", "O", "'", "Banion", "''")
    assert s2.tags == (Tag(0, 2, "take_place", "happen.v.01"),)
    assert "group%1:03:00::" not in asked
    assert (stats.sentences, stats.tokens, stats.tagged, stats.unresolved, stats.unsensed) == (2, 18, 4, 1, 2)
    assert stats.proper_names == 1


def test_quoted_attributes_and_unclosed_sentence():
    text = (
        '<s snum="7">\n<wf cmd=done pos=NN lemma=dog wnsn="1" lexsn="1:05:00::">dogs</wf>\n'
        "<s snum=8>\n<punc>!</punc>\n</s>\n"
    )
    (sent,) = parse_tagfile(text, "c/f", {"dog%1:05:00::": "dog.n.01"}.get)
    assert sent == Sentence("c/f#8", ("!",), ())  # a sentence that is never closed is dropped, not merged
    closed = text.replace("<s snum=8>", "</s>\n<s snum=8>")
    s7, s8 = parse_tagfile(closed, "c/f", {"dog%1:05:00::": "dog.n.01"}.get)
    assert s7 == Sentence("c/f#7", ("dogs",), (Tag(0, 1, "dog", "dog.n.01"),))  # quoted values unquoted
    quoted_pn = closed.replace('lexsn="1:05:00::"', 'lexsn="1:05:00::" pn="person"')
    assert parse_tagfile(quoted_pn, "c/f", {"dog%1:05:00::": "dog.n.01"}.get).__next__().tags == ()
    assert s8.id == "c/f#8"


# ---------------------------------------------------------------- with the real WordNet


@pytest.fixture(scope="session")
def wordnet():
    info = locate_wordnet()  # missing data must fail the suite, not skip it
    return info, load_wordnet(str(info.path))


def _synthetic_semcor(root: Path) -> Path:
    for corpus in ("brownv", "brown1", "brown2"):  # created out of order on purpose
        (root / corpus / "tagfiles").mkdir(parents=True)
    (root / "brown1" / "tagfiles" / "br-x02").write_text(TAGFILE.replace("br-x01", "br-x02"))
    (root / "brown1" / "tagfiles" / "br-x01").write_text(TAGFILE)
    (root / "brownv" / "tagfiles" / "br-x01").write_text(TAGFILE)
    return root


@pytest.mark.real
def test_iter_sentences_order_and_real_senses(tmp_path, wordnet):
    _, wn = wordnet
    root = _synthetic_semcor(tmp_path / "semcor3.0")
    stats = ParseStats()
    sents = list(iter_sentences(root, wn, stats))
    assert [s.id for s in sents] == [f"{c}/{f}#{n}" for c, f in
                                     (("brown1", "br-x01"), ("brown1", "br-x02"), ("brownv", "br-x01")) for n in (1, 2)]
    assert (stats.files, stats.sentences, stats.unresolved, stats.unsensed, stats.proper_names) == (3, 6, 3, 6, 3)
    expected = {k: wn.lemma_from_key(k).synset().name() for k in FAKE_SENSES}
    assert [t.synset for t in sents[0].tags] == [expected[k] for k in list(FAKE_SENSES)[1:4]]
    assert sents[1].tags[0].synset == expected["take_place%2:30:00::"]


@pytest.mark.real
def test_context_index_cache_roundtrip(tmp_path, monkeypatch, wordnet):
    wn_info, wn = wordnet
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROBEGEN_CACHE", str(cache))
    root = _synthetic_semcor(tmp_path / "semcor3.0")
    info = locate_semcor(str(root))
    sc._MEMO.clear()
    index = context_index(info, wn, wn_info)
    (path,) = cache.glob("semcor_index-*.json.gz")
    assert json.loads(gzip.decompress(path.read_bytes()))["format"] == sc.INDEX_FORMAT

    year = wn.lemma_from_key("year%1:28:02::").synset().name()
    assert [c.sent_id for c in index[year]] == ["brown1/br-x01#1", "brown1/br-x02#1", "brownv/br-x01#1"]
    first = index[year][0]
    assert first == Occurrence(sent_id="brown1/br-x01#1", tokens=first.tokens, span=(6, 7), lemma="year")
    happen = wn.lemma_from_key("take_place%2:30:00::").synset().name()
    assert index[happen][0].lemma == "take_place" and index[happen][0].tokens[:2] == ("took", "place")
    assert not any("group" in c.lemma for ctxs in index.values() for c in ctxs)  # the pn= tag left no entry

    # a fresh process would read the file back without parsing (wn is never touched)
    sc._MEMO.clear()
    again = context_index(info, object(), wn_info)
    assert again == index
    stats = semcor_stats(info, object(), wn_info)
    assert (stats["sentences"], stats["tagged"], stats["unresolved"], stats["proper_names"]) == (6, 12, 3, 3)
    sc._MEMO.clear()


@pytest.mark.real
@pytest.mark.parametrize("damage", [b"", b"not gzip at all", gzip.compress(b'{"format": 2, "sentences": [[1]]}', mtime=0),
                                    gzip.compress(b"[1, 2", mtime=0)])
def test_corrupt_index_cache_is_rebuilt_with_a_warning(tmp_path, monkeypatch, wordnet, caplog, damage):
    wn_info, wn = wordnet
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROBEGEN_CACHE", str(cache))
    info = locate_semcor(str(_synthetic_semcor(tmp_path / "semcor3.0")))
    sc._MEMO.clear()
    index = context_index(info, wn, wn_info)
    (path,) = cache.glob("semcor_index-*.json.gz")
    good = path.read_bytes()
    path.write_bytes(damage)
    sc._MEMO.clear()
    with caplog.at_level("WARNING", logger="probegen.semcor"):
        assert context_index(info, wn, wn_info) == index
    assert "corrupt" in caplog.text and "rebuilding" in caplog.text
    assert path.read_bytes() == good  # rewritten whole
    sc._MEMO.clear()


def test_old_format_cache_is_not_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path))
    path = tmp_path / "old.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"format": 1, "stats": {}, "sentences": [], "index": {}}).encode()))
    assert sc.INDEX_FORMAT >= 2 and sc._read(path) is None


# ---------------------------------------------------------------- the real corpus (parsed once)


@pytest.fixture(scope="session")
def real_corpus(wordnet):
    wn_info, wn = wordnet
    info = locate_semcor()
    stats = ParseStats()
    sentences = list(iter_sentences(info.path, wn, stats))
    return info, sentences, stats


@pytest.mark.real
def test_real_counts(real_corpus):
    _, sentences, stats = real_corpus
    print(f"\nSemCor: {stats}")
    assert stats.files == 352
    assert stats.sentences == len(sentences) == 37176
    assert stats.proper_names == 8741  # measured: pn= tags that carry a sense (9,684 pn= in all)
    assert stats.tagged + stats.proper_names == 226_005  # the README's "about 226,000" counts names too
    assert stats.unresolved <= 10  # measured 0: every first-sense key resolves in WordNet 3.0
    assert 8_000 <= stats.unsensed <= 8_250  # measured 8,131 tags with wnsn=0 (no WordNet 3.0 sense)
    assert 815_000 <= stats.tokens <= 825_000  # measured 820,410 words after splitting multiwords
    assert len({s.id for s in sentences}) == len(sentences)


@pytest.mark.real
def test_real_distinct_synsets(real_corpus):
    _, sentences, _ = real_corpus
    occ: dict[str, int] = {}
    for s in sentences:
        for t in s.tags:
            occ[t.synset] = occ.get(t.synset, 0) + 1
    for pos, distinct, ge5 in (("n", 13158, 3611), ("v", 6024, 2373)):  # the README's figures
        counts = [c for name, c in occ.items() if name.split(".")[-2] == pos]
        assert abs(len(counts) - distinct) <= 20
        assert abs(sum(c >= 5 for c in counts) - ge5) <= 20


@pytest.mark.real
def test_real_first_sentence_multiword_span(real_corpus):
    _, sentences, _ = real_corpus
    first = sentences[0]
    assert first.id == "brown1/br-a01#1"
    assert first.tokens[:6] == ("The", "Fulton", "County", "Grand", "Jury", "said")
    assert first.tags[0] == Tag(5, 6, "say", "state.v.01")  # "Fulton County Grand Jury" is a pn= name: no tag
    assert Tag(13, 15, "primary_election", "primary.n.01") in first.tags
    assert all(0 <= t.start < t.end <= len(s.tokens) for s in sentences for t in s.tags)
    assert sum(t.end - t.start > 1 for s in sentences for t in s.tags) > 5000  # many multiword tags


@pytest.mark.real
def test_real_context_index_matches_parse(real_corpus, wordnet):
    info, sentences, stats = real_corpus
    wn_info, wn = wordnet
    index = context_index(info, wn, wn_info)  # default cache: built once, then read back
    assert sum(len(v) for v in index.values()) == stats.tagged
    expected = [
        Occurrence(sent_id=s.id, tokens=s.tokens, span=(t.start, t.end), lemma=t.lemma) for s in sentences for t in s.tags if t.synset == "group.n.01"
    ]
    assert index["group.n.01"] == expected
    figures = semcor_stats(info, wn, wn_info)
    print(f"\nSemCor stats: {figures}")
    assert (figures["noun_synsets"], figures["noun_synsets_ge5"]) == (13158, 3611)
    assert (figures["verb_synsets"], figures["verb_synsets_ge5"]) == (6024, 2373)
    assert figures["sentences"] == 37176 and figures["tagged"] == stats.tagged


@pytest.mark.real
def test_real_index_has_no_proper_names_and_keeps_semcor_lemmas(real_corpus, wordnet):
    info, _, _ = real_corpus
    wn_info, wn = wordnet
    index = context_index(info, wn, wn_info)
    # SemCor's first sentence tags "Fulton County Grand Jury" (pn=group) with group.n.01
    assert all(c.sent_id != "brown1/br-a01#1" or c.span != (1, 5) for c in index["group.n.01"])
    names = {" ".join(c.tokens[slice(*c.span)]) for s in ("group.n.01", "location.n.01") for c in index[s]}
    assert not names & {"Fulton County Grand Jury", "Fulton County", "Fulton County Jail"}
    # fan.n.03 (fan, buff, devotee, lover): "history buffs" is SemCor's lemma buff, not a guess
    (buffs,) = [c for c in index["fan.n.03"] if c.tokens[c.span[0]] == "buffs"]
    assert buffs.lemma == "buff"
    assert all(c.lemma for ctxs in index.values() for c in ctxs)


# ---------------------------------------------------------------- the WordNet graph cache


@pytest.mark.real
@pytest.mark.parametrize("damage", [b"", b"\x80\x05garbage", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x07."])
def test_corrupt_graph_cache_is_rebuilt_with_a_warning(tmp_path, monkeypatch, caplog, damage):
    import pickle

    import networkx as nx

    from probegen import wordnet_graph as wg

    info = locate_wordnet()  # before the cache moves: the data stays where it was found
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path))
    path = wg._graph_cache_path(info.sha256)
    path.write_bytes(damage)  # truncated, not a pickle, a pickle of an int
    built = []

    def small_build(wn):  # the real build takes ~15 s; what matters is that it is called
        g = nx.DiGraph(format=wg.GRAPH_FORMAT)
        g.add_node("dog.n.01", pos="n")
        built.append(wn)
        return g

    monkeypatch.setattr(wg, "build_graph", small_build)
    wg.load_graph.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="probegen.wordnet_graph"):
            graph = wg.load_graph(str(info.path))
        assert "dog.n.01" in graph and len(built) == 1
        assert "corrupt" in caplog.text and "rebuilding" in caplog.text
        assert isinstance(pickle.loads(path.read_bytes()), nx.DiGraph)  # the file is whole again
    finally:
        wg.load_graph.cache_clear()  # later tests must get the real graph


def test_real_occurrence_builds_the_shared_context_in_both_layouts():
    # one Context model for CoDA21, WordNetQA and SemCor; each family keeps its on-disk layout
    from dataclasses import replace

    from probegen.coda21.items import Context as CodaContext
    from probegen.contexts import Context
    from probegen.text import detokenize
    from probegen.wordnetqa.items import Context as QAContext

    assert CodaContext is QAContext is Context
    (buffs,) = [o for o in context_index()["fan.n.03"] if o.tokens[o.span[0]] == "buffs"]
    c = buffs.context()
    assert (c.surface, c.word, c.lemma, c.source, c.sent_id) == ("buffs", "buffs", "buff", "semcor", buffs.sent_id)
    assert c.text == detokenize(buffs.tokens)[0]
    coda = c.to_json("with-tokens")
    assert list(coda) == ["text", "char_span", "tokens", "span", "sent_id"]
    assert (coda["tokens"], coda["span"], coda["sent_id"]) == (list(buffs.tokens), list(buffs.span), buffs.sent_id)
    assert c.to_json("with-source") == {"text": c.text, "char_span": list(c.char_span), "source": "semcor", "ref": buffs.sent_id}
    assert Context.from_json(coda, "with-tokens") == replace(c, lemma=None)  # neither layout stores the lemma
    assert Context.from_json(c.to_json("with-source"), "with-source") == replace(c, tokens=None, span=None, lemma=None)
