"""A ``probegen eval`` run's per-item results as Every Eval Ever or an inspect-ai eval log: one sample per
item, probegen's own cell (``probegen_cell``) riding along so the import reads back exactly the run.
Every export is read back before it is renamed into place (:func:`check_read_back`); outputs are
deterministic (timestamps: the run's ``results.json``'s).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ProbegenError
from ..io import atomic_dir, atomic_output_file, dumps, read_jsonl, read_manifest, sha256_file, write_json, write_jsonl
from ..version import __version__
from .eee import EEE_SCHEMA_VERSION, validate_eee
from .runs import read_results, read_run, record_cells, rows_file

#: the formats a run exports to (``probegen export --format``)
RUN_FORMATS = ("eee", "inspect-log")


def is_run(path: str | Path) -> bool:
    """Whether ``path`` is a run folder (it holds a ``results.json``)."""
    return Path(path, "results.json").is_file()


def _choices(rec: dict[str, Any]) -> list[str]:
    opts = rec.get("columns") if "rows" in rec else rec.get("choices")
    return [str(o) for o in opts] if isinstance(opts, list) else []


def _input(rec: dict[str, Any], kind: str, item: str) -> str:
    """The item's prompt where the record keeps it, else a short description (runs keep no query text)."""
    for key in ("query", "question", "text", "context"):
        if isinstance(rec.get(key), str):
            return str(rec[key])
    if "rows" in rec and "#" in item:
        row = int(item.rpartition("#")[2])
        return f"{kind} group {rec['id']}, row {row}: {rec['rows'][row]}"
    return f"{kind} item {item}" + (f" ({rec['synset']})" if rec.get("synset") else "")


def run_samples(run: str | Path) -> tuple[dict[str, Any], Any, list[dict[str, Any]]]:
    """(results.json, the run's respondent, one sample per item) of an eval run; one line if not one. A
    sample: ``item``, ``cell``, ``input``, ``choices`` (labels), ``answer`` and ``target`` (text; "" if none)."""
    run = Path(run)
    resps = read_run(run)
    res = read_results(run)
    if isinstance(res.get("datasets"), list) or len(resps) != 1:
        raise ProbegenError(f"{run} is not a `probegen eval` run (a bias or study folder cannot be exported)")
    resp = resps[0]
    kind = str((res.get("dataset") or {}).get("kind") or "probegen")
    samples = [{"item": item, "cell": cell, "input": _input(rec, kind, item), "choices": _choices(rec),
                "answer": "" if cell["chosen"] is None else str(cell["chosen"]),
                "target": "" if cell["key"] is None else str(cell["key"])}
               for rec in read_jsonl(rows_file(run, res)) for item, cell in record_cells(rec).items()]
    return res, resp, samples


def _when(run: Path) -> datetime:
    return datetime.fromtimestamp(int((run / "results.json").stat().st_mtime), timezone.utc)


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "unknown"


def _bench(res: dict[str, Any]) -> str:
    path = Path(str((res.get("dataset") or {}).get("path") or "probegen"))
    return _slug(path.name if path.is_dir() else path.stem)


def _headline(res: dict[str, Any]) -> dict[str, Any]:
    """The run's overall metrics: WordNetQA's at the top of ``metrics``, CoDA21's under ``all``."""
    m = res.get("metrics") or {}
    return m if "accuracy" in m else (m.get("all") or {})


def _accuracy(res: dict[str, Any], samples: list[dict[str, Any]]) -> float:
    """The run's reported accuracy (CoDA21: the mean of group accuracies), else the items' mean."""
    acc = _headline(res).get("accuracy")
    return float(acc) if isinstance(acc, (int, float)) else sum(s["cell"]["correct"] for s in samples) / len(samples)


