"""The one dataset container: records plus the manifest that says how they were made.

A dataset is a directory with one JSONL records file, any extra files a kind adds and
``manifest.json`` (kind, config, seed, checksums, counts, every file's sha256), written as a whole
(:func:`probegen.io.atomic_dir`) and checked against the manifest before it is read
(:func:`probegen.io.verify_files`). Each kind's container is a dataclass on :class:`Dataset` that
says only what differs: its records file, record class, records field and title.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Collection, Generic, Iterable, TypeVar, cast

from . import io  # its writers are looked up when called: tests interrupt them there
from .errors import DatasetError
from .items import Item

__all__ = ["MANIFEST_FILE", "Dataset", "ItemsDataset", "find"]

MANIFEST_FILE = "manifest.json"

D = TypeVar("D", bound="Dataset")
R = TypeVar("R", bound=Item)


def find(path: str | Path) -> Path:
    """``path`` as a Path, once an interrupted write of it is finished (:func:`probegen.io.recover`); a
    DatasetError if it is missing or neither a regular file nor a folder."""
    p = Path(path)
    io.recover(p)
    if not p.exists():
        raise DatasetError(f"dataset {p} does not exist")
    io.check_regular(p, "dataset")
    return p


class Dataset:
    """Records (named ``records_field`` in each kind), the ``manifest`` and the ``source`` they were read
    from; subclasses are dataclasses with the fields (records, manifest, source) in that order.

    >>> import tempfile
    >>> from probegen.contexts import Context
    >>> from probegen.wordincontext.dataset import WicDataset
    >>> from probegen.wordincontext.items import WicItem
    >>> it = WicItem("q1", "bank", "n", Context("a bank loan", (2, 6)), label="finance", unit="bank")
    >>> out = WicDataset([it], {"kind": "wordincontext"}).write(Path(tempfile.mkdtemp()) / "ds")
    >>> sorted(p.name for p in out.iterdir())
    ['.probegen-output.json', 'items.jsonl', 'manifest.json']
    >>> back = WicDataset.read_dir(out)
    >>> back.records == [it], list(back.manifest["files"])
    (True, ['items.jsonl'])
    """

    title: ClassVar[str] = "probegen"  # how messages name the kind: "... is not a CoDA21 dataset"
    records_file: ClassVar[str] = "items.jsonl"
    record: ClassVar[type[Item]]
    records_field: ClassVar[str] = "items"
    fingerprint_sep: ClassVar[str] = "\n"  # CoDA21's fingerprint joins its groups with "" (kept as it was)

    # dataclass fields of every subclass, after its records field
    manifest: dict[str, Any]
    source: str

    @property
    def records(self) -> list[Item]:
        return cast("list[Item]", getattr(self, self.records_field))

    @property
    def fingerprint(self) -> str:
        """A hash of the records' content (recorded in evaluation results and studies)."""
        return io.sha256_text(self.fingerprint_sep.join(json.dumps(r.to_json(), sort_keys=True) for r in self.records))

    def write(self, out: str | Path, extra: Callable[[Path], Iterable[str]] | None = None) -> Path:
        """Write the records file, the files ``extra(tmp)`` writes (it returns their names) and
        ``manifest.json`` with every file's sha256, as one directory renamed into place."""
        out = Path(out)
        with io.atomic_dir(out) as tmp:
            io.write_jsonl(tmp / self.records_file, (r.to_json() for r in self.records))
            names = [self.records_file, *(extra(tmp) if extra else ())]
            io.write_json(tmp / MANIFEST_FILE, {**self.manifest, "files": io.file_hashes(tmp, names)})
        return out

    @classmethod
    def read_manifest(cls, root: Path, kinds: Collection[str] | None = None) -> dict[str, Any]:
        """The manifest of the dataset directory ``root`` ({} if none), once its ``kind`` is one of
        ``kinds`` (when given) and every file it lists matches its sha256 (else DatasetError)."""
        mf = root / MANIFEST_FILE
        if not mf.exists():
            return {}
        manifest = io.read_manifest(mf)
        if kinds is not None and manifest.get("kind") not in kinds:
            raise DatasetError(f"{root} is not a {cls.title} dataset (manifest kind {manifest.get('kind')!r})")
        io.verify_files(root, manifest.get("files"), MANIFEST_FILE)
        return manifest

    @classmethod
    def records_path(cls, root: Path, shown: str | Path | None = None) -> Path:
        """The records file of the directory ``root`` (a DatasetError naming ``shown`` if it has none)."""
        p = root / cls.records_file
        if not p.exists():
            raise DatasetError(f"{shown if shown is not None else root} is not a {cls.title} dataset: no "
                               f"{cls.records_file}")
        return p

    @classmethod
    def read_records(cls, path: Path, parse: Callable[[Any], Any] | None = None,
                     rows: Iterable[tuple[int, Any]] | None = None) -> list[Any]:
        """Every row of the JSONL file ``path`` (or its read ``rows``) as a record (``parse``); a bad one is
        a DatasetError ``FILE:LINE:``."""
        parse = parse or cls.record.from_json
        out = []
        for line, d in io.iter_jsonl(path) if rows is None else rows:
            try:
                out.append(parse(d))
            except DatasetError as e:
                raise DatasetError(f"{path}:{line}: {e}") from None
        return out

    @classmethod
    def read_dir(cls: type[D], root: Path) -> D:
        """A dataset directory as written by :meth:`write`: manifest (checked), then records."""
        manifest = cls.read_manifest(root)
        return cls(cls.read_records(cls.records_path(root)), manifest, str(root))  # type: ignore[call-arg]  # the Dataset protocol declares no constructor; every ItemsDataset takes these three


@dataclass
class ItemsDataset(Dataset, Generic[R]):
    """A dataset of ``items`` of one record class (WordNetQA's, word-in-context's)."""

    items: list[R]
    manifest: dict[str, Any] = field(default_factory=dict)
    source: str = ""
