"""One long response table over runs: respondent (model x method x variant, or a study participant) x item.

A run is a ``probegen eval`` folder (``results.json`` and its per-row records ``items.jsonl`` or
``groups.jsonl``), a ``probegen bias`` folder (one respondent per condition file of each dataset) or a
``probegen study`` folder (one respondent per participant). An item is a row id; a CoDA21 group
gives one item per row (``<group>#<row>``, ``k`` options: 1/k of the group). Cells a respondent did
not answer are simply absent (missing). Every bad input is a :class:`~probegen.errors.ProbegenError`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import ProbegenError
from ..io import atomic_write, iter_jsonl, parse_json, read_jsonl, recover, sha256_file, verify_output
from .respondent import Respondent, check_correct, content, contradiction, dataset_key

#: the columns of the long table, in order
COLUMNS = ("respondent", "model", "method", "variant", "source", "dataset", "item", "unit", "correct", "chosen",
           "key", "k")
#: the method of a study participant (human and model difficulties side by side: items.csv p_human, p_models)
HUMAN_METHOD = "study"
#: the eval settings that tell two prompt variants of one model apart (seed and split aside)
VARIANT_KEYS = ("mode", "matching", "pattern", "length_norm", "reduction", "prompts", "permutations")


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


# ---- reading runs --------------------------------------------------------------------------------------
def _label(options: Sequence[Any] | None, index: Any) -> Any:
    """An option shown the same to every respondent: its text or name where the record has it, else its index."""
    if index is None or isinstance(index, bool):
        return None
    if isinstance(options, (list, tuple)) and isinstance(index, int) and 0 <= index < len(options):
        return options[index]
    return index


def record_cells(rec: dict[str, Any], where: str = "") -> dict[str, dict[str, Any]]:
    """The cells of one per-row record (``id``, ``gold``, ``pred``, ``correct``): one item, or for an
    alignment group (``rows``, a gold per row) one item per row. A one-row item's ``correct`` is 0 or
    1, a unit of several rows' the share right (in [0, 1]); anything else is one line naming
    ``where`` (the file and line), else the record.

    >>> record_cells({"id": "q1", "gold": [2], "pred": [0], "correct": 0.0, "choices": ["a", "b", "c"]})["q1"]
    {'unit': 'q1', 'correct': 0.0, 'chosen': 'a', 'key': 'c', 'k': 3}
    >>> g = record_cells({"id": "g", "rows": ["x", "y"], "columns": ["y", "x"], "gold": [1, 0], "pred": [1, 1],
    ...                   "correct": 0.5, "k": 2})
    >>> sorted(g), g["g#0"]["correct"], g["g#1"]["chosen"]
    (['g#0', 'g#1'], 1.0, 'x')
    """
    rid, gold, pred = str(rec["id"]), rec.get("gold"), rec.get("pred")
    where = where or f"record {rid}"
    several = isinstance(gold, list) and len(gold) > 1
    check_correct(rec.get("correct"), where, partial=several)
    if isinstance(gold, list) and len(gold) > 1 and "rows" in rec:
        cols = rec.get("columns")
        pred = pred if isinstance(pred, list) and len(pred) == len(gold) else [None] * len(gold)
        return {f"{rid}#{r}": {"unit": rid, "correct": float(p is not None and p == g), "chosen": _label(cols, p),
                               "key": _label(cols, g), "k": int(rec.get("k") or len(gold))}
                for r, (g, p) in enumerate(zip(gold, pred))}
    g = gold[0] if isinstance(gold, list) and gold else gold
    p = pred[0] if isinstance(pred, list) and pred else (None if isinstance(pred, list) else pred)
    scores = rec.get("scores")
    choices = rec.get("choices")
    if isinstance(scores, list) and scores and isinstance(scores[0], list):
        k = len(scores[0])
    else:
        k = len(choices) if isinstance(choices, list) else 2
    return {rid: {"unit": str(rec.get("cluster") or rid), "correct": float(rec["correct"]),
                  "chosen": _label(choices, p), "key": _label(choices, g), "k": max(2, k)}}


def _variant(cfg: dict[str, Any], extra: str = "") -> str:
    parts = [f"{k}={cfg[k]}" for k in VARIANT_KEYS if cfg.get(k) is not None]
    return ";".join([*parts, *([extra] if extra else [])]) or "default"


def read_results(run: Path) -> dict[str, Any]:
    """A run folder's results.json as a dict; one error line if it cannot be read or is not one."""
    try:
        res = parse_json((run / "results.json").read_text(encoding="utf-8"), run / "results.json")
    except (OSError, ValueError) as e:
        raise ProbegenError(f"{run}/results.json cannot be read ({e})") from None
    if not isinstance(res, dict):
        raise ProbegenError(f"{run}/results.json is not a probegen run's results")
    return res


