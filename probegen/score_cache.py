"""Persistent score cache: one SQLite table of (key -> float) shared by every scorer.

A key is the sha256 of the JSON list ``[model, settings, query, candidate]``, so anything that
changes a score (model, reduction, dtype, scoring method version) changes the key. Scores are
committed batch by batch, so a run killed halfway resumes where it stopped. WAL mode and a busy
timeout let several processes read and write the same file at once.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from .paths import cache_dir

# SQLite limits the number of bound parameters per statement (999 in old builds).
_CHUNK = 900


def default_path() -> Path:
    """``<cache_dir>/scores.sqlite``."""
    return cache_dir() / "scores.sqlite"


def make_key(model: str, settings: Mapping[str, Any], query: str, candidate: str) -> str:
    """The cache key of one (query, candidate) score under ``model`` and ``settings``."""
    blob = json.dumps([model, dict(settings), query, candidate], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ScoreCache:
    """A key -> float store in SQLite (``path`` defaults to ``<cache_dir>/scores.sqlite``)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # opened on first use: under torchrun only rank 0 reads or writes the cache, so the other
        # ranks never open the file (two processes switching a new file to WAL at once can fail)
        self._db: sqlite3.Connection | None = None
        self._closed = False

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False)
            for attempt in range(20):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL is durable across process crashes
                    conn.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, value REAL NOT NULL)")
                    conn.commit()
                    break
                except sqlite3.OperationalError as e:  # another process is setting up the same new file
                    if "locked" not in str(e) or attempt == 19:
                        raise
                    time.sleep(0.05 * (attempt + 1))
            self._db = conn
        return self._db

    def get_many(self, keys: Iterable[str]) -> dict[str, float]:
        """The cached values of those ``keys`` that are present."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, float] = {}
        with self._lock:
            for i in range(0, len(keys), _CHUNK):
                part = keys[i : i + _CHUNK]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(f"SELECT key, value FROM scores WHERE key IN ({marks})", part)
                out.update(rows.fetchall())
        return out

    def put_many(self, items: Iterable[tuple[str, float]] | Mapping[str, float]) -> None:
        """Store ``(key, value)`` pairs and commit them (one transaction)."""
        rows = [(k, float(v)) for k, v in (items.items() if isinstance(items, Mapping) else items)]
        if not rows:
            return
        bad = [k for k, v in rows if not math.isfinite(v)]
        if bad:  # SQLite turns NaN into NULL (an IntegrityError); an infinity would poison later runs
            raise ValueError(f"refusing to cache {len(bad)} non-finite score(s), e.g. key {bad[0]}")
        with self._lock:
            with self._conn:  # commits, or rolls back on error
                self._conn.executemany(
                    "INSERT OR REPLACE INTO scores (key, value) VALUES (?, ?)", rows
                )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        """Close the connection (further use raises)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
            self._db, self._closed = None, True