def _details(res: dict[str, Any], resp: Any) -> dict[str, str]:
    """What the import needs to rebuild the respondent (EEE's additional_details: strings only)."""
    ds = res.get("dataset") or {}
    return {"probegen_version": __version__, "probegen_model": resp.model, "probegen_method": resp.method,
            "probegen_variant": resp.variant, "probegen_dataset": str(ds.get("path") or ""),
            "probegen_kind": str(ds.get("kind") or ""),
            "probegen_manifest_sha256": str(ds.get("manifest_sha256") or "")}


# ---- Every Eval Ever ----------------------------------------------------------------------------
def eee_documents(run: str | Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(folder path of the pair under the output, aggregate JSON, sample rows) of an eval run."""
    run = Path(run)
    res, resp, samples = run_samples(run)
    bench = _bench(res)
    developer, _, model = resp.model.rpartition("/")
    developer, model = _slug(developer or "unknown"), _slug(model)
    when = _when(run)
    stamp = str(int(when.timestamp()))
    # a stable uuid4-shaped name from the run's content: the same run gives the same files
    digest = hashlib.sha256((sha256_file(run / "results.json") + dumps([s["item"] for s in samples])).encode())
    name = str(uuid.UUID(bytes=digest.digest()[:16], version=4))
    folder = f"data/{bench}/{developer}/{model}"
    eval_id = f"{bench}/{developer}/{model}/{stamp}"
    result_id = f"{bench}/accuracy"
    details = _details(res, resp)
    rows = [
        {
            "schema_version": EEE_SCHEMA_VERSION, "evaluation_id": eval_id, "model_id": resp.model,
            "evaluation_name": bench, "evaluation_result_id": result_id, "sample_id": s["item"],
            "sample_hash": hashlib.sha256((s["input"] + s["target"]).encode()).hexdigest(),
            "interaction_type": "single_turn",
            "input": {"raw": s["input"], "reference": [s["target"]], "choices": s["choices"] or None},
            "output": {"raw": [s["answer"]]},
            "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": s["answer"],
                                    "extraction_method": f"probegen:{resp.method}", "is_terminal": True}],
            "evaluation": {"score": float(s["cell"]["correct"]), "is_correct": bool(s["cell"]["correct"] >= 1)},
            "metadata": {"probegen_cell": dumps(s["cell"]), "unit": str(s["cell"]["unit"]), "k": str(s["cell"]["k"])},
        }
        for s in samples
    ]
    acc = _accuracy(res, samples)
    ci = _headline(res).get("accuracy_ci")
    uncertainty: dict[str, Any] = {"num_samples": len(samples)}
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        uncertainty["confidence_interval"] = {"lower": float(ci[0]), "upper": float(ci[1]), "confidence_level": 0.95,
                                              "method": "cluster bootstrap (probegen eval)"}
    aggregate = {
        "schema_version": EEE_SCHEMA_VERSION, "evaluation_id": eval_id,
        "evaluation_timestamp": when.isoformat(), "retrieved_timestamp": stamp,
        "source_metadata": {"source_name": "probegen eval", "source_type": "evaluation_run",
                            "source_organization_name": "probegen", "evaluator_relationship": "third_party"},
        "eval_library": {"name": "probegen", "version": __version__},
        "model_info": {"name": resp.model, "id": resp.model,
                       "additional_details": {"deployment_type": "self_deployed", "model_availability": "unknown"}},
        "evaluation_results": [{
            "evaluation_result_id": result_id, "evaluation_name": bench,
            "source_data": {"dataset_name": bench, "source_type": "other", "additional_details": details},
            "metric_config": {"evaluation_description": f"probegen {details['probegen_kind']} accuracy",
                              "metric_id": "accuracy", "metric_name": "Accuracy", "metric_kind": "accuracy",
                              "metric_unit": "proportion", "lower_is_better": False, "score_type": "continuous",
                              "min_score": 0, "max_score": 1},
            "score_details": {"score": acc, "details": {"item_mean": repr(sum(r["evaluation"]["score"] for r in rows)
                                                                          / len(rows))},
                              "uncertainty": uncertainty},
        }],
        "detailed_evaluation_results": {"format": "jsonl", "file_path": f"{folder}/{name}_samples.jsonl",
                                        "hash_algorithm": "sha256", "checksum": "", "total_rows": len(rows)},
    }
    return f"{folder}/{name}", aggregate, rows


def check_read_back(out: str | Path, fmt: str, want: list[tuple[str, float]], got: list[tuple[str, float]]) -> None:
    """Refuse (one line, nothing written) an export whose read-back samples ``got`` (item id, score) are
    not the run's ``want``.

    >>> check_read_back("x.eval", "inspect-ai log", [("a", 1.0), ("b", 0.0)], [("a", 1.0)])
    Traceback (most recent call last):
    probegen.errors.ProbegenError: x.eval: read back, the inspect-ai log holds 1 samples of the run's 2 (item 'b' is \
lost); nothing was written
    """
    from collections import Counter

    wanted, gotten = Counter(i for i, _ in want), Counter(i for i, _ in got)
    why = None
    if wanted != gotten:
        lost, extra = sorted(wanted - gotten), sorted(gotten - wanted)
        why = f"item {lost[0]!r} is lost" if lost else f"item {extra[0]!r} is not the run's"
    else:
        scores = dict(want)
        bad = next((i for i, v in got if scores[i] != v), None)
        if bad is not None:
            why = f"item {bad!r} scores {dict(got)[bad]} where the run has {scores[bad]}"
    if why is not None:
        raise ProbegenError(f"{out}: read back, the {fmt} holds {len(got)} samples of the run's {len(want)} ({why}); "
                            "nothing was written")


def write_eee(run: str | Path, out: str | Path) -> str:
    """Export the eval run ``run`` as Every Eval Ever into the folder ``out`` (read back first); a summary line."""
    rel, aggregate, rows = eee_documents(run)
    with atomic_dir(out) as tmp:
        (tmp / rel).parent.mkdir(parents=True)
        write_jsonl(tmp / f"{rel}_samples.jsonl", rows)
        aggregate["detailed_evaluation_results"]["checksum"] = sha256_file(tmp / f"{rel}_samples.jsonl")
        validate_eee(aggregate, rows, str(run))
        write_json(tmp / f"{rel}.json", aggregate)
        back = read_jsonl(tmp / f"{rel}_samples.jsonl")
        total = read_manifest(tmp / f"{rel}.json")["detailed_evaluation_results"]["total_rows"]
        check_read_back(out, "Every Eval Ever samples", [(str(r["sample_id"]), r["evaluation"]["score"]) for r in rows],
                        [(str(r["sample_id"]), r["evaluation"]["score"]) for r in back])
        if total != len(back):
            raise ProbegenError(f"{out}: read back, the aggregate counts {total} samples and the samples file holds "
                                f"{len(back)}; nothing was written")
    return f"wrote {out} (Every Eval Ever {EEE_SCHEMA_VERSION}: {rel}.json + {len(rows)} samples)"


# ---- inspect-ai ---------------------------------------------------------------------------------
def inspect_log(run: str | Path) -> Any:
    """The eval run as an inspect-ai :class:`~inspect_ai.log.EvalLog` (inspect-ai's own models)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
    )
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput
    from inspect_ai.scorer import Score

    run = Path(run)
    res, resp, samples = run_samples(run)
    bench, when = _bench(res), _when(run)
    details = _details(res, resp)
    eval_samples = [
        EvalSample(id=s["item"], epoch=1, input=s["input"], choices=s["choices"] or None, target=s["target"],
                   # the message id fixed (inspect draws a random one): the same run gives the same log
                   output=ModelOutput(model=resp.model, choices=[ChatCompletionChoice(
                       message=ChatMessageAssistant(id=f"probegen-{i}", content=s["answer"], model=resp.model,
                                                    source="generate"), stop_reason="stop")]),
                   scores={"probegen": Score(value=float(s["cell"]["correct"]), answer=s["answer"])},
                   metadata={"probegen_cell": s["cell"]})
        for i, s in enumerate(samples)]
    spec = EvalSpec(created=when.isoformat(), task=f"probegen/{bench}", task_id=f"probegen-{bench}",
                    run_id=f"probegen-{int(when.timestamp())}", eval_id=f"probegen-{bench}-{int(when.timestamp())}",
                    dataset=EvalDataset(name=bench, location=details["probegen_dataset"], samples=len(samples),
                                        sample_ids=[s["item"] for s in samples]),
                    model=resp.model, config=EvalConfig(), metadata=details)
    acc = _accuracy(res, samples)
    results = EvalResults(total_samples=len(samples), completed_samples=len(samples),
                          scores=[EvalScore(name="probegen", scorer="probegen",
                                            metrics={"accuracy": EvalMetric(name="accuracy", value=acc)})])
    return EvalLog(status="success", eval=spec, results=results, samples=eval_samples)


def write_inspect_log(run: str | Path, out: str | Path) -> str:
    """Export the eval run ``run`` as an inspect-ai eval log file ``out`` (``.eval`` or ``.json``)."""
    from inspect_ai.log import write_eval_log

    out = Path(out)
    if out.suffix not in (".eval", ".json"):
        raise ProbegenError(f"--out {out}: an inspect-ai log is a .eval or .json file")
    log = inspect_log(run)
    if out.suffix == ".eval":
        _check_eval_ids([str(s.id) for s in log.samples or []], out)
    with tempfile.TemporaryDirectory() as d:  # inspect writes the file itself: written aside, copied in atomically
        tmp = Path(d) / f"log{out.suffix}"
        write_eval_log(log, str(tmp))
        if out.suffix == ".eval":  # a zip: its entries' dates set to the run's, not the clock's
            _restamp_zip(tmp, _when(Path(run)))
        _read_back_inspect(tmp, out, [(str(s.id), float(s.scores["probegen"].value)) for s in log.samples or []])
        with atomic_output_file(out, "wb") as fh:
            fh.write(tmp.read_bytes())
    return f"wrote {out} (inspect-ai eval log: {len(log.samples or [])} samples; open with `inspect view --log-dir " \
           f"{out.parent}`)"


def _check_eval_ids(ids: list[str], out: Path) -> None:
    """Refuse an item id with a NUL byte: it ends the zip entry a ``.eval`` log names a sample by."""
    bad = next((i for i in ids if "\x00" in i), None)
    if bad is not None:
        raise ProbegenError(f"--out {out}: item id {bad!r} holds a NUL byte, which an inspect-ai .eval log cannot "
                            "carry (its samples are zip entries named by id); export as a .json log, or --format eee")


def _read_back_inspect(path: Path, out: Path, want: list[tuple[str, float]]) -> None:
    """The log at ``path`` read with inspect-ai's own reader: its samples (id, score) must be ``want``."""
    from inspect_ai.log import read_eval_log

    try:
        back = read_eval_log(str(path))
    except Exception as e:  # noqa: BLE001 - whatever inspect-ai raises, the export is refused in one line
        raise ProbegenError(f"{out}: inspect-ai cannot read the log back ({type(e).__name__}: {str(e)[:160]}); "
                            "nothing was written") from None
    scores = [(str(s.id), (s.scores or {}).get("probegen")) for s in back.samples or []]
    got = [(i, float(v.value) if v is not None and isinstance(v.value, (int, float)) else float("nan"))
           for i, v in scores]
    check_read_back(out, "inspect-ai log", want, got)


def _restamp_zip(path: Path, when: datetime) -> None:
    """Rewrite the zip ``path`` with every entry dated ``when`` (same names, data and compression)."""
    import zipfile

    stamp = max(when, datetime(1980, 1, 1, tzinfo=timezone.utc)).timetuple()[:6]
    with zipfile.ZipFile(path) as zin:
        entries = [(info, zin.read(info.filename)) for info in zin.infolist()]
    with zipfile.ZipFile(path, "w") as zout:
        for info, data in entries:
            info.date_time = stamp
            zout.writestr(info, data)
