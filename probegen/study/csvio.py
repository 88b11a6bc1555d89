"""CSV export and import of a study, for people who run it on their own platform.

``export`` writes one row per (annotator, assigned item) with what the annotator sees and the answer
columns (never gold); ``import`` reads ``annotator``, ``item``, ``answer`` (a letter, or a group's
comma-separated letters; empty: skipped) and optionally ``condition`` and ``guess`` (``|``-separated
per row) back, storing nothing unless every row passes. Cells are written safe for spreadsheets
(:func:`neutralise`) and read back to the same text (:func:`restore`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProbegenError
from ..io import atomic_output_file, read_text
from .store import AnswerError, AnswerLog, Study, check_answer, first_answers, study_writer
from .views import LETTERS, instructions, layout_of

if TYPE_CHECKING:
    from _csv import Reader

COLUMNS = ["annotator", "condition", "item", "kind", "instructions", "prompt", "options", "answer", "guess"]
MAX_ERRORS_SHOWN = 5
#: a study's CSV is a few MB (one row per annotator and item): a larger file is refused unread
MAX_CSV_BYTES = 256 * 2**20
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP: a spreadsheet reads a cell opening so as a formula


def _prompt(view: dict[str, Any]) -> str:
    r"""The prompt as text: the word the page highlights is in [brackets] (a CSV has no highlight).

    >>> _prompt({"kind": "mc", "prompt": 'The word "ice" means:', "marks": [[10, 13]]})
    'The word "[ice]" means:'
    >>> _prompt({"kind": "align", "rows": [["a ", "_____", "."], ["", "ice", ""]]})
    '1. a _____.\n2. [ice]'
    """
    return layout_of(view).prompt_text(view)


def _options(view: dict[str, Any]) -> str:
    return "\n".join(f"{LETTERS[i]}. {t}" for i, t in enumerate(layout_of(view).options(view)))


def format_answer(view: dict[str, Any], answer: Any) -> str:
    """An answer as the CSV writes it.

    >>> format_answer({"kind": "mc"}, 2), format_answer({"kind": "align", "rows": [[], [], []]}, [1, 0, 2])
    ('C', 'B,A,C')
    """
    if answer is None:
        return ""
    return layout_of(view).format_answer(answer)


def parse_answer(view: dict[str, Any], text: str) -> Any:
    """A CSV answer cell as an index (multiple choice) or a list of indices (a group).

    >>> parse_answer({"kind": "align", "rows": [[], [], []]}, "b, a ,C")
    [1, 0, 2]
    """
    try:
        return layout_of(view).parse_answer(text.strip())
    except ValueError as e:
        raise AnswerError(str(e)) from None


def neutralise(cell: str) -> str:
    """A cell a spreadsheet shows as text (OWASP's CSV-injection rule, reversibly): one opening, after any
    quotes, with a formula character gets a leading ``'``.

    >>> neutralise("=1+1"), neutralise("'=x"), neutralise("'a"), neutralise("dog")
    ("'=1+1", "''=x", "'a", 'dog')
    """
    return "'" + cell if cell.lstrip("'")[:1] in FORMULA_START else cell


def restore(cell: str) -> str:
    """The text :func:`neutralise` was given (a cell never neutralised comes back as it is).

    >>> [restore(neutralise(c)) for c in ("=1+1", "''-x", "'a", "@")] == ["=1+1", "''-x", "'a", "@"]
    True
    """
    return cell[1:] if cell[:1] == "'" and cell.lstrip("'")[:1] in FORMULA_START else cell


def export_csv(study: Study, out: str | Path) -> int:
    """Write the study's assignments (and any stored answers) as CSV, every cell neutralised; the row count."""
    n = 0
    with atomic_output_file(out) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        for aid, a in study.annotators.items():
            answers = first_answers(study, aid)
            for uid in a["items"]:
                view = study.view(aid, uid)
                rec = answers.get(uid) or {}
                guess = rec.get("guess")
                row = [aid, a["condition"], uid, view["kind"],
                       instructions(a["condition"], view).replace("highlighted word", "word in [brackets]"),
                       _prompt(view), _options(view), format_answer(view, rec.get("answer")),
                       "|".join(guess) if isinstance(guess, list) else (guess or "")]
                w.writerow([neutralise(c) for c in row])
                n += 1
    return n


def import_csv(study: Study, path: str | Path) -> dict[str, int]:
    """Validate every row of ``path`` (a ProbegenError naming the bad rows' lines: nothing stored), then
    store the new answers under the study's writer lock; returns counts."""
    path = Path(path)
    # decoded whole first, so a bad byte is reported at its own line, not at the line being parsed
    fh = io.StringIO(read_text(path, MAX_CSV_BYTES, "study CSV", ProbegenError), newline="")
    with fh, study_writer(study, "imported"):
        log = AnswerLog(study)
        todo, counts, errors = _check_rows(study, log, path, csv.reader(fh))
        if errors:
            shown = "; ".join(errors[:MAX_ERRORS_SHOWN]) + (f"; ... ({len(errors) - MAX_ERRORS_SHOWN} more)"
                                                            if len(errors) > MAX_ERRORS_SHOWN else "")
            raise ProbegenError(f"{path}: {len(errors)} bad row(s), nothing imported: {shown}")
        for aid, uid, answer, guess in todo:
            log.submit(aid, uid, answer, guess, require_guess=False, extra={"source": "csv"})
            counts["new"] += 1
    return counts


def _check_rows(study: Study, log: AnswerLog, path: Path,
                reader: Reader) -> tuple[list[tuple[str, str, Any, Any]], dict[str, int], list[str]]:
    """Read and check every row: (answers to store, counts, error messages with line numbers)."""
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise ProbegenError(f"{path} is empty: expected a header with annotator,item,answer") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise ProbegenError(f"{path}:1: not readable as CSV ({e})") from None
    missing = [c for c in ("annotator", "item", "answer") if c not in header]
    if missing:
        raise ProbegenError(f"{path}:1: missing column {missing[0]!r} (the header needs annotator, item, answer)")
    col = {c: header.index(c) for c in header}
    errors: list[str] = []
    todo: list[tuple[str, str, Any, Any]] = []
    seen: dict[tuple[str, str], tuple[Any, Any]] = {}
    counts = {"rows": 0, "new": 0, "already_stored": 0, "blank": 0}
    while True:
        line = reader.line_num + 1  # a quoted cell may span lines: report where the row starts
        try:
            row = next(reader)
        except StopIteration:
            break
        except (csv.Error, UnicodeDecodeError) as e:
            errors.append(f"line {line}: not readable as CSV ({e})")
            break
        if not any(cell.strip() for cell in row):
            continue
        counts["rows"] += 1
        cells = {name: restore(row[i].strip()) if i < len(row) else "" for name, i in col.items()}
        try:
            got = _check_row(study, log, cells, "condition" in col, seen)
        except AnswerError as e:
            errors.append(f"line {line}: {e}")
            continue
        if got is None:
            counts["blank"] += 1
        elif got == "stored":
            counts["already_stored"] += 1
        elif isinstance(got, tuple):  # not "repeat"
            todo.append(got)
    return todo, counts, errors


def _check_row(study: Study, log: AnswerLog, cell: dict[str, str], has_condition: bool,
               seen: dict[tuple[str, str], tuple[Any, Any]]) -> tuple[str, str, Any, Any] | str | None:
    """One row: None (blank answer), "repeat" (same as an earlier row), "stored" (already stored
    identically) or (annotator, item, answer, guess) to store; raises AnswerError."""
    aid, uid, text = cell["annotator"], cell["item"], cell["answer"]
    a = study.annotators.get(aid)
    if a is None:
        raise AnswerError(f"unknown annotator {aid!r}")
    if uid not in set(a["items"]):
        raise AnswerError(f"item {uid!r} is not assigned to {aid}")
    if has_condition and cell["condition"] and cell["condition"] != a["condition"]:
        raise AnswerError(f"condition {cell['condition']!r} but {aid} annotates {a['condition']!r}")
    if not text:
        return None
    view = study.view(aid, uid)
    g = cell.get("guess", "")
    guess = layout_of(view).split_guess(g) if g else None
    answer, guess = check_answer(view, a["condition"], parse_answer(view, text), guess, require_guess=False)
    key = (aid, uid)
    if key in seen:
        if seen[key] != (answer, guess):
            raise AnswerError(f"{aid} answers {uid} twice, differently")
        return "repeat"
    seen[key] = (answer, guess)
    prev = log.answered[aid].get(uid)
    if prev is not None:
        if prev["answer"] != answer:
            raise AnswerError(f"{aid} already answered {uid} differently ({format_answer(view, prev['answer'])}); the "
                              "first answer is final")
        return "stored"
    return (aid, uid, answer, guess)