def condition_records(path: Path, run: Path) -> list[dict[str, Any]]:
    """The per-row records file ``path`` of ``run``; one error line if it is missing or not records."""
    if not path.is_file():
        raise ProbegenError(f"{run} has no per-row records ({path.name}); rerun it with this probegen")
    recs = read_jsonl(path)
    if not recs or not all(isinstance(r, dict) and "id" in r and "correct" in r for r in recs):
        raise ProbegenError(f"{path}: not per-row records (each row needs id and correct)")
    return recs


def _fill(resp: Respondent, path: Path, run: Path) -> Respondent:
    """``resp`` with the cells of the records file ``path`` of ``run``: one line for a row that is not a
    record, a correctness out of range, or an item id twice (naming the file and line)."""
    if not path.is_file():
        raise ProbegenError(f"{run} has no per-row records ({path.name}); rerun it with this probegen")
    for line, rec in iter_jsonl(path):
        where = f"{path} line {line}"
        if not (isinstance(rec, dict) and "id" in rec and "correct" in rec) or isinstance(rec["id"], (dict, list)):
            raise ProbegenError(f"{where}: not a per-row record (each row needs an id and correct)")
        opts = rec.get("columns") if "rows" in rec else rec.get("choices")
        for item, cell in record_cells(rec, where).items():
            if item in resp.cells:
                raise ProbegenError(f"{where}: item {item} appears twice in the run's records (one answer per item)")
            resp.cells[item] = cell
            resp.content[item] = content(cell["key"], opts)
    if not resp.cells:
        raise ProbegenError(f"{path}: not per-row records (the file holds none)")
    return resp


def _inside(run: Path, rel: Any, what: str) -> Path:
    """``run / rel`` where it lies inside the run folder; else one line, before anything is read
    (a results.json naming ``/etc/passwd`` or ``../other/items.jsonl`` is not this run's file)."""
    if not isinstance(rel, str) or not rel:
        raise ProbegenError(f"{run}/results.json: {what} is {rel!r}, not a file name inside the run folder")
    root = run.resolve()
    path = (run / rel).resolve()
    if path != root and root not in path.parents:
        raise ProbegenError(f"{run}/results.json: {what} {rel!r} is outside the run folder; a run reads its own "
                            "files only")
    return run / rel


def _check_files(run: Path, res: dict[str, Any]) -> None:
    """Every file a results.json names (``files``, a bias run's per-dataset ``files``) lies inside ``run``."""
    blocks = [("files", res.get("files"))] + [(f"datasets[{i}].files", d.get("files"))
                                              for i, d in enumerate(res.get("datasets") or []) if isinstance(d, dict)]
    for name, files in blocks:
        if isinstance(files, dict):
            for k, v in files.items():
                if isinstance(v, str):
                    _inside(run, v, f"{name}.{k}")


def _eval_run(run: Path, res: dict[str, Any]) -> list[Respondent]:
    files = res["files"] if isinstance(res.get("files"), dict) else {}
    name = files.get("rows") or next((n for n in ("items.jsonl", "groups.jsonl") if (run / n).is_file()), "items.jsonl")
    rows = _inside(run, name, "files.rows")
    ds, cfg, scorer = _obj(res.get("dataset")), _obj(res.get("eval")), _obj(res.get("scorer"))
    method = str(cfg.get("method") or ("generate" if "generation" in res else f"score:{scorer.get('kind', '?')}"))
    gen = res["generation"] if isinstance(res.get("generation"), dict) else {}
    # asked under several option orders, a row's cell is its majority answer: a variant of its own
    orders = f"orders={gen['orders']} (majority)" if isinstance(gen.get("orders"), int) and gen["orders"] > 1 else ""
    resp = Respondent("", str(res.get("model")), method, _variant(cfg, orders), str(run),
                      dataset_key(ds.get("path"), ds.get("kind")), fingerprint=_fingerprint(ds))
    return [_fill(resp, rows, run)]


def _obj(v: Any) -> dict[str, Any]:
    """A results.json block where it is an object, else empty (a hand-edited file)."""
    return v if isinstance(v, dict) else {}


def _fingerprint(ds: Any) -> str | None:
    """The dataset fingerprint a results.json records (``manifest_sha256``), where it does."""
    fp = ds.get("manifest_sha256") if isinstance(ds, dict) else None
    return fp if isinstance(fp, str) and fp else None


def _bias_run(run: Path, res: dict[str, Any]) -> list[Respondent]:
    out = []
    cfg, scorer = _obj(res.get("eval")), _obj(res.get("scorer"))
    for d in res["datasets"]:
        if not isinstance(d, dict):
            raise ProbegenError(f"{run}/results.json: a datasets entry is not an object")
        files: dict[str, Any] = d["files"] if isinstance(d.get("files"), dict) else {}
        for cond, rel in files.items():
            if not str(rel).endswith(".jsonl") or cond == "units":
                continue
            resp = Respondent("", str(res.get("model")), f"bias:{scorer.get('kind', '?')}",
                              _variant(cfg, f"condition={cond}"), str(run), dataset_key(d.get("path"), d.get("kind")),
                              fingerprint=_fingerprint(d))
            out.append(_fill(resp, _inside(run, rel, f"files.{cond}"), run))
    if not out:
        raise ProbegenError(f"{run} has no per-row records (its results.json lists no condition files)")
    return out


