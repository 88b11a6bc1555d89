"""One long response table: respondent (model x method x variant, or a study participant) x item, from
:func:`probegen.exchange.runs.read_run`; cells not answered are absent. Bad input: a ProbegenError.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import ProbegenError
from ..exchange.respondent import Respondent, contradiction
from ..exchange.runs import read_run
from ..io import atomic_write, sha256_file

#: the columns of the long table, in order
COLUMNS = ("respondent", "model", "method", "variant", "source", "dataset", "item", "unit", "correct", "chosen",
           "key", "k")


@dataclass
class ResponseTable:
    """The respondents and their cells; :meth:`matrix` is the respondent x item view the analyses use."""

    respondents: list[Respondent]

    @property
    def items(self) -> list[str]:
        """Every item id answered by someone, in first-seen order."""
        return list(dict.fromkeys(i for r in self.respondents for i in r.cells))

    def rows(self) -> Iterable[dict[str, Any]]:
        """The long table, one dict per answered cell."""
        for r in self.respondents:
            for item, c in r.cells.items():
                yield {"respondent": r.name, "model": r.model, "method": r.method, "variant": r.variant,
                       "source": r.source, "dataset": r.dataset, "item": item, **c}

    def matrix(self) -> tuple[np.ndarray, list[str], list[str], np.ndarray]:
        """(Y, respondents, items, k): Y[j, i] in {0, 1} or NaN (missing); a partly right answer (a
        study's group answered as a whole never is: rows are items) is rounded down; k[i] the option count."""
        items = self.items
        col = {it: i for i, it in enumerate(items)}
        y = np.full((len(self.respondents), len(items)), np.nan)
        k = np.full(len(items), 2.0)
        for j, r in enumerate(self.respondents):
            for it, c in r.cells.items():
                y[j, col[it]] = 1.0 if c["correct"] >= 1 else 0.0
                k[col[it]] = max(2, int(c["k"] or 2))
        return y, [r.name for r in self.respondents], items, k

    def chosen(self) -> tuple[list[list[Any]], list[list[Any]]]:
        """(chosen[j][i], key[i]-per-respondent[j][i]) over :meth:`matrix`'s order (None where missing)."""
        items = self.items
        chosen = [[r.cells[i]["chosen"] if i in r.cells else None for i in items] for r in self.respondents]
        keys = [[r.cells[i]["key"] if i in r.cells else None for i in items] for r in self.respondents]
        return chosen, keys

    def write(self, folder: Path) -> list[str]:
        """``responses.csv`` and ``responses.parquet`` (the long table) into ``folder``; returns the names."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = list(self.rows())
        with atomic_write(folder / "responses.csv") as fh:
            w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows({c: ("" if r.get(c) is None else r[c]) for c in COLUMNS} for r in rows)
        cols: dict[str, list[Any]] = {c: [r.get(c) for r in rows] for c in COLUMNS}
        for c in ("chosen", "key"):
            cols[c] = [None if v is None else str(v) for v in cols[c]]
        pq.write_table(pa.table(cols), folder / "responses.parquet")
        return ["responses.csv", "responses.parquet"]


def _name(resp: Respondent, taken: set[str]) -> str:
    base = resp.name or f"{resp.model}|{resp.method}|{resp.variant}"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}#{n}", n + 1
    taken.add(name)
    return name


def _clash(r: Respondent, known: dict[str, tuple[Any, str]]) -> tuple[str, str, str] | None:
    """(item, why, other file) for the first item of ``r`` whose content contradicts ``known``'s
    (item -> (content, the file that said it)); None where none does."""
    for item, c in r.content.items():
        if item in known and known[item][1] != r.source:  # a bias run's conditions: one file's own content
            why = contradiction(known[item][0], c)
            if why:
                return item, why, known[item][1]
    return None


def _known(resps: Sequence[Respondent]) -> dict[str, dict[str, tuple[Any, str]]]:
    """dataset -> item -> (content, the file that said it), first said first, over ``resps``."""
    out: dict[str, dict[str, tuple[Any, str]]] = {}
    for r in resps:
        d = out.setdefault(r.dataset, {})
        for i, c in r.content.items():
            d.setdefault(i, (c, r.source))
    return out


def adopt_datasets(resps: list[Respondent]) -> list[Respondent]:
    """Give each respondent of unknown dataset (``adopt``) the dataset of the runs holding all its items
    with the same content (the join is on what an item is, not its id) and the runs' units; one line
    naming its unknown ids, or both files where a content contradicts. Then :func:`check_content`."""
    items: dict[str, set[str]] = {}
    units: dict[str, dict[str, str]] = {}
    for r in resps:
        if not r.adopt:
            items.setdefault(r.dataset, set()).update(r.cells)
            units.setdefault(r.dataset, {}).update({i: c["unit"] for i, c in r.cells.items()})
    known = _known([r for r in resps if not r.adopt])
    for r in resps:
        if not r.adopt or not items:
            continue
        homes = [d for d, its in items.items() if set(r.cells) <= its]
        if not homes:
            d, its = max(items.items(), key=lambda kv: len(kv[1] & set(r.cells)))
            unknown = sorted(set(r.cells) - its)
            raise ProbegenError(f"{r.source}: {len(unknown)} of {len(r.cells)} item ids are not items of {d} "
                                f"(e.g. {', '.join(unknown[:3])}): not results on that dataset")
        clashes = {d: _clash(r, known.get(d, {})) for d in homes}
        agree = [d for d in homes if clashes[d] is None]
        if not agree:
            item, why, other = next(c for c in clashes.values() if c is not None)  # none agrees: each has one
            raise ProbegenError(f"{r.source}: its item {item} is not item {item} of {other} ({why}): results on "
                                "another dataset that uses the same ids")
        home = agree[0]
        r.dataset = home
        for i, c in r.cells.items():  # the file's own unit is its sample id: the runs' cluster (group, concept)
            c["unit"] = units[home].get(i, c["unit"])
    check_content(resps)
    return resps


def check_content(resps: Sequence[Respondent]) -> None:
    """One line naming both files where two respondents on one dataset hold different content for one
    item id (a path rewritten between runs, a file naming a dataset it does not answer)."""
    known: dict[str, dict[str, tuple[Any, str]]] = {}
    for r in resps:
        d = known.setdefault(r.dataset, {})
        hit = _clash(r, d)
        if hit:
            item, why, other = hit
            raise ProbegenError(f"{r.source}: its item {item} is not item {item} of {other} ({why}), although both "
                                f"name the dataset {r.dataset}")
        for i, c in r.content.items():
            d.setdefault(i, (c, r.source))


def _split_fingerprints(resps: Sequence[Respondent]) -> None:
    """Runs naming one dataset path with different fingerprints answered different datasets (the
    file was rewritten between them): each fingerprint becomes a dataset of its own."""
    fps: dict[str, set[str]] = {}
    for r in resps:
        if r.fingerprint:
            fps.setdefault(r.dataset, set()).add(r.fingerprint)
    for r in resps:
        if r.fingerprint and len(fps[r.dataset]) > 1:
            r.dataset = f"{r.dataset} (manifest sha256 {r.fingerprint[:12]})"


def _run_identity(run: str | Path) -> str | None:
    """What makes two arguments one run: a run folder's results.json bytes, a file's bytes (a
    copy is the same run); None for what does not exist (the reader says why)."""
    p = Path(run)
    try:
        if p.is_dir():
            return f"run:{sha256_file(p / 'results.json')}" if (p / "results.json").is_file() else \
                f"dir:{p.resolve()}"
        return f"file:{sha256_file(p)}" if p.is_file() else None
    except (OSError, ProbegenError):
        return None


def read_runs(runs: Sequence[str | Path], lm_eval_metric: str = "acc") -> list[tuple[str, Respondent]]:
    """(run, respondent) of every run; one line where a run is given twice (or a copy): two respondents."""
    seen: dict[str, str] = {}
    out: list[tuple[str, Respondent]] = []
    for run in runs:
        ident = _run_identity(run)
        if ident is not None and ident in seen:
            raise ProbegenError(f"{run} is the same run as {seen[ident]} (given twice, or a copy): it would count "
                                "as two respondents; give each run once")
        if ident is not None:
            seen[ident] = str(run)
        for r in read_run(run, lm_eval_metric):
            _check_text(r)
            out.append((str(run), r))
    return out


def _check_text(r: Respondent) -> None:
    """One line where a name, id or label of ``r`` is not text that UTF-8 can write (a lone
    surrogate that a JSON ``\\udcff`` escape reads into)."""
    def ok(v: Any) -> bool:
        try:
            str(v).encode("utf-8")
            return True
        except UnicodeEncodeError:
            return False

    bad = next((f for f in (r.model, r.method, r.variant, r.dataset) if not ok(f)), None) or \
        next((i for i, c in r.cells.items() if not (ok(i) and all(ok(c[k]) for k in ("unit", "chosen", "key")))), None)
    if bad is not None:
        raise ProbegenError(f"{r.source}: {str(bad).encode('utf-8', 'backslashreplace').decode()[:60]!r} holds a lone "
                            "surrogate (a \\udXXX escape), not text")


def _common(resps: Sequence[Respondent], datasets: Sequence[str]) -> set[str]:
    """The items every dataset holds as the same question (not just the same id); one line if none."""
    by_id = [{i for r in resps if r.dataset == d for i in r.cells} for d in datasets]
    ids = set.intersection(*by_id)
    known = _known(resps)
    shared, differ = set(), []
    for i in sorted(ids):
        said = [known[d][i] for d in datasets if i in known.get(d, {})]
        why = next((w for a, b in zip(said, said[1:]) if (w := contradiction(a[0], b[0]))), None)
        if why:
            differ.append((i, why, said[0][1], said[-1][1]))
        else:
            shared.add(i)
    if not shared:
        more = (f" ({len(differ)} ids are in each but name different questions, e.g. {differ[0][0]}: {differ[0][1]} "
                f"in {differ[0][2]} and {differ[0][3]})") if differ else ""
        raise ProbegenError(f"--common: the runs' datasets share no item{more}")
    return shared


def gather(runs: Sequence[str | Path], common: bool = False, lm_eval_metric: str = "acc") -> ResponseTable:
    """The response table of ``runs``; runs on different datasets are an error unless ``common`` (keep the
    items they share). ``lm_eval_metric``: an lm-eval file's respondent (``acc``, ``acc_norm``, ``both``)."""
    if not runs:
        raise ProbegenError("no run given")
    resps = [r for _, r in read_runs(runs, lm_eval_metric)]
    _split_fingerprints(resps)
    resps = adopt_datasets(resps)
    datasets = list(dict.fromkeys(r.dataset for r in resps))
    if len(datasets) > 1:
        if not common:
            raise ProbegenError(f"the runs are on {len(datasets)} different datasets ({', '.join(datasets[:3])}); "
                                "give runs on one dataset, or --common to keep the items they share")
        shared = _common(resps, datasets)
        for r in resps:
            r.cells = {i: c for i, c in r.cells.items() if i in shared}
    taken: set[str] = set()
    for r in resps:
        r.name = _name(r, taken)
    table = ResponseTable(resps)
    if not table.items:
        raise ProbegenError("the runs hold no answered item")
    return table
