"""Atomic file writing and small JSON/JSONL helpers shared by every writer."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import ProbegenError


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Write to a temp file beside ``path`` and rename it into place only on success.

    An interrupted or failing writer never leaves a half-written file behind.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise ProbegenError(f"cannot write to {path.parent}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def ensure_writable(out: str | Path) -> None:
    """Fail before any expensive work if ``out`` (a file or folder, maybe not yet there) cannot be written."""
    out = Path(out)
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ProbegenError(f"cannot write to {out}: {probe} is not a directory")
    if not os.access(probe, os.W_OK):
        raise ProbegenError(f"cannot write to {out}: {probe} is not writable")


def dumps(obj: Any) -> str:
    """Canonical JSON (sorted keys, no NaN) so equal objects give byte-identical text."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)


def write_json(path: str | Path, obj: Any) -> None:
    """Atomically write pretty, key-sorted JSON."""
    with atomic_write(path) as fh:
        fh.write(json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Atomically write one canonical JSON object per line; returns the row count."""
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(dumps(row) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[Any]:
    """Read a JSONL file, naming the file and line of the first malformed row."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                from .errors import DatasetError

                raise DatasetError(f"{path}:{i}: not valid JSON ({e.msg})") from None
    return rows


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