def _study_answer_cells(gold: dict[str, Any], answer: Any) -> dict[str, dict[str, Any]]:
    did, g, k = str(gold["dataset_id"]), gold["gold"], int(gold.get("n") or 2)
    if isinstance(g, list):  # a group: one item per row (the shown positions are the study's own: no option label)
        ans = answer if isinstance(answer, list) else [None] * len(g)
        return {f"{did}#{r}": {"unit": did, "correct": float(a == gg), "chosen": None, "key": None, "k": k}
                for r, (gg, a) in enumerate(zip(g, ans))}
    return {did: {"unit": str(gold.get("unit") or did), "correct": float(answer == g), "chosen": answer, "key": g,
                  "k": k}}


def _study(root: Path) -> list[Respondent]:
    from ..study.store import first_answers, load_study

    study = load_study(root)
    gold = study.gold()
    ds = study.manifest.get("dataset") or {}
    out = []
    for aid, a in study.annotators.items():
        answers = first_answers(study, aid)
        if not answers:
            continue
        resp = Respondent("", "human", HUMAN_METHOD, f"condition={a['condition']}", str(root),
                          dataset_key(ds.get("path"), ds.get("kind")))
        for uid, rec in answers.items():
            if uid not in gold:
                raise ProbegenError(f"answers of {aid} in {root} name item {uid}, which the study's gold does not have")
            resp.cells.update(_study_answer_cells(gold[uid], rec.get("answer")))
        resp.name = f"human:{aid}"
        out.append(resp)
    if len(out) < 2:
        raise ProbegenError(f"study {root} has {len(out)} participant(s) with answers; item statistics need at least 2")
    return out


def read_run(path: str | Path, lm_eval_metric: str = "acc") -> list[Respondent]:
    """The respondents of one run or study folder (see the module doc), or of another harness's per-item
    results (:mod:`probegen.exchange.ingest`; ``lm_eval_metric``: the respondent an lm-eval file gives,
    ``acc``, ``acc_norm`` or ``both``); one error line if it is none of them."""
    from ..exchange.ingest import is_foreign, read_foreign

    run = Path(path)
    if is_foreign(run):  # lm-eval samples, an inspect-ai log, Every Eval Ever results
        return read_foreign(run, lm_eval_metric)
    recover(run)
    if not run.is_dir():
        raise ProbegenError(f"{run} is not a run folder (it does not exist)" if not run.exists()
                            else f"{run} is not a run folder")
    verify_output(run)
    if (run / "manifest.json").is_file() and (run / "assignment.json").is_file():
        return _study(run)
    if not (run / "results.json").is_file():
        raise ProbegenError(f"{run} is not a probegen run or study (no results.json)")
    res = read_results(run)
    _check_files(run, res)  # before any file it names is read
    return _bias_run(run, res) if isinstance(res.get("datasets"), list) else _eval_run(run, res)


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
    """Give each respondent of unknown dataset (:attr:`Respondent.adopt`) the dataset of the runs whose
    items hold all of its items with the same content (options, key: the join is on what an item
    is, not its id), and its items the runs' units (clusters); one line naming its unknown ids if no
    run's dataset holds them, or naming both files where the content contradicts the item its id
    names. Then every dataset's files must agree on each item (:func:`check_content`)."""
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
            item, why, other = clashes[homes[0]]  # type: ignore[misc]
            raise ProbegenError(f"{r.source}: its item {item} is not item {item} of {other} ({why}): results on "
                                "another dataset that uses the same ids")
        home = agree[0]
        r.dataset = home
        for i, c in r.cells.items():  # the file's own unit is its sample id: the runs' cluster (group, concept)
            c["unit"] = units[home].get(i, c["unit"])
    check_content(resps)
    return resps


def check_content(resps: Sequence[Respondent]) -> None:
    """One line naming both files where two respondents on one dataset hold different content
    (options, key) for one item id: the same path rewritten between two runs, or a file that names
    a dataset it does not answer."""
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
    """(run, respondent) of every run (:func:`read_run`); one line where a run is given twice (by
    two paths, or as a copy): it would count as two respondents."""
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
    """The items every dataset holds as the same question (ids alone do not make an item shared:
    two datasets may number different questions alike); one line if none."""
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
    """The response table of ``runs``. Runs on different datasets are an error unless ``common``,
    which keeps the items every dataset shares as the same question (an error if there are none).
    ``lm_eval_metric``: which respondent an lm-eval samples file gives (``acc``, ``acc_norm``, ``both``)."""
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
