"""Issue 16, items 7, 9 and 11: damaged caches are set aside and rebuilt with one warning, a
hypernym cycle in a wordnet is one line naming it, and a build that yields nothing writes nothing."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from cli_checks import assert_one_line_error, run
from click.testing import CliRunner

from probegen.commands.cli import cli
from probegen.errors import DatasetError
from probegen.runner import Runner

ES_MINI = Path(__file__).parent / "data" / "lmf" / "es-mini.xml"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private probegen cache for the test."""
    root = tmp_path / "cache"
    monkeypatch.setenv("PROBEGEN_CACHE", str(root))
    return root


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".corrupt-*"))


# ---------------------------------------------------------------- item 7: the score cache

WORDS = ["dog", "cat", "river", "bank", "tree", "house", "music", "money", "stone", "water"]
QUERIES = [f"the {a} and the {b}" for a in WORDS for b in WORDS]
CANDS = [[f"a {c} near a {d}" for c in WORDS[:5] for d in WORDS[5:]]] * len(QUERIES)


def _glove(cache_arg):
    from probegen.models import load_scorer

    return load_scorer("glove-50d", cache=cache_arg)


@pytest.fixture(scope="module")
def clean_scores():
    return np.concatenate(_glove(False).score(QUERIES, CANDS))


def _real_cache(path: Path) -> None:
    """A score cache made by a real run (2,500 glove-50d scores), its WAL folded back into the file."""
    s = _glove(path)
    s.score(QUERIES, CANDS)
    s._cache.close()
    assert not Path(str(path) + "-wal").exists() and path.stat().st_size > 20 * 4096


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _damage_page(path: Path) -> None:
    data = bytearray(path.read_bytes())
    page = 4096 * (len(data) // 4096 // 2)  # a whole page in the middle of the B-tree
    data[page : page + 4096] = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


def _random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).integers(0, 256, path.stat().st_size, dtype=np.uint8).tobytes())


@pytest.mark.parametrize("damage", [_truncate, _damage_page, _random_bytes], ids=["truncated", "page", "random"])
def test_damaged_score_cache_is_set_aside_with_one_warning(tmp_path, caplog, clean_scores, damage):
    path = tmp_path / "scores.sqlite"
    _real_cache(path)
    damage(path)
    s = _glove(path)
    with caplog.at_level(logging.WARNING):
        got = np.concatenate(s.score(QUERIES, CANDS))
    np.testing.assert_array_equal(got, clean_scores)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "corrupt" in msg and "\n" not in msg
    assert len(_aside(path)) == 1  # the damaged file is kept for inspection, not deleted
    assert len(s._cache) == clean_scores.size  # the fresh cache holds the run's scores
    s._cache.close()
    caplog.clear()
    again = _glove(path)  # and serves them to the next run, with no warning
    with caplog.at_level(logging.WARNING):
        np.testing.assert_array_equal(np.concatenate(again.score(QUERIES, CANDS)), clean_scores)
    assert again.counters["pairs_computed"] == 0 and not _warnings(caplog)


def test_damage_found_on_a_later_query_is_handled_there(tmp_path, caplog):
    """SQLite opens a file with a damaged page fine and fails on the first SELECT that reads it."""
    from probegen.score_cache import ScoreCache

    path = tmp_path / "scores.sqlite"
    first = ScoreCache(path)
    first.put_many((f"k{i}", float(i)) for i in range(3000))
    first.close()
    _damage_page(path)
    c = ScoreCache(path)
    with caplog.at_level(logging.WARNING):
        assert c.get_many(["k1"]) == {"k1": 1.0}  # opens, and this key's pages are whole
        assert not _warnings(caplog)
        assert c.get_many(f"k{i}" for i in range(3000)) == {}  # the damaged cache served nothing
        c.put_many([("k1", 1.0)])
    assert c.get_many(["k1"]) == {"k1": 1.0} and len(c) == 1
    assert len(_warnings(caplog)) == 1 and len(_aside(path)) == 1
    c.close()


def test_a_locked_cache_is_not_mistaken_for_a_damaged_one(tmp_path):
    """'database is locked' is contention, not damage: it propagates and nothing is set aside."""
    from probegen.score_cache import ScoreCache

    path = tmp_path / "scores.sqlite"
    ScoreCache(path).put_many([("a", 1.0)])
    holder = sqlite3.connect(str(path))
    holder.execute("BEGIN EXCLUSIVE")
    c = ScoreCache(path)
    c_conn = c._conn
    c_conn.execute("PRAGMA busy_timeout=50")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        c.put_many([("b", 2.0)])
    holder.rollback()
    assert not _aside(path) and c.get_many(["a"]) == {"a": 1.0}


# ---------------------------------------------------------------- item 7: .npy caches


class _Defs:
    """The one graph method definition_vectors needs."""

    def definition(self, name: str) -> str:
        return f"a {name} that lives near the river and eats {name}s"


