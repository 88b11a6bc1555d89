"""Locating WordNet 3.0/3.1 and SemCor 3.0, unpacking the shared archives once, and loading WordNet.

Resolution order for each resource: explicit path, environment variable, the user cache
(already unpacked), the shared archive (unpacked into the cache), nltk's data folders.
Every located copy carries a sha256 that downstream caches are keyed on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, cast

from .errors import DataNotFound, ProbegenError
from .io import sha256_file, sha256_text, write_json
from .paths import cache_dir, shared_data_candidates

# The README's checksums of the shared archives: an unpack is refused if they differ.
ARCHIVE_SHA256 = {
    "wordnet-3.0.tar.xz": "694ba8c36dbede233d14c756208c47c1ca43cb4a0d9ee1b2985d61a718a8308b",
    "wordnet-3.1.tar.xz": "861310a2ba7e6a856f0fc959123ec3c587b4a9aa87b8009ecacab1d9dcb927ef",
    "semcor-3.0.tar.xz": "8a7b35b0ab07f54f927a742686091d9d9ffdde673ca855dc38b48372b8d760ce",
}
META_NAME = ".probegen-data.json"  # hash record kept inside a data folder (hidden: not hashed itself)
_SEMCOR_PARTS = ("brown1", "brown2", "brownv")


@dataclass(frozen=True)
class DataInfo:
    """Where a lexical resource was found and the hash that identifies its contents."""

    name: str  # "wordnet" | "semcor"
    version: str  # "3.0"
    path: Path  # folder holding data.noun (WordNet) or brown1/brown2/brownv (SemCor)
    source: str  # option, env, cache, shared or nltk
    sha256: str  # the archive's sha256 when unpacked from it, else a content hash


@dataclass(frozen=True)
class _Kind:
    """What distinguishes the two resources during lookup."""

    name: str
    label: str  # for messages
    env: str
    option: str
    archive: str
    top: str  # the archive's top-level folder
    subdirs: tuple[str, ...]  # also tried below a user-given folder
    nltk_dirs: tuple[str, ...]  # relative to each nltk.data.path entry
    problem: Callable[[Path], str | None]  # why a folder is not this resource (None: it is)
    expects: str
    version: str = "3.0"
    complete: Callable[[Path], None] | None = None  # adds files the archive lacks, before the check


def _wordnet_version_problem(p: Path, want: str) -> str | None:
    if not (p / "data.noun").is_file():
        return "no data.noun"
    v = _wordnet_version(p)
    if v != want:
        return f"it is WordNet {v}, not {want} (sense keys and offsets differ)"
    if not (p / "lexnames").is_file():
        return "no lexnames (nltk needs it)"
    return None


def _wordnet_problem(p: Path) -> str | None:
    if not (p / "data.noun").is_file():
        return "no data.noun"
    v = _wordnet_version(p)
    if v != "3.0":
        return f"it is WordNet {v}, probegen needs 3.0 (sense keys and offsets differ)"
    return None


def _complete_wordnet31(p: Path) -> None:
    """Add WordNet 3.0's ``lexnames`` and ``*.exc`` files, which the 3.1 distribution lacks and which
    still hold for it (see shared/data/README.md)."""
    base = locate_wordnet().path
    for f in ["lexnames", *sorted(x.name for x in base.glob("*.exc"))]:
        if not (p / f).exists():
            shutil.copyfile(base / f, p / f)


def _semcor_problem(p: Path) -> str | None:
    missing = [d for d in _SEMCOR_PARTS if not (p / d / "tagfiles").is_dir()]
    if missing:
        return "no " + ", ".join(f"{d}/tagfiles" for d in missing)
    # nltk's own 'semcor' package has the same folders but XML files probegen cannot read
    if any(f.suffix == ".xml" for f in (p / "brown1" / "tagfiles").iterdir()):
        return "it is nltk's XML conversion, not the SGML tagfiles of SemCor 3.0"
    return None


WORDNET = _Kind(
    "wordnet", "WordNet 3.0", "PROBEGEN_WORDNET", "--wordnet", "wordnet-3.0.tar.xz", "wordnet-3.0",
    ("wordnet-3.0", "dict", "corpora/wordnet", "wordnet"), ("corpora/wordnet",), _wordnet_problem,
    "the folder holding data.noun, index.sense, ...",
)
WORDNET31 = _Kind(
    "wordnet", "WordNet 3.1", "PROBEGEN_WORDNET31", "--wordnet-source", "wordnet-3.1.tar.xz", "wordnet-3.1",
    ("wordnet-3.1", "dict"), ("corpora/wordnet31",), lambda p: _wordnet_version_problem(p, "3.1"),
    "the folder holding WordNet 3.1's data.noun, index.sense, lexnames, ...", "3.1", _complete_wordnet31,
)
SEMCOR = _Kind(
    "semcor", "SemCor 3.0", "PROBEGEN_SEMCOR", "--semcor", "semcor-3.0.tar.xz", "semcor3.0",
    ("semcor3.0", "semcor-3.0"), ("corpora/semcor3.0", "corpora/semcor"), _semcor_problem,
    "the folder holding brown1/, brown2/, brownv/ with their tagfiles/",
)


def _wordnet_version(p: Path) -> str:
    """The version named in data.noun's licence header; "3.0" if the header was stripped."""
    with open(p / "data.noun", encoding="utf-8", errors="replace") as fh:
        for _, line in zip(range(40), fh):
            if not line.startswith("  "):
                break  # the header is over
            m = re.search(r"WordNet (\d+(?:\.\d+)?) Copyright", line)
            if m:
                return m.group(1)
    return "3.0"


