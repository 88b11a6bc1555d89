"""``probegen bias``: score every partial-input ablation, then write ratios, controls, plot, report.

Output directory: ``results.json`` (per dataset: accuracies with CIs per ablation, bias ratios, subsets,
trained controls, entropies), ``report.md`` with ``bias_plane.png``, ``<dataset>/<ablation>.jsonl`` (the
records of each ablation) and ``<dataset>/ablations.jsonl`` (the units the model saw, per condition).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, cast

from probegen import methods, tasks
from probegen.core import Unit, as_unit_scorer
from probegen.diagnostics.bias import bootstrap_bias
from probegen.errors import ProbegenError
from probegen.io import atomic_write, read_text, recover, write_json, write_jsonl
from probegen.runner import Runner
from probegen.scorers import LM_KINDS
from probegen.tasks import Settings
from probegen.tasks.bias_inputs import BiasInputs
from probegen.templating import dataset_nonce

# ablations and ratios live with each kind's task: the analyses read them from the task they are given
RATIO_NAMES = {"bias_c": "Bias_C", "bias_w": "Bias_W", "bias_d": "Bias_D", "bias_choice": "Bias_Choice"}


@dataclass(frozen=True)
class BiasConfig:
    """Settings of a bias run (results.json's ``config``): those shared with ``probegen eval`` and its own;
    ``nonce_given``: every dataset is rendered with ``--nonce``, not its own made-up word."""

    settings: Settings = field(default_factory=Settings)
    nonce_given: bool = False
    n_boot: int = 1000
    folds: int = 5
    controls: bool = True
    debias_share: float | None = None  # PriDe's estimation share (--debias-share; None: diagnostics.position's default)

    @classmethod
    def asked(cls, nonce: str | None = None, pattern: str | None = None, seed: int = 0, split: str | None = None,
              **own: Any) -> "BiasConfig":
        """A config from options as asked (``None``: not given); ``own`` are the bias run's own fields.

        >>> c = BiasConfig.asked(seed=2, n_boot=50)
        >>> c.settings.seed, c.n_boot, c.nonce_given, c.settings.pattern
        (2, 50, False, 'definition-of')
        """
        return cls(Settings.given(nonce=nonce, pattern=pattern, seed=seed, split=split), nonce is not None, **own)

    @property
    def seed(self) -> int:
        """The run's seed (:attr:`settings`'), which every analysis reads."""
        return self.settings.seed

    def record(self) -> dict[str, Any]:
        """The ``config`` block of results.json."""
        s = self.settings
        return {"seed": s.seed, "n_boot": self.n_boot, "nonce": s.nonce, "pattern": s.pattern,
                "matching": s.matching, "folds": self.folds, "controls": self.controls, "split": s.split,
                "debias_share": self.debias_share}


def settings_of(cfg: BiasConfig) -> Settings:
    """The task settings of a bias run."""
    return cfg.settings


def _bias_over(task: tasks.Task, inputs: BiasInputs, strata: Sequence[str] | None, cfg: BiasConfig) -> dict[str, Any]:
    """Bias table over the records of ``strata`` (None: all); a ratio leaves out the strata it measures
    nothing on (``task.excluded_ratios``), and is marked not applicable when no stratum is left."""
    over = list(inputs.strata if strata is None else strata)
    res: dict[str, Any] = bootstrap_bias(inputs.table(strata), task.ratios, n_boot=cfg.n_boot, seed=cfg.seed)
    for name, abl in task.ratios.items():
        out = [p for p in over if name in task.excluded_ratios.get(p, {})]
        if not out:
            continue
        kept = [p for p in over if p not in out]
        excluded = {p: task.excluded_ratios[p][name] for p in out}
        if kept:
            r = bootstrap_bias(inputs.table(kept), {name: abl}, n_boot=cfg.n_boot, seed=cfg.seed)["ratios"][name]
        else:
            r = {"ablation": abl, "value": None, "ci": None, "not_applicable": True}
        res["ratios"][name] = {**r, "over": kept, "excluded": excluded}
    return res


def analyse(task: tasks.Task, data: tasks.Dataset, records: dict[str, list[dict[str, Any]]],
            cfg: BiasConfig) -> dict[str, Any]:
    """Bias table, subsets, trained controls and entropies of one scored dataset (from ``task.bias_inputs``)."""
    from probegen.diagnostics.baselines import controls
    from probegen.diagnostics.entropy import label_entropy, sense_entropy

    inputs = task.bias_inputs(data, records)
    entry: dict[str, Any] = {
        "kind": task.name,
        "unit": inputs.unit,
        "resampling_unit": task.resampling_unit,
        "n_items": inputs.n_items,
        "ablation_order": list(task.ablations),
        "ablation_help": task.ablations,
        "ratio_names": {k: RATIO_NAMES.get(k, k) for k in task.ratios},
        "all": _bias_over(task, inputs, None, cfg),
        "subsets": {name: _bias_over(task, inputs, strata, cfg) for name, strata in inputs.subsets.items()},
    }
    if task.excluded_ratios:
        entry["exclusions"] = [
            {"probe": p, "ratio": k, "name": RATIO_NAMES[k], "reason": why}
            for p in inputs.strata for k, why in task.excluded_ratios.get(p, {}).items() if k in task.ratios
        ]
    measures = {"sense": sense_entropy, "label": label_entropy}
    entry["controls"] = controls(inputs, task.name, cfg.folds, cfg.n_boot, cfg.seed) if cfg.controls else []
    entry["entropy"] = {**{k: measures[k](pairs) for k, pairs in inputs.entropy.items()}, **inputs.entropy_notes}
    entry["notes"] = list(inputs.notes)
    return entry


def default_task(path: Path) -> tasks.Buildable | None:
    """The :class:`~probegen.tasks.Buildable` task whose kind a default dataset's name starts with (or None)."""
    return next((t for t in tasks.all_tasks() if isinstance(t, tasks.Buildable) and path.name.startswith(t.name)),
                None)