NAMES = [f"{w}.n.01" for w in WORDS]


@pytest.mark.parametrize("damage", ["truncated", "random", "wrong shape"])
def test_damaged_definition_vectors_are_rebuilt_with_one_warning(cache, caplog, damage):
    from probegen.coda21.vectors import definition_vectors

    clean = definition_vectors(_Defs(), NAMES, "glove-50d", "sha", runner=Runner(log=lambda m: None))(NAMES)
    (path,) = (cache / "vectors").glob("*.npy")
    good = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(good[: len(good) - 100])
    elif damage == "random":
        path.write_bytes(b"\x93NUMPY garbage" * 20)
    else:
        np.save(path, np.zeros((3, 50), dtype=np.float32))
    with caplog.at_level(logging.WARNING):
        again = definition_vectors(_Defs(), NAMES, "glove-50d", "sha", runner=Runner(log=lambda m: None))(NAMES)
    np.testing.assert_array_equal(again, clean)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "corrupt" in msg
    assert path.read_bytes() == good and len(_aside(path)) == 1


def test_damaged_static_vector_caches_are_rebuilt(cache, tmp_path, caplog):
    """A GloVe/word2vec text file is parsed once into vectors.npy + vocab.txt; damage to either rebuilds both."""
    from probegen import models

    txt = tmp_path / "vecs.txt"
    txt.write_text("".join(f"{w} {i}.0 {i + 1}.5 -1.0\n" for i, w in enumerate(WORDS)))
    mat, words = models._text_vectors(txt)
    (d,) = (cache / "models").glob("static-vecs-*")
    for victim, data in ((d / "vectors.npy", b"\x93NUMPY\x01\x00"), (d / "vocab.txt", "dog\ncat")):
        if isinstance(data, bytes):
            victim.write_bytes(data)
        else:
            victim.write_text(data)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            mat2, words2 = models._text_vectors(txt)
        np.testing.assert_array_equal(np.asarray(mat2), np.asarray(mat))
        assert words2 == words and len(_warnings(caplog)) == 1 and str(d) in _warnings(caplog)[0]


def test_damaged_glove_vocabulary_cache_is_read_again(cache, caplog):
    from probegen import models

    data = models.resolve_model("glove-50d").path_or_id
    rows = np.load(sorted(Path(data).glob("*.npy"))[0], mmap_mode="r").shape[0]
    words = models._glove_vocab(Path(data), rows)
    path = cache / "models" / "glove-50d" / "vocab.txt"
    path.write_text("\n".join(words[:1000]), encoding="utf-8")  # a truncated copy
    with caplog.at_level(logging.WARNING):
        assert models._glove_vocab(Path(data), rows) == words
    assert len(_warnings(caplog)) == 1 and str(path) in _warnings(caplog)[0]


def test_damaged_batch_budget_file_warns_once_and_is_replaced(cache, caplog):
    from probegen.scorers import _budget

    path = _budget.budget_path()
    path.write_text('{"model|cpu": 40')  # truncated JSON
    with caplog.at_level(logging.WARNING):
        assert _budget.remembered("model|cpu") is None
    assert len(_warnings(caplog)) == 1 and str(path) in _warnings(caplog)[0] and len(_aside(path)) == 1
    _budget.remember("model|cpu", 512)
    assert _budget.remembered("model|cpu") == 512


def test_damaged_private_wn_database_is_rebuilt(cache, caplog):
    """The private wn database a WN-LMF file is loaded into (cache/wn-lmf/*/wn.db)."""
    from probegen.lexicon import lmf

    first = sorted(r.name for r in lmf.open_lmf(str(ES_MINI)).synsets())
    (db,) = (cache / "wn-lmf").glob("*/wn.db")
    lmf._close(db.parent)
    db.write_bytes(db.read_bytes()[:5000])
    with caplog.at_level(logging.WARNING):
        again = sorted(r.name for r in lmf.open_lmf(str(ES_MINI)).synsets())
    assert again == first
    assert len(_warnings(caplog)) == 1 and "corrupt" in _warnings(caplog)[0]


# ---------------------------------------------------------------- item 9: hierarchy cycles


def _with_cycle(tmp_path: Path) -> Path:
    """es-mini with one more hypernym: animal is a type of perro (perro -> mamífero -> animal -> perro)."""
    text = ES_MINI.read_text(encoding="utf-8")
    anchor = '<SynsetRelation relType="hypernym" target="esmini-ser_vivo-n"/>'
    start = text.index('<Synset id="esmini-animal-n"')
    at = text.index(anchor, start) + len(anchor)
    out = tmp_path / "es-cycle.xml"
    out.write_text(text[:at] + '<SynsetRelation relType="hypernym" target="esmini-perro-n"/>' + text[at:], encoding="utf-8")
    return out


