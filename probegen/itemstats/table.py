"""One long response table over runs: respondent (model x method x variant, or a study participant) x item.

A run is a ``probegen eval`` folder (``results.json`` and its per-row records ``items.jsonl`` or
``groups.jsonl``), a ``probegen bias`` folder (one respondent per condition file of each dataset) or a
``probegen study`` folder (one respondent per participant). An item is a row id; a CoDA21 group
gives one item per row (``<group>#<row>``, ``k`` options: 1/k of the group). Cells a respondent did
not answer are simply absent (missing). Every bad input is a :class:`~probegen.errors.ProbegenError`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import ProbegenError
from ..io import atomic_write, read_jsonl, recover, verify_output
from .respondent import Respondent, _dataset_key

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
    if options is not None and isinstance(index, int) and 0 <= index < len(options):
        return options[index]
    return index


def record_cells(rec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The cells of one per-row record (``id``, ``gold``, ``pred``, ``correct``): one item, or for an
    alignment group (``rows``, a gold per row) one item per row.

    >>> record_cells({"id": "q1", "gold": [2], "pred": [0], "correct": 0.0, "choices": ["a", "b", "c"]})["q1"]
    {'unit': 'q1', 'correct': 0.0, 'chosen': 'a', 'key': 'c', 'k': 3}
    >>> g = record_cells({"id": "g", "rows": ["x", "y"], "columns": ["y", "x"], "gold": [1, 0], "pred": [1, 1],
    ...                   "correct": 0.5, "k": 2})
    >>> sorted(g), g["g#0"]["correct"], g["g#1"]["chosen"]
    (['g#0', 'g#1'], 1.0, 'x')
    """
    rid, gold, pred = str(rec["id"]), rec.get("gold"), rec.get("pred")
    if isinstance(gold, list) and "rows" in rec and len(gold) > 1:
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
    correct = rec.get("correct")
    if not isinstance(correct, (int, float)):
        raise ProbegenError(f"record {rid} has no numeric 'correct'")
    return {rid: {"unit": str(rec.get("cluster") or rid), "correct": float(correct), "chosen": _label(choices, p),
                  "key": _label(choices, g), "k": max(2, k)}}


def _variant(cfg: dict[str, Any], extra: str = "") -> str:
    parts = [f"{k}={cfg[k]}" for k in VARIANT_KEYS if cfg.get(k) is not None]
    return ";".join([*parts, *([extra] if extra else [])]) or "default"


def _read_results(run: Path) -> dict[str, Any]:
    try:
        res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ProbegenError(f"{run}/results.json cannot be read ({e})") from None
    if not isinstance(res, dict):
        raise ProbegenError(f"{run}/results.json is not a probegen run's results")
    return res


def _records(path: Path, run: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ProbegenError(f"{run} has no per-row records ({path.name}); rerun it with this probegen")
    recs = read_jsonl(path)
    if not recs or not all(isinstance(r, dict) and "id" in r and "correct" in r for r in recs):
        raise ProbegenError(f"{path}: not per-row records (each row needs id and correct)")
    return recs


def _fill(resp: Respondent, recs: list[dict[str, Any]]) -> Respondent:
    for rec in recs:
        resp.cells.update(record_cells(rec))
    return resp


def _eval_run(run: Path, res: dict[str, Any]) -> list[Respondent]:
    files = res["files"] if isinstance(res.get("files"), dict) else {}
    name = files.get("rows") or next((n for n in ("items.jsonl", "groups.jsonl") if (run / n).is_file()), "items.jsonl")
    ds = res.get("dataset") or {}
    cfg = res.get("eval") or {}
    scorer = res.get("scorer") or {}
    method = cfg.get("method") or ("generate" if "generation" in res else f"score:{scorer.get('kind', '?')}")
    gen = res["generation"] if isinstance(res.get("generation"), dict) else {}
    # asked under several option orders, a row's cell is its majority answer: a variant of its own
    orders = f"orders={gen['orders']} (majority)" if isinstance(gen.get("orders"), int) and gen["orders"] > 1 else ""
    resp = Respondent("", str(res.get("model")), method, _variant(cfg, orders), str(run),
                      _dataset_key(ds.get("path"), ds.get("kind")))
    return [_fill(resp, _records(run / name, run))]


def _bias_run(run: Path, res: dict[str, Any]) -> list[Respondent]:
    out = []
    cfg = res.get("eval") or {}
    scorer = res.get("scorer") or {}
    for d in res["datasets"]:
        files = d.get("files") or {}
        for cond, rel in files.items():
            if not str(rel).endswith(".jsonl") or cond == "units":
                continue
            resp = Respondent("", str(res.get("model")), f"bias:{scorer.get('kind', '?')}",
                              _variant(cfg, f"condition={cond}"), str(run), _dataset_key(d.get("path"), d.get("kind")))
            out.append(_fill(resp, _records(run / rel, run)))
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
                          _dataset_key(ds.get("path"), ds.get("kind")))
        for uid, rec in answers.items():
            if uid not in gold:
                raise ProbegenError(f"answers of {aid} in {root} name item {uid}, which the study's gold does not have")
            resp.cells.update(_study_answer_cells(gold[uid], rec.get("answer")))
        resp.name = f"human:{aid}"
        out.append(resp)
    if len(out) < 2:
        raise ProbegenError(f"study {root} has {len(out)} participant(s) with answers; item statistics need at least 2")
    return out


