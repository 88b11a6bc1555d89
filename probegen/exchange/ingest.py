"""Other harnesses' per-item results as respondents (``probegen items``): lm-eval ``--log_samples`` files of
a probegen lm-eval export, inspect-ai eval logs and Every Eval Ever results; more formats through the
entry-point group ``probegen.import_formats``. A probegen export reads back as its run; any other file's
dataset is unknown and its respondent joins the runs that hold its items with the same content.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import ProbegenError
from ..io import iter_jsonl, json_type, parse_json, sha256_file
from .eee import validate_eee
from .respondent import Respondent, check_correct, content, dataset_key


def respondent(model: str, method: str, variant: str, source: Path, dataset: str | None) -> Respondent:
    """An empty respondent of a file ``source`` (``dataset`` None: unknown, its items matched to the runs')."""
    return Respondent("", model, method, variant, str(source), dataset_key(dataset) if dataset else f"?{source}",
             adopt=not dataset)


#: the metrics an lm-eval file may be read by (``--lm-eval-metric``)
LM_EVAL_METRICS = ("acc", "acc_norm", "both")


def _scalar(v: Any, what: str, where: str, none: bool = True) -> Any:
    """A label or unit as a cell holds it: a string or an integer (None where ``none``); else one line."""
    if (v is None and none) or isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise ProbegenError(f"{where}: {what} is {json_type(v)}, not a label")


def _cell(cell: Any, where: str, partial: bool = False) -> dict[str, Any]:
    """A probegen export's ``probegen_cell`` checked as a run's cell; one line naming ``where`` if not."""
    if not (isinstance(cell, dict) and {"unit", "correct", "chosen", "key", "k"} <= set(cell)):
        raise ProbegenError(f"{where}: probegen_cell is not a probegen cell (unit, correct, chosen, key, k)")
    k = cell["k"]
    if not isinstance(k, int) or isinstance(k, bool) or not 2 <= k <= 10_000:
        raise ProbegenError(f"{where}: probegen_cell k is {str(k)[:40]!r}, not an option count")
    return {"unit": str(_scalar(cell["unit"], "probegen_cell unit", where, none=False)),
            "correct": check_correct(cell["correct"], where, partial),
            "chosen": _scalar(cell["chosen"], "probegen_cell chosen", where),
            "key": _scalar(cell["key"], "probegen_cell key", where), "k": k}


def add_cell(resp: Respondent, item: str, cell: dict[str, Any], where: str, options: Any = None) -> None:
    """Give ``resp`` its ``cell`` for ``item`` (``options``: its option labels); an item twice is one line."""
    if item in resp.cells:
        raise ProbegenError(f"{where}: item {item} appears twice (mixed datasets or runs in one file?)")
    resp.cells[item] = cell
    resp.content[item] = content(cell["key"], options if isinstance(options, list) else None)


def _jsonl(path: Path) -> list[tuple[int, Any]]:
    rows = list(iter_jsonl(path))
    if not rows:
        raise ProbegenError(f"{path}: empty file")
    return rows


# ---- lm-evaluation-harness ----------------------------------------------------------------------
_LM_EVAL_NAME = re.compile(r"samples_(?P<task>.+)_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")


def _lm_eval_results(path: Path) -> list[dict[str, Any]]:
    """The ``results_<time>.json`` objects lm-eval's CLI wrote beside the samples (unreadable ones left out)."""
    m = _LM_EVAL_NAME.search(path.name)
    out = []
    for res in sorted(path.parent.glob(f"results_{m.group('time')}.json")) if m else []:
        try:
            cfg = json.loads(res.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(cfg, dict):
            out.append(cfg)
    return out


def _lm_eval_model(path: Path) -> str:
    """The model lm-eval's results file names, else ``lm-eval``."""
    names = (cfg.get("model_name") or (cfg.get("config") or {}).get("model_args") for cfg in _lm_eval_results(path))
    return next((n for n in names if isinstance(n, str) and n), "lm-eval")


def _lm_eval_export_manifest(path: Path, task: str) -> tuple[dict[str, Any], str] | None:
    """(``dataset_manifest``, export folder) of the probegen lm-eval export the samples answer, where the
    ``results_<time>.json`` beside them names its ``docs.jsonl`` and its ``manifest.json`` is still there."""
    for res in _lm_eval_results(path):
        try:
            cfg = (res.get("configs") or {}).get(task) or {}
            files = (cfg.get("dataset_kwargs") or {}).get("data_files") or {}
            docs = [Path(f) for f in (files.values() if isinstance(files, dict) else [files]) if isinstance(f, str)]
            for d in docs:
                mf = json.loads((d.parent / "manifest.json").read_text(encoding="utf-8"))
                if isinstance(mf, dict) and mf.get("kind") == "export" and isinstance(mf.get("dataset_manifest"), dict):
                    return mf["dataset_manifest"], str(d.parent.resolve())
        except (OSError, ValueError, AttributeError):
            continue
    return None


def _loglik(resp: Any, where: str) -> float:
    """One choice's log-likelihood as lm-eval logs it (``[ll, is_greedy]``): a finite number, or one line."""
    v = resp[0] if isinstance(resp, list) and resp else resp
    try:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise TypeError
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        x = math.nan
    if not math.isfinite(x) or x > 1e-6:
        raise ProbegenError(f"{where}: filtered_resps holds {str(v)[:40]!r}, not a log-likelihood (finite, <= 0)")
    return x


def read_lm_eval(path: Path, metric: str = "acc") -> list[Respondent]:
    """The respondent of an lm-eval samples file scored by ``metric`` (``both``: one per metric)."""
    if metric not in LM_EVAL_METRICS:
        raise ProbegenError(f"unknown lm-eval metric {metric!r}; one of {', '.join(LM_EVAL_METRICS)}")
    metrics = ("acc", "acc_norm") if metric == "both" else (metric,)
    m = _LM_EVAL_NAME.search(path.name)
    task = m.group("task") if m else path.stem
    model = _lm_eval_model(path)
    resps: dict[str, Respondent] = {}
    for line, s in _jsonl(path):
        where = f"{path} line {line}"
        if not isinstance(s, dict) or not {"doc", "filtered_resps"} <= set(s):
            raise ProbegenError(f"{where}: not an lm-eval --log_samples record (no doc/filtered_resps)")
        doc = s["doc"]
        if not isinstance(doc, dict) or "id" not in doc or not isinstance(doc.get("choices"), list):
            raise ProbegenError(f"{where}: the doc has no probegen id and choices (not a probegen lm-eval export): "
                                "its items cannot be matched to probegen's")
        did = str(_scalar(doc["id"], "doc id", where, none=False))
        group = doc.get("group")
        group = group if isinstance(group, str) else None
        item = f"{group}#{did.rpartition('/')[2]}" if group and did.startswith(f"{group}/") else did
        choices = [str(c) for c in doc["choices"]]
        labels: list[Any] = doc["choice_synsets"] if isinstance(doc.get("choice_synsets"), list) else choices
        if len(labels) != len(choices) or not all(isinstance(x, str) for x in labels):
            raise ProbegenError(f"{where}: choice_synsets has {len(labels)} labels for {len(choices)} choices")
        resps_ll = s["filtered_resps"]
        if not isinstance(resps_ll, list):
            raise ProbegenError(f"{where}: filtered_resps is {json_type(resps_ll)}, not a list of log-likelihoods")
        lls = [_loglik(r, where) for r in resps_ll]
        gold = doc.get("gold")
        if len(lls) != len(choices) or isinstance(gold, bool) or not isinstance(gold, int) or \
                not 0 <= gold < len(choices):
            raise ProbegenError(f"{where}: {len(lls)} log-likelihoods for {len(choices)} choices (gold {gold!r})")
        unit = doc.get("cluster") if isinstance(doc.get("cluster"), (str, int)) else None
        for name in metrics:
            if name not in s:
                raise ProbegenError(f"{where}: no {name} in the record (--lm-eval-metric names the metric read)")
            norm = [ll / max(1, len(c)) for ll, c in zip(lls, choices)] if name == "acc_norm" else lls
            pred = max(range(len(norm)), key=lambda i: (norm[i], -i))  # lm-eval: the first of tied choices
            correct = check_correct(s[name], f"{where}: {name}")
            if correct != float(pred == gold):
                raise ProbegenError(f"{where}: {name} {s[name]} disagrees with the arg-max of its log-likelihoods")
            r = resps.setdefault(name, respondent(model, f"lm-eval:{name}", f"task={task}", path, None))
            add_cell(r, item, {"unit": str(unit or group or did), "correct": correct,
                           "chosen": labels[pred], "key": labels[gold], "k": max(2, len(choices))}, where, labels)
    export = _lm_eval_export_manifest(path, task)
    for r in resps.values():
        r.manifest = export[0] if export else None
        if export:  # every file of one export answers one dataset: the export's
            r.dataset = f"?lm-eval export {export[1]}"
    return list(resps.values())


# ---- inspect-ai ---------------------------------------------------------------------------------
#: the score strings inspect-ai's ``value_to_float`` maps (C/I/P/N and yes/no, true/false); any other
#: non-numeric string it turns into 0 with a warning: refused here instead
_SCORE_WORDS = {"c", "i", "p", "n", "yes", "no", "true", "false"}


def _score_value(value: Any, where: str) -> float:
    """An inspect score's value as correctness in [0, 1] (C/I/P/N, yes/no, true/false, a number); else one line."""
    from inspect_ai.scorer import value_to_float

    ok = isinstance(value, (int, float)) or (isinstance(value, str) and value.strip().lower() in _SCORE_WORDS)
    if isinstance(value, str) and not ok:
        try:
            ok = math.isfinite(float(value))
        except ValueError:
            ok = False
    if not ok:
        raise ProbegenError(f"{where}: score {str(value)[:60]!r} is not a number or C/I/P/N")
    return check_correct(value_to_float()(value.strip() if isinstance(value, str) else value), f"{where}: score",
                         partial=True)


def read_inspect(path: Path, **settings: Any) -> list[Respondent]:
    """The respondent of an inspect-ai eval log (first epoch of each sample)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ProbegenError(f"{path}: reading inspect-ai logs needs inspect-ai (pip install "
                            "'probegen[inspect]')") from None
    try:
        log = read_eval_log(str(path))
    except Exception as e:  # inspect raises many kinds (zip, pydantic, JSON): all mean "not a log"
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise ProbegenError(f"{path}: not a readable inspect-ai eval log ({msg})") from None
    if not log.samples:
        raise ProbegenError(f"{path}: the log holds no samples (written without samples, or not finished)")
    meta = log.eval.metadata or {}
    dataset = meta.get("probegen_dataset") or None
    resp = respondent(str(meta.get("probegen_model") or log.eval.model),
                       str(meta.get("probegen_method") or f"inspect:{log.eval.task}"),
                       str(meta.get("probegen_variant") or "default"), path, dataset)
    resp.fingerprint = meta.get("probegen_manifest_sha256") if isinstance(meta.get("probegen_manifest_sha256"), str) \
        and dataset else None
    # a .eval log stores samples by id: the dataset's order restored where the log keeps it
    order = {str(i): n for n, i in enumerate(log.eval.dataset.sample_ids or [])}
    for s in sorted(log.samples, key=lambda s: order.get(str(s.id), len(order))):
        if s.epoch != 1:
            continue
        where = f"{path} sample {s.id}"
        cell = (s.metadata or {}).get("probegen_cell")
        if cell is not None:
            cell = _cell(cell, where)
        else:
            if not s.scores:
                raise ProbegenError(f"{where}: the sample has no score")
            score = s.scores.get("probegen") or next(iter(s.scores.values()))
            target = s.target if isinstance(s.target, str) else (s.target[0] if s.target else None)
            cell = {"unit": str(s.id), "correct": _score_value(score.value, where),
                    "chosen": _scalar(score.answer, "the score's answer", where), "key": target,
                    "k": max(2, len(s.choices or []))}
        add_cell(resp, str(s.id), cell, where, s.choices)
    return [resp]


# ---- Every Eval Ever ----------------------------------------------------------------------------
def _eee_pair(path: Path) -> tuple[Path, Path]:
    """(aggregate, samples) of an EEE folder, aggregate or samples file; one line if there is not exactly one."""
    if path.is_dir():
        aggs = [p for p in sorted(path.rglob("*.json")) if p.with_name(f"{p.stem}_samples.jsonl").is_file()]
        if len(aggs) != 1:
            raise ProbegenError(f"{path}: {len(aggs)} Every Eval Ever aggregate(s) with samples in it; give one file")
        return aggs[0], aggs[0].with_name(f"{aggs[0].stem}_samples.jsonl")
    if path.name.endswith("_samples.jsonl"):
        agg = path.with_name(path.name[: -len("_samples.jsonl")] + ".json")
        if not agg.is_file():
            raise ProbegenError(f"{path}: its Every Eval Ever aggregate {agg.name} is not beside it")
        return agg, path
    samples = path.with_name(f"{path.stem}_samples.jsonl")
    if not samples.is_file():
        raise ProbegenError(f"{path}: no per-instance samples ({samples.name}) beside it")
    return path, samples


def read_eee(path: Path, **settings: Any) -> list[Respondent]:
    """The respondents (one per evaluation result) of Every Eval Ever samples and their aggregate."""
    agg_path, samples_path = _eee_pair(path)
    try:
        aggregate = parse_json(agg_path.read_text(encoding="utf-8"), agg_path)
    except (OSError, ValueError) as e:
        raise ProbegenError(f"{agg_path}: not JSON ({e})") from None
    rows = [r for _, r in _jsonl(samples_path)]
    if not isinstance(aggregate, dict) or not all(isinstance(r, dict) for r in rows):
        raise ProbegenError(f"{agg_path}: not an Every Eval Ever aggregate and samples")
    validate_eee(aggregate, rows, str(samples_path))
    det = aggregate.get("detailed_evaluation_results") or {}
    if isinstance(det.get("total_rows"), int) and det["total_rows"] != len(rows):
        raise ProbegenError(f"{samples_path}: {len(rows)} samples, its aggregate says {det['total_rows']} (truncated?)")
    if det.get("checksum") and det.get("hash_algorithm", "sha256") == "sha256" \
            and det["checksum"] != sha256_file(samples_path):
        raise ProbegenError(f"{samples_path}: its sha256 is not the aggregate's checksum (changed or truncated)")
    results = {r.get("evaluation_result_id") or r["evaluation_name"]: r for r in aggregate["evaluation_results"]}
    model = str(aggregate["model_info"]["id"])
    resps: dict[str, Respondent] = {}
    for i, row in enumerate(rows, 1):
        where = f"{samples_path} line {i}"
        rid = row.get("evaluation_result_id") or row["evaluation_name"]
        if rid not in results:
            raise ProbegenError(f"{where}: evaluation result {rid!r} is not in the aggregate")
        if rid not in resps:
            det_r = (results[rid]["source_data"].get("additional_details") or {})
            resps[rid] = respondent(str(det_r.get("probegen_model") or model),
                                     str(det_r.get("probegen_method") or f"eee:{aggregate['eval_library']['name']}"),
                                     str(det_r.get("probegen_variant") or f"result={rid}"), samples_path,
                                     det_r.get("probegen_dataset") or None)
            fp = det_r.get("probegen_manifest_sha256")
            resps[rid].fingerprint = fp if isinstance(fp, str) and fp and det_r.get("probegen_dataset") else None
        cell_text = (row.get("metadata") or {}).get("probegen_cell")
        if cell_text is not None:
            cell = _cell(parse_json(cell_text, samples_path, i) if isinstance(cell_text, str) else cell_text, where)
        else:
            answers = [a for a in row["answer_attribution"] if a["is_terminal"]] or row["answer_attribution"]
            ref = row["input"]["reference"]
            cell = {"unit": str(row["sample_id"]),
                    "correct": check_correct(row["evaluation"]["score"], f"{where}: evaluation.score", partial=True),
                    "chosen": _scalar(answers[-1]["extracted_value"] if answers else None, "the answer", where),
                    "key": _scalar(ref[0] if ref else None, "the reference", where),
                    "k": max(2, len(row["input"].get("choices") or []))}
        add_cell(resps[rid], str(row["sample_id"]), cell, where, row["input"].get("choices"))
    return list(resps.values())


# ---- the registry -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportFormat:
    """One format of other harnesses' results: ``claims(path)``, ``read(path, lm_eval_metric=...)``."""

    name: str
    claims: Callable[[Path], bool]
    read: Callable[..., list[Respondent]]


def _eee_dir(p: Path) -> bool:
    return p.is_dir() and not (p / "results.json").is_file() and (p / "data").is_dir() \
        and not (p / "manifest.json").is_file()


#: the built-in formats, asked in this order (after the installed ones)
BUILTIN_FORMATS = (
    ImportFormat("eee", lambda p: _eee_dir(p) or (p.name.endswith("_samples.jsonl") and not p.name.startswith(
        "samples_")) or (p.suffix == ".json" and p.with_name(f"{p.stem}_samples.jsonl").is_file()), read_eee),
    ImportFormat("inspect", lambda p: p.suffix in (".eval", ".json"), read_inspect),
    ImportFormat("lm-eval", lambda p: p.suffix == ".jsonl",
                 lambda p, lm_eval_metric="acc": read_lm_eval(p, lm_eval_metric)),
)
#: the entry-point group of third-party import formats (:func:`formats`)
FORMAT_GROUP = "probegen.import_formats"


@functools.cache
def formats() -> tuple[ImportFormat, ...]:
    """The import formats in the order a file is offered to them: entry points, then the built-ins.

    >>> [f.name for f in formats()][-3:]
    ['eee', 'inspect', 'lm-eval']
    """
    from importlib.metadata import entry_points

    from ..plugins import load_plugins

    found: list[ImportFormat] = []

    def add(fmt: Any) -> None:
        if not isinstance(fmt, ImportFormat) or fmt.name in {f.name for f in (*found, *BUILTIN_FORMATS)}:
            raise ProbegenError(f"{fmt!r} is not a probegen.exchange.ingest.ImportFormat of a new name")
        found.append(fmt)

    load_plugins(entry_points(group=FORMAT_GROUP), "import format", FORMAT_GROUP, lambda obj: obj, add)
    return (*found, *BUILTIN_FORMATS)


def is_foreign(path: str | Path) -> bool:
    """Whether ``path`` is another harness's results (a file, or a folder a format claims) rather than a run."""
    p = Path(path)
    return p.is_file() or (p.is_dir() and any(f.claims(p) for f in formats()))


def read_foreign(path: str | Path, lm_eval_metric: str = "acc") -> list[Respondent]:
    """The respondents of ``path`` read by the first format that claims it; one line if none does."""
    p = Path(path)
    fmt = next((f for f in formats() if f.claims(p)), None)
    if fmt is None:
        raise ProbegenError(f"{p}: not a run folder, lm-eval samples (.jsonl), inspect-ai log (.eval/.json) or "
                            "Every Eval Ever results")
    return fmt.read(p, lm_eval_metric=lm_eval_metric)
