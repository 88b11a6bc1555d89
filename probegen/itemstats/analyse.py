"""``probegen items``: a response table's classical item analysis, an IRT fit and (``pairs``) paired
comparisons, written as one folder: ``responses.csv``/``.parquet``, ``items.csv``, ``distractors.csv``,
``respondents.csv``, ``pairs.csv``, ``summary.json``, ``report.md`` and with an IRT fit ``item_map.png``
(difficulty x discrimination) and ``item_fit.png`` (fitted curves against the share right by ability).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ProbegenError
from ..exchange.runs import HUMAN_METHOD
from ..io import atomic_dir, atomic_write, ensure_writable, write_json
from .table import ResponseTable, gather

ITEM_COLUMNS = ("item", "unit", "k", "n", "p", "p_human", "p_models",
                "item_rest", "b", "b_lo", "b_hi", "a", "a_lo", "a_hi", "c", "outfit",
                "flags")


def _write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    def cell(v: Any) -> Any:
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            return ""
        return round(v, 6) if isinstance(v, float) else v

    with atomic_write(path) as fh:
        w = csv.DictWriter(fh, list(columns), lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows({c: cell(r.get(c)) for c in columns} for r in rows)


def item_rows(table: ResponseTable, irt_model: str | None) -> tuple[list[dict[str, Any]], Any]:
    """Per item: classical statistics, the IRT fit's (when ``irt_model``) and flags; and the fit."""
    from .classical import item_table, rest_flags
    from .irt import fit, item_flags

    y, _, items, k = table.matrix()
    cls = item_table(y)
    units = {i: c["unit"] for r in table.respondents for i, c in r.cells.items()}
    fitted = fit(y, k, irt_model) if irt_model else None
    extra = fitted.item_rows() if fitted is not None else [{} for _ in items]
    flags = fitted.flags if fitted is not None else item_flags(y, np.ones(len(items)))
    flags = [[*f, *g] for f, g in zip(flags, rest_flags(cls["item_rest"], cls["n"]))]
    human = np.array([r.method == HUMAN_METHOD for r in table.respondents])
    with np.errstate(invalid="ignore", divide="ignore"):
        p_h = np.nansum(y[human], 0) / (~np.isnan(y[human])).sum(0) if human.any() else np.full(len(items), np.nan)
        p_m = np.nansum(y[~human], 0) / (~np.isnan(y[~human])).sum(0)
    rows = [{"item": item, "unit": units[item], "k": int(k[i]), "n": int(cls["n"][i]), "p": float(cls["p"][i]),
             "p_human": float(p_h[i]), "p_models": float(p_m[i]), "item_rest": float(cls["item_rest"][i]),
             **extra[i], "flags": ";".join(flags[i])} for i, item in enumerate(items)]
    return rows, fitted


def respondent_rows(table: ResponseTable, fitted: Any) -> list[dict[str, Any]]:
    """Per respondent: who, how many answered, accuracy, ability with a 95% interval (with a fit)."""
    out = []
    for j, r in enumerate(table.respondents):
        vals = [c["correct"] for c in r.cells.values()]
        row: dict[str, Any] = {"respondent": r.name, "model": r.model, "method": r.method, "variant": r.variant,
                               "source": r.source, "answered": len(vals), "accuracy": float(np.mean(vals))}
        if fitted is not None:
            row.update(theta=float(fitted.theta[j]), theta_lo=float(fitted.theta[j] - 1.96 * fitted.theta_sd[j]),
                       theta_hi=float(fitted.theta[j] + 1.96 * fitted.theta_sd[j]))
        out.append(row)
    return out