def test_hypernym_cycle_in_a_wn_lmf_file_is_one_line_naming_it(cache, tmp_path):
    path = _with_cycle(tmp_path)
    out = tmp_path / "wnqa"
    r = CliRunner().invoke(cli, ["make", "wordnetqa", "--wordnet-source", str(path), "--contexts", "examples",
                                 "--probe", "hypernymy", "--out", str(out)])
    assert r.exit_code == 1, r.output
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("probegen:")]
    assert line.startswith("probegen: error: ") and str(path) in line and "Traceback" not in r.output
    assert "cycle" in line and "esmini-animal-n" in line and "esmini-perro-n" in line and "esmini-mamifero-n" in line
    assert not out.exists()


def test_cycle_through_an_instance_link_or_a_self_loop_is_found(cache, tmp_path):
    from probegen.lexicon.lmf import open_lmf
    from probegen.wordnet_graph import build_graph

    text = ES_MINI.read_text(encoding="utf-8")
    # Rocinante is an instance of caballo; make caballo a type of Rocinante
    anchor = '<SynsetRelation relType="hypernym" target="esmini-mamifero-n"/>'
    at = text.index(anchor, text.index('<Synset id="esmini-caballo-n"')) + len(anchor)
    inst = tmp_path / "inst.xml"
    inst.write_text(text[:at] + '<SynsetRelation relType="hypernym" target="esmini-Rocinante-n"/>' + text[at:], encoding="utf-8")
    with pytest.raises(DatasetError, match=r"esmini-caballo-n.*esmini-Rocinante-n|esmini-Rocinante-n.*esmini-caballo-n"):
        build_graph(open_lmf(str(inst)))
    selfish = tmp_path / "self.xml"
    selfish.write_text(text[:at] + '<SynsetRelation relType="hypernym" target="esmini-caballo-n"/>' + text[at:], encoding="utf-8")
    with pytest.raises(DatasetError, match=r"esmini-caballo-n \(caballo\) -> esmini-caballo-n"):
        build_graph(open_lmf(str(selfish)))


def test_only_wordnet_30s_own_cycle_is_tolerated():
    """WordNet 3.0 has one hypernym cycle (restrain.v.01 <-> inhibit.v.04, fixed in 3.1): it still
    loads; the same shape with other synsets does not."""
    from probegen.wordnet_graph import check_hierarchy

    def graph(lemmas):
        g = nx.DiGraph()
        for n, lem in zip(("a.v.01", "b.v.01"), lemmas):
            g.add_node(n, pos="v", lemmas=lem)
        g.add_edge("a.v.01", "b.v.01", type="hypernym")
        g.add_edge("b.v.01", "a.v.01", type="hypernym")
        return g

    check_hierarchy(graph([("restrain", "keep"), ("inhibit", "bottle_up")]), "WordNet 3.0")
    with pytest.raises(DatasetError, match=r"^x.xml: .*cycle.*a.v.01 \(go\) -> b.v.01 \(come\) -> a.v.01|"
                                           r"^x.xml: .*cycle.*b.v.01 \(come\) -> a.v.01 \(go\) -> b.v.01"):
        check_hierarchy(graph([("go",), ("come",)]), "x.xml")


@pytest.mark.real
def test_real_wordnet_30_keeps_its_known_cycle(graph):
    assert "restrain.v.01" in graph.parents("inhibit.v.04") and "inhibit.v.04" in graph.parents("restrain.v.01")


# ---------------------------------------------------------------- item 11: nothing built, nothing written


def _no_output(out: Path) -> None:
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]  # no temp sibling


EMPTY_BUILDS = {
    "coda21": (["make", "coda21", "--embedder", "glove-50d", "--context-scorer", "first"],
               ["CoDA21 group met the criteria", "k_min=5", "max_similarity=0.8"]),
    "wordnetqa": (["make", "wordnetqa", "--probe", "hypernymy", "--min-answer-depth", "30"],
                  ["no WordNetQA item", "hypernymy"]),
}


@pytest.mark.parametrize("kind", sorted(EMPTY_BUILDS))
def test_a_build_with_nothing_in_it_is_an_error_and_writes_nothing(cache, tmp_path, kind):
    args, needles = EMPTY_BUILDS[kind]
    out = tmp_path / kind
    code, _, err = run(*args, "--wordnet-source", ES_MINI, "--contexts", "examples", "--out", out)
    assert_one_line_error(code, err, *needles)
    _no_output(out)


@pytest.mark.real
def test_coda21_with_no_group_for_a_requested_pos_is_an_error(tmp_path):
    # the repro on real WordNet 3.0 + SemCor: GloVe's averaged definitions are too alike for
    # --max-similarity 0.8, so no noun group forms; the verbs alone would have been a silent half-build
    out = tmp_path / "coda"
    code, _, err = run("make", "coda21", "--embedder", "glove-50d", "--context-scorer", "first", "--out", out)
    assert_one_line_error(code, err, "no noun CoDA21 group met the criteria", "--pos verb")
    _no_output(out)