# ---------------------------------------------------------------- content hashes


def _data_files(root: Path) -> list[tuple[str, Path]]:
    """Regular, non-hidden files below ``root`` as (posix relative path, path), sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if not f.startswith("."):
                full = Path(dirpath) / f
                out.append((full.relative_to(root).as_posix(), full))
    return sorted(out)


def _fingerprint(files: list[tuple[str, Path]]) -> str:
    """Cheap stat-based digest telling whether a cached content hash is still valid."""
    return sha256_text("\n".join(f"{rel}\0{(st := full.stat()).st_size}\0{st.st_mtime_ns}" for rel, full in files))


def content_sha256(root: Path) -> str:
    """Deterministic hash of a data folder: sha256 over "relpath\\0filehash\\n", sorted by relpath."""
    h = hashlib.sha256()
    for rel, full in _data_files(root):
        h.update(f"{rel}\0{sha256_file(full)}\n".encode("utf-8"))
    return h.hexdigest()


def _meta_paths(root: Path) -> list[Path]:
    """Where a folder's hash record may live: inside it, or in the cache when it is read-only."""
    key = sha256_text(str(root.resolve()))[:16]
    return [root / META_NAME, cache_dir() / "data" / "hashes" / f"{key}.json"]


def _read_meta(root: Path) -> dict[str, Any] | None:
    for p in _meta_paths(root):
        try:
            meta = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and isinstance(meta.get("sha256"), str):
            return meta
    return None


def _sha256_of(root: Path) -> str:
    """The folder's recorded archive hash, else its (cached) content hash."""
    meta = _read_meta(root)
    if meta and meta.get("kind") == "archive":
        return cast(str, meta["sha256"])  # unpacked by us from a verified archive: trusted as is
    files = _data_files(root)
    fp = _fingerprint(files)
    if meta and meta.get("kind") == "content" and meta.get("fingerprint") == fp:
        return cast(str, meta["sha256"])
    sha = content_sha256(root)
    record = {"kind": "content", "sha256": sha, "fingerprint": fp}
    for p in _meta_paths(root):
        try:
            write_json(p, record)
            break
        except (OSError, ProbegenError):
            continue  # read-only data folder: fall back to the cache copy of the record
    return sha


# ---------------------------------------------------------------- archives


