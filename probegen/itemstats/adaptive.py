"""``probegen eval --adaptive BANK``: give a model a calibrated item bank's items a batch at a time, each
batch cut from the dataset and scored by the kind's own evaluation, the engine (:mod:`.cat`) choosing the
next; ``results.json`` gains an ``adaptive`` block. Not catsim 0.21: one item per call, no negative
discriminations, no content balance over strata nor multi-item units, maximum likelihood, not EAP.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..core import UnitScorer
from ..errors import ProbegenError
from .bank import Bank, check_dataset, load_dataset, read_bank
from .cat import BALANCE_TOLERANCE, PRIOR_MEAN, PRIOR_SD, Z95, CatConfig, run_cat

if TYPE_CHECKING:
    from ..settings import Settings
    from ..tasks import Dataset, Evaluation

#: the eval options of an adaptive test (None: not given)
ADAPTIVE_OPTIONS = ("budget", "target_se", "batch_items", "randomesque")
SELECTOR = ("maximum Fisher information at the EAP ability, content-balanced over the bank's strata "
            "(Kingsbury-Zara), randomesque exposure control; probegen's own code (catsim 0.21.0 not used: see "
            "probegen.itemstats.adaptive)")


def config_of(req: Any) -> CatConfig:
    """The engine's config of an eval request (defaults: 10 items a batch, randomesque 1)."""
    return CatConfig(budget=req.budget, target_se=req.target_se, batch_items=req.batch_items or 10,
                     randomesque=req.randomesque or 1, seed=req.seed)


def check_adaptive(req: Any, task: Any, trains: bool) -> Bank | None:
    """Every check of an adaptive request before a model is loaded (options, bank, dataset, stopping rule);
    the bank, or None without ``--adaptive``."""
    if req.adaptive is None:
        given = [o for o in ADAPTIVE_OPTIONS if getattr(req, o) is not None]
        if given:
            raise ProbegenError(f"--{given[0].replace('_', '-')} applies to adaptive tests only (--adaptive BANK)")
        return None
    if trains:
        raise ProbegenError("--adaptive gives a scored model a bank's items; a word-in-context eval trains a probe")
    for opt in ("limit", "sample", "split"):
        if getattr(req, opt) is not None:
            raise ProbegenError(f"--{opt} cannot be used with --adaptive: the bank's items are chosen by the test")
    bank = read_bank(req.adaptive)
    found, _, records, ids = load_dataset(req.dataset)
    check_dataset(bank, task or found, records, ids, req.dataset)
    config_of(req).check(len(bank.items))
    return bank


def _item_answers(rows: Sequence[dict[str, Any]], where: dict[str, int]) -> dict[int, float]:
    """Bank item index -> 0/1 of the rows of a batch (read as ``probegen items`` reads them)."""
    from ..exchange.runs import record_cells

    out: dict[int, float] = {}
    for row in rows:
        for item, cell in record_cells(row).items():
            if item in where:
                out[where[item]] = 1.0 if cell["correct"] >= 1 else 0.0
    return out


def _pairs(task: Any, data: Dataset, records: Sequence[Any], settings: Any, mode: str) -> int:
    """The unique (query, candidate) pairs the units of ``records`` ask (what a likelihood scorer scores)."""
    from ..core import request_table

    sub = task.with_records(data, list(records))
    return len(request_table(task.units(sub, mode, settings)))


class Recorder(UnitScorer):
    """The scorer of an adaptive run: scores through ``scorer`` and keeps every unit's matrix and account,
    so the kind's evaluation of all the records given is read back without scoring anything twice."""

    def __init__(self, scorer: Any) -> None:
        from ..core import as_unit_scorer

        self.inner = as_unit_scorer(scorer)
        self.scorer = scorer
        self.name, self.kind = self.inner.name, self.inner.kind
        self.query_style, self.reduction = self.inner.query_style, self.inner.reduction
        self.kept: dict[Any, tuple[np.ndarray, Any]] = {}
        self.replay = False

    def exchanges(self) -> list[dict[str, Any]] | None:
        return self.inner.exchanges()

    def stats(self) -> dict[str, Any] | None:
        return self.inner.stats()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.scorer, name)

    @staticmethod
    def _key(unit: Any) -> Any:
        return unit.id, unit.queries, unit.candidates

    def score_units(self, units: Sequence[Any], progress: bool = False) -> list[np.ndarray]:
        """Each unit's matrix: scored (and kept), or when replaying the one kept."""
        if self.replay:
            return [self.kept[self._key(u)][0] for u in units]
        out = self.inner.score_units(units, progress=progress)
        for u, m in zip(units, out):
            self.kept[self._key(u)] = (m, self.inner.detail(u))
        return out

    def detail(self, unit: Any) -> Any:
        """The scorer's account of ``unit`` as it was when scored."""
        return self.kept[self._key(unit)][1]