def default_datasets() -> list[str]:
    """What ``probegen bias`` without ``--dataset`` measures: each Buildable kind's default dataset."""
    return [f"probegen_out/datasets/{t.default_dataset}" for t in tasks.all_tasks() if isinstance(t, tasks.Buildable)]


def default_tasks() -> list[tasks.Task]:
    """The tasks of :func:`default_datasets` (options are checked against them)."""
    return [t for t in (default_task(Path(d)) for d in default_datasets()) if t is not None]


def ensure_dataset(path: Path, wordnet: str | None, semcor: str | None, log: Callable[[str], None],
                   runner: Runner) -> None:
    """Generate a missing default dataset as ``probegen make`` would (``runner`` loads the models it needs)."""
    recover(path)  # a dataset an interrupted write moved aside is put back, not generated again
    if path.exists():
        return
    task = default_task(path)
    if task is None:
        raise ProbegenError(f"dataset {path} does not exist")
    task.build_default(path, wordnet, semcor, log, runner)


def load_dataset(path: str | Path, on_invalid: str = "error", probe: str | None = None,
                 task: tasks.Task | None = None) -> tuple[str, Any]:
    """(kind, loaded dataset) of a dataset path whose rows the ablations can cut (``task``: None, detected)."""
    task = task or tasks.detect(path)
    from .evaluation import reader_options

    return task.name, task.load(path, ablations=True, **reader_options(on_invalid, probe))


def _slug(path: Path) -> str:
    return path.name if path.is_dir() else path.stem


@dataclass
class Loaded:
    """A dataset ready for analysis: its name in the outputs, path, kind and loaded object."""

    name: str
    path: str
    kind: str
    data: tasks.Dataset
    subset: dict[str, Any] | None = None  # what --limit / --sample took (Subsettable.subset)

    @property
    def task(self) -> tasks.Task:
        """The dataset's :class:`~probegen.tasks.Task`."""
        return tasks.get(self.kind)