def analyse(table: ResponseTable, irt_model: str | None = "2pl", n_boot: int = 1000, seed: int = 0,
            pairs: bool = False) -> dict[str, Any]:
    """Everything ``probegen items`` writes, in memory."""
    from .classical import distractors, kr20_ci

    y, names, items, _ = table.matrix()
    rows, fitted = item_rows(table, irt_model)
    chosen, keys = table.chosen()
    res: dict[str, Any] = {
        "items": rows, "respondents": respondent_rows(table, fitted),
        "distractors": distractors(y, chosen, keys, items),
        "summary": {"respondents": len(names), "items": len(items), "cells": int((~np.isnan(y)).sum()),
                    "missing_share": float(np.isnan(y).mean()), "kr20": kr20_ci(y, n_boot, seed),
                    "irt": None if fitted is None else {"model": fitted.model, "loglik": fitted.loglik,
                                                        "iterations": fitted.iterations,
                                                        "guessing_floor": "1/k" if fitted.model == "3pl" else 0},
                    "flagged": sum(bool(r["flags"]) for r in rows)},
    }
    suspect = {d["item"] for d in res["distractors"] if d["suspect"]}
    res["summary"]["suspect_distractor_items"] = len(suspect)
    if pairs:
        from .paired import all_pairs

        res["pairs"] = all_pairs(y, names, [r["unit"] for r in rows], n_boot=n_boot, seed=seed)
    return res


def render(res: dict[str, Any]) -> str:
    """report.md: counts, KR-20, the flagged items with their reasons."""
    s = res["summary"]
    kr = s["kr20"]
    ci = f" [{kr['ci'][0]:.3f}, {kr['ci'][1]:.3f}]" if kr.get("ci") else ""
    lines = ["# Item analysis", "",
             f"{s['respondents']} respondents x {s['items']} items, {s['cells']} answered cells "
             f"({s['missing_share']:.1%} missing).", "",
             f"KR-20 ({kr['imputed']} missing cells filled with the item's p-value): "
             + (f"{kr['kr20']:.3f}{ci}" if kr["kr20"] is not None else "undefined"), ""]
    if s["irt"]:
        lines += [f"IRT: {s['irt']['model'].upper()} (guessing floor {s['irt']['guessing_floor']}), "
                  f"marginal log-likelihood {s['irt']['loglik']:.1f}.", ""]
    flagged = [r for r in res["items"] if r["flags"]]
    lines += [f"## Flagged items ({len(flagged)})", "", "| item | p | item-rest | a | b | flags |",
              "|---|---|---|---|---|---|"]
    for r in flagged[:200]:
        lines.append(f"| {r['item']} | {r['p']:.2f} | {r['item_rest']:.2f} | {r.get('a', float('nan')):.2f} "
                     f"| {r.get('b', float('nan')):.2f} | {r['flags']} |")
    return "\n".join(lines) + "\n"


def draw_item_map(rows: Sequence[dict[str, Any]], path: Path) -> bool:
    """``item_map.png``: IRT difficulty x discrimination, flagged items in red, their outfit as the
    marker size (the item-fit figure). False (nothing drawn) without an IRT fit."""
    if not rows or "b" not in rows[0]:
        return False
    plt = _pyplot()
    b, a = np.array([r["b"] for r in rows]), np.array([r["a"] for r in rows])
    size = 12 * np.clip(np.array([r["outfit"] for r in rows], float), 0.2, 5)
    bad = np.array([bool(r["flags"]) for r in rows])
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter(b[~bad], a[~bad], s=size[~bad], alpha=0.5, label="items")
    ax.scatter(b[bad], a[bad], s=size[bad], alpha=0.8, color="tab:red", label="flagged")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("difficulty b")
    ax.set_ylabel("discrimination a")
    ax.set_title("Item map (marker size: outfit mean-square)")
    ax.legend(loc="best", fontsize=8)
    return _save(plt, fig, path)


