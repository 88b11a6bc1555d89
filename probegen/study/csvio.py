"""CSV export and import of a study, for people who run it on their own platform.

``export`` writes one row per (annotator, assigned item), in the annotator's order, with what
the annotator sees (instructions, prompt, options) and the answer columns, filled in where an
answer is already stored. Gold is never written. ``import`` reads the same columns back:

- ``annotator``, ``item``: required; ``condition`` is checked if present;
- ``answer``: multiple choice: a letter (``A``..``E``); a CoDA21 group: one definition letter
  per row, in row order, comma-separated (``C,A,E,B,D``); empty = not answered (skipped);
- ``guess``: context items: the guessed hidden word (a group: one per row, ``|``-separated);
  optional on import.

Every row is validated first, and nothing is stored unless all rows pass; errors name the
file's line numbers.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ..errors import ProbegenError
from ..io import atomic_write
from .store import AnswerError, AnswerLog, Study, check_answer, first_answers
from .views import LETTERS, instructions

COLUMNS = ["annotator", "condition", "item", "kind", "instructions", "prompt", "options", "answer", "guess"]
MAX_ERRORS_SHOWN = 5


def _prompt(view: dict[str, Any]) -> str:
    if view["kind"] == "mc":
        return view["prompt"]
    return "\n".join(f"{r + 1}. {''.join(row)}" for r, row in enumerate(view["rows"]))


def _options(view: dict[str, Any]) -> str:
    opts = view["choices"] if view["kind"] == "mc" else view["definitions"]
    return "\n".join(f"{LETTERS[i]}. {t}" for i, t in enumerate(opts))


def format_answer(view: dict[str, Any], answer: Any) -> str:
    """An answer as the CSV writes it.

    >>> format_answer({"kind": "mc"}, 2), format_answer({"kind": "align"}, [1, 0, 2])
    ('C', 'B,A,C')
    """
    if answer is None:
        return ""
    return LETTERS[answer] if view["kind"] == "mc" else ",".join(LETTERS[a] for a in answer)


def parse_answer(view: dict[str, Any], text: str) -> Any:
    """A CSV answer cell as an index (multiple choice) or a list of indices (a group).

    >>> parse_answer({"kind": "align"}, "b, a ,C")
    [1, 0, 2]
    """
    text = text.strip()
    if view["kind"] == "mc":
        return text
    out = []
    for part in text.split(","):
        p = part.strip().upper()
        if len(p) != 1 or p not in LETTERS:
            raise AnswerError(f"answer {text!r}: give one definition letter per row, comma-separated (e.g. C,A,E,B,D)")
        out.append(LETTERS.index(p))
    return out


def export_csv(study: Study, out: str | Path) -> int:
    """Write the study's assignments (and any stored answers) as CSV; returns the row count."""
    n = 0
    with atomic_write(out) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        for aid, a in study.annotators.items():
            answers = first_answers(study, aid)
            for uid in a["items"]:
                view = study.view(aid, uid)
                rec = answers.get(uid) or {}
                guess = rec.get("guess")
                w.writerow([aid, a["condition"], uid, view["kind"], instructions(a["condition"], view["kind"]),
                            _prompt(view), _options(view), format_answer(view, rec.get("answer")),
                            "|".join(guess) if isinstance(guess, list) else (guess or "")])
                n += 1
    return n


def import_csv(study: Study, path: str | Path) -> dict[str, int]:
    """Validate every row of ``path``, then store the new answers (fsynced); returns counts.

    Raises ProbegenError naming the bad rows' line numbers; then nothing is stored.
    """
    path = Path(path)
    try:
        fh = open(path, newline="", encoding="utf-8-sig")
    except OSError as e:
        raise ProbegenError(f"cannot read {path}: {e.strerror or e}") from None
    log = AnswerLog(study)
    errors: list[str] = []
    todo: list[tuple[str, str, Any, Any]] = []
    seen: dict[tuple[str, str], tuple[Any, Any]] = {}
    counts = {"rows": 0, "new": 0, "already_stored": 0, "blank": 0}
    with fh:
        reader = csv.reader(fh)
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
            cell = lambda name: row[col[name]].strip() if name in col and col[name] < len(row) else ""  # noqa: E731
            aid, uid, text = cell("annotator"), cell("item"), cell("answer")
            try:
                a = study.annotators.get(aid)
                if a is None:
                    raise AnswerError(f"unknown annotator {aid!r}")
                if uid not in set(a["items"]):
                    raise AnswerError(f"item {uid!r} is not assigned to {aid}")
                if "condition" in col and cell("condition") and cell("condition") != a["condition"]:
                    raise AnswerError(f"condition {cell('condition')!r} but {aid} annotates {a['condition']!r}")
                if not text:
                    counts["blank"] += 1
                    continue
                view = study.view(aid, uid)
                g = cell("guess")
                guess = (g.split("|") if view["kind"] == "align" else g) if g else None
                answer, guess = check_answer(view, a["condition"], parse_answer(view, text), guess, require_guess=False)
                key = (aid, uid)
                if key in seen:
                    if seen[key] != (answer, guess):
                        raise AnswerError(f"{aid} answers {uid} twice, differently")
                    continue
                seen[key] = (answer, guess)
                prev = log.answered[aid].get(uid)
                if prev is not None:
                    if prev["answer"] != answer:
                        raise AnswerError(f"{aid} already answered {uid} differently ({format_answer(view, prev['answer'])}); the first answer is final")
                    counts["already_stored"] += 1
                    continue
                todo.append((aid, uid, answer, guess))
            except AnswerError as e:
                errors.append(f"line {line}: {e}")
    if errors:
        shown = "; ".join(errors[:MAX_ERRORS_SHOWN]) + (f"; ... ({len(errors) - MAX_ERRORS_SHOWN} more)" if len(errors) > MAX_ERRORS_SHOWN else "")
        raise ProbegenError(f"{path}: {len(errors)} bad row(s), nothing imported: {shown}")
    for aid, uid, answer, guess in todo:
        log.submit(aid, uid, answer, guess, require_guess=False, extra={"source": "csv"})
        counts["new"] += 1
    return counts
