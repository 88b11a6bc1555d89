"""Persistent score cache: one SQLite table of (key -> float) shared by every scorer.

A key is the sha256 of the JSON list ``[model, settings, query, candidate]``, so anything that changes
a score changes the key. Scores are committed batch by batch (a killed run resumes); WAL mode and a
busy timeout let several processes share the file; a damaged file is moved aside with one warning.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from .paths import cache_dir, set_aside

T = TypeVar("T")

# SQLite limits the number of bound parameters per statement (999 in old builds).
_CHUNK = 900


def default_path() -> Path:
    """``<cache_dir>/scores.sqlite``."""
    return cache_dir() / "scores.sqlite"


def is_damage(e: sqlite3.DatabaseError) -> bool:
    """Whether SQLite reports a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB), not contention or I/O."""
    code = getattr(e, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    return "malformed" in str(e) or "not a database" in str(e)


def make_key(model: str, settings: Mapping[str, Any], query: str, candidate: str) -> str:
    """The cache key of one (query, candidate) score under ``model`` and ``settings``."""
    blob = json.dumps([model, dict(settings), query, candidate], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class SqliteStore:
    """One SQLite table of key -> row (see the module doc): a subclass names its table, value columns and what
    it is (:class:`ScoreCache`, :class:`probegen.generate.chat.ResponseCache`)."""

    #: the table, its value columns (after ``key TEXT PRIMARY KEY``) as SQL, and their names
    table: str = ""
    columns_sql: str = ""
    columns: tuple[str, ...] = ()
    #: how the warning for a damaged file names the store, and what the run does next
    what: str = "cache"
    then: str = "starting a fresh one"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # opened on first use: under torchrun only rank 0 reads or writes the cache, so the other
        # ranks never open the file (two processes switching a new file to WAL at once can fail)
        self._db: sqlite3.Connection | None = None
        self._inode: int | None = None  # of the file the connection opened (another process may replace it)
        self._closed = False

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False)
            try:
                self._setup(conn)
            except BaseException:
                conn.close()
                raise
            self._db = conn
            self._inode = _inode(self.path)
        return self._db

    def _setup(self, conn: sqlite3.Connection) -> None:
        for attempt in range(20):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL is durable across process crashes
                conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (key TEXT PRIMARY KEY, {self.columns_sql})")
                conn.commit()
                return
            except sqlite3.OperationalError as e:  # another process is setting up the same new file
                if "locked" not in str(e) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)``, again on a fresh cache if the file is damaged; call with ``self._lock`` held."""
        try:
            return work(self._conn)
        except sqlite3.DatabaseError as e:
            if not is_damage(e):
                raise  # 'database is locked' and the like are not damage: never set a file aside for them
            self._start_afresh(e)
            return work(self._conn)

    def _start_afresh(self, error: sqlite3.DatabaseError) -> None:
        """Close the damaged cache and move it aside, unless another process already replaced it."""
        opened, self._inode = self._inode, None
        if self._db is not None:
            self._db.close()
            self._db = None
        if opened is not None and _inode(self.path) != opened:
            return  # the file we opened was already moved aside (by another process): use the new one
        set_aside(self.path, self.what, error, then=self.then, companions=("-wal", "-shm"))

    def get_rows(self, keys: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        """The stored value columns of those ``keys`` that are present."""
        keys = list(dict.fromkeys(keys))

        def select(conn: sqlite3.Connection) -> dict[str, tuple[Any, ...]]:
            out: dict[str, tuple[Any, ...]] = {}
            for i in range(0, len(keys), _CHUNK):
                part = keys[i : i + _CHUNK]
                rows = conn.execute(f"SELECT key, {', '.join(self.columns)} FROM {self.table} WHERE key IN "
                                    f"({','.join('?' * len(part))})", part).fetchall()
                out.update((r[0], tuple(r[1:])) for r in rows)
            return out

        with self._lock:
            return self._run(select)

    def put_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Store ``(key, *values)`` rows and commit them (one transaction)."""
        if not rows:
            return
        sql = (f"INSERT OR REPLACE INTO {self.table} (key, {', '.join(self.columns)}) VALUES "
               f"({', '.join('?' * (len(self.columns) + 1))})")

        def insert(conn: sqlite3.Connection) -> None:
            with conn:  # commits, or rolls back on error
                conn.executemany(sql, rows)

        with self._lock:
            self._run(insert)

    def __len__(self) -> int:
        with self._lock:
            return int(self._run(lambda conn: conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]))

    def close(self) -> None:
        """Close the connection (further use raises)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
            self._db, self._closed = None, True


class ScoreCache(SqliteStore):
    """A key -> float store in SQLite (``path`` defaults to ``<cache_dir>/scores.sqlite``)."""

    table, columns_sql, columns = "scores", "value REAL NOT NULL", ("value",)
    what, then = "score cache", "starting a fresh one (its scores are computed again)"

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path if path is not None else default_path())

    def get_many(self, keys: Iterable[str]) -> dict[str, float]:
        """The cached values of those ``keys`` that are present."""
        return {k: v[0] for k, v in self.get_rows(keys).items()}

    def put_many(self, items: Iterable[tuple[str, float]] | Mapping[str, float]) -> None:
        """Store ``(key, value)`` pairs and commit them (one transaction)."""
        rows = [(k, float(v)) for k, v in (items.items() if isinstance(items, Mapping) else items)]
        bad = [k for k, v in rows if not math.isfinite(v)]
        if bad:  # SQLite turns NaN into NULL (an IntegrityError); an infinity would poison later runs
            raise ValueError(f"refusing to cache {len(bad)} non-finite score(s), e.g. key {bad[0]}")
        self.put_rows(rows)


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
