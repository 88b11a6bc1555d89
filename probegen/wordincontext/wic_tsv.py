"""Reader for the WiC release format (Pilehvar & Camacho-Collados), so a real WiC copy can be measured.

One folder per split, each with ``<split>.data.txt`` and ``<split>.gold.txt``. A data line is five
tab-separated fields (lemma, ``N``/``V``, the target's token index in sentence 1 and 2 as ``i-j``,
sentence 1, sentence 2)::

    carry<TAB>V<TAB>2-1<TAB>You must carry your camping gear .<TAB>Sound carries well over water .

The gold file has ``T`` or ``F`` on the same line number. Every file is validated in full first.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..contexts import Context
from ..errors import DatasetError
from ..io import read_text
from .items import SPLITS, WicItem

_TOKEN = re.compile(r"\S+")
_INDICES = re.compile(r"^(\d+)-(\d+)$")
DATA_SUFFIX = ".data.txt"
GOLD_SUFFIX = ".gold.txt"


def token_span(sentence: str, index: int) -> tuple[int, int] | None:
    """Character span of the ``index``-th white-space token (None if there is no such token).

    >>> token_span("Sound carries well .", 1)
    (6, 13)
    """
    for i, m in enumerate(_TOKEN.finditer(sentence)):
        if i == index:
            return m.start(), m.end()
    return None


def _split_name(data: Path) -> str:
    stem = data.name[: -len(DATA_SUFFIX)] if data.name.endswith(DATA_SUFFIX) else data.stem
    return next((s for s in SPLITS if stem.lower().startswith(s)), "test")


def data_files(path: str | Path) -> list[Path]:
    """The data files of a WiC copy: ``path`` itself, or every ``*.data.txt`` in it or in its split folders."""
    p = Path(path)
    if p.is_file():
        return [p]
    found = list(p.glob(f"*{DATA_SUFFIX}")) + list(p.glob(f"*/*{DATA_SUFFIX}"))
    return sorted(found, key=lambda f: (SPLITS.index(_split_name(f)), str(f)))  # train, dev, test


def is_wic_tsv(path: str | Path) -> bool:
    """True if ``path`` is a WiC data file or a folder holding WiC data files."""
    p = Path(path)
    if p.is_file():
        return p.name.endswith(DATA_SUFFIX) or p.suffix in (".txt", ".tsv")
    return p.is_dir() and not (p / "manifest.json").exists() and bool(data_files(p))


def _gold_file(data: Path) -> Path:
    name = data.name[: -len(DATA_SUFFIX)] + GOLD_SUFFIX if data.name.endswith(DATA_SUFFIX) else data.stem + GOLD_SUFFIX
    return data.with_name(name)


def _read_lines(path: Path) -> list[str]:
    """The file's lines, split at newlines only (a bad byte is an error naming its line)."""
    return [line.removesuffix("\r") for line in read_text(path).split("\n")]


def _parse_line(line: str) -> tuple[str, str, Context, Context]:
    """(lemma, pos, context 1, context 2) of one data line; ValueError saying what is wrong."""
    fields = line.split("\t")
    if len(fields) != 5:
        raise ValueError("expected 5 tab-separated fields (word, pos, indices, sentence1, sentence2), found "
                         f"{len(fields)}")
    word, pos, idx, s1, s2 = (f.strip() for f in fields)
    if not word:
        raise ValueError("empty target word")
    if pos.upper() not in ("N", "V"):
        raise ValueError(f"pos must be N or V, not {pos!r}")
    m = _INDICES.match(idx)
    if not m:
        raise ValueError(f"indices must look like 3-7 (token index in sentence 1 and 2), not {idx!r}")
    targets = []
    for n, (sent, i) in enumerate(((s1, int(m.group(1))), (s2, int(m.group(2)))), 1):
        sp = token_span(sent, i)
        if sp is None:
            raise ValueError(f"token index {i} is outside sentence {n} ({len(_TOKEN.findall(sent))} tokens)")
        targets.append(Context(sent, sp))
    return word, pos.lower(), targets[0], targets[1]


def read_wic(path: str | Path) -> list[WicItem]:
    """Every item of a WiC copy (a data file, or a folder of split folders), validated in full first."""
    files = data_files(path)
    if not files:
        raise DatasetError(f"{path}: no WiC data files (*{DATA_SUFFIX})")
    items: list[WicItem] = []
    errors: list[str] = []
    for data in files:
        gold_path = _gold_file(data)
        if not gold_path.is_file():
            raise DatasetError(f"{data}: no gold file {gold_path.name} beside it (one T or F a line)")
        lines, gold = _read_lines(data), _read_lines(gold_path)
        while lines and not lines[-1].strip():
            lines.pop()
        while gold and not gold[-1].strip():
            gold.pop()
        if len(gold) != len(lines):
            errors.append(f"{gold_path}: {len(gold)} gold lines for {len(lines)} data lines in {data.name}")
            continue
        split = _split_name(data)
        for n, (line, g) in enumerate(zip(lines, gold), 1):
            try:
                lemma, pos, c1, c2 = _parse_line(line)
            except ValueError as e:
                errors.append(f"{data}:{n}: {e}")
                continue
            if g.strip() not in ("T", "F"):
                errors.append(f"{gold_path}:{n}: gold must be T or F, not {g.strip()!r}")
                continue
            items.append(
                WicItem(f"{split}-{n:05d}", lemma, pos, c1, c2, g.strip() == "T", split=split, unit=lemma,
                        meta={"source": data.name, "line": n})
            )
    if errors:
        more = f" (and {len(errors) - 1} more bad line{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise DatasetError(errors[0] + more)
    if not items:
        raise DatasetError(f"{path} has no WiC items")
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{path}: two data files of the same split ({', '.join(str(f) for f in files)})")
    return items
