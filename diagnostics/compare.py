"""Paired comparison of two versions of a probe set (adversarial vs. its twin, filtered vs. not).

Both sets are scored by the same scorers; units (CoDA21 groups, WordNetQA concepts) that appear
in both are paired by id, and a bootstrap over units gives CIs for each accuracy and for their
difference. A WordNetQA unit is a concept (synset) with all its items, across probe types: one
concept is not counted as up to four independent clusters. Pure analysis is in
:func:`paired_bootstrap`; :func:`compare` does the scoring.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from probegen import tasks
from probegen.errors import ProbegenError
from probegen.runner import Runner
from probegen.stats.bootstrap import cluster_weights, percentile_ci
from probegen.tasks import Dataset


class _ResamplingUnits(Mapping[str, str]):
    """Dataset kind -> the bootstrap resampling unit its task declares (read from the registry)."""

    def __getitem__(self, kind: str) -> str:
        return tasks.get(kind).resampling_unit

    def __iter__(self) -> Iterator[str]:
        return iter(t.name for t in tasks.all_tasks())

    def __len__(self) -> int:
        return len(tasks.all_tasks())


RESAMPLING_UNIT = _ResamplingUnits()


def paired_bootstrap(
    a: dict[str, tuple[float, float]], b: dict[str, tuple[float, float]], n_boot: int = 1000, seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Accuracies of ``a`` and ``b`` over their shared units, and ``b - a``, with bootstrap CIs.

    ``a`` and ``b`` map unit id -> (summed correctness, number of items).

    >>> r = paired_bootstrap({"g1": (1, 1), "g2": (1, 1)}, {"g1": (0, 1), "g2": (1, 1)}, n_boot=200)
    >>> r["a"]["accuracy"], r["b"]["accuracy"], r["diff"]["value"], r["n_units"]
    (1.0, 0.5, -0.5, 2)
    """
    units = sorted(set(a) & set(b))
    if not units:
        raise ValueError("the two sets share no unit ids: they are not paired versions of one probe")
    ca, wa = (np.array([a[u][i] for u in units], dtype=np.float64) for i in (0, 1))
    cb, wb = (np.array([b[u][i] for u in units], dtype=np.float64) for i in (0, 1))
    n = len(units)
    w = cluster_weights(n, n_boot, seed)
    ra, rb = (w @ ca) / (w @ wa), (w @ cb) / (w @ wb)
    acc_a, acc_b = float(ca.sum() / wa.sum()), float(cb.sum() / wb.sum())
    return {
        "n_units": n,
        "a": {"accuracy": acc_a, "ci": percentile_ci(ra, alpha)},
        "b": {"accuracy": acc_b, "ci": percentile_ci(rb, alpha)},
        "diff": {"value": acc_b - acc_a, "ci": percentile_ci(rb - ra, alpha)},
        "bootstrap": {"n": n_boot, "seed": seed, "alpha": alpha},
    }


def unit_correctness(kind: str, data: Dataset, scorer: Any, seed: int = 0,
                     progress: bool = True) -> dict[str, tuple[float, float]]:
    """Per unit (CoDA21 group, WordNetQA concept): (summed correctness, items) of one model on one
    dataset of ``kind``, via its task's standard evaluator."""
    return tasks.get(kind).unit_correctness(data, scorer, seed, progress)


def correctness(kind: str, data: Dataset, scorer: Any, seed: int = 0, progress: bool = True
                ) -> tuple[dict[str, tuple[float, float]], list[tuple[str, str, float]]]:
    """One scoring, read per unit (as :func:`unit_correctness`) and per decision (unit, item, right)."""
    return tasks.get(kind).correctness(data, scorer, seed, progress)


