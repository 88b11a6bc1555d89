"""The run of ``probegen compare`` (both sets scored by every model, or answers read from runs, results
written) and the reading of answers made elsewhere, which ``probegen contamination`` shares; the analysis is
:mod:`probegen.diagnostics.compare`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from probegen import tasks
from probegen.diagnostics.compare import (
    Correctness,
    cells_correctness,
    model_pairs,
    paired_bootstrap,
    plot_comparison,
    render,
)
from probegen.errors import ProbegenError
from probegen.runner import Runner
from probegen.tasks import Dataset


def correctness(kind: str, data: Dataset, scorer: Any, seed: int = 0, progress: bool = True) -> Correctness:
    """One scoring of ``data`` (a dataset of ``kind``), read per unit (summed correctness, items) and per
    decision (unit, item, right), by the kind's task."""
    return tasks.get(kind).correctness(data, scorer, seed, progress)


def _sets(paths: tuple[str, ...]) -> str:
    """The sets named in a message: ``A nor B`` for two, else ``any of A, B, C``."""
    return f"neither {paths[0]} nor {paths[1]}" if len(paths) == 2 else "none of " + ", ".join(paths)


def _side(r: Any, run: str, keys: tuple[str, ...], data: tuple[Any, ...], layouts: tuple[dict[str, str], ...],
          paths: tuple[str, ...]) -> list[int]:
    """Which of the sets one respondent answered: by its dataset's path, else (a foreign file that
    does not name it) by its export's manifest, else by its item ids; one line if none."""
    every = range(len(keys))
    if not r.adopt:
        sides = [i for i in every if r.dataset == keys[i]]
        if not sides:
            raise ProbegenError(f"{run} is on {r.dataset}, {_sets(paths)}: give runs on the sets compared")
        return sides
    if r.manifest is not None:
        sides = [i for i in every if (data[i].manifest or None) == r.manifest]
        if len(sides) == 1 or len(set(keys)) == 1 and sides:
            return sides
    ids = set(r.cells)
    sides = [i for i in every if ids <= set(layouts[i])]
    if not sides:
        unknown = sorted(ids - set(layouts[0]), key=str)
        also = f"nor are all of them items of {paths[1]}" if len(paths) == 2 else "nor are all of them items of " \
            "another set given"
        raise ProbegenError(f"{run}: {len(unknown)} of {len(ids)} item ids are not items of {paths[0]} "
                            f"(e.g. {', '.join(unknown[:3])}), {also}")
    if len(sides) > 1 and len({keys[i] for i in sides}) > 1:
        both = " and ".join(paths[i] for i in sides) if len(sides) == 2 else ", ".join(paths[i] for i in sides)
        raise ProbegenError(f"{run}: its item ids are items of {'both ' if len(sides) == 2 else ''}{both} and the file "
                            "does not name its dataset: give a probegen run or a probegen export (EEE, inspect log)")
    return sides


@dataclass
class Answers:
    """One respondent read from runs on each of several sets (``probegen contamination --run``)."""

    name: str  # its row in the report: the model, or model|method|variant where that is taken
    model: str
    sources: tuple[str, ...]  # the run (file) on each set
    sets: list[Correctness]


def read_answers(runs: list[str], paths: tuple[str | Path, ...], kind: str, data: tuple[Any, ...],
                 taken: set[str], lm_eval_metric: str = "acc") -> list[Answers]:
    """The respondents of ``runs`` (probegen runs, lm-eval samples, inspect-ai logs, Every Eval Ever results:
    :func:`probegen.itemstats.table.read_runs`), each placed on one of the sets ``paths`` (loaded as ``data``)
    and paired across them by model, method and variant; one line for a run on none of the sets, unknown ids,
    a respondent missing a set or twice on one set. ``taken``: the names already in the report."""
    from probegen.exchange.respondent import dataset_key, identity
    from probegen.itemstats.subset import check_records
    from probegen.itemstats.table import read_runs

    shown = tuple(str(p) for p in paths)
    keys = tuple(dataset_key(p) for p in shown)
    layouts = tuple(tasks.get(kind).item_units(d) for d in data)
    grouped = tasks.get(kind).unit_is_mean  # a group's accuracy is its unit's score (the paper's mean of groups)
    sides: dict[str, list[tuple[str, Any] | None]] = {}
    for run, r in read_runs(runs, lm_eval_metric):
        for i in _side(r, run, keys, data, layouts, shown):
            check_records(r, kind, data[i], shown[i])
            slot = sides.setdefault(identity(r), [None] * len(shown))
            earlier = slot[i]
            if earlier is not None:
                raise ProbegenError(f"{identity(r)} answers {shown[i]} in both {earlier[0]} and {run}: give one "
                                    "run per respondent and set")
            slot[i] = (run, r)
    out = []
    for who, slot in sides.items():
        missing = [i for i, s in enumerate(slot) if s is None]
        if missing:
            have = next(s for s in slot if s is not None)
            raise ProbegenError(f"{who} ({have[0]}) has no run on {shown[missing[0]]}: a respondent needs a run on "
                                "each set")
        got = [s for s in slot if s is not None]
        for i, (run, r) in enumerate(got):
            unknown = sorted(set(r.cells) - set(layouts[i]), key=str)
            if unknown:
                raise ProbegenError(f"{run}: {len(unknown)} of {len(r.cells)} item ids are not items of {shown[i]} "
                                    f"(e.g. {', '.join(unknown[:3])})")
        model = got[0][1].model
        name = model if model not in taken else who
        n = 2
        while name in taken:
            name, n = f"{who}#{n}", n + 1
        taken.add(name)
        out.append(Answers(name, model, tuple(run for run, _ in got),
                           [cells_correctness(layouts[i], r.cells, grouped) for i, (_, r) in enumerate(got)]))
    return out


