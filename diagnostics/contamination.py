"""``probegen contamination``: is a model better on a published form than on fresh parallel forms?

Forms differ by chance (a finite sample of units) and in difficulty (form-to-form spread). Each form's accuracy
has the cluster-robust sampling variance ``v`` over units; the between-form variance ``tau2`` comes from
the fresh forms by the method of moments (DerSimonian-Laird, floored at 0); gap = seen - mean(fresh) with
Var_H0 = v_seen + tau2 + sum(v_fresh)/F^2 + tau2/F, referred to Student's t with Welch-Satterthwaite df,
one-sided (exposure raises accuracy). The run is :mod:`probegen.run.contamination`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from probegen.errors import ProbegenError
from probegen.tasks import Dataset

#: units -> (summed correctness, items) of one model on one form (:func:`probegen.run.compare.correctness`)
Units = dict[str, tuple[float, float]]


def form_accuracy(units: Units) -> tuple[float, float, int]:
    """(accuracy, its cluster-robust sampling variance, units) of one form
    (:func:`probegen.stats.variance.ratio_variance`).

    >>> acc, var, n = form_accuracy({"a": (1, 1), "b": (0, 1), "c": (2, 2), "d": (0, 2)})
    >>> acc, round(var, 5), n
    (0.5, 0.09259, 4)
    """
    from probegen.stats.variance import ratio_variance

    sums, counts = np.array(list(units.values()), dtype=np.float64).reshape(-1, 2).T
    acc, var = ratio_variance(sums, counts)
    return acc, var, len(units)


def gap_test(seen: tuple[float, float], fresh: Sequence[tuple[float, float]], alpha: float = 0.05,
             alternative: str = "greater") -> dict[str, Any]:
    """The seen form's accuracy against at least two fresh forms', with form-to-form spread in the null;
    each is (accuracy, sampling variance). ``alternative``: ``greater`` (exposure) or ``two-sided``.

    >>> r = gap_test((0.70, 0.001), [(0.50, 0.001), (0.52, 0.001), (0.48, 0.001)])
    >>> round(r["gap"], 3), r["p"] < 0.001, r["flagged"]
    (0.2, True, True)
    >>> gap_test((0.51, 0.001), [(0.50, 0.001), (0.52, 0.001), (0.48, 0.001)])["flagged"]
    False
    """
    from scipy.stats import t as student_t

    from probegen.stats.significance import satterthwaite_df

    if len(fresh) < 2:
        raise ProbegenError("the contamination test needs at least 2 fresh forms (the null is how fresh forms "
                            f"differ from each other); got {len(fresh)}")
    if alternative not in ("greater", "two-sided"):
        raise ProbegenError(f"unknown alternative {alternative!r}; choose greater or two-sided")
    f = len(fresh)
    acc_s, v_s = seen
    acc_f = np.array([a for a, _ in fresh], dtype=np.float64)
    v_f = np.array([v for _, v in fresh], dtype=np.float64)
    s2 = float(np.var(acc_f, ddof=1))
    tau2 = max(0.0, s2 - float(v_f.mean()))
    var = v_s + v_f.sum() / f**2 + tau2 * (1 + 1 / f)
    # Welch-Satterthwaite (tau2 on F - 1 df, the sampling parts on many units), floored at F - 1: WS falls below
    # it when the seen form is near ceiling, which is what exposure makes. Simulated false-positive rate unchanged
    # (0.026-0.050, 3 or 5 fresh forms); power at a planted +1.5 logit 0.71 -> 0.91 (3 fresh forms, tau 0.1).
    df = float("inf") if tau2 == 0 else max(f - 1.0, satterthwaite_df([(1 + 1 / f) * s2, var - (1 + 1 / f) * s2],
                                                                      [f - 1, float("inf")]))
    se = float(np.sqrt(var))
    gap = float(acc_s - acc_f.mean())
    stat = gap / se if se > 0 else (0.0 if gap == 0 else float(np.sign(gap)) * float("inf"))
    p = float(student_t.sf(stat, df)) if alternative == "greater" else float(2 * student_t.sf(abs(stat), df))
    q = float(student_t.ppf(1 - alpha / 2, df))
    # the smallest true gap found with 80% power at this alpha (one-sided: alpha, two-sided: alpha / 2)
    q_test = float(student_t.ppf(1 - (alpha if alternative == "greater" else alpha / 2), df))
    mdg = (q_test + float(student_t.ppf(0.8, df))) * se
    out = {"seen": float(acc_s), "fresh_mean": float(acc_f.mean()), "fresh": [float(a) for a in acc_f],
           "gap": gap, "se": se, "ci": [gap - q * se, gap + q * se], "t": float(stat), "df": df, "p": p,
           "alpha": alpha, "alternative": alternative, "flagged": bool(p < alpha),
           "tau2": tau2, "tau": float(np.sqrt(tau2)), "fresh_sd": float(np.sqrt(s2)),
           "sampling_se_seen": float(np.sqrt(v_s)), "min_detectable_gap": float(mdg)}
    if not np.isfinite(df):  # written as null (JSON has no Infinity) with this beside it
        out["df_note"] = ("infinite: the fresh forms differ by no more than their sampling error (tau2 = 0), so "
                          "the gap is referred to the normal distribution")
    if not se > 0:  # no spread anywhere: a t of +/-inf or 0 is no evidence either way
        out.update(t=float("nan"), p=float("nan"), flagged=False, t_note="degenerate test", p_note="degenerate test",
                   degenerate="the gap has no standard error (every form's items are answered alike and the fresh "
                              "forms agree): the test cannot tell exposure from chance")
    return out


def fresh_null(fresh: Sequence[tuple[float, float]], alpha: float = 0.05,
               alternative: str = "greater") -> list[dict[str, Any]]:
    """Each fresh form tested as if it were the seen one, against the other fresh forms (needs 3 or more):
    forms nobody saw, so every flag here is a false positive.

    >>> rows = fresh_null([(0.50, 0.001), (0.52, 0.001), (0.48, 0.001)])
    >>> [r["form"] for r in rows], any(r["flagged"] for r in rows)
    ([0, 1, 2], False)
    """
    if len(fresh) < 3:
        return []
    return [{"form": j, **gap_test(fresh[j], [x for i, x in enumerate(fresh) if i != j], alpha, alternative)}
            for j in range(len(fresh))]


def sentence(model: str, r: dict[str, Any]) -> str:
    """One plain sentence (two at most) on what the gap means and what it cannot mean."""
    pts = 100 * r["gap"]
    lo, hi = 100 * r["ci"][0], 100 * r["ci"][1]
    if r.get("degenerate"):
        return (f"{model} scores {pts:+.1f} points on the seen form against the fresh forms' mean, but the test is "
                f"degenerate: {r['degenerate']}. Use larger forms, or forms the model answers less uniformly.")
    if r["flagged"]:
        return (f"{model} scores {pts:+.1f} points on the seen form against the fresh forms' mean "
                f"(95% CI {lo:+.1f} to {hi:+.1f}; p = {_p(r['p'])}), more than forms nobody saw differ by: "
                "consistent with exposure to the seen form (its answers in training data, or tuning to it). "
                "It does not prove training on it: the seen form may differ from the fresh ones in a way "
                "their strata do not match.")
    return (f"{model} scores {pts:+.1f} points on the seen form against the fresh forms' mean "
            f"(95% CI {lo:+.1f} to {hi:+.1f}; p = {_p(r['p'])}), within what forms nobody saw differ by. "
            f"This does not show the model never saw the form: exposure need not raise accuracy, and gaps "
            f"below about {100 * r['min_detectable_gap']:.0f} points are missed more often than not "
            "(80% power); more or larger fresh forms narrow that.")


def _p(p: float) -> str:
    if not np.isfinite(p):
        return "degenerate"
    return f"{p:.1e}" if p < 1e-4 else f"{p:.4f}"


def siblings_problem(paths: Sequence[Path], data: Sequence[Dataset]) -> str | None:
    """Why ``data`` (at ``paths``, the seen form first) are not sibling forms of one ``make ... --forms K``
    build (one family, distinct forms), else None: sets made apart differ by how they were made.

    >>> from types import SimpleNamespace as NS
    >>> forms = [NS(manifest={"forms": {"family": "f1", "form": i}}) for i in (1, 2, 3)]
    >>> siblings_problem([Path("a"), Path("b"), Path("c")], forms) is None
    True
    >>> siblings_problem([Path("a"), Path("b")], [forms[0], NS(manifest={"kind": "wordnetqa"})])
    "b is not a parallel form (its manifest has no 'forms' block), a is form 1 of family f1"
    """
    blocks: list[dict[str, Any] | None] = []
    for d in data:
        block = (getattr(d, "manifest", None) or {}).get("forms")
        ok = isinstance(block, dict) and isinstance(block.get("form"), int) and isinstance(block.get("family"), str)
        blocks.append(block if ok else None)

    def what(i: int) -> str:
        b = blocks[i]
        return (f"{paths[i]} is form {b['form']} of family {b['family']}" if b is not None else
                f"{paths[i]} is not a parallel form (its manifest has no 'forms' block)")

    for i in range(len(paths)):
        if blocks[i] is None:
            return what(i) + (f", {what(0)}" if i and blocks[0] is not None else "")
    named = [b for b in blocks if b is not None]
    for i in range(1, len(paths)):
        if named[i]["family"] != named[0]["family"]:
            return f"{what(i)}, {what(0)}"
    forms = [b["form"] for b in named]
    for i in range(1, len(paths)):
        if forms[i] in forms[:i]:
            twin = paths[forms.index(forms[i])]
            return f"{paths[i]} and {twin} are both form {forms[i]} of family {named[0]['family']}"
    return None


def respondent_row(m: str, names: list[str], units_per_form: list[Any], alpha: float,
                    alternative: str) -> dict[str, Any]:
    """One respondent's forms (accuracy, SE, units), its gap test and the fresh forms' own null tests."""
    forms: list[dict[str, Any]] = []
    pairs: list[tuple[float, float]] = []
    for name, units in zip(names, units_per_form):
        if not units:
            raise ProbegenError(f"{m} answers no item of {name}: nothing to test")
        acc, var, n = form_accuracy(units)
        forms.append({"form": name, "accuracy": acc, "se": float(np.sqrt(var)), "units": n})
        pairs.append((acc, var))
    test = gap_test(pairs[0], pairs[1:], alpha, alternative)
    null = fresh_null(pairs[1:], alpha, alternative)
    return {"model": m, "forms": forms, "test": test, "sentence": sentence(m, test),
            "fresh_null": [{"form": names[1 + r["form"]], "gap": r["gap"], "p": r["p"], "flagged": r["flagged"],
                            **({"p_note": "degenerate test"} if r.get("degenerate") else {})} for r in null]}


def table(summary: dict[str, Any]) -> str:
    """A plain-text table: per model the seen and fresh accuracies, the gap with its CI, p and the flag."""
    lines = [f"{'model':<24} {'seen':>7} {'fresh mean':>10} {'gap [95% CI]':>26} {'tau':>6} {'p':>9}  flag"]
    for r in summary["models"]:
        t = r["test"]
        gap = f"{t['gap']:+.3f} [{t['ci'][0]:+.3f}, {t['ci'][1]:+.3f}]"
        lines.append(f"{r['model']:<24} {t['seen']:>7.3f} {t['fresh_mean']:>10.3f} {gap:>26} {t['tau']:>6.3f} "
                     f"{_p(t['p']):>9}  {'EXPOSED?' if t['flagged'] else '-'}")
    return "\n".join(lines)


def render(summary: dict[str, Any]) -> str:
    """report.md: the table, each model's sentence, the forms, the fresh-vs-fresh null and the method."""
    out = ["# Contamination check", "",
           f"- seen form: `{summary['seen']}`",
           *[f"- fresh form: `{f}`" for f in summary["fresh"]],
           f"- {summary['kind']}, resampling unit: {summary['unit']}; alpha {summary['alpha']}, "
           f"{summary['alternative']}",
           *[f"- {name}: answers from {', '.join(f'`{s}`' for s in src)}"
             for name, src in (summary.get("runs") or {}).items()],
           *(["", f"**Warning ({summary['warning']}).**"] if summary.get("warning") else []), "",
           "```", table(summary), "```", "", "![accuracy per form](contamination.png)", ""]
    for r in summary["models"]:
        out += [f"## {r['model']}", "", r["sentence"], "",
                "| form | role | units | accuracy | SE |", "|---|---|---:|---:|---:|"]
        out += [f"| {f['form']} | {'seen' if i == 0 else 'fresh'} | {f['units']} | {f['accuracy']:.3f} "
                f"| {f['se']:.3f} |" for i, f in enumerate(r["forms"])]
        if r["fresh_null"]:
            out += ["", "Each fresh form tested as if seen, against the other fresh forms (no form here was seen, "
                    "so a flag is a false positive):", "",
                    "| form | gap | p | flagged |", "|---|---:|---:|---|"]
            out += [f"| {n['form']} | {n['gap']:+.3f} | {_p(n['p'])} | {'yes' if n['flagged'] else 'no'} |"
                    for n in r["fresh_null"]]
        out.append("")
    out += ["## Method", "", summary["method"] + ".", ""]
    return "\n".join(out)