def model_pairs(per_model: dict[str, list[tuple[str, str, float]]], n_boot: int = 1000, seed: int = 0
                ) -> list[dict[str, Any]]:
    """Every pair of models on one set, on the decisions both made: accuracy difference (a - b) with
    a paired cluster-bootstrap CI (whole units resampled), exact McNemar p and Holm's correction
    over the pairs (:func:`probegen.itemstats.paired.all_pairs`).

    >>> rows = model_pairs({"m1": [("u", "u#0", 1.0), ("v", "v#0", 1.0)], "m2": [("u", "u#0", 0.0), ("v", "v#0", 1.0)]},
    ...                    n_boot=50)
    >>> rows[0]["a"], rows[0]["b"], rows[0]["diff"], rows[0]["a_only"], rows[0]["p_mcnemar"]
    ('m1', 'm2', 0.5, 1, 1.0)
    """
    from probegen.itemstats.paired import all_pairs

    names = list(per_model)
    if len(names) < 2:
        return []
    units: dict[str, str] = {}
    for rows in per_model.values():
        units.update({item: unit for unit, item, _ in rows})
    order = list(units)
    col = {item: j for j, item in enumerate(order)}
    y = np.full((len(names), len(order)), np.nan)
    for i, m in enumerate(names):
        for _, item, right in per_model[m]:
            y[i, col[item]] = right
    return all_pairs(y, names, [units[i] for i in order], n_boot, seed)


# ---- answers made elsewhere (probegen runs, other harnesses' per-item files) -----------------------
Correctness = tuple[dict[str, tuple[float, float]], list[tuple[str, str, float]]]


@dataclass
class Imported:
    """One respondent read from runs (``probegen compare --run``): its answers on each set, read as
    :func:`correctness` reads a scoring."""

    name: str  # its row in the report: the model, or model|method|variant where that is taken
    model: str
    sources: tuple[str, str]  # the run (file) on each set
    a: Correctness
    b: Correctness


def item_units(kind: str, data: Any) -> dict[str, str]:
    """Every item id of ``data`` as runs name it (:func:`probegen.exchange.runs.record_cells`) and
    the unit :func:`correctness` counts it in, in the dataset's order (the kind's
    :meth:`~probegen.tasks.base.Task.item_units`: a CoDA21 row ``<group>#<row>`` in its group, a
    WordNetQA item in its concept, any other kind's unit in itself)."""
    return tasks.get(kind).item_units(data)


def cells_correctness(layout: dict[str, str], cells: dict[str, dict[str, Any]], grouped: bool) -> Correctness:
    """Per unit and per decision, as :func:`correctness` gives them, from one respondent's cells
    (item id -> cell with ``correct``) on a dataset of item -> unit ``layout``: a grouped unit
    (CoDA21) is (its rows' mean, 1), any other (items right, items).

    >>> cells_correctness({"g#0": "g", "g#1": "g"}, {"g#0": {"correct": 1.0}, "g#1": {"correct": 0.0}}, True)
    ({'g': (0.5, 1.0)}, [('g', 'g#0', 1.0), ('g', 'g#1', 0.0)])
    """
    sums: dict[str, list[float]] = {}
    decisions = []
    for item, unit in layout.items():  # the dataset's order: the order a scoring gives
        if item not in cells:
            continue
        right = float(cells[item]["correct"] >= 1)
        u = sums.setdefault(unit, [0.0, 0.0])
        u[0] += right
        u[1] += 1.0
        decisions.append((unit, item, right))
    units = {k: ((v[0] / v[1], 1.0) if grouped else (v[0], v[1])) for k, v in sums.items()}
    return units, decisions


def _sets(paths: tuple[str, ...]) -> str:
    """The sets named in a message: ``A nor B`` for two, else ``any of A, B, C``."""
    return f"neither {paths[0]} nor {paths[1]}" if len(paths) == 2 else "none of " + ", ".join(paths)


def _side(r: Any, run: str, keys: tuple[str, ...], data: tuple[Any, ...], layouts: tuple[dict, ...],
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
    """The respondents of ``runs`` (:func:`probegen.exchange.runs.read_run`: probegen eval and bias
    runs, lm-eval samples, inspect-ai logs, Every Eval Ever results), each placed on one of the sets
    ``paths`` (loaded as ``data``) and paired across them by model, method and variant; one line for
    a run on none of the sets, unknown ids, a respondent missing a set or twice on one set.
    ``taken``: the names already in the report. A run given twice, an item twice in a run, a
    correctness out of range, a file whose items' content is not the set's: one line
    (:func:`probegen.itemstats.table.read_runs`); ``lm_eval_metric``: an lm-eval file's respondent."""
    from probegen.exchange.respondent import dataset_key, identity
    from probegen.itemstats.subset import check_records
    from probegen.itemstats.table import read_runs

    shown = tuple(str(p) for p in paths)
    keys = tuple(dataset_key(p) for p in shown)
    layouts = tuple(item_units(kind, d) for d in data)
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
                  taken: set[str], lm_eval_metric: str = "acc") -> list[Imported]:
    """The respondents of ``runs`` (:func:`read_answers`), each on twin ``a`` or other ``b``, paired by
    model, method and variant; one line for a run on neither set, unknown ids, a respondent on one
    set only or twice on one set. ``taken``: the names already in the report."""
    return [Imported(x.name, x.model, (x.sources[0], x.sources[1]), x.sets[0], x.sets[1])
            for x in read_answers(runs, (a, b), kind, data, taken, lm_eval_metric)]


