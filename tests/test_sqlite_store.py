"""One SQLite store under both caches (issue 38): the score cache and the generative method's response
cache share :class:`probegen.score_cache.SqliteStore`, with the on-disk format they had before, so
caches written by earlier versions keep working (and the other way round)."""

from __future__ import annotations

import sqlite3

from probegen.generate.chat import Response, ResponseCache
from probegen.score_cache import ScoreCache, SqliteStore

#: the tables the two caches created before they shared a store (score_cache.py, generate/chat.py)
OLD_SCHEMA = {
    "scores": "CREATE TABLE scores (key TEXT PRIMARY KEY, value REAL NOT NULL)",
    "responses": "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT)",
}


def _schema(path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())


def test_both_caches_are_one_store_class():
    assert issubclass(ScoreCache, SqliteStore) and issubclass(ResponseCache, SqliteStore)
    assert "_setup" not in vars(ResponseCache) and "_run" not in vars(ResponseCache)  # no copied machinery


def test_a_cache_written_the_old_way_is_read_and_extended(tmp_path):
    for table, sql in OLD_SCHEMA.items():
        with sqlite3.connect(tmp_path / f"{table}.sqlite") as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(sql)
            row = ("k1", 1.5) if table == "scores" else ("k1", "B", "stop")
            conn.execute(f"INSERT INTO {table} VALUES ({','.join('?' * len(row))})", row)
    scores = ScoreCache(tmp_path / "scores.sqlite")
    assert scores.get_many(["k1", "k2"]) == {"k1": 1.5}
    scores.put_many({"k2": -2.0})
    assert scores.get_many(["k1", "k2"]) == {"k1": 1.5, "k2": -2.0} and len(scores) == 2
    responses = ResponseCache(tmp_path / "responses.sqlite")
    got = responses.get_many(["k1", "k2"])
    assert list(got) == ["k1"] and (got["k1"].text, got["k1"].finish_reason, got["k1"].cached) == ("B", "stop", True)
    responses.put_many([("k2", Response("A", None))])
    assert {k: (r.text, r.finish_reason) for k, r in responses.get_many(["k1", "k2"]).items()} == {
        "k1": ("B", "stop"), "k2": ("A", None)}
    scores.close()
    responses.close()
    assert _schema(tmp_path / "scores.sqlite") == {"scores": OLD_SCHEMA["scores"]}


def test_a_new_cache_has_the_old_format(tmp_path):
    ScoreCache(tmp_path / "s.sqlite").put_many({"a": 0.25})
    ResponseCache(tmp_path / "r.sqlite").put_many({"a": Response("C", "length")})
    assert _schema(tmp_path / "s.sqlite") == {"scores": OLD_SCHEMA["scores"]}
    assert _schema(tmp_path / "r.sqlite") == {"responses": OLD_SCHEMA["responses"]}
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:
        assert conn.execute("SELECT key, text, finish_reason FROM responses").fetchall() == [("a", "C", "length")]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_damaged_response_cache_is_set_aside_once(tmp_path, caplog):
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = ResponseCache(path)
    assert cache.get_many(["x"]) == {}
    cache.put_many({"x": Response("D", "stop")})
    assert cache.get_many(["x"])["x"].text == "D"
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "probegen.cache"]
    assert warning.startswith(f"response cache {path} is corrupt") and "its questions are asked again" in warning
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("responses.sqlite.corrupt-")]) == 1
