"""Atomic file writing and small JSON/JSONL helpers shared by every writer."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import ProbegenError

# the process umask, read once: files written through a temp file get the usual mode, not mkstemp's 0600
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp file path beside ``path``, renamed onto ``path`` only if the body succeeds.

    For writers that open the file themselves (e.g. ``wn.lmf.dump``); :func:`atomic_write` is the
    file-handle version. An interrupted or failing writer never leaves a half-written file behind.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise ProbegenError(f"cannot write to {path.parent}: {e.strerror or e}") from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Write to a temp file beside ``path`` and rename it into place only on success.

    An interrupted or failing writer never leaves a half-written file behind.
    """
    with atomic_path(path) as tmp:
        # opened by descriptor, so fh.name is not the random temp name (gzip would write it into its
        # header and the bytes would differ run to run)
        with open(os.open(tmp, os.O_WRONLY | os.O_TRUNC), mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh


#: files that mark a directory as a probegen dataset or run, which a new output may replace
OUTPUT_MARKERS = ("manifest.json", "results.json")


def ensure_writable(out: str | Path, replace: bool = False) -> None:
    """Fail before any expensive work if the output folder ``out`` (maybe not yet there) cannot be written.

    Outputs are written beside ``out`` and renamed into place, so its parent must be writable.
    ``replace``: ``out`` will be written by :func:`atomic_dir`, so an existing folder must be
    one it may replace (an earlier probegen output or an empty folder).
    """
    out = Path(os.path.realpath(out))
    if out.exists() and not out.is_dir():
        raise ProbegenError(f"cannot write to {out}: it exists and is not a directory")
    probe = out.parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ProbegenError(f"cannot write to {out}: {probe} is not a directory")
    if not os.access(probe, os.W_OK):
        raise ProbegenError(f"cannot write to {out}: {probe} is not writable")
    if replace and out.is_dir():
        _check_replaceable(out)


def _check_replaceable(path: Path) -> None:
    """Refuse to replace a directory that is not an earlier probegen output (or empty)."""
    try:
        cwd = Path.cwd().resolve()
    except OSError:  # the current directory was deleted: it cannot be inside path
        cwd = None
    if cwd is not None and cwd.is_relative_to(path.resolve()):
        raise ProbegenError(f"cannot write to {path}: it is (or contains) the current directory")
    if any(path.iterdir()) and not any((path / m).is_file() for m in OUTPUT_MARKERS):
        raise ProbegenError(
            f"cannot write to {path}: it exists and is not a probegen dataset or run "
            f"(no {' or '.join(OUTPUT_MARKERS)}); choose another --out or remove it"
        )


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield an empty temporary sibling of ``path``; on success it becomes ``path`` by one rename.

    Readers see the old directory or the complete new one, never a mix: an interrupted or
    failing writer leaves ``path`` as it was and removes the temporary directory. An existing
    ``path`` (an earlier probegen output or an empty folder) is renamed aside, the new one is
    renamed in, then the old one is deleted.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for text in ("old", "new"):
    ...     with atomic_dir(root / "ds") as tmp:
    ...         _ = (tmp / "manifest.json").write_text(text)
    >>> [p.name for p in root.iterdir()], (root / "ds" / "manifest.json").read_text()
    (['ds'], 'new')
    >>> shutil.rmtree(root)
    """
    path = Path(os.path.realpath(path))  # a symlinked output keeps its link
    if path.exists() and not path.is_dir():
        raise ProbegenError(f"cannot write to {path}: it exists and is not a directory")
    if path.is_dir():
        _check_replaceable(path)
    stem = f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}"
    tmp, old = path.with_name(stem + ".tmp"), path.with_name(stem + ".old")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()  # not mkdtemp: the result keeps the usual permissions (umask), not 0700
    except OSError as e:
        raise ProbegenError(f"cannot write to {path.parent}: {e.strerror or e}") from None
    try:
        yield tmp
        if path.exists():
            os.rename(path, old)
        os.rename(tmp, path)
    except BaseException:
        # an interrupt between the two renames puts the old directory back
        if old.exists() and not path.exists():
            os.rename(old, path)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def file_hashes(root: str | Path, names: Iterable[str]) -> dict[str, str]:
    """``{name: sha256}`` of files under ``root`` (a manifest's ``files`` block)."""
    return {name: sha256_file(Path(root) / name) for name in sorted(names)}


def write_rows_dataset(out: str | Path, rows_file: str, rows: Iterable[Any], manifest: dict[str, Any],
                       manifest_name: str = "manifest.json") -> Path:
    """Write a one-file dataset (``rows_file`` as JSONL) and its manifest, with the file's sha256
    added to it, as one directory renamed into place once (:func:`atomic_dir`)."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        write_jsonl(tmp / rows_file, rows)
        write_json(tmp / manifest_name, {**manifest, "files": file_hashes(tmp, [rows_file])})
    return out


def verify_files(root: str | Path, files: Any, manifest_name: str = "manifest.json") -> None:
    """Check the files a manifest lists against their recorded sha256 (DatasetError naming the first mismatch).

    A manifest without a ``files`` block (written before probegen recorded hashes) passes.
    """
    from .errors import DatasetError

    if files is None:
        return
    root = Path(root)
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise DatasetError(f"{root / manifest_name}: 'files' must map file names to sha256 hashes")
    for name, want in sorted(files.items()):
        p = root / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise DatasetError(f"{root / manifest_name}: file name {name!r} is outside the dataset")
        if not p.is_file():
            raise DatasetError(f"{p} is listed in {manifest_name} but missing; the dataset is incomplete, regenerate it")
        if sha256_file(p) != want:
            raise DatasetError(f"{p} was changed after the dataset was written (sha256 differs from {manifest_name}); regenerate it or restore the file")


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