def _unpack(kind: _Kind, archive: Path, dest: Path) -> str:
    """Verify ``archive`` and unpack its top folder to ``dest`` atomically; returns its sha256."""
    sha = sha256_file(archive)
    want = ARCHIVE_SHA256[kind.archive]
    if sha != want:
        raise DataNotFound(
            f"{archive}: sha256 {sha[:16]}... is not the expected {want[:16]}... "
            f"(corrupt or a different release); replace it or pass {kind.option} PATH"
        )
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    except OSError as e:
        raise DataNotFound(f"cannot unpack {archive.name} into {dest.parent}: {e.strerror or e}") from None
    try:
        with tarfile.open(archive, "r:xz") as tf:
            members = tf.getmembers()
            for m in members:  # belt and braces next to filter="data": plain files under top/ only
                parts = Path(m.name).parts
                outside = Path(m.name).is_absolute() or ".." in parts or parts[:1] != (kind.top,)
                if outside or not (m.isfile() or m.isdir()):
                    raise DataNotFound(f"{archive}: unexpected member {m.name!r}; refusing to unpack")
            # filter="data" also refuses traversal and special files (Python >= 3.10.12 / 3.11.4)
            safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tf.extractall(tmp, members=members, **safe)
        src = tmp / kind.top
        if kind.complete is not None:
            kind.complete(src)
        why = kind.problem(src)
        if why:
            raise DataNotFound(f"{archive}: unpacked contents are not {kind.label} ({why})")
        # the record goes inside before the rename, so the folder never appears without it
        write_json(src / META_NAME, {"kind": "archive", "sha256": sha, "archive": kind.archive})
        try:
            os.rename(src, dest)
        except OSError:
            if kind.problem(dest) is not None:
                raise
            # another process unpacked it first: use theirs
    except (OSError, tarfile.TarError, EOFError) as e:
        raise DataNotFound(f"cannot unpack {archive} into {dest.parent}: {e}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sha


# ---------------------------------------------------------------- lookup


def _given(kind: _Kind, raw: str, source: str) -> DataInfo:
    """Resolve a user-given folder (or its well-known subfolder); raise with the reason if unusable."""
    base = Path(raw).expanduser()
    for cand in (base, *(base / s for s in kind.subdirs)):
        if cand.is_dir() and kind.problem(cand) is None:
            cand = cand.resolve()
            return DataInfo(kind.name, kind.version, cand, source, _sha256_of(cand))
    where = f"{kind.option} {raw}" if source == "option" else f"{kind.env}={raw}"
    why = kind.problem(base) if base.is_dir() else ("not a folder" if base.exists() else "no such folder")
    raise DataNotFound(f"no {kind.label} at {where} ({why}); expected {kind.expects}")


def _nltk_paths() -> list[Path]:
    try:
        import nltk.data
    except ImportError:
        return []
    return [Path(str(getattr(p, "path", p))) for p in nltk.data.path]


def _locate(kind: _Kind, path: str | None) -> DataInfo:
    if path:
        return _given(kind, str(path), "option")
    env = os.environ.get(kind.env)
    if env:
        return _given(kind, env, "env")
    cached = (cache_dir() / "data" / kind.archive.removesuffix(".tar.xz")).resolve()
    if cached.is_dir() and kind.problem(cached) is None:
        return DataInfo(kind.name, kind.version, cached, "cache", _sha256_of(cached))
    shared = shared_data_candidates()
    for folder in shared:
        archive = folder / kind.archive
        if archive.is_file():
            sha = _unpack(kind, archive, cached)
            return DataInfo(kind.name, kind.version, cached, "shared", sha)
    nltk_roots = _nltk_paths()
    for root in nltk_roots:
        for sub in kind.nltk_dirs:
            cand = root / sub
            if cand.is_dir() and kind.problem(cand) is None:
                return DataInfo(kind.name, kind.version, cand.resolve(), "nltk", _sha256_of(cand))
    raise DataNotFound(
        f"{kind.label} not found: looked at ${kind.env} (unset), {cached}, "
        f"{kind.archive} in {', '.join(map(str, shared))}, and {'/'.join(kind.nltk_dirs[:1])} under "
        f"{len(nltk_roots)} nltk data folders; pass {kind.option} PATH ({kind.expects}) or set "
        f"{kind.env}, or put shared/data/{kind.archive} beside the repository"
    )


def locate_wordnet(path: str | None = None) -> DataInfo:
    """Find WordNet 3.0: ``path`` (folder holding data.noun), $PROBEGEN_WORDNET, the cache, the shared
    archive (unpacked into the cache once), then nltk's corpora/wordnet; else DataNotFound."""
    return _locate(WORDNET, path)


def locate_wordnet31(path: str | None = None) -> DataInfo:
    """Find WordNet 3.1: ``path``, $PROBEGEN_WORDNET31, the cache, then the shared archive (unpacked into
    the cache once, with WordNet 3.0's ``lexnames`` and ``*.exc`` added); else DataNotFound."""
    return _locate(WORDNET31, path)


def locate_wndb(path: str) -> DataInfo:
    """A user-given WNDB folder of any WordNet version (``data.noun``, ``index.sense``, ``lexnames``),
    or a parent holding it in ``dict/`` or ``corpora/wordnet/``; its version is read from
    ``data.noun``'s licence header."""
    base = Path(path).expanduser()
    for cand in (base, base / "dict", base / "corpora" / "wordnet"):
        if (cand / "data.noun").is_file():
            version = _wordnet_version(cand)
            if version == "3.0":
                return _given(WORDNET, str(cand), "option")  # the same record as --wordnet PATH
            why = _wordnet_version_problem(cand, version)
            if why:
                raise DataNotFound(f"WNDB folder {path}: {why}")
            cand = cand.resolve()
            return DataInfo("wordnet", version, cand, "option", _sha256_of(cand))
    why = ("not a folder" if base.exists() and not base.is_dir()
           else "no data.noun" if base.exists() else "no such folder")
    raise DataNotFound(f"no WNDB wordnet at {path} ({why}); expected the folder holding data.noun, index.sense, "
                       "lexnames, ...")


def locate_semcor(path: str | None = None) -> DataInfo:
    """Find SemCor 3.0 (SGML tagfiles): ``path`` (folder holding brown1/brown2/brownv), $PROBEGEN_SEMCOR,
    the cache, the shared archive, then nltk folders with that layout; else DataNotFound."""
    return _locate(SEMCOR, path)


# ---------------------------------------------------------------- loading


def _reader_class() -> type[Any]:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class WordNet30Reader(WordNetCorpusReader):  # type: ignore[misc]  # nltk has no type hints
        """nltk's reader without the WordNet-version map (for OMW) it builds at construction by loading
        nltk_data's 'wordnet', which need not be installed; no OMW reader is attached, so nothing maps."""

        def map_wn(self, version: str = "wordnet") -> None:
            return None

    return WordNet30Reader


@lru_cache(maxsize=4)
def _load_reader(root: str) -> Any:
    import nltk.data

    # nltk >= 3.9 only opens files below nltk.data.path: admit exactly this folder
    if root not in nltk.data.path:
        nltk.data.path.append(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": expected
        return _reader_class()(root, None)


def load_wordnet(path: str | None = None) -> Any:
    """An nltk ``WordNetCorpusReader`` on the located WordNet 3.0, memoised per folder (no nltk download)."""
    return _load_reader(str(locate_wordnet(path).path))


def load_wndb(info: DataInfo) -> Any:
    """An nltk ``WordNetCorpusReader`` on a located WNDB folder of any version (memoised per folder)."""
    return _load_reader(str(info.path))


def synset_counts(wn: Any) -> dict[str, int]:
    """Synsets per part of speech (adjectives include satellites), from the reader's lemma index."""
    offsets: dict[str, set[int]] = {"n": set(), "v": set(), "a": set(), "r": set()}
    for by_pos in wn._lemma_pos_offset_map.values():  # built at load: far faster than all_synsets()
        for pos, offs in by_pos.items():
            offsets["a" if pos == "s" else pos].update(offs)
    return {"noun": len(offsets["n"]), "verb": len(offsets["v"]), "adj": len(offsets["a"]), "adv": len(offsets["r"])}


def data_report(wordnet: str | None = None, semcor: str | None = None) -> list[dict[str, Any]]:
    """One row per resource for ``probegen data``: name, version, source, path, sha256, error (the reason
    it cannot be located; the other fields are then None), and WordNet's ``synsets`` or SemCor's ``files``."""
    rows = []
    for kind, path in ((WORDNET, wordnet), (SEMCOR, semcor)):
        try:
            info = _locate(kind, path)
        except DataNotFound as e:
            rows.append({"name": kind.name, "version": None, "source": None, "path": None, "sha256": None,
                         "error": str(e)})
            continue
        row: dict[str, Any] = {"name": info.name, "version": info.version, "source": info.source,
                               "path": str(info.path), "sha256": info.sha256, "error": None}
        if kind is WORDNET:
            row["synsets"] = synset_counts(load_wordnet(str(info.path)))
        else:
            row["files"] = sum(len(list((info.path / d / "tagfiles").iterdir())) for d in _SEMCOR_PARTS)
        rows.append(row)
    return rows
