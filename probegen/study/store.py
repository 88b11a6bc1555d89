"""Reading a study directory and storing answers as they are given.

Answers are appended to ``answers/<annotator>.jsonl`` and fsynced before the caller reports success,
so an acknowledged answer survives a crash; a line torn mid-write was never acknowledged and is
ignored, then cut off before the next append. An annotator's first answer to an item is final (the
same again is a no-op, a different one refused), on disk too: one writer per study holds
:func:`study_writer`'s lock, and :class:`AnswerLog` re-reads a file that grew behind its back.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import DatasetError, ProbegenError
from ..io import json_text, read_jsonl, recover, verify_files
from .views import CONDITIONS, layout_of

MANIFEST = "manifest.json"
ITEMS = "items.jsonl"
ASSIGNMENT = "assignment.json"
GOLD = "gold.jsonl"
TOKENS = "tokens.json"
ANSWERS = "answers"
WRITER_LOCK = ".writer.lock"
MAX_GUESS = 100


class AnswerError(ProbegenError):
    """An answer that cannot be stored; ``status`` is the HTTP status the server answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path.parent} is not a probegen study: no {path.name}") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON ({e.msg})") from None


@dataclass
class Study:
    """A study directory: manifest, annotator-visible items, assignment (gold and tokens read on demand)."""

    root: Path
    manifest: dict[str, Any]
    items: dict[tuple[str, str], dict[str, Any]]  # (condition, item uid) -> row with "view"
    annotators: dict[str, dict[str, Any]]  # annotator id -> {"condition", "items", "shared"}
    _gold: dict[str, dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def conditions(self) -> list[str]:
        return list(self.manifest["conditions"])

    def view(self, annotator: str, uid: str) -> dict[str, Any]:
        """The view of item ``uid`` in ``annotator``'s condition."""
        return cast("dict[str, Any]", self.items[(self.annotators[annotator]["condition"], uid)]["view"])

    def tokens(self) -> dict[str, str]:
        """Annotator id -> secret URL token."""
        tokens = _read_json(self.root / TOKENS)
        missing = sorted(set(self.annotators) - set(tokens))
        if missing:
            raise DatasetError(f"{self.root / TOKENS} has no token for annotator {missing[0]}")
        return {a: tokens[a] for a in self.annotators}

    def gold(self) -> dict[str, dict[str, Any]]:
        """Item uid -> gold row (scoring only: never served)."""
        if self._gold is None:
            self._gold = {r["uid"]: r for r in read_jsonl(self.root / GOLD)}
        return self._gold

    def answer_path(self, annotator: str) -> Path:
        return self.root / ANSWERS / f"{annotator}.jsonl"


def load_study(path: str | Path) -> Study:
    """Read and check a study directory (its files against the manifest's hashes)."""
    root = Path(path)
    recover(root)  # an interrupted write of the study is finished first
    if not root.is_dir():
        raise DatasetError(f"study {root} does not exist" if not root.exists() else f"study {root} is not a directory")
    manifest = _read_json(root / MANIFEST)
    if manifest.get("kind") != "study":
        raise DatasetError(f"{root} is not a probegen study (manifest kind {manifest.get('kind')!r})")
    verify_files(root, manifest.get("files"))
    items = {(r["condition"], r["uid"]): r for r in read_jsonl(root / ITEMS)}
    annotators = _read_json(root / ASSIGNMENT)["annotators"]
    for aid, a in annotators.items():
        if a["condition"] not in CONDITIONS or any((a["condition"], u) not in items for u in a["items"]):
            raise DatasetError(f"{root / ASSIGNMENT}: annotator {aid} lists an item that {ITEMS} does not have")
    return Study(root, manifest, items, annotators)


def check_answer(view: dict[str, Any], condition: str, answer: Any, guess: Any, require_guess: bool) -> tuple[Any, Any]:
    """Validate an answer (and, for context items, the guess of each hidden word) for ``view``; returns
    them normalised or raises AnswerError (400).

    >>> v = {"kind": "mc", "prompt": "p", "choices": ["a", "b", "c"]}
    >>> check_answer(v, "full", "B", None, False)
    (1, None)
    >>> check_answer({"kind": "align", "rows": [0, 0], "definitions": [0, 0]}, "context", [1, 0], ["cat", "dog"], True)
    ([1, 0], ['cat', 'dog'])
    """
    layout = layout_of(view)
    try:
        answer, n_guess = layout.check(view, answer)
    except ValueError as e:
        raise AnswerError(str(e)) from None
    if condition != "context":
        if guess not in (None, "", []):
            raise AnswerError("only context items take a guess of the hidden word")
        return answer, None
    guesses = guess if isinstance(guess, list) else ([guess] if isinstance(guess, str) else None)
    if guess in (None, "", []) and not require_guess:
        return answer, None
    if guesses is None or len(guesses) != n_guess or not all(isinstance(g, str) for g in guesses):
        raise AnswerError(f"guess must give {n_guess} word(s), one per hidden word")
    guesses = [" ".join(g.split()) for g in guesses]
    if require_guess and not all(guesses):
        raise AnswerError("guess the hidden word first")
    if any(len(g) > MAX_GUESS for g in guesses):
        raise AnswerError(f"a guess is at most {MAX_GUESS} characters")
    return answer, layout.guess_of(guesses)


def read_answers(path: Path) -> list[dict[str, Any]]:
    """Answer records of one file; a torn last line (a crash mid-append, never acknowledged) is ignored."""
    rows = []
    for i, line in enumerate(_whole_lines(path).decode("utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{i}: not valid JSON ({e.msg})") from None
    return rows


def first_answers(study: Study, annotator: str) -> dict[str, dict[str, Any]]:
    """Item uid -> the annotator's (final) first answer record."""
    out: dict[str, dict[str, Any]] = {}
    for r in read_answers(study.answer_path(annotator)):
        out.setdefault(r["item"], r)
    return out


class AnswerLog:
    """Append-only, fsynced answer files of every annotator, what was answered kept in memory (a cache
    of the files: one that grew behind this log's back is read again). Thread-safe."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self._lock = threading.Lock()
        (study.root / ANSWERS).mkdir(exist_ok=True)
        self.answered: dict[str, dict[str, dict[str, Any]]] = {}
        self._size: dict[str, int] = {}  # annotator -> file size this log's memory reflects
        for a in study.annotators:
            _cut_torn_tail(study.answer_path(a))
            self._reload(a)

    def _reload(self, annotator: str) -> None:
        path = self.study.answer_path(annotator)
        self._size[annotator] = path.stat().st_size if path.exists() else 0  # before reading: a later append re-reads
        self.answered[annotator] = first_answers(self.study, annotator)

    def submit(self, annotator: str, uid: str, answer: Any, guess: Any = None, *, require_guess: bool = True,
               extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], bool]:
        """Check and durably store one answer; (record, stored: False for a repeat). AnswerError: 403 for
        an item not assigned to ``annotator``, 400 for a malformed answer, 409 for a changed answer."""
        a = self.study.annotators.get(annotator)
        if a is None:
            raise AnswerError(f"unknown annotator {annotator!r}", 403)
        if not isinstance(uid, str) or uid not in set(a["items"]):
            raise AnswerError(f"item {uid!r} is not assigned to this annotator", 403)
        answer, guess = check_answer(self.study.view(annotator, uid), a["condition"], answer, guess, require_guess)
        path = self.study.answer_path(annotator)
        with self._lock:
            if (path.stat().st_size if path.exists() else 0) != self._size[annotator]:
                self._reload(annotator)
            prev = self.answered[annotator].get(uid)
            if prev is not None:
                if prev["answer"] == answer and (prev.get("guess") == guess or guess is None):
                    return prev, False
                raise AnswerError(f"item {uid} was already answered differently; the first answer is final", 409)
            record = {"annotator": annotator, "condition": a["condition"], "item": uid, "answer": answer,
                      "guess": guess, **(extra or {})}
            line = json_text(record) + "\n"
            append_fsync(path, line)
            self._size[annotator] += len(line.encode("utf-8"))
            self.answered[annotator][uid] = record
        return record, True


@contextmanager
def study_writer(study: Study, role: str) -> Iterator[None]:
    """Hold the study's writer lock (an advisory ``flock`` recording ``role`` and pid) for the block;
    ProbegenError at once if another process holds it."""
    import fcntl

    path = study.root / WRITER_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProbegenError(_busy_message(study.root, os.pread(fd, 200, 0).decode("utf-8", "replace"))) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{role} {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _busy_message(root: Path, holder: str) -> str:
    """The refusal for a study whose lock file says ``holder`` ("served 1234")."""
    parts = holder.split()
    role = parts[0] if parts and parts[0] in ("served", "imported") else "written to"
    pid = f" (pid {parts[1]})" if len(parts) > 1 and parts[1].isdigit() else ""
    then = "stop the server first" if role == "served" else "try again when it has finished"
    return f"study {root} is being {role}{pid}; {then}"


def append_fsync(path: Path, line: str) -> None:
    """Append ``line`` and return only once it is on disk (file data, and the directory entry of a new file)."""
    new = not path.exists()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
    if new:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _cut_torn_tail(path: Path) -> None:
    """Drop a partial last line left by a crash mid-append, so the next record starts on its own line."""
    if path.exists() and (end := len(_whole_lines(path))) != path.stat().st_size:
        with open(path, "r+b") as fh:
            fh.truncate(end)
            fh.flush()
            os.fsync(fh.fileno())


def _whole_lines(path: Path) -> bytes:
    """The file's bytes up to its last newline (b"" for no file): what was written whole."""
    data = path.read_bytes() if path.exists() else b""
    return data[: data.rfind(b"\n") + 1]