def plot(summary: dict[str, Any], path: Path) -> Path:
    """Per model: each form's accuracy with a 95% sampling interval, the seen form in red, and the
    fresh forms' mean with the band the null allows (+/- 1.96 x the gap's SE)."""
    from .plots import pyplot, save_png

    plt = pyplot()
    models = summary["models"]
    fig, ax = plt.subplots(figsize=(1.8 + 1.8 * len(models), 3.6))
    for x, r in enumerate(models):
        forms, t = r["forms"], r["test"]
        k = len(forms)
        xs = x + np.linspace(-0.3, 0.3, k)
        for i, (xi, f) in enumerate(zip(xs, forms)):
            ax.errorbar(xi, f["accuracy"], yerr=1.96 * f["se"], fmt="o", capsize=2,
                        color="#c0504d" if i == 0 else "#4f6f9f", label=("seen" if i == 0 else "fresh")
                        if x == 0 and i <= 1 else None)
        ax.fill_between([x - 0.35, x + 0.35], t["fresh_mean"] - 1.96 * t["se"], t["fresh_mean"] + 1.96 * t["se"],
                        color="0.85", zorder=0, label="fresh mean +/- 1.96 SE(gap)" if x == 0 else None)
        ax.hlines(t["fresh_mean"], x - 0.35, x + 0.35, color="0.4", lw=1)
    ax.set_xticks(range(len(models)), [r["model"] + (" *" if r["test"]["flagged"] else "") for r in models])
    ax.set_ylabel("accuracy")
    ax.set_title("Seen form against fresh forms (* flagged)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return save_png(fig, path)
