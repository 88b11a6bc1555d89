"""The run of ``probegen contamination``: the forms checked and loaded, every form scored by every model (or
answers read from runs), the folder written whole; the test is :mod:`probegen.diagnostics.contamination`."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Sequence

from probegen import tasks
from probegen.diagnostics.contamination import plot, render, respondent_row, siblings_problem
from probegen.errors import ProbegenError

from .compare import correctness, read_answers


def load_forms(seen: str | Path, fresh: Sequence[str | Path], force: bool = False,
               log: Callable[[str], None] = print) -> tuple[str, list[Any], str | None]:
    """(kind, loaded datasets: seen first, the warning ``--force`` let through or None) after checking
    they are forms of one probe: every path once, one kind, no unit (CoDA21 group, WordNetQA
    concept) shared between two forms, and sibling forms of one build (:func:`siblings_problem`;
    ``force``: run anyway, with the warning in the report)."""
    paths = [Path(seen), *map(Path, fresh)]
    if len(fresh) < 2:
        raise ProbegenError("the contamination test needs at least 2 fresh forms (--fresh D2 D3 ...): the null is "
                            f"how fresh forms differ from each other; got {len(fresh)}")
    real = [p.resolve() for p in paths]
    for i, j in combinations(range(len(paths)), 2):
        if real[i] == real[j]:
            raise ProbegenError(f"{paths[j]} is given twice (as {'--seen' if i == 0 else '--fresh'} and --fresh); "
                                "every form must be a different dataset")
    loaded: list[tuple[str, Any]] = []  # (kind, the dataset its task loaded)
    for p in paths:
        if not p.exists():
            raise ProbegenError(f"{p}: no such dataset")
        task = tasks.detect(p)
        loaded.append((task.name, task.load(p, ablations=True)))
    kinds = {k for k, _ in loaded}
    if len(kinds) > 1:
        detail = ", ".join(f"{p.name}: {k}" for p, (k, _) in zip(paths, loaded))
        raise ProbegenError(f"the forms are of different kinds ({detail}); give forms of one probe")
    kind = loaded[0][0]
    task = tasks.get(kind)
    unit = task.resampling_unit
    # the synsets a form asks about (a kind that cannot be cut into forms: its items' ids)
    ids = [set(task.form_synsets(d) if isinstance(task, tasks.Formable) else (str(it.id) for it in d.items))
           for _, d in loaded]
    for i, j in combinations(range(len(paths)), 2):
        shared = ids[i] & ids[j]
        if shared:
            raise ProbegenError(f"{paths[i]} and {paths[j]} share {len(shared)} synset(s) (e.g. {sorted(shared)[0]}): "
                                f"parallel forms must be disjoint ({unit}s are resampled whole)")
    data = [d for _, d in loaded]
    problem = siblings_problem(paths, data)
    warning = None
    if problem is not None:
        why = (f"the seen and fresh forms are not sibling forms of one `make ... --forms K` build ({problem}): "
               "sets made apart differ by how they were made, so the gap would not measure exposure")
        if not force:
            raise ProbegenError(f"{why}; give forms of one build, or --force to run anyway")
        warning = f"--force: {why}"
        log(f"warning: {warning}")
    return kind, data, warning


def run_contamination(models: Sequence[str], seen: str | Path, fresh: Sequence[str | Path], out: str | Path, *,
                      runner: Any, alpha: float = 0.05, alternative: str = "greater", seed: int = 0,
                      log: Callable[[str], None] = print, runs: Sequence[str | Path] = (),
                      force: bool = False, lm_eval_metric: str = "acc") -> dict[str, Any]:
    """Score every form with every model, test the seen form's gap, write ``out`` whole or not at all
    (report.md, summary.json, forms.csv, contamination.png); returns the summary.

    ``runs``: answers made already (:func:`probegen.run.compare.read_answers`), each on one of the forms;
    every respondent in them needs a run on every form and is tested like a model. ``force``: run on
    forms that are not siblings (:func:`siblings_problem`), with the warning in the report.
    ``lm_eval_metric``: an lm-eval file's respondent (acc, acc_norm or both), as in ``items``."""
    from probegen.io import ensure_writable

    if not models and not runs:
        raise ProbegenError("nothing to check: give --model (scored here) or --run (answers made already)")
    inputs = [seen, *fresh]
    ensure_writable(out, replace=True, inputs=[*inputs, *runs], writer="output")
    kind, data, warning = load_forms(seen, fresh, force, log)
    names = [_name(p) for p in inputs]
    answers = (read_answers([str(r) for r in runs], tuple(inputs), kind, tuple(data), set(models), lm_eval_metric)
               if runs else [])
    per: list[tuple[str, list[Any]]] = []  # (respondent, its units per form)
    for m in models:
        scorer = runner.load_scorer(m)
        units = []
        for name, d in zip(names, data):
            log(f"{m}: scoring {name}")
            units.append(correctness(kind, d, scorer, seed, progress=False)[0])
        per.append((m, units))
    per += [(a.name, [u for u, _ in a.sets]) for a in answers]
    rows = [respondent_row(m, names, units_per_form, alpha, alternative) for m, units_per_form in per]
    summary = {"kind": kind, "unit": tasks.get(kind).resampling_unit, "seen": str(seen),
               "fresh": [str(f) for f in fresh],
               "alpha": alpha, "alternative": alternative, "seed": seed, "models": rows,
               **({"runs": {a.name: list(a.sources) for a in answers}} if answers else {}),
               **({"warning": warning} if warning else {}),
               "method": "gap = seen - mean(fresh); Var = v_seen + sum(v_fresh)/F^2 + tau2 (1 + 1/F); "
                         "v: cluster-robust ratio variance over units; tau2: fresh forms' variance minus their "
                         "mean v (method of moments, >= 0); Student t, Welch-Satterthwaite df"}
    _write(summary, out)
    return summary


def _name(p: str | Path) -> str:
    p = Path(p)
    return p.name if p.is_dir() else p.stem


def _write(summary: dict[str, Any], out: str | Path) -> None:
    import csv

    from probegen.io import atomic_dir, atomic_write, write_json

    with atomic_dir(out) as tmp:
        write_json(tmp / "summary.json", summary)
        with atomic_write(tmp / "forms.csv") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["model", "form", "role", "units", "accuracy", "se"])
            for r in summary["models"]:
                for i, f in enumerate(r["forms"]):
                    w.writerow([r["model"], f["form"], "seen" if i == 0 else "fresh", f["units"],
                                round(f["accuracy"], 6), round(f["se"], 6)])
        plot(summary, tmp / "contamination.png")
        with atomic_write(tmp / "report.md") as fh:
            fh.write(render(summary))
