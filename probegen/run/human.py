"""The run of ``probegen study score`` and ``probegen bias --human``: the study's answers and the models'
bias runs read, results written; the scoring is :mod:`probegen.diagnostics.human`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from probegen.diagnostics.bias_plots import beside_points, plot_bias_plane
from probegen.diagnostics.human import (
    RATIOS,
    correctness,
    human_bias,
    human_point,
    human_section,
    model_conditions,
    render_report,
    score_answers,
)
from probegen.errors import ProbegenError


def collect(study: Any) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """condition -> item uid -> annotator -> first answer record (with its correctness)."""
    from probegen.study.store import first_answers

    gold = study.gold()
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {c: {} for c in study.conditions}
    for aid, a in study.annotators.items():
        for uid, rec in first_answers(study, aid).items():
            if uid not in gold:
                raise ProbegenError(f"answers of {aid} name item {uid}, which the study's gold does not have")
            out[a["condition"]].setdefault(uid, {})[aid] = {**rec, "correct": correctness(gold[uid], rec["answer"])}
    return out


def score_study(study_dir: str | Path, models: Sequence[str | Path] = (), n_boot: int = 1000,
                seed: int = 0) -> dict[str, Any]:
    """Everything ``probegen study score`` reports, as a JSON-ready dict (:mod:`probegen.diagnostics.human`)."""
    from probegen.study.store import load_study

    study = load_study(study_dir)
    answers = collect(study)
    if not any(answers.values()):
        raise ProbegenError(f"study {study.root} has no answers yet (serve it with `probegen study serve` or import a "
                            "CSV)")
    results: dict[str, Any]
    results, item_scores = score_answers(study, answers, n_boot, seed)
    results["models"] = [model_on_study(run, study, item_scores, n_boot, seed) for run in models]
    return results


def _bias_entry(results: dict[str, Any], run: Path, study: Any) -> dict[str, Any]:
    """The dataset entry of a ``probegen bias`` run that matches the study's dataset."""
    want = study.manifest["dataset"]
    entries = [d for d in results.get("datasets", []) if not d.get("skipped") and d.get("files")]
    d: dict[str, Any]
    for d in entries:
        same_path = Path(d.get("path", "")).resolve() == Path(want["path"]).resolve()
        if same_path or d.get("name", "").split(":")[0] == want["name"]:
            return d
    names = ", ".join(d.get("name", "?") for d in entries) or "none"
    raise ProbegenError(f"bias run {run} has no dataset {want['name']} (it has: {names}); run `probegen bias --dataset "
                        f"{want['path']}`")


def model_on_study(run: str | Path, study: Any, human: dict[str, dict[str, float]], n_boot: int,
                   seed: int) -> dict[str, Any]:
    """A ``probegen bias`` run's accuracy and bias on exactly the study's items, and the human - model gap."""
    from probegen.io import check_regular, read_jsonl, recover, verify_output

    run = Path(run)
    recover(run)  # an interrupted write of the run is finished first
    if run.is_dir():
        verify_output(run)
    rfile = run / "results.json" if run.is_dir() else run
    check_regular(rfile, "bias run's results")  # a FIFO or a device: one line, unread
    try:
        results = json.loads(rfile.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProbegenError(f"{rfile} not found: --model takes a `probegen bias` output directory") from None
    except json.JSONDecodeError as e:
        raise ProbegenError(f"{rfile}: not valid JSON ({e.msg})") from None
    entry = _bias_entry(results, rfile.parent, study)
    gold = study.gold()
    per_item: dict[str, dict[str, float]] = {}
    for cond in study.conditions:
        rel = entry["files"].get(cond)
        if rel is None:
            continue
        recs = {str(r["id"]): r for r in read_jsonl(rfile.parent / rel)}
        scores = {}
        for uid, g in gold.items():
            if cond in g.get("kept_out", {}):  # not shown to people in cond: not in the model's figures either
                continue
            r = recs.get(str(g["dataset_id"]))
            if r is None:
                raise ProbegenError(f"bias run {rfile.parent} has no {cond} record for item {g['dataset_id']} "
                                    "(a --split run? make the study with the same --split)")
            scores[uid] = float(r["correct"])
        per_item[cond] = scores
    return {"run": str(rfile.parent), "model": results.get("model"), "dataset": entry.get("name"),
            "conditions": model_conditions(per_item, gold, human, n_boot, seed),
            "bias": human_bias(per_item, gold, n_boot, seed)}


def write_score(res: dict[str, Any], out: Path) -> Path:
    """results.json, report.md and (when the human bias is defined) bias_plane.png, in one rename."""
    from probegen.io import atomic_dir, write_json

    with atomic_dir(out) as tmp:
        points = [human_point(res)] + [
            {"name": f"{m['model']} (same {res['unit']}s)",
             **{k: (m["bias"].get("ratios") or {}).get(k) for k in RATIOS}}
            for m in res["models"]
        ]
        if res["bias"].get("ratios"):
            plot_bias_plane(points, tmp / "bias_plane.png",
                            title=f"Bias plane: humans vs models on {res['dataset']['name']}")
            res = dict(res, plot="bias_plane.png")
        (tmp / "report.md").write_text(render_report(res), encoding="utf-8")
        write_json(tmp / "results.json", res)
    return out


def add_human_to_bias(out: Path, studies: list[str | Path], n_boot: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Redraw a finished ``probegen bias`` run's bias plane with each study's human point.

    results.json gains a ``human`` list (the studies' accuracies and ratios) and report.md a
    section; the model points are the run's own (whole datasets), the human ones the study items.
    """
    from probegen.io import atomic_write, write_json

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    entries = [e for e in results.get("datasets", []) if e.get("all")]
    points = [{"name": e["name"], **{k: e["all"]["ratios"].get(k) for k in RATIOS}}
              for e in entries] + beside_points(results)
    human = []
    for s in studies:
        res = score_study(s, n_boot=n_boot, seed=seed)
        human.append({"study": res["study"], "dataset": res["dataset"]["name"], "unit": res["unit"],
                      "accuracy": {c: e["accuracy"] for c, e in res["conditions"].items()}, "bias": res["bias"]})
        points.append(human_point(res,
                                  f"humans: {res['dataset']['name']} ({res['bias'].get('n_units', 0)} {res['unit']}s)"))
    plot_bias_plane(points, out / "bias_plane.png", title=f"Context-word bias plane: {results.get('model')} and humans")
    results["human"] = human
    write_json(out / "results.json", results)
    report = (out / "report.md").read_text(encoding="utf-8") if (out / "report.md").exists() else ""
    with atomic_write(out / "report.md") as fh:
        fh.write(report.rstrip("\n") + "\n" + "\n".join(human_section(human)) + "\n")
    return human