def prepare_datasets(
    datasets: list[str | Path] | None,
    wordnet: str | None = None,
    semcor: str | None = None,
    log: Callable[[str], None] = print,
    on_invalid: str = "error",
    probe: str | None = None,
    *,
    runner: Runner,
    kinds: Sequence[tasks.Task] | None = None,
) -> tuple[list[Loaded], list[dict[str, Any]]]:
    """(loaded, skipped): every dataset loaded before any model is; with no ``datasets`` the defaults,
    missing ones generated (by ``runner``) or skipped. ``kinds``: their tasks if already detected."""
    loaded, skipped = [], []
    paths = [Path(d) for d in (datasets or default_datasets())]
    for p, task in zip(paths, kinds if datasets and kinds else [None] * len(paths)):
        try:
            if not datasets:
                ensure_dataset(p, wordnet, semcor, log, runner)
            kind, data = load_dataset(p, on_invalid, probe, task)
            loaded.append(Loaded(_slug(p), str(p), kind, data))
        except ProbegenError as e:
            if datasets:
                raise
            log(f"skipping {p}: {e}")
            skipped.append({"name": _slug(p), "path": str(p), "skipped": str(e)})
    if not loaded:
        raise ProbegenError("no dataset to analyse" + (f" ({skipped[0]['skipped']})" if skipped else ""))
    return loaded, skipped


def _one_split(d: Loaded, split: str) -> Loaded:
    data = d.task.select_split(d.data, split, d.path)
    return d if data is d.data else replace(d, name=f"{d.name}:{split}", data=data)


def take_subset(d: Loaded, subset: tuple[str, int], seed: int, log: Callable[[str], None] = print) -> Loaded:
    """``d`` cut to ``subset`` (``("sample", N)`` or ``("limit", N)``) of whole resampling clusters."""
    data, info = cast(tasks.Subsettable, d.task).subset(d.data, subset[0], subset[1], seed, whole="cluster")
    log(f"{d.name}: {tasks.subset_line(info)}")
    return replace(d, data=data, subset=info)


def run_bias(
    model: str,
    datasets: list[str | Path] | None,
    out: Path,
    cfg: BiasConfig = BiasConfig(),
    scorer_kind: str | None = None,
    reduction: str = "sum",
    batch_size: int | None = None,
    wordnet: str | None = None,
    semcor: str | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
    *,
    runner: Runner,
    subset: tuple[str, int] | None = None,
    on_invalid: str = "error",
    probe: str | None = None,
    method: str | None = None,
    method_options: Mapping[str, Any] | None = None,
    kinds: Sequence[tasks.Task] | None = None,
) -> dict[str, Any]:
    """Load the datasets, then the model's scorer (``method``: a ``--method`` value of bias, None the
    default), then score, analyse and write (see the module doc). ``subset``: see :func:`take_subset`."""
    log, progress = runner.main_log(log), progress and runner.progress
    loaded, skipped = prepare_datasets(datasets, wordnet, semcor, log, on_invalid, probe, runner=runner, kinds=kinds)
    if cfg.settings.split:
        loaded = [_one_split(d, cfg.settings.split) for d in loaded]
    if subset is not None:
        loaded = [take_subset(d, subset, cfg.seed, log) for d in loaded]
    t0 = time.perf_counter()
    scorer = methods.get(method, "bias").load_scorer(runner, methods.ScorerRequest(
        model=model, scorer=scorer_kind, reduction=reduction, batch_size=batch_size, seed=cfg.seed,
        options=method_options or {}))
    log(f"model {model}: {scorer.kind} scorer ({time.perf_counter() - t0:.1f} s to load)")
    return write_bias(model, loaded, out, scorer, cfg, reduction, log, progress, skipped=skipped,
                      method_options=method_options)