def compare(
    a: str | Path, b: str | Path, models: list[str], out: Path, labels: tuple[str, str] = ("twin", "adversarial"),
    seed: int = 0, n_boot: int = 1000, log: Callable[[str], None] = print, *, runner: Runner,
    kinds: tuple[Any, Any] | None = None, runs: list[str] | None = None, loaded: tuple[Any, Any] | None = None,
    imported: list[Imported] | None = None,
) -> dict[str, Any]:
    """Score both datasets with every model, write results.json, report.md and a bar chart.

    ``runner`` loads the models (its runtime); under ``torchrun`` every rank scores a share and
    only rank 0 logs (the caller lets rank 0 alone keep ``out``: :meth:`Runner.output_dir`).
    ``kinds``: the two datasets' tasks when the caller detected them (None: detected here).
    ``runs``: answers made already (:func:`read_imported`), rows after the models' (``imported``:
    those read by the caller); ``loaded``: the two datasets' (kind, data) when the caller loaded
    them (None: loaded here).
    """
    from probegen.io import write_json

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
    for m in models:
        scorer = runner.load_scorer(m)
        log(f"{m}: scoring {labels[0]} and {labels[1]}")
        ua, decisions["a"][m] = correctness(kind_a, da, scorer, seed)
        ub, decisions["b"][m] = correctness(kind_b, db, scorer, seed)
        res = paired_bootstrap(ua, ub, n_boot, seed)
        rows.append({"model": m, "used_in_construction": _reference(db) == m or _reference(da) == m, **res})
    for imp in imported:
        (ua, decisions["a"][imp.name]), (ub, decisions["b"][imp.name]) = imp.a, imp.b
        res = paired_bootstrap(ua, ub, n_boot, seed)
        rows.append({"model": imp.name, "used_in_construction": imp.model in (_reference(da), _reference(db)), **res})
    results = {"a": {"label": labels[0], "path": str(a), "chance": _chance(kind_a, da)},
               "b": {"label": labels[1], "path": str(b), "chance": _chance(kind_b, db)},
               "kind": kind_a, "resampling_unit": tasks.get(kind_a).resampling_unit, "models": rows}
    if imported:  # where each imported row's answers come from
        results["runs"] = {imp.name: {"a": imp.sources[0], "b": imp.sources[1]} for imp in imported}
    if len(rows) > 1:  # every pair of models on each set (one model: results.json as before)
        results["pairs"] = {side: model_pairs(decisions[side], n_boot, seed) for side in ("a", "b")}
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", results)
    plot = plot_comparison(results, out / "comparison.png")
    from probegen.io import atomic_write

    with atomic_write(out / "report.md") as fh:
        fh.write(render(results, plot.name))
    return results


def _chance(kind: str, data: Dataset) -> float:
    """Random-guess accuracy: mean 1/k over CoDA21 groups, mean 1/#choices over WordNetQA items."""
    return tasks.get(kind).chance(data)


def raise_mismatch(ka: str, kb: str) -> None:
    from probegen.errors import ProbegenError

    raise ProbegenError(f"cannot compare a {ka} dataset with a {kb} dataset")


def _reference(data: Dataset) -> str | None:
    adv = data.manifest.get("adversarial") or {}
    return adv.get("reference_model")


def _fmt(x: dict[str, Any]) -> str:
    ci = x.get("ci")
    v = x.get("accuracy", x.get("value"))
    return f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{v:.3f}"


def table(results: dict[str, Any]) -> str:
    """A plain-text table of the comparison."""
    la, lb = results["a"]["label"], results["b"]["label"]
    lines = [f"{'model':<16} {'role':<10} {la:>22} {lb:>22} {'difference':>24}"]
    for r in results["models"]:
        role = "reference" if r["used_in_construction"] else "held-out"
        lines.append(f"{r['model']:<16} {role:<10} {_fmt(r['a']):>22} {_fmt(r['b']):>22} {_fmt(r['diff']):>24}")
    return "\n".join(lines)


