"""Atomic file writing and small JSON/JSONL helpers shared by every writer."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

import yaml
from yaml.composer import ComposerError

from .errors import DatasetError, ProbegenError

# the process umask, read once: files written through a temp file get the usual mode, not mkstemp's 0600
_UMASK = os.umask(0o022)
os.umask(_UMASK)


#: errors of a write that carry no file name (a full disk, a quota, a failing device)
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS}


def _raise_write_failure(e: BaseException | None, path: Path) -> None:
    """Re-raise a nameless write failure (``OSError: [Errno 28]``) as one line naming ``path``."""
    if isinstance(e, OSError) and e.errno in _WRITE_ERRNOS and e.filename is None:
        raise ProbegenError(f"{e.strerror or e} while writing {path}; nothing was written") from None


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp file path beside ``path``, renamed onto ``path`` only if the body succeeds (for writers
    that open the file themselves, e.g. ``wn.lmf.dump``; :func:`atomic_write` is the file-handle version)."""
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
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        _raise_write_failure(e, path)
        raise


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Write to a temp file beside ``path``, renamed into place only on success (never half-written)."""
    with atomic_path(path) as tmp:
        # opened by descriptor, so fh.name is not the random temp name (gzip would write it into its
        # header and the bytes would differ run to run)
        with open(os.open(tmp, os.O_WRONLY | os.O_TRUNC), mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh


def _file_record(path: Path) -> Path:
    """The hidden sibling in which probegen records a single-file output it wrote (name and sha256)."""
    return path.with_name(f".{path.name}.probegen-output.json")


def check_file_replaceable(path: str | Path) -> None:
    """Refuse to replace an existing file at the user-named output ``path`` unless probegen wrote it:
    its record beside it (:func:`atomic_output_file`) must exist and match the file's sha256.

    >>> import tempfile
    >>> notes = Path(tempfile.mkdtemp()) / "notes.txt"
    >>> _ = notes.write_text("mine")
    >>> check_file_replaceable(notes)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: cannot write to .../notes.txt: the file exists and probegen did not write it
    (no .notes.txt.probegen-output.json beside it); choose another --out or remove it
    >>> shutil.rmtree(notes.parent)
    """
    path = Path(path)
    if path.is_dir():
        raise ProbegenError(f"cannot write to {path}: it is a directory; --out names a file here")
    if not path.exists() and not path.is_symlink():
        return
    if not path.is_file():
        raise ProbegenError(f"cannot write to {path}: it exists and is not a regular file")
    rec = _file_record(path)
    try:
        want = _small_json(rec)["sha256"]
    except (TypeError, KeyError):
        raise ProbegenError(f"cannot write to {path}: the file exists and probegen did not write it "
                            f"(no {rec.name} beside it); choose another --out or remove it") from None
    if want != sha256_file(path):
        raise ProbegenError(f"cannot write to {path}: it was changed after probegen wrote it; "
                            "choose another --out or remove it")


@contextmanager
def atomic_output_file(path: str | Path, mode: str = "w", check: Any = None) -> Iterator[Any]:
    """:func:`atomic_write` for a file the user named with ``--out``: an existing file is replaced
    only if probegen wrote it and it is unchanged (checked before and again just before the
    rename), and the new file is recorded beside it so a later run may replace it in turn.
    ``check``: called with the written temp file's path before the rename (an export reading
    itself back); what it raises leaves nothing written."""
    path = Path(path)
    check_file_replaceable(path)
    with atomic_path(path) as tmp:
        with open(os.open(tmp, os.O_WRONLY | os.O_TRUNC), mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
        if check is not None:
            check(tmp)
        check_file_replaceable(path)
        # recorded before the rename: a kill in between leaves a record that matches no file, which
        # refuses (never loses) the old one
        write_json(_file_record(path), {"probegen_output": 1, "file": path.name, "sha256": sha256_file(tmp)})


#: written last into every :func:`atomic_dir` output: its kind, every file (with sha256) and folder.
#: Only a directory holding exactly those files is ever replaced; loaders check the files.
MARKER = ".probegen-output.json"
#: tags of atomic_dir's siblings, ``.NAME.TAG-PID-HEX``: the output being written, the previous one moved aside
_TMP, _OLD = "probegen-tmp", "probegen-old"
#: the ``PID-HEX`` of the atomic_dir calls under way in this process (a container may reuse a dead run's pid)
_ACTIVE: set[str] = set()

_log = logging.getLogger(__name__)


def ensure_writable(out: str | Path, replace: bool = False, inputs: Iterable[str | Path | None] = (),
                    homes: Iterable[str | Path] = (), writer: str | None = None) -> None:
    """Fail before any expensive work if the output folder ``out`` (maybe not yet there) cannot be written
    (its parent must be writable: outputs are renamed into place).

    ``replace``: an existing ``out`` must be one :func:`atomic_dir` may replace. ``inputs``, ``homes``:
    see :func:`check_output_not_input`. ``writer``: the command's output family (a key of :data:`WRITERS`);
    an existing output of another family is refused now, not only when :func:`atomic_dir` swaps.
    """
    check_output_not_input(out, inputs, homes)
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
        _check_replaceable(out, writer)


def check_output_not_input(out: str | Path, inputs: Iterable[str | Path | None],
                           homes: Iterable[str | Path] = ()) -> None:
    """Refuse an output that is, holds or sits inside one of the existing ``inputs`` (real paths
    compared, so links count). ``homes``: inputs that the output may sit inside (by design, e.g. a
    study's ``score`` folder) but still must not be or hold.

    >>> check_output_not_input("runs/a", ["datasets/a", None, "pwn31"])
    """
    o = Path(os.path.realpath(out))
    homes = {Path(os.path.realpath(h)) for h in homes}
    for given in [*inputs, *homes]:
        if given is None or not os.path.lexists(given):  # not a path (e.g. a wordnet name): nothing to overwrite
            continue
        i = Path(os.path.realpath(given))
        if i.is_relative_to(o):
            raise ProbegenError(f"output {o} would overwrite the input {i}; choose another --out")
        if o.is_relative_to(i) and i not in homes:
            raise ProbegenError(f"output {o} is inside the input {i}; choose another --out")


def _contents(root: Path) -> tuple[set[str], set[str]]:
    """Files and folders under ``root`` as relative POSIX paths, without the marker (links are files)."""
    files: set[str] = set()
    dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for d in dirnames:
            (files if os.path.islink(os.path.join(dirpath, d)) else dirs).add((rel / d).as_posix())
        files.update((rel / f).as_posix() for f in filenames)
    files.discard(MARKER)
    return files, dirs


#: the families of commands whose outputs replace only each other's (``writer`` in the marker)
WRITERS = {
    "dataset": "a dataset (written by `probegen make` or `filter`)",
    "run": "a run (written by `probegen eval`, `bias`, `compare` or `study score`)",
    "study": "a human study (written by `probegen study make`)",
    "export": "an export (written by `probegen export`)",
    "output": "a probegen output",
}


def _manifest_kind(root: Path) -> Any:
    try:
        return _small_json(root / "manifest.json")["kind"]
    except (TypeError, KeyError):
        return None


def _layout_writer(root: Path) -> str:
    """The family that wrote the output ``root``, told by its layout: a manifest of kind ``study`` or
    ``export``, another manifest (a dataset), a ``results.json`` (a run), else ``output``."""
    kind = _manifest_kind(root)
    if kind in ("study", "export"):
        return str(kind)
    if kind is not None:
        return "dataset"
    return "run" if (root / "results.json").is_file() else "output"


def output_writer(root: str | Path) -> str | None:
    """The writer family (a key of :data:`WRITERS`) of the output ``root``: its marker's ``writer``, else
    its layout (older markers); None without a marker."""
    marker = _read_marker(Path(root))
    if marker is None:
        return None
    w = marker.get("writer")
    return w if w in WRITERS else _layout_writer(Path(root))


def _write_marker(root: Path) -> None:
    """Record what probegen wrote in ``root`` (called last, when the output is complete)."""
    files, dirs = _contents(root)
    kind = _manifest_kind(root) or ("run" if (root / "results.json").is_file() else "output")
    write_json(root / MARKER, {"probegen_output": 1, "kind": kind, "writer": _layout_writer(root),
                               "files": file_hashes(root, files), "dirs": sorted(dirs)})


def _read_marker(root: Path) -> dict[str, Any] | None:
    """The marker of the probegen output ``root``; None if it has none or it is not a valid one."""
    m = _small_json(root / MARKER)
    ok = isinstance(m, dict) and isinstance(m.get("files"), dict) and isinstance(m.get("dirs"), list)
    return m if ok else None


def record_in_output(root: str | Path, name: str) -> None:
    """Add the file ``name``, just written into the finished output ``root`` (a plot drawn into a run), to
    its marker, so the output stays replaceable. No marker: nothing to do."""
    root = Path(root)
    marker = _read_marker(root)
    if marker is not None and (root / name).is_file():
        marker["files"] = {**marker["files"], Path(name).as_posix(): sha256_file(root / name)}
        write_json(root / MARKER, marker)


def _check_replaceable(path: Path, writer: str | None = None) -> None:
    """Refuse to replace a directory unless it is empty or holds its marker and exactly the files listed
    there, unchanged. ``writer``: the new output's family; an output of another family is refused."""
    try:
        cwd = Path.cwd().resolve()
    except OSError:  # the current directory was deleted: it cannot be inside path
        cwd = None
    if cwd is not None and cwd.is_relative_to(path.resolve()):
        raise ProbegenError(f"cannot write to {path}: it is (or contains) the current directory")
    names = sorted(p.name for p in path.iterdir())
    if not names:
        return
    marker = _read_marker(path)
    if marker is None:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise ProbegenError(f"cannot write to {path}: it holds {shown} and probegen did not write it (no {MARKER}; "
                            "older probegen outputs have none either); remove it or choose another --out")
    have = output_writer(path)
    assert have is not None  # it has a marker (read above)
    if writer is not None and have != writer:
        raise ProbegenError(f"cannot write to {path}: it is {WRITERS[have]}, and this command writes "
                            f"{WRITERS[writer].split(' (')[0]}, which replaces only an earlier one; "
                            "remove it or choose another --out")
    files, dirs = _contents(path)
    extra = sorted((files - set(marker["files"])) | (dirs - set(marker["dirs"])))
    if extra:
        raise ProbegenError(f"cannot write to {path}: it holds {extra[0]}, which probegen did not write; "
                            "move it away or choose another --out")
    for name in sorted(files):
        if sha256_file(path / name) != marker["files"][name]:
            raise ProbegenError(f"cannot write to {path}: {name} was changed since probegen wrote it; "
                                "move it away or choose another --out")


def _alive(tag: str) -> bool:
    """Whether the process that named an atomic_dir sibling ``PID-HEX`` may still be writing it."""
    pid = int(tag.partition("-")[0])
    if pid == os.getpid():
        return tag in _ACTIVE
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _leftovers(path: Path, kind: str) -> list[Path]:
    """atomic_dir's ``kind`` siblings of ``path`` left by a dead process and holding the marker (or
    nothing), newest first."""
    prefix = f".{path.name}.{kind}-"
    try:
        found = [(p, p.name[len(prefix):]) for p in path.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return []
    out = [p for p, tag in found if re.fullmatch(r"\d+-[0-9a-f]+", tag) and not _alive(tag) and p.is_dir()
           and not p.is_symlink() and ((p / MARKER).is_file() or not any(p.iterdir()))]
    return sorted(out, key=lambda p: p.stat().st_mtime, reverse=True)


def recover(path: str | Path) -> None:
    """Finish what an interrupted :func:`atomic_dir` on ``path`` left beside it, one warning line each:
    the previous output moved aside is renamed back if ``path`` is missing, else removed; a half-written
    new output is removed. Called by every write and load of a probegen output."""
    path = Path(os.path.realpath(path))
    for kind in (_OLD, _TMP):
        for left in _leftovers(path, kind):
            try:
                if kind == _OLD and not os.path.lexists(path):
                    os.rename(left, path)
                    _log.warning("restored the previous output %s from an interrupted write", path)
                else:
                    shutil.rmtree(left)
                    _log.warning("removed %s, left beside %s by an interrupted write", left, path)
            except OSError as e:
                _log.warning("could not clean up %s, left by an interrupted write: %s", left, e.strerror or e)


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path`` (empty but for a stub marker); on success it becomes
    ``path`` by one rename, so readers never see a mix and a failing writer leaves ``path`` as it was.

    An existing ``path`` (an earlier output of the same family holding only its own files, or an
    empty folder) is renamed aside, the new one renamed in, the old one deleted; a kill in between is
    undone by :func:`recover`. The marker (:data:`MARKER`) is written last.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for text in ("old", "new"):
    ...     with atomic_dir(root / "ds") as tmp:
    ...         _ = (tmp / "manifest.json").write_text(text)
    >>> [p.name for p in root.iterdir()], sorted(p.name for p in (root / "ds").iterdir())
    (['ds'], ['.probegen-output.json', 'manifest.json'])
    >>> shutil.rmtree(root)
    """
    path = Path(os.path.realpath(path))  # a symlinked output keeps its link
    if path.exists() and not path.is_dir():
        raise ProbegenError(f"cannot write to {path}: it exists and is not a directory")
    recover(path)
    if path.is_dir():
        _check_replaceable(path)
    tag = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp, old = path.with_name(f".{path.name}.{_TMP}-{tag}"), path.with_name(f".{path.name}.{_OLD}-{tag}")
    _ACTIVE.add(tag)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()  # not mkdtemp: the result keeps the usual permissions (umask), not 0700
        # ours, if left behind
        (tmp / MARKER).write_text('{"probegen_output": 1, "incomplete": true}\n', encoding="utf-8")
    except OSError as e:
        _ACTIVE.discard(tag)
        raise ProbegenError(f"cannot write to {path.parent}: {e.strerror or e}") from None
    try:
        yield tmp
        _write_marker(tmp)
        if path.exists():
            _check_replaceable(path, _layout_writer(tmp))  # what changed there meanwhile; another command's output
            os.rename(path, old)
        os.rename(tmp, path)
    except BaseException:
        # an interrupt between the two renames puts the old directory back
        if old.exists() and not path.exists():
            os.rename(old, path)
        shutil.rmtree(tmp, ignore_errors=True)
        _raise_write_failure(sys.exc_info()[1], path)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
        _ACTIVE.discard(tag)


def file_hashes(root: str | Path, names: Iterable[str]) -> dict[str, str]:
    """``{name: sha256}`` of files under ``root`` (a manifest's ``files`` block)."""
    return {name: sha256_file(Path(root) / name) for name in sorted(names)}


def verify_files(root: str | Path, files: Any, manifest_name: str = "manifest.json") -> None:
    """Check a dataset directory against its marker (:func:`verify_output`) and the manifest's ``files``
    block (required); DatasetError naming the first mismatch."""
    root = Path(root)
    if files is None:
        raise DatasetError(f"{root / manifest_name} has no 'files' block (the sha256 of each data file), so the "
                           "dataset cannot be checked; it was edited or written by an old probegen: regenerate it")
    hashed: dict[str, str] = {}  # the marker lists the same data files: each is hashed once
    _verify_hashes(root, files, manifest_name, hashed)
    verify_output(root, hashed)


def verify_output(root: str | Path, hashed: dict[str, str] | None = None) -> None:
    """Check every file the marker of the output ``root`` lists against its sha256 (DatasetError naming
    the first mismatch); an output without a marker has nothing to check."""
    root = Path(root)
    if not (root / MARKER).is_file():
        return
    marker = _read_marker(root)
    if marker is None:
        raise DatasetError(f"{root / MARKER}: not a valid probegen marker (it was edited); regenerate the output")
    _verify_hashes(root, marker["files"], MARKER, hashed)


def _verify_hashes(root: Path, files: Any, listing: str, hashed: dict[str, str] | None = None) -> None:
    """Check ``{name: sha256}`` (from the file ``listing`` in ``root``) against the files under ``root``;
    ``hashed`` memoises the hashes across the checks of one load."""
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise DatasetError(f"{root / listing}: 'files' must map file names to sha256 hashes")
    what = "output" if listing == MARKER else "dataset"
    for name, want in sorted(files.items()):
        p = root / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise DatasetError(f"{root / listing}: file name {name!r} is outside the dataset")
        if not p.is_file():
            raise DatasetError(f"{p} is listed in {listing} but missing; the {what} is incomplete, regenerate it")
        got = hashed[name] if hashed is not None and name in hashed else sha256_file(p)
        if hashed is not None:
            hashed[name] = got
        if got != want:
            raise DatasetError(f"{p} was changed after the {what} was written (sha256 differs from {listing}); "
                               "regenerate it or restore the file")


#: the key written beside an entry whose value was not finite: ``{"df": null, "df_not_finite": "Infinity"}``
NOT_FINITE = "_not_finite"


def _non_finite_name(x: float) -> str:
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def finite_json(obj: Any) -> Any:
    """``obj`` with every non-finite number (JSON has none) replaced by ``null``; in an object the reason
    is written beside it as ``KEY_not_finite`` (unless a ``KEY_note`` says why). Tuples become lists.

    >>> finite_json({"df": float("inf"), "p": 0.5, "ci": [float("nan"), 1.0]})
    {'df': None, 'df_not_finite': 'Infinity', 'p': 0.5, 'ci': [None, 1.0], 'ci_not_finite': {'0': 'NaN'}}
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            out[k] = finite_json(v)
            why = _why_not_finite(v)
            if why is not None and isinstance(k, str) and f"{k}_note" not in obj:
                out[f"{k}{NOT_FINITE}"] = why
        return out
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def _why_not_finite(v: Any) -> Any:
    """What :func:`finite_json` writes beside ``v``: the name of a non-finite number, or for a list
    holding some, ``{index: name}``; None where ``v`` is neither."""
    if isinstance(v, float) and not math.isfinite(v):
        return _non_finite_name(v)
    if isinstance(v, (list, tuple)):
        bad = {str(i): _non_finite_name(x) for i, x in enumerate(v) if isinstance(x, float) and not math.isfinite(x)}
        return bad or None
    return None


def json_text(obj: Any, indent: int | None = None, default: Any = None) -> str:
    """The one serialiser of every JSON and JSONL probegen writes: strict (:func:`finite_json`), sorted
    keys, UTF-8; ``indent`` None is one canonical line; ``default``: as ``json.dumps``'s.

    >>> json_text({"b": 1, "a": float("-inf")})
    '{"a": null, "a_not_finite": "-Infinity", "b": 1}'
    """
    return json.dumps(finite_json(obj), sort_keys=True, ensure_ascii=False, allow_nan=False, indent=indent,
                      default=default)


#: canonical one-line JSON (:func:`json_text`): equal objects give byte-identical text
dumps = json_text


def write_json(path: str | Path, obj: Any) -> None:
    """Atomically write pretty, key-sorted, strict JSON (:func:`json_text`)."""
    with atomic_write(path) as fh:
        fh.write(json_text(obj, indent=2) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Atomically write one canonical JSON object per line; returns the row count."""
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(dumps(row) + "\n")
            n += 1
    return n


def check_docs_back(out: str | Path, name: str, docs: list[dict[str, Any]], back: list[dict[str, Any]]) -> None:
    """Refuse (one line, before the rename) docs an export read back from its file ``name`` that are not
    the docs it wrote: another count, or another id, choices or gold (issue 46).

    >>> check_docs_back("x", "docs.jsonl", [{"id": "a", "choices": ["p", "q"], "gold": 1}], [])
    Traceback (most recent call last):
    probegen.errors.ProbegenError: x: read back, docs.jsonl holds 0 docs of 1; nothing was written
    """
    if len(back) != len(docs):
        raise ProbegenError(f"{out}: read back, {name} holds {len(back)} docs of {len(docs)}; nothing was written")
    for i, (d, b) in enumerate(zip(docs, back)):
        for key in ("id", "choices", "gold"):
            if d.get(key) != b.get(key):
                raise ProbegenError(f"{out}: read back, doc {i + 1} of {name} has another {key} ({b.get(key)!r}, "
                                    f"written {d.get(key)!r}); nothing was written")


#: a manifest is a few KB; a bigger one is not a probegen manifest
MAX_MANIFEST_BYTES = 16 << 20


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The JSON object in the manifest file ``path``, or one error line naming it."""
    obj = parse_json(read_text(path, MAX_MANIFEST_BYTES, "manifest"), path)
    if not isinstance(obj, dict):
        raise DatasetError(f"{path}: not a JSON object (a probegen manifest is one)")
    return obj


class NotAFile(DatasetError):
    """An input that is not a regular file (a FIFO, ``/dev/zero``, a socket): refused unread, since
    reading it could block for ever or never end."""


def _file_kind(mode: int) -> str:
    """What a non-regular, non-directory file is, for messages.

    >>> _file_kind(stat.S_IFIFO), _file_kind(stat.S_IFCHR)
    ('a FIFO (named pipe)', 'a character device')
    """
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str | Path, what: str = "file") -> None:
    """Refuse (:class:`NotAFile`) an existing path that is neither a regular file nor a directory; a
    missing path passes (its reader says so).

    >>> check_regular("/dev/zero", "dataset")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.io.NotAFile: /dev/zero is a character device, not a regular file: give the dataset as a regular
    file or folder
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise NotAFile(f"{path} is {_file_kind(mode)}, not a regular file: give the {what} as a regular file or folder")


def open_input(path: str | Path, what: str = "file") -> BinaryIO:
    """The input file ``path`` opened for binary reading, the one way probegen opens a file it did not
    write: a non-regular file is :class:`NotAFile`, refused without blocking; a directory or a missing
    file is the ``OSError`` ``open()`` raises.

    >>> open_input("/dev/zero", "spec file")
    Traceback (most recent call last):
    probegen.io.NotAFile: /dev/zero is a character device, not a regular file: give the spec file as a regular file
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotAFile(f"{path} is {_file_kind(mode)}, not a regular file: give the {what} as a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, max_bytes: int | None = None, what: str = "file",
               error: type[ProbegenError] | None = None) -> bytes:
    """The bytes of an input file (:func:`open_input`), or one error line naming it: unreadable or
    larger than ``max_bytes`` (checked before and during the read). ``error``: the class raised."""
    error = error or DatasetError
    path = Path(path)
    try:
        with open_input(path, what) as fh:
            size = os.fstat(fh.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise error(f"{path}: {what} too large ({size:,} bytes; at most {max_bytes:,})")
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror or e}") from None
    if max_bytes is not None and len(data) > max_bytes:  # it grew while being read
        raise error(f"{path}: {what} too large (over {max_bytes:,} bytes)")
    return data


def read_text(path: str | Path, max_bytes: int | None = None, what: str = "file",
              error: type[ProbegenError] | None = None) -> str:
    """The UTF-8 text of an input file (:func:`read_bytes`); not UTF-8 is ``FILE:LINE: not UTF-8 at byte N``."""
    return decode_utf8(read_bytes(path, max_bytes, what, error), path, error)


def _small_json(path: Path) -> Any:
    """The JSON of one of probegen's own small bookkeeping files; None if it is missing, not a regular
    file, too large or not JSON (all mean "not written by probegen")."""
    try:
        return json.loads(read_bytes(path, MAX_MANIFEST_BYTES, "probegen record").decode("utf-8"))
    except (ProbegenError, ValueError):
        return None


def decode_utf8(data: bytes, path: str | Path, error: type[ProbegenError] | None = None) -> str:
    """``data`` decoded as UTF-8 (a leading BOM dropped), or an error naming the line and byte offset.

    >>> decode_utf8(b"ok\\nbad \\xff", "f.txt")
    Traceback (most recent call last):
    probegen.errors.DatasetError: f.txt:2: not UTF-8 at byte 7 (0xff)
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise (error or DatasetError)(f"{path}:{line}: not UTF-8 at byte {e.start} (0x{data[e.start]:02x})") from None


class _NonFinite(ValueError):
    """A JSON number Python reads as NaN or an infinity (``NaN``, ``Infinity``, ``1e400``)."""


def _no_constant(token: str) -> Any:
    raise _NonFinite(token)


def _finite_float(token: str) -> float:
    x = float(token)
    if not math.isfinite(x):
        raise _NonFinite(token)
    return x


def _line_of(text: str, token: str) -> int:
    """The line of the first ``token`` in ``text`` outside a JSON string (1 if not found)."""
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|' + re.escape(token), text):
        if not m.group().startswith('"'):
            return text.count("\n", 0, m.start()) + 1
    return 1


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` of ``text``, refusing aliases (a "billion laughs"; no probegen file needs them)
    with yaml's ``ComposerError``, which carries the line.

    >>> load_yaml("a: [1, 2]")
    {'a': [1, 2]}
    >>> import yaml
    >>> try:
    ...     load_yaml("a: &x [1, 2]\\nb: *x")
    ... except yaml.YAMLError as e:
    ...     print(e.problem, e.problem_mark.line + 1)
    found alias *x, which probegen does not accept: write the value out 2
    """
    return yaml.load(text, Loader=_NoAliasLoader)


def load_yaml_file(raw: bytes, name: str) -> Any:
    """:func:`load_yaml` of a file's bytes; not UTF-8 or not YAML is one line naming ``name`` and the line.

    >>> load_yaml_file(b"a: 1", "x.yaml")
    {'a': 1}
    >>> try:
    ...     load_yaml_file(b"a: [1", "x.yaml")
    ... except ProbegenError as e:
    ...     print(e)
    x.yaml:1: not a YAML/JSON file (expected ',' or ']', but got '<stream end>')
    """
    try:
        return load_yaml(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ProbegenError(f"{name}: not UTF-8 text (byte {e.start})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ProbegenError(f"{name}{where}: not a YAML/JSON file "
                            f"({getattr(e, 'problem', None) or 'parse error'})") from None


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]  # yaml has no type hints here
    """yaml's SafeLoader that raises on an alias before it is composed."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ComposerError(None, None, f"found alias *{event.anchor}, which probegen does not accept: "
                                "write the value out", event.start_mark)
        return super().compose_node(parent, index)


def parse_json(text: str, path: str | Path, line: int | None = None) -> Any:
    """``json.loads`` for input files: DatasetError ``FILE:LINE: why`` for malformed JSON, a non-finite
    number, an integer too long or nesting too deep. ``line``: a JSONL row's (else found in ``text``).

    >>> parse_json('{"a": [1, NaN]}', "x.json")
    Traceback (most recent call last):
    probegen.errors.DatasetError: x.json:1: NaN is not a finite number
    """
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except _NonFinite as e:
        token = str(e)
        raise DatasetError(f"{path}:{line or _line_of(text, token)}: {token} is not a finite number") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{line or e.lineno}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise DatasetError(f"{path}:{line or 1}: JSON nested too deeply") from None
    except ValueError as e:  # an integer of more digits than Python converts (sys.set_int_max_str_digits)
        raise DatasetError(f"{path}:{line or 1}: unreadable number ({str(e).split(';')[0]})") from None


def json_type(v: Any) -> str:
    """What a parsed JSON value is, for messages.

    >>> [json_type(v) for v in (None, True, 3, "x", [], {})]
    ['null', 'a boolean', 'a number', 'a string', 'a list', 'an object']
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(v), type(v).__name__)


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, row) of each non-blank line of a JSONL file; a malformed row is a DatasetError FILE:LINE."""
    for i, line in enumerate(read_text(path).split("\n"), 1):
        if line.strip():
            yield i, parse_json(line, path, i)


#: what :func:`first_jsonl_row` returns for a first line that is not JSON
UNPARSED = object()


def first_jsonl_row(path: str | Path) -> Any:
    """The first non-blank line of a JSONL file parsed, for telling formats apart (bad bytes read as
    U+FFFD): :data:`UNPARSED` if it does not parse, None for an unreadable or blank file."""
    try:
        with open_input(path, "dataset") as fh:
            for raw in fh:
                if raw.strip():
                    try:
                        return json.loads(raw.decode("utf-8", errors="replace"))
                    except (ValueError, RecursionError):
                        return UNPARSED
    except OSError:
        return None
    return None


def read_jsonl(path: str | Path) -> list[Any]:
    """The rows of a JSONL file (:func:`iter_jsonl`)."""
    return [row for _, row in iter_jsonl(path)]


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open_input(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