def write_bias(
    model: str,
    loaded: list[Loaded],
    out: Path,
    scorer: Any,
    cfg: BiasConfig = BiasConfig(),
    reduction: str = "sum",
    log: Callable[[str], None] = print,
    progress: bool = True,
    evaluate_mc: Callable[..., Any] | None = None,
    skipped: Sequence[dict[str, Any]] = (),
    method_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every ablation of every loaded dataset, then write results.json, report.md and the plot
    (``method_options``: recorded). ``evaluate_mc`` replaces the kind's evaluator (tests, stand-ins)."""
    from probegen.diagnostics.eval_report import draw_bias_reliability

    from .evaluation import RESPONSES_FILE

    t0 = time.perf_counter()
    entries = []
    for d in loaded:
        log(f"{d.name}: scoring the partial-input ablations (scores already cached are reused)")
        records, entry = measure(d, scorer, cfg, progress, evaluate_mc)
        for mode, rows in records.items():
            write_jsonl(out / d.name / f"{mode}.jsonl", rows)
        files = {m: f"{d.name}/{m}.jsonl" for m in records}
        if evaluate_mc is None:  # a stand-in evaluator scores no units: there is no model input to show
            write_jsonl(out / d.name / SEEN_FILE, seen_lines(d, scorer, cfg, list(records)))
            files["units"] = f"{d.name}/{SEEN_FILE}"
        if draw_bias_reliability(entry, out / d.name, title=f"Reliability: {model} on {d.name}"):
            files["reliability"] = f"{d.name}/reliability.png"
        entries.append({"name": d.name, "path": d.path, **entry, **shown_blocks(d), "files": files})
    ev_block, config = _applied_settings(scorer, cfg, reduction, method_options)
    results = {
        "model": model,
        "scorer": {"kind": scorer.kind, **_settings(scorer)},
        "seed": cfg.seed,
        "bootstrap": {"n": cfg.n_boot, "alpha": 0.05, "unit": {d.kind: d.task.resampling_unit for d in loaded}},
        "eval": ev_block,
        "config": config,
        "datasets": entries + list(skipped),
        "plot": "bias_plane.png",
        "scorer_stats": as_unit_scorer(scorer).stats(),
        "timings": {"score_and_analyse_s": round(time.perf_counter() - t0, 3)},
    }
    if (exchanges := as_unit_scorer(scorer).exchanges()) is not None:  # generate/letter: every prompt and answer
        write_jsonl(out / RESPONSES_FILE, exchanges)
        results["responses"] = RESPONSES_FILE
    write_report(results, out, model)
    log(f"wrote {out}")
    return results


def _applied_settings(scorer: Any, cfg: BiasConfig, reduction: str,
                      method_options: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """results.json's ``eval`` and ``config`` blocks: the settings that applied to this scorer's method."""
    asked = methods.recorded(_settings(scorer).get("method"))
    s = cfg.settings
    ev_block = asked.record({"nonce": s.nonce, "pattern": s.pattern, "matching": s.matching,
                             "reduction": reduction if scorer.kind in LM_KINDS else None}, method_options)
    config = cfg.record() if asked.likelihood else {**cfg.record(), "pattern": None}
    return ev_block, config


SEEN_FILE = "ablations.jsonl"


def dataset_cfg(d: Loaded, cfg: BiasConfig) -> BiasConfig:
    """``cfg`` with the dataset's own made-up word unless the user named one."""
    if cfg.nonce_given:
        return cfg
    return replace(cfg, settings=replace(cfg.settings, nonce=dataset_nonce(d.data.manifest)))


def unit_line(condition: str, unit: Any) -> dict[str, Any]:
    """One line of ``ablations.jsonl``: a core unit as the scorer got it; candidates shared by every
    row are listed once (``candidates``), else ``candidates_per_query``.

    >>> from probegen.core import Unit
    >>> unit_line("word", Unit.choice("q1", "dog", ["a pet", "a tree"], 0))  # doctest: +NORMALIZE_WHITESPACE
    {'condition': 'word', 'id': 'q1', 'decision': 'argmax', 'queries': ['dog'], 'gold': [0],
     'candidates': ['a pet', 'a tree']}
    """
    line = {"condition": condition, "id": unit.id, "decision": unit.decision, "queries": list(unit.queries),
            "gold": list(unit.gold)}
    if all(c == unit.candidates[0] for c in unit.candidates):
        line["candidates"] = list(unit.candidates[0])
    else:
        line["candidates_per_query"] = [list(c) for c in unit.candidates]
    return line


def line_unit(line: dict[str, Any]) -> Any:
    """The core unit a line of ``ablations.jsonl`` records (the inverse of :func:`unit_line`)."""
    queries = tuple(line["queries"])
    cands = (tuple(tuple(c) for c in line["candidates_per_query"]) if "candidates_per_query" in line
             else tuple(tuple(line["candidates"]) for _ in queries))
    return Unit(line["id"], queries, cands, line["decision"], tuple(line["gold"]))


def seen_lines(d: Loaded, scorer: Any, cfg: BiasConfig, conditions: list[str]) -> list[dict[str, Any]]:
    """What the model saw of ``d``: per scored condition, every core unit the task built for the scorer."""
    settings = settings_of(dataset_cfg(d, cfg))
    return [unit_line(c, u) for c in conditions for u in d.task.scorer_units(d.data, c, settings, scorer)]


def shown_blocks(d: Loaded) -> dict[str, Any]:
    """The results entry's ``subset`` and ``invalid`` (rows the loader skipped) blocks, where there are any."""
    invalid = (d.data.manifest or {}).get("invalid")
    return {**({"subset": d.subset} if d.subset is not None else {}), **({"invalid": invalid} if invalid else {})}


def measure(d: Loaded, scorer: Any, cfg: BiasConfig, progress: bool = True,
            evaluate_mc: Callable[..., Any] | None = None) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """(per-ablation records, results entry) of one dataset (:func:`analyse`)."""
    from probegen.diagnostics.eval_report import condition_blocks, scores_note
    from probegen.generate.metrics import summarize

    dcfg = dataset_cfg(d, cfg)
    task = d.task
    records = task.score_ablations(d.data, scorer, settings_of(dcfg), progress, evaluator=evaluate_mc)
    entry = analyse(task, d.data, records, dcfg)
    generation = {mode: summarize(rows) for mode, rows in records.items()}
    if any(generation.values()):  # the generative method: invalid answers and order effects per condition
        entry = {**entry, "generation": generation}
    kind = as_unit_scorer(scorer).kind or None
    reduction = _settings(scorer).get("reduction") if kind in LM_KINDS else None
    entry = {**entry, **condition_blocks(records, cfg.n_boot, cfg.seed, cfg.debias_share,
                                         task.decision(settings_of(dcfg)),
                                         scores_note({"reduction": reduction}, kind))}  # position, calibration
    if dcfg.settings.nonce != cfg.settings.nonce:
        entry = {**entry, "nonce": dcfg.settings.nonce}
    return records, entry


def write_report(results: dict[str, Any], out: Path, model: str) -> None:
    """bias_plane.png, report.md and results.json of a finished run."""
    from probegen.diagnostics.bias_plots import plot_bias_plane
    from probegen.diagnostics.report import render_report

    points = [{"name": e["name"], **{k: e["all"]["ratios"].get(k) for k in ("bias_c", "bias_w")}}
              for e in results["datasets"] if not e.get("skipped")]
    plot_bias_plane(points, out / "bias_plane.png", title=f"Context-word bias plane: {model}")
    with atomic_write(out / "report.md") as fh:
        fh.write(render_report(results))
    write_json(out / "results.json", results)


def _settings(scorer: Any) -> dict[str, Any]:
    try:
        return dict(scorer.settings())
    except Exception:  # a scorer without settings still gets a report
        return {}


def summary_table(results: dict[str, Any]) -> str:
    """A short plain-text summary for the terminal."""
    from probegen.diagnostics.bias import fmt_ratio
    from probegen.diagnostics.eval_report import bias_lines

    lines = [f"{'dataset':<28} {'M_Full':>7} {'M_L':>6}  {'Bias_C':<20} {'Bias_W':<20} partial-input"]
    for d in results["datasets"]:
        if d.get("skipped"):
            lines.append(f"{d['name']:<28} skipped: {d['skipped']}")
            continue
        a, r = d["all"]["ablations"], d["all"]["ratios"]
        third = next((k for k in r if k not in ("bias_c", "bias_w")), None)
        partial = f"{d['ratio_names'][third]} {fmt_ratio(r[third])}" if third else "-"
        lines.append(
            f"{d['name']:<28} {a['full']['accuracy']:>7.3f} {a['label']['accuracy']:>6.3f}  "
            f"{fmt_ratio(r.get('bias_c')):<20} {fmt_ratio(r.get('bias_w')):<20} {partial}"
        )
        for e in d.get("exclusions", []):
            lines.append(f"{'':<28} {e['name']} leaves out {e['probe']} (measures nothing there; see report.md)")
        if gen := {m: g for m, g in (d.get("generation") or {}).items() if g}:
            rates = ", ".join(f"{m} {g['invalid_rate']:.1%}" for m, g in gen.items())
            lines.append(f"{'':<28} invalid answers (completed at random): {rates}")
        lines += [f"{'':<28} {ln.strip()}" for ln in shown_notes(d)]
        lines += [f"{'':<28} {ln}" for ln in bias_lines(d)]
    return "\n".join(lines)


def shown_notes(d: dict[str, Any]) -> list[str]:
    """The lines on a results entry's skipped rows and subset (terminal summary and report.md)."""
    from probegen.diagnostics.report import invalid_lines

    lines: list[str] = invalid_lines(d.get("invalid"))  # Any to a mypy run on the bare folders
    return lines + ([tasks.subset_line(d["subset"])] if d.get("subset") else [])


def add_beside(out: Path, runs: list[str | Path]) -> list[dict[str, Any]]:
    """Redraw a finished run's bias plane with the points of other ``probegen bias`` output folders
    (``--beside``), named ``model (method): dataset``; results.json gains ``beside``, report.md a table."""
    import json

    from probegen.diagnostics.bias import fmt_ratio
    from probegen.diagnostics.bias_plots import beside_points, plot_bias_plane

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    beside = []
    for run in runs:
        f = Path(run) / "results.json"
        try:
            other = json.loads(read_text(f))  # a FIFO or a device: refused unread
            entries = [e for e in other["datasets"] if e.get("all")]
        except (ProbegenError, OSError, ValueError, KeyError, TypeError) as exc:
            raise ProbegenError(f"--beside {run}: not a probegen bias output directory ({type(exc).__name__}: "
                                f"{exc})") from None
        method = (other.get("scorer") or {}).get("method") or methods.default().name
        for e in entries:
            beside.append({"name": f"{other.get('model')} ({method}): {e['name']}", "run": str(run),
                           **{k: e["all"]["ratios"].get(k) for k in ("bias_c", "bias_w")}})
    results["beside"] = beside
    points = [{"name": f"{results.get('model')}: {e['name']}",
               **{k: e["all"]["ratios"].get(k) for k in ("bias_c", "bias_w")}}
              for e in results["datasets"] if e.get("all")] + beside_points(results)
    plot_bias_plane(points, out / "bias_plane.png", title="Context-word bias plane")
    write_json(out / "results.json", results)
    lines = ["", "## Other runs on the plane (--beside)", "", "| point | run | Bias_C | Bias_W |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {p['name']} | `{p['run']}` | {fmt_ratio(p.get('bias_c'))} | {fmt_ratio(p.get('bias_w'))} |"
              for p in beside]
    report = (out / "report.md").read_text(encoding="utf-8")
    with atomic_write(out / "report.md") as fh:
        fh.write(report.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    return beside