def administer(task: Any, data: Dataset, scorer: Any, settings: Settings, req: Any,
               log: Callable[[str], None] = print) -> tuple[Evaluation, dict[str, Any]]:
    """The adaptive test of ``scorer`` on ``data``: (the kind's Evaluation of the records given, the
    ``adaptive`` block)."""
    from ..tasks import Evaluation

    t0 = time.perf_counter()
    bank = read_bank(req.adaptive)
    records = task.records(data)
    ids = [str(getattr(r, "id", i)) for i, r in enumerate(records)]
    rec_index = check_dataset(bank, task, records, ids, req.dataset)
    engine = bank.engine()
    where = {str(it["item"]): i for i, it in enumerate(bank.items)}
    recorder = Recorder(scorer)
    batches: list[int] = []

    def respond(chosen: Sequence[int]) -> dict[int, float]:
        sub = task.with_records(data, [records[rec_index[r]] for r in chosen])
        ev = task.evaluate(sub, recorder, settings, progress=False)
        batches.append(len(ev.rows))
        log(f"adaptive: batch {len(batches)}: {len(chosen)} record(s), {sum(batches)} given")
        return _item_answers(ev.rows, where)

    cfg = config_of(req)
    res = run_cat(engine, cfg, respond)
    recorder.replay = True  # the kind's own rows and metrics of the records given, read back
    given = [records[rec_index[r]] for r in res.records]
    ev = task.evaluate(task.with_records(data, given), recorder, settings, progress=False)
    rows = ev.rows
    step_of = {r: s for s in res.steps for r in s["records"]}
    bank_recs = bank.records()
    for s in res.steps:
        s["record_ids"] = [bank_recs[r] for r in s["records"]]
    for row in rows:  # why each record was given
        s = step_of[bank_recs.index(str(row["id"]))]
        k = s["records"].index(bank_recs.index(str(row["id"])))
        row["adaptive"] = {"step": s["step"], "theta": round(s["theta_before"], 6), "se": round(s["se_before"], 6),
                           "information": s["information"][k], "stratum": s["strata"][k]}
    mode = str(ev.config.get("mode") or "full")
    block = _block(bank, cfg, res, (len(records), _pairs(task, data, given, settings, mode),
                                    _pairs(task, data, records, settings, mode)), time.perf_counter() - t0)
    return Evaluation(ev.rows_file, rows, ev.metrics, {**ev.config, "adaptive": True}), block


def _block(bank: Bank, cfg: CatConfig, res: Any, sizes: tuple[int, int, int], wall: float) -> dict[str, Any]:
    """results.json's ``adaptive`` block."""
    n_records, pairs_given, pairs_full = sizes
    engine = bank.engine()
    items = engine.record_items()
    obs = [float(np.mean([res.answers[int(i)] for i in items[r]])) for r in res.records]
    return {
        "bank": str(bank.path), "bank_created": bank.info.get("created"), "irt_model": bank.info["irt"]["model"],
        "bank_respondents": bank.info["irt"].get("respondents"),
        "prior": f"theta ~ N({PRIOR_MEAN:g}, {PRIOR_SD:g}^2); EAP by Simpson's rule on a 481-point grid over [-6, 6]",
        "selector": SELECTOR,
        "config": {"budget": cfg.budget, "target_se": cfg.target_se, "batch_items": cfg.batch_items,
                   "randomesque": cfg.randomesque, "balance_tolerance": BALANCE_TOLERANCE, "seed": cfg.seed},
        "stopped": res.stopped,
        "ability": {"theta": res.theta, "se": res.se, "lo": res.theta - Z95 * res.se, "hi": res.theta + Z95 * res.se},
        "predicted_accuracy": res.prediction,
        "predicted_over": f"the bank's {engine.n_records} records (mean of each record's share right, as eval counts)",
        "observed_accuracy": float(np.mean(obs)) if obs else None,
        "items_given": res.items_given, "bank_items": len(bank.items), "records_given": len(res.records),
        "bank_records": engine.n_records, "dataset_records": n_records,
        "pairs_given": pairs_given, "pairs_full": pairs_full,
        "pairs_ratio": (pairs_full / pairs_given) if pairs_given else None,
        "wall_s": round(wall, 3), "balance": res.balance, "steps": res.steps,
    }


def summary_lines(block: dict[str, Any]) -> list[str]:
    """What ``probegen eval --adaptive`` prints under its table."""
    a, p = block["ability"], block["predicted_accuracy"]
    ratio = f"; {block['pairs_ratio']:.1f}x fewer" if block.get("pairs_ratio") else ""
    return [f"adaptive: {block['items_given']} of the bank's {block['bank_items']} items ({block['records_given']} of "
            f"{block['dataset_records']} records; stopped: {block['stopped']})",
            f"ability {a['theta']:.2f} [{a['lo']:.2f}, {a['hi']:.2f}] (SE {a['se']:.3f}); predicted full-set accuracy "
            f"{p['accuracy']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}]; observed on the items given "
            f"{block['observed_accuracy']:.3f}",
            f"pairs scored {block['pairs_given']} of a full run's {block['pairs_full']}{ratio}; "
            f"{block['wall_s']:.1f} s"]


def report_section(block: dict[str, Any]) -> str:
    """report.md's section of an adaptive run: the outcome, the balance and every step."""
    lines = ["", "## Adaptive test", "", *(f"- {x}" for x in summary_lines(block)),
             f"- bank: {block['bank']} ({block['irt_model'].upper()}, {block['bank_respondents']} respondents, "
             f"{block['bank_created']}); prior: {block['prior']}", f"- selector: {block['selector']}", "",
             f"Content balance (tolerance: {block['balance']['rule']}, {block['balance']['tolerance']}):", "",
             "| stratum | bank share | items given | expected | within |", "|---|---|---|---|---|"]
    for s in block["balance"]["strata"]:
        lines.append(f"| {s['stratum']} | {s['bank_share']:.3f} | {s['given']} | {s['expected']:.1f} | "
                     f"{'yes' if s['within'] else 'no'} |")
    lines += ["", "| step | ability before | SE before | records given (information) | ability after | SE after |",
              "|---|---|---|---|---|---|"]
    for s in block["steps"]:
        given = ", ".join(f"{r} ({v:.2f})" for r, v in zip(s["record_ids"], s["information"]))
        lines.append(f"| {s['step']} | {s['theta_before']:.2f} | {s['se_before']:.3f} | {given} | {s['theta']:.2f} | "
                     f"{s['se']:.3f} |")
    return "\n".join(lines) + "\n"
