"""Scoring a human study: accuracy per condition with CIs, agreement, human bias, model-human gap (the
study and the models' runs are read by :mod:`probegen.run.human`).

An item's human score is its annotators' mean correctness (a CoDA21 group: the share of rows aligned right);
a condition's accuracy is the mean over its answered items (bootstrap CI over items); agreement is Cohen's kappa
per pair of annotators. Bias_C / Bias_W use M_L = chance, on the items answered in every condition (items kept
out of Context/Word, as ``probegen bias`` keeps them out, are in Full only). Models' ``probegen bias`` runs are
read on exactly the study's items, with the human - model gap (the bias paper's Table 5 shape).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from .bias import FULL, LABEL, UnitTable, bootstrap_accuracy, bootstrap_bias, fmt_ratio

RATIOS = {"bias_c": "context", "bias_w": "word"}
NAMES = {"full": "Full", "context": "Context", "word": "Word", LABEL: "Label (chance)"}


def correctness(gold: dict[str, Any], answer: Any) -> float:
    """1/0 for a multiple-choice answer; the share of rows paired right for a group.

    >>> correctness({"kind": "mc", "gold": 2}, 2), correctness({"kind": "align", "gold": [1, 0, 2]}, [1, 2, 0])
    (1.0, 0.3333333333333333)
    """
    if not isinstance(gold["gold"], list):  # one gold index (a question), else one per row (a group)
        return float(answer == gold["gold"])
    return float(np.mean([a == g for a, g in zip(answer, gold["gold"])]))


def guess_hits(gold: dict[str, Any], guess: Any) -> list[bool]:
    """Per hidden word: was the guess the word as shown or its lemma (case and spacing ignored)?

    >>> (guess_hits({"words": [["dogs", "dog"]]}, "Dog"),
    ...  guess_hits({"words": [["ran", "run"], ["ice", "ice"]]}, ["walk", "ICE"]))
    ([True], [False, True])
    """
    guesses = guess if isinstance(guess, list) else [guess]

    def norm(s: Any) -> str:
        return " ".join(str(s).lower().replace("_", " ").split())

    return [norm(g) in {norm(w) for w in words} for g, words in zip(guesses, gold["words"])]


def kappa(a: list[Any], b: list[Any]) -> float | None:
    """Cohen's kappa of two label lists (None when undefined: fewer than 2 labels or no variation at all).

    >>> round(kappa([0, 1, 2, 0, 1], [0, 1, 2, 1, 1]), 4)   # observed .8, chance .36
    0.6875
    >>> kappa([1, 1, 1], [1, 1, 1]) is None
    True
    """
    from sklearn.metrics import cohen_kappa_score

    if len(a) < 2 or len(set(a) | set(b)) < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        k = float(cohen_kappa_score([str(x) for x in a], [str(x) for x in b]))
    return k if np.isfinite(k) else None


def _labels(answer: Any) -> list[Any]:
    return list(answer) if isinstance(answer, list) else [answer]


def score_answers(study: Any, answers: dict[str, dict[str, dict[str, dict[str, Any]]]], n_boot: int = 1000,
                  seed: int = 0) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """(everything ``probegen study score`` reports but the models, each item's human score per condition)
    from ``answers`` (condition -> item uid -> annotator -> answer record with its correctness)."""
    gold = study.gold()
    conds: dict[str, Any] = {}
    item_scores: dict[str, dict[str, float]] = {}
    for cond in study.conditions:
        by_item = answers[cond]
        uids = sorted(by_item)
        scores = {u: float(np.mean([r["correct"] for r in by_item[u].values()])) for u in uids}
        item_scores[cond] = scores
        planned = {u for a in study.annotators.values() if a["condition"] == cond for u in a["items"]}
        entry: dict[str, Any] = {"n_items": len(uids), "n_planned": len(planned),
                                 "n_annotations": sum(len(v) for v in by_item.values())}
        if uids:
            acc = bootstrap_accuracy(np.array([scores[u] for u in uids]), n_boot=n_boot, seed=seed)
            entry.update(accuracy=acc["accuracy"], ci=acc["ci"],
                         chance=float(np.mean([1.0 / gold[u]["n"] for u in uids])))
        else:
            entry.update(accuracy=None, ci=None, chance=None)
        entry["annotators"] = {}
        for aid, a in study.annotators.items():
            if a["condition"] != cond:
                continue
            mine = [by_item[u][aid]["correct"] for u in uids if aid in by_item[u]]
            entry["annotators"][aid] = {"assigned": len(a["items"]), "answered": len(mine),
                                        "accuracy": float(np.mean(mine)) if mine else None}
        entry["agreement"] = _agreement(study, cond, by_item)
        if cond == "context":
            hits = [h for u in uids for r in by_item[u].values() if r.get("guess")
                    for h in guess_hits(gold[u], r["guess"])]
            entry["guess"] = {"n": len(hits), "accuracy": float(np.mean(hits)) if hits else None}
        conds[cond] = entry
    results: dict[str, Any] = {
        "study": str(study.root),
        "dataset": study.manifest["dataset"],
        "unit": study.manifest["unit"],
        "design": study.manifest["design"],
        "seed": study.manifest["seed"],
        "conditions": conds,
        "bias": human_bias({c: item_scores[c] for c in study.conditions}, gold, n_boot, seed),
        "kept_out": study.manifest.get("counts", {}).get("kept_out", {}),
        "bootstrap": {"n": n_boot, "seed": seed, "alpha": 0.05, "unit": study.manifest["unit"]},
    }
    return results, item_scores


def _agreement(study: Any, cond: str, by_item: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    aids = sorted(a for a, x in study.annotators.items() if x["condition"] == cond)
    pairs: list[dict[str, Any]] = []
    for x, y in combinations(aids, 2):
        both = [u for u in sorted(by_item) if x in by_item[u] and y in by_item[u]]
        la = [lab for u in both for lab in _labels(by_item[u][x]["answer"])]
        lb = [lab for u in both for lab in _labels(by_item[u][y]["answer"])]
        pairs.append({"annotators": [x, y], "items": len(both), "labels": len(la),
                      "observed": float(np.mean([p == q for p, q in zip(la, lb)])) if la else None,
                      "kappa": kappa(la, lb)})
    ks = [p["kappa"] for p in pairs if p["kappa"] is not None]
    return {"pairs": pairs, "kappa_mean": float(np.mean(ks)) if ks else None}


def human_bias(scores: dict[str, dict[str, float]], gold: dict[str, dict[str, Any]], n_boot: int,
          seed: int) -> dict[str, Any]:
    """Bias ratios on the items answered in every condition (paired bootstrap), label = chance."""
    if FULL not in scores or not any(c in scores for c in RATIOS.values()):
        return {"value": None, "reason": "needs the full condition and context and/or word"}
    present = [c for c in ("full", "context", "word") if c in scores]
    units = sorted(set.intersection(*(set(scores[c]) for c in present)))
    if len(units) < 2:
        return {"value": None, "reason": f"only {len(units)} item(s) answered in every condition"}
    per: dict[str, np.ndarray] = {c: np.array([scores[c][u] for u in units]) for c in present}
    per[LABEL] = np.array([1.0 / gold[u]["n"] for u in units])
    table = UnitTable(units, np.ones(len(units)), per)
    return bootstrap_bias(table, {k: v for k, v in RATIOS.items() if v in present}, n_boot=n_boot, seed=seed)


def model_conditions(per_item: dict[str, dict[str, float]], gold: dict[str, dict[str, Any]],
                     human: dict[str, dict[str, float]], n_boot: int, seed: int) -> dict[str, Any]:
    """A model's accuracy per condition on the study's items (``per_item``: condition -> uid -> correct),
    on the items people answered, with the human - model gap."""
    conds: dict[str, Any] = {}
    for cond, scores in per_item.items():
        uids = sorted(human.get(cond) or scores)  # the items people answered, else all study items
        acc = bootstrap_accuracy(np.array([scores[u] for u in uids]), n_boot=n_boot, seed=seed)
        h = human.get(cond) or {}
        conds[cond] = {"accuracy": acc["accuracy"], "ci": acc["ci"], "n_items": len(uids),
                       "gap": (float(np.mean([h[u] for u in uids])) - acc["accuracy"]) if h else None}
    return conds


# ---- outputs ---------------------------------------------------------------------------------------
def _acc(e: dict[str, Any] | None) -> str:
    if not e or e.get("accuracy") is None:
        return "-"
    ci = e.get("ci")
    return f"{e['accuracy']:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def _ratio(ratios: dict[str, Any] | None, key: str) -> str:
    """A ratio for text, 'n/a' when its condition was not in the study (fmt_ratio says 'undefined')."""
    if not ratios or key not in ratios:
        return f"n/a (no {RATIOS[key]} condition)"
    return fmt_ratio(ratios[key])


def human_point(results: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The study as a point for :func:`diagnostics.bias_plots.plot_bias_plane` (a black star)."""
    b = results["bias"].get("ratios") or {}
    n = results["bias"].get("n_units")
    label = name or f"humans: {Path(results['study']).name}" + (f" ({n} {results['unit']}s)" if n else "")
    return {"name": label, "bias_c": b.get("bias_c"), "bias_w": b.get("bias_w"), "marker": "*", "ms": 13,
            "color": "black"}


def render_report(res: dict[str, Any]) -> str:
    """report.md of ``probegen study score``."""
    ds = res["dataset"]
    lines = [f"# Human baseline: {Path(res['study']).name}", "",
             f"Dataset `{ds['path']}` ({ds['kind']}, sha256 of content {ds['fingerprint'][:12]}); unit: {res['unit']}; "
             f"{res['design']}. 95% percentile bootstrap CIs over {res['unit']}s ({res['bootstrap']['n']} "
             "replicates).", "",
             "## Accuracy per condition", "",
             "| condition | items answered | annotations | accuracy [95% CI] | chance | agreement (Cohen's kappa) | "
             "per annotator |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for cond, e in res["conditions"].items():
        ag = e["agreement"]
        kap = "; ".join(f"{'/'.join(p['annotators'])}: {_f(p['kappa'], '.2f')} "
                        f"(obs. {_f(p['observed'], '.2f')}, {p['items']} shared)"
                        for p in ag["pairs"]) or "-"
        ann = ", ".join(f"{a}: {_f(x['accuracy'], '.2f')} ({x['answered']}/{x['assigned']})"
                        for a, x in e["annotators"].items())
        lines.append(f"| {NAMES[cond]} | {e['n_items']}/{e['n_planned']} | {e['n_annotations']} | {_acc(e)} | "
                     f"{_f(e['chance'])} | {kap} | {ann} |")
    g = res["conditions"].get("context", {}).get("guess")
    if g and g["n"]:
        lines += ["", f"Context: the hidden word was guessed right {g['accuracy']:.1%} of the time ({g['n']} guesses)."]
    lines += _kept_out_lines(res.get("kept_out") or {})
    lines += ["", "## Context and word bias (label baseline = chance)", ""]
    b = res["bias"]
    if b.get("ratios"):
        lines += [f"On the {b['n_units']} {res['unit']}s answered in every condition: "
                  f"Bias_C = {_ratio(b['ratios'], 'bias_c')}, Bias_W = {_ratio(b['ratios'], 'bias_w')} "
                  f"(M_Full - M_L = {b['gap']['value']:.3f}).",
                  "Near 1: that part of the input alone does what the full input does; near 0: no better than chance."]
    else:
        lines.append(f"Not computed: {b.get('reason', 'M_Full is within noise of chance')}.")
    if res["models"]:
        lines += ["", "## Models and humans on the same items (the bias paper's Table 5 shape)", ""]
        head = "| condition | human |" + "".join(f" {m['model']} | gap (human - {m['model']}) |" for m in res["models"])
        lines += [head, "| --- | --- |" + " --- | --- |" * len(res["models"])]
        for cond, e in res["conditions"].items():
            row = f"| {NAMES[cond]} | {_acc(e)} |"
            for m in res["models"]:
                me = m["conditions"].get(cond)
                row += f" {_acc(me)} | {_f(me and me.get('gap'), '+.3f')} |"
            lines.append(row)
        for key, label in (("bias_c", "Bias_C"), ("bias_w", "Bias_W")):
            row = f"| {label} | {fmt_ratio((b.get('ratios') or {}).get(key))} |"
            for m in res["models"]:
                row += f" {fmt_ratio((m['bias'].get('ratios') or {}).get(key))} | |"
            lines.append(row)
        lines += ["", "Model accuracies are on the items people answered, from the runs' per-item records "
                  "(" + ", ".join(f"`{m['run']}`" for m in res["models"]) + ")."]
    if res.get("plot"):
        lines += ["", f"![bias plane]({res['plot']})"]
    return "\n".join(lines) + "\n"


def _kept_out_lines(kept_out: dict[str, dict[str, int]]) -> list[str]:
    """The report's note on the items kept out of a condition, and why (none: no lines).

    >>> _kept_out_lines({"word": {"it names the gold": 3}})[1]  # doctest: +NORMALIZE_WHITESPACE
    'Kept out of Word by design (shown in the other conditions), as `probegen bias` keeps them out of its ratio:
    3 items: it names the gold.'
    """
    lines = [f"Kept out of {NAMES[c]} by design (shown in the other conditions), as `probegen bias` keeps them out of "
             f"its ratio: {k} items: {why}." for c, reasons in kept_out.items() for why, k in reasons.items()]
    if lines:
        lines.append("Context and Word accuracies, the guesses, Bias_C and Bias_W (humans and models) are on the items "
                     "left.")
    return [""] + lines if lines else []


def human_section(human: list[dict[str, Any]]) -> list[str]:
    """The lines ``probegen bias --human`` adds to a bias report: one row per study."""
    lines = ["", "## Human baselines (probegen study)", "",
             "| study | dataset | items | M_Full | M_Context | M_Word | Bias_C | Bias_W |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for h in human:
        acc = h["accuracy"]
        r = h["bias"].get("ratios") or {}
        lines.append(f"| `{h['study']}` | {h['dataset']} | {h['bias'].get('n_units', '-')} | {_f(acc.get('full'))} | "
                     f"{_f(acc.get('context'))} | {_f(acc.get('word'))} | {fmt_ratio(r.get('bias_c'))} | "
                     f"{fmt_ratio(r.get('bias_w'))} |")
    lines += ["", "Human points (black stars) use the label baseline M_L = chance and the study's items."]
    return lines


def summary(res: dict[str, Any]) -> str:
    """A short table for the terminal."""
    lines = [f"{'condition':<10} {'items':>6} {'accuracy [95% CI]':<24} {'chance':>6}  kappa"]
    for cond, e in res["conditions"].items():
        lines.append(f"{cond:<10} {e['n_items']:>6} {_acc(e):<24} {_f(e['chance'], '.2f'):>6}  "
                     f"{_f(e['agreement']['kappa_mean'], '.2f')}")
    r = res["bias"].get("ratios") or {}
    lines.append(f"human Bias_C {_ratio(r, 'bias_c')}   Bias_W {_ratio(r, 'bias_w')}")
    for cond, reasons in (res.get("kept_out") or {}).items():
        lines.append(f"kept out of {cond} by design (as bias keeps them out of its ratio): {sum(reasons.values())} "
                     "item(s)")
    for m in res["models"]:
        gaps = ", ".join(f"{c} {_f(e.get('gap'), '+.3f')}" for c, e in m["conditions"].items())
        lines.append(f"{m['model']}: gap (human - model) {gaps}")
    return "\n".join(lines)