def pairs_table(results: dict[str, Any]) -> str:
    """The models compared pairwise on each set (empty with one model)."""
    lines: list[str] = []
    for side in ("a", "b"):
        rows = (results.get("pairs") or {}).get(side) or []
        if not rows:
            continue
        lines.append(f"{results[side]['label']}: model A - model B on the same decisions "
                     f"({len(rows)} pair(s), Holm over them)")
        lines.append(f"{'A':<16} {'B':<16} {'decisions':>9} {'difference [95% CI]':>26} {'A only':>6} {'B only':>6} "
                     f"{'McNemar p':>10} {'Holm p':>8}")
        for r in rows:
            diff = f"{r['diff']:+.3f} [{r['ci_lo']:+.3f}, {r['ci_hi']:+.3f}]"
            lines.append(f"{r['a']:<16} {r['b']:<16} {r['items']:>9} {diff:>26} {r['a_only']:>6} {r['b_only']:>6} "
                         f"{r['p_mcnemar']:>10.4f} {r['p_holm']:>8.4f}" + (" *" if r["significant"] else ""))
    return "\n".join(lines)


def render(results: dict[str, Any], plot: str) -> str:
    """report.md: the table, the chart and how to read them."""
    la, lb = results["a"]["label"], results["b"]["label"]
    return "\n".join([
        f"# {lb} vs {la}",
        "",
        f"- {la}: `{results['a']['path']}`",
        f"- {lb}: `{results['b']['path']}`",
        *[f"- {name}: answers read from `{src['a']}` ({la}) and `{src['b']}` ({lb}), not scored here"
          for name, src in (results.get("runs") or {}).items()],
        f"- units paired by id and resampled whole ({results['kind']}: "
        f"{results.get('resampling_unit') or RESAMPLING_UNIT[results['kind']]}); 95% bootstrap CIs over units; "
        f"difference = {lb} - {la}; chance {results['a']['chance']:.3f} ({la}), {results['b']['chance']:.3f} ({lb}).",
        "",
        "```",
        table(results),
        "```",
        "",
        f"![comparison]({plot})",
        "",
        "A model used to build the set (reference) is expected to drop; the held-out model's drop is the honest",
        "measure of how much harder the set is.",
        "",
        *_pairs_section(results),
    ])


def _pairs_section(results: dict[str, Any]) -> list[str]:
    text = pairs_table(results)
    if not text:
        return []
    return ["## Models paired on each set", "",
            "Two models on the same decisions (a WordNetQA item, a CoDA21 context): the accuracy difference with a",
            "95% paired cluster-bootstrap CI (units resampled whole), the exact McNemar p on the decisions only one",
            "got right, and that p Holm-adjusted over every pair of the set (* : below 0.05).", "",
            "```", text, "```", ""]


def plot_comparison(results: dict[str, Any], path: Path) -> Path:
    """Grouped bars: each model's accuracy on both sets with CI whiskers."""
    from .plots import pyplot, save_png

    plt = pyplot()
    models = results["models"]
    x = np.arange(len(models))
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(models), 3.6))
    for off, side, color in ((-0.18, "a", "#7f9fbf"), (0.18, "b", "#c0504d")):
        acc = [m[side]["accuracy"] for m in models]
        err = np.array([[a - m[side]["ci"][0], m[side]["ci"][1] - a] if m[side]["ci"] else [0, 0]
                        for a, m in zip(acc, models)]).T
        ax.bar(x + off, acc, 0.36, yerr=err, capsize=3, color=color, label=results[side]["label"])
    ax.set_xticks(x, [m["model"] + ("\n(reference)" if m["used_in_construction"] else "\n(held-out)") for m in models])
    chance = max(results["a"].get("chance", 0.0), results["b"].get("chance", 0.0))
    if chance:
        ax.axhline(chance, color="0.4", ls="--", lw=1, label="chance")
    ax.set_ylabel("accuracy")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_ylim(0, max(0.05, max(max(m["a"]["accuracy"], m["b"]["accuracy"]) for m in models) * 1.3))
    return save_png(fig, path)
