"""Probegen's own folders read as respondents, and :func:`read_run`, which reads other harnesses' files
too (:mod:`.ingest`): an eval run (``results.json`` and ``items.jsonl``/``groups.jsonl``; a CoDA21 group
gives one item per row, ``<group>#<row>``), a bias run (one respondent per condition file of each
dataset) or a study (one per participant). Every bad input is a :class:`~probegen.errors.ProbegenError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..errors import ProbegenError
from ..io import iter_jsonl, parse_json, recover, verify_output
from ..methods.generate import GenerateMethod
from .ingest import is_foreign, read_foreign
from .respondent import Respondent, check_correct, content, dataset_key

#: the method of a study participant (human and model difficulties side by side: items.csv p_human, p_models)
HUMAN_METHOD = "study"
#: the eval settings that tell two prompt variants of one model apart (seed and split aside)
VARIANT_KEYS = ("mode", "matching", "pattern", "length_norm", "reduction", "prompts", "permutations")


def _label(options: Sequence[Any] | None, index: Any) -> Any:
    """An option shown the same to every respondent: its text or name where the record has it, else its index."""
    if index is None or isinstance(index, bool):
        return None
    if isinstance(options, (list, tuple)) and isinstance(index, int) and 0 <= index < len(options):
        return options[index]
    return index


def record_cells(rec: dict[str, Any], where: str = "") -> dict[str, dict[str, Any]]:
    """The cells of one per-row record (``id``, ``gold``, ``pred``, ``correct``): one item, or one per row of
    an alignment group (``rows``). ``correct`` is 0 or 1 (a unit of several rows': the share right); else
    one line naming ``where``.

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


def _fill(resp: Respondent, path: Path, run: Path) -> Respondent:
    """``resp`` with the cells of the records file ``path`` of ``run``; a bad row is one line naming it."""
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
    """``run / rel`` where it lies inside the run folder (a run reads its own files only); else one line."""
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


def rows_file(run: Path, res: dict[str, Any]) -> Path:
    """An eval run's per-row records file: the one its results.json names (inside the run), else the one there."""
    files = res["files"] if isinstance(res.get("files"), dict) else {}
    name = files.get("rows") or next((n for n in ("items.jsonl", "groups.jsonl") if (run / n).is_file()), "items.jsonl")
    return _inside(run, name, "files.rows")


def _eval_run(run: Path, res: dict[str, Any]) -> list[Respondent]:
    rows = rows_file(run, res)
    ds, cfg, scorer = _obj(res.get("dataset")), _obj(res.get("eval")), _obj(res.get("scorer"))
    # every method but the cloze one records eval.method; a generation block without it: an early generate run
    early = GenerateMethod.name if "generation" in res else f"score:{scorer.get('kind', '?')}"
    method = str(cfg.get("method") or early)
    gen = res["generation"] if isinstance(res.get("generation"), dict) else {}
    # asked under several option orders, a row's cell is its majority answer: a variant of its own
    orders = f"orders={gen['orders']} (majority)" if isinstance(gen.get("orders"), int) and gen["orders"] > 1 else ""
    resp = Respondent("", str(res.get("model")), method, _variant(cfg, orders), str(run),
                      dataset_key(ds.get("path")), fingerprint=_fingerprint(ds))
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
                              _variant(cfg, f"condition={cond}"), str(run), dataset_key(d.get("path")),
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
                          dataset_key(ds.get("path")))
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
    """The respondents of one run or study folder, or of another harness's results (:mod:`.ingest`;
    ``lm_eval_metric``: ``acc``, ``acc_norm`` or ``both``); one error line if it is none of them."""
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