def read_run(path: str | Path) -> list[Respondent]:
    """The respondents of one run or study folder (see the module doc), or of another harness's per-item
    results (:mod:`probegen.exchange.ingest`); one error line if it is none of them."""
    from ..exchange.ingest import is_foreign, read_foreign

    run = Path(path)
    if is_foreign(run):  # lm-eval samples, an inspect-ai log, Every Eval Ever results
        return read_foreign(run)
    recover(run)
    if not run.is_dir():
        raise ProbegenError(f"{run} is not a run folder (it does not exist)" if not run.exists()
                            else f"{run} is not a run folder")
    verify_output(run)
    if (run / "manifest.json").is_file() and (run / "assignment.json").is_file():
        return _study(run)
    if not (run / "results.json").is_file():
        raise ProbegenError(f"{run} is not a probegen run or study (no results.json)")
    res = _read_results(run)
    return _bias_run(run, res) if isinstance(res.get("datasets"), list) else _eval_run(run, res)


def _name(resp: Respondent, taken: set[str]) -> str:
    base = resp.name or f"{resp.model}|{resp.method}|{resp.variant}"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}#{n}", n + 1
    taken.add(name)
    return name


def _adopt(resps: list[Respondent]) -> list[Respondent]:
    """Give each respondent of unknown dataset (:attr:`Respondent.adopt`) the dataset of the runs whose
    items hold all of its items, and its items the runs' units (clusters); one line naming its
    unknown ids if no run's dataset does."""
    items: dict[str, set[str]] = {}
    units: dict[str, dict[str, str]] = {}
    for r in resps:
        if not r.adopt:
            items.setdefault(r.dataset, set()).update(r.cells)
            units.setdefault(r.dataset, {}).update({i: c["unit"] for i, c in r.cells.items()})
    for r in resps:
        if not r.adopt or not items:
            continue
        home = next((d for d, its in items.items() if set(r.cells) <= its), None)
        if home is None:
            d, its = max(items.items(), key=lambda kv: len(kv[1] & set(r.cells)))
            unknown = sorted(set(r.cells) - its)
            raise ProbegenError(f"{r.source}: {len(unknown)} of {len(r.cells)} item ids are not items of {d} "
                                f"(e.g. {', '.join(unknown[:3])}): not results on that dataset")
        r.dataset = home
        for i, c in r.cells.items():  # the file's own unit is its sample id: the runs' cluster (group, concept)
            c["unit"] = units[home].get(i, c["unit"])
    return resps


def gather(runs: Sequence[str | Path], common: bool = False) -> ResponseTable:
    """The response table of ``runs``. Runs on different datasets are an error unless ``common``,
    which keeps the items every dataset shares (an error if there are none)."""
    if not runs:
        raise ProbegenError("no run given")
    resps = _adopt([r for run in runs for r in read_run(run)])
    datasets = list(dict.fromkeys(r.dataset for r in resps))
    if len(datasets) > 1:
        if not common:
            raise ProbegenError(f"the runs are on {len(datasets)} different datasets ({', '.join(datasets[:3])}); "
                                "give runs on one dataset, or --common to keep the items they share")
        shared = set.intersection(*({i for r in resps if r.dataset == d for i in r.cells} for d in datasets))
        if not shared:
            raise ProbegenError("--common: the runs' datasets share no item")
        for r in resps:
            r.cells = {i: c for i, c in r.cells.items() if i in shared}
    taken: set[str] = set()
    for r in resps:
        r.name = _name(r, taken)
    table = ResponseTable(resps)
    if not table.items:
        raise ProbegenError("the runs hold no answered item")
    return table
