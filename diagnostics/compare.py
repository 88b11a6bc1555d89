"""Paired comparison of two versions of a probe set (adversarial vs. its twin, filtered vs. not).

Units (CoDA21 groups, WordNetQA concepts: a concept with all its items, across probe types) that appear in
both sets are paired by id, and a bootstrap over units gives CIs for each accuracy and for their difference.
The scoring is :mod:`probegen.run.compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from probegen.stats.bootstrap import cluster_weights, percentile_ci

from .tables import fmt

#: (per unit: summed correctness and items; per decision: unit, item, right) of one respondent on one set
Correctness = tuple[dict[str, tuple[float, float]], list[tuple[str, str, float]]]


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


def model_pairs(per_model: dict[str, list[tuple[str, str, float]]], n_boot: int = 1000, seed: int = 0
                ) -> list[dict[str, Any]]:
    """Every pair of models on one set, on the decisions both made: accuracy difference (a - b) with a paired
    cluster-bootstrap CI, exact McNemar p and Holm over the pairs (:func:`probegen.itemstats.paired.all_pairs`).

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


def cells_correctness(layout: dict[str, str], cells: dict[str, dict[str, Any]], grouped: bool) -> Correctness:
    """Per unit and per decision, as a scoring gives them, from one respondent's cells (item id -> cell
    with ``correct``) on a dataset of item -> unit ``layout``: a grouped unit (CoDA21) is (its rows' mean,
    1), any other (items right, items).

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


def _fmt(x: dict[str, Any]) -> str:
    return fmt(x.get("accuracy", x.get("value")), x.get("ci"))


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
        f"- units paired by id and resampled whole ({results['kind']}: {results['resampling_unit']}); 95% bootstrap "
        "CIs over units; "
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