def draw_item_fit(rows: Sequence[dict[str, Any]], people: Sequence[dict[str, Any]], table: ResponseTable,
                  path: Path, most: int = 6) -> bool:
    """``item_fit.png``: for the flagged items (else those with the worst outfit), at most ``most``, the
    fitted item curve P(right | ability) beside the observed share right of the respondents in each
    ability bin (up to 5 bins of equal size; the bin's size labels the point). False without an IRT fit."""
    if not rows or "b" not in rows[0] or not people:
        return False
    from .irt import prob

    plt = _pyplot()
    y, names, items, _ = table.matrix()
    theta = {p["respondent"]: p["theta"] for p in people}
    th = np.array([theta.get(n, np.nan) for n in names], float)
    order = sorted(range(len(rows)), key=lambda i: (not rows[i]["flags"], -float(rows[i]["outfit"] or 0)))[:most]
    col = {it: i for i, it in enumerate(items)}
    grid = np.linspace(min(-3.0, np.nanmin(th)), max(3.0, np.nanmax(th)), 121)
    n = len(order)
    fig, axes = plt.subplots((n + 2) // 3, min(n, 3), figsize=(3.2 * min(n, 3), 2.8 * ((n + 2) // 3)), squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    for ax, i in zip(axes.ravel(), order):
        r = rows[i]
        curve = prob(grid[:, None], np.array([r["a"]]), np.array([r["b"]]), np.array([r["c"]]))[:, 0]
        ax.plot(grid, curve, color="tab:red" if r["flags"] else "tab:blue", lw=1.5)
        ans = y[:, col[r["item"]]]
        ok = ~np.isnan(ans) & ~np.isnan(th)
        for chunk in np.array_split(np.argsort(th[ok]), min(5, int(ok.sum()))):
            if len(chunk):
                ax.scatter(th[ok][chunk].mean(), ans[ok][chunk].mean(), s=14 + 6 * len(chunk), color="black", alpha=0.6)
        ax.set_ylim(-0.05, 1.05)
        why = r["flags"] or f"outfit {float(r['outfit'] or 0):.2f}"
        ax.set_title(f"{str(r['item'])[:40]}\n{why[:48]}", fontsize=7)
        ax.set_xlabel("ability", fontsize=7)
        ax.tick_params(labelsize=7)
    fig.suptitle("Item fit: fitted curve, observed share right per ability bin (point size: respondents)",
                 fontsize=8)
    return _save(plt, fig, path)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> bool:
    fig.tight_layout()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
    return True


def write(res: dict[str, Any], table: ResponseTable, out: str | Path, inputs: Sequence[str | Path]) -> Path:
    """The folder ``out`` (atomically: whole or not at all)."""
    ensure_writable(out, replace=True, inputs=inputs, writer="output")
    with atomic_dir(out) as tmp:
        table.write(tmp)
        _write_csv(tmp / "items.csv", res["items"], ITEM_COLUMNS)
        _write_csv(tmp / "respondents.csv", res["respondents"],
                   ("respondent", "model", "method", "variant", "source", "answered", "accuracy", "theta", "theta_lo",
                    "theta_hi"))
        _write_csv(tmp / "distractors.csv", res["distractors"],
                   ("item", "option", "picks", "strong_share", "weak_share", "suspect"))
        if "pairs" in res:
            from .paired import PAIR_COLUMNS

            _write_csv(tmp / "pairs.csv", res["pairs"], PAIR_COLUMNS)
        draw_item_map(res["items"], tmp / "item_map.png")
        draw_item_fit(res["items"], res["respondents"], table, tmp / "item_fit.png")
        write_json(tmp / "summary.json", {**res["summary"], "runs": [str(r) for r in inputs]})
        with atomic_write(tmp / "report.md") as fh:
            fh.write(render(res))
    return Path(out)


def run_items(runs: Sequence[str | Path], out: str | Path, common: bool = False, irt_model: str | None = "2pl",
              n_boot: int = 1000, seed: int = 0, pairs: bool = False, bank: str | Path | None = None,
              lm_eval_metric: str = "acc") -> str:
    """Gather, analyse and write; returns the summary line the CLI prints. ``bank``: also save the
    calibration as an item bank there (:mod:`.bank`; built before anything is written).
    ``lm_eval_metric``: an lm-eval file's respondent (:func:`.table.gather`)."""
    ensure_writable(out, replace=True, inputs=runs, writer="output")
    if bank is not None and not irt_model:
        raise ProbegenError("--bank needs an IRT fit (--irt 1pl, 2pl or 3pl, not none)")
    table = gather(runs, common, lm_eval_metric)
    if irt_model and len(table.respondents) < 2:
        raise ProbegenError("IRT needs at least 2 respondents (give more runs, or --irt none)")
    res = analyse(table, irt_model, n_boot, seed, pairs)
    saved = _bank(res, table, bank) if bank is not None else None
    write(res, table, out, runs)
    if saved is not None and bank is not None:
        write_json(Path(bank), saved)  # strict JSON, atomically; _bank refused a directory
    s = res["summary"]
    return (f"{s['respondents']} respondents x {s['items']} items; {s['flagged']} flagged; "
            f"KR-20 {s['kr20']['kr20'] if s['kr20']['kr20'] is None else round(s['kr20']['kr20'], 3)}; wrote {out}"
            + (f" and the item bank {bank}" if saved is not None else ""))


def _bank(res: dict[str, Any], table: ResponseTable, bank: str | Path) -> dict[str, Any]:
    """The item bank of an analysis (runs on one dataset), checked before any output is written."""
    from .bank import build_bank

    datasets = list(dict.fromkeys(r.dataset for r in table.respondents))
    if len(datasets) != 1:
        raise ProbegenError(f"--bank: the runs are on {len(datasets)} datasets; a bank is fitted on one")
    if Path(bank).is_dir():
        raise ProbegenError(f"--bank {bank} is a directory; give a file name (e.g. bank.json)")
    return build_bank(res["items"], res["summary"], [r["respondent"] for r in res["respondents"]], datasets[0])


def load_items(folder: str | Path) -> tuple[ResponseTable, list[dict[str, Any]], dict[str, Any]]:
    """A ``probegen items`` folder back: its response table (from responses.csv), item rows, summary."""
    from ..exchange.respondent import Respondent, check_correct
    from ..io import parse_json

    root = Path(folder)
    if not (root / "responses.csv").is_file() or not (root / "items.csv").is_file():
        raise ProbegenError(f"{root} is not a `probegen items` folder (no responses.csv / items.csv)")
    resps: dict[str, Respondent] = {}
    try:
        with open(root / "responses.csv", encoding="utf-8", newline="") as fh:
            for line, r in enumerate(csv.DictReader(fh), 2):
                where = f"{root / 'responses.csv'} line {line}"
                if any(r.get(c) is None for c in ("respondent", "item", "correct", "k")):
                    raise ProbegenError(f"{where}: not a row of a `probegen items` response table")
                resp = resps.setdefault(r["respondent"], Respondent(r["respondent"], r["model"], r["method"],
                                                                    r["variant"], r["source"], r["dataset"]))
                if r["item"] in resp.cells:
                    raise ProbegenError(f"{where}: item {r['item']} of {r['respondent']} appears twice")
                try:
                    correct, k = float(r["correct"]), int(r["k"])
                except ValueError:
                    raise ProbegenError(f"{where}: correct {r['correct']!r} or k {r['k']!r} is not a number") from None
                resp.cells[r["item"]] = {"unit": r["unit"], "correct": check_correct(correct, where, partial=True),
                                         "chosen": r["chosen"] or None, "key": r["key"] or None, "k": max(2, k)}
        with open(root / "items.csv", encoding="utf-8", newline="") as fh:
            items = list(csv.DictReader(fh))
        sfile = root / "summary.json"
        summary = parse_json(sfile.read_text(encoding="utf-8"), sfile) if sfile.is_file() else {}
    except (UnicodeDecodeError, csv.Error) as e:
        raise ProbegenError(f"{root}: a file of the `probegen items` folder cannot be read ({e})") from None
    if not isinstance(summary, dict):
        raise ProbegenError(f"{root / 'summary.json'}: not a `probegen items` summary (a JSON object)")
    if not resps:
        raise ProbegenError(f"{root / 'responses.csv'}: the response table holds no row")
    return ResponseTable(list(resps.values())), items, summary