def read_imported(runs: list[str], a: str | Path, b: str | Path, kind: str, data: tuple[Any, Any],
                  taken: set[str], lm_eval_metric: str = "acc") -> list[Answers]:
    """:func:`read_answers` on the twin ``a`` and the other set ``b``."""
    return read_answers(runs, (a, b), kind, data, taken, lm_eval_metric)


def raise_mismatch(ka: str, kb: str) -> None:
    """Two sets of different kinds cannot be paired: one line."""
    raise ProbegenError(f"cannot compare a {ka} dataset with a {kb} dataset")


def compare(
    a: str | Path, b: str | Path, models: list[str], out: Path, labels: tuple[str, str] = ("twin", "adversarial"),
    seed: int = 0, n_boot: int = 1000, log: Callable[[str], None] = print, *, runner: Runner,
    kinds: tuple[Any, Any] | None = None, runs: list[str] | None = None, loaded: tuple[Any, Any] | None = None,
    imported: list[Answers] | None = None,
) -> dict[str, Any]:
    """Score both datasets with every model, write results.json, report.md and a bar chart.

    ``runner`` loads the models; under ``torchrun`` only rank 0 logs (the caller keeps ``out`` on rank 0).
    ``kinds``/``loaded``: the datasets' tasks / (kind, data) when the caller has them (None: done here).
    ``runs``: answers made already (:func:`read_imported`), rows after the models' (``imported``: read by the
    caller).
    """
    from probegen.io import atomic_write, write_json

    log = runner.main_log(log)
    if loaded is None:
        ta, tb = kinds or (tasks.detect(a), tasks.detect(b))
        loaded = (ta.name, ta.load(a, ablations=True)), (tb.name, tb.load(b, ablations=True))
    (kind_a, da), (kind_b, db) = loaded
    if kind_a != kind_b:
        raise_mismatch(kind_a, kind_b)
    if imported is None:
        imported = read_imported(list(runs), a, b, kind_a, (da, db), set(models)) if runs else []
    rows = []
    decisions: dict[str, dict[str, list[tuple[str, str, float]]]] = {"a": {}, "b": {}}
    answered: list[tuple[str, str, list[Correctness]]] = []  # (row name, model, its correctness on a and b)
    for m in models:
        scorer = runner.load_scorer(m)
        log(f"{m}: scoring {labels[0]} and {labels[1]}")
        answered.append((m, m, [correctness(kind_a, da, scorer, seed), correctness(kind_b, db, scorer, seed)]))
    answered += [(imp.name, imp.model, imp.sets) for imp in imported]
    refs = (_reference(da), _reference(db))
    for name, model, [(ua, decisions["a"][name]), (ub, decisions["b"][name])] in answered:
        rows.append({"model": name, "used_in_construction": model in refs, **paired_bootstrap(ua, ub, n_boot, seed)})
    results = {"a": {"label": labels[0], "path": str(a), "chance": tasks.get(kind_a).chance(da)},
               "b": {"label": labels[1], "path": str(b), "chance": tasks.get(kind_b).chance(db)},
               "kind": kind_a, "resampling_unit": tasks.get(kind_a).resampling_unit, "models": rows}
    if imported:  # where each imported row's answers come from
        results["runs"] = {imp.name: {"a": imp.sources[0], "b": imp.sources[1]} for imp in imported}
    if len(rows) > 1:  # every pair of models on each set (one model: results.json as before)
        results["pairs"] = {side: model_pairs(decisions[side], n_boot, seed) for side in ("a", "b")}
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", results)
    plot = plot_comparison(results, out / "comparison.png")
    with atomic_write(out / "report.md") as fh:
        fh.write(render(results, plot.name))
    return results


def _reference(data: Dataset) -> str | None:
    return (data.manifest.get("adversarial") or {}).get("reference_model")
