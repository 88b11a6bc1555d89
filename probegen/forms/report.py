"""``probegen forms``: are the parallel forms of one family equivalent?

Per respondent (model x method x variant) and form: accuracy with a cluster-bootstrap CI; per
respondent (and over their mean) and pair of forms: a TOST of ``|acc_a - acc_b| < margin`` with
cluster-robust SEs (the forms share no item: independent means); rank correlations of the
respondents between forms; item p-values and 1PL difficulties compared by two-sample KS tests.
Written: ``report.md``, ``forms.csv``, ``equivalence.csv``, ``difficulty.csv``, ``summary.json``, ``forms.png``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ProbegenError
from ..io import atomic_dir, atomic_write, ensure_writable, write_json
from ..stats import significance
from ..stats.bootstrap import cluster_ci, cluster_index, per_cluster
from ..stats.variance import ratio_variance

FORM_COLUMNS = ("respondent", "form", "dataset", "items", "units", "accuracy", "se", "ci_lo", "ci_hi")
EQ_COLUMNS = ("respondent", "form_a", "form_b", "diff", "se", "df", "ci90_lo", "ci90_hi", "p_lower", "p_upper",
              "p_tost", "equivalent", "margin", "margin_met", "degenerate")
#: what a TOST with no standard error says (every item answered alike on both forms)
DEGENERATE = ("degenerate: the difference has no standard error (every item answered alike on both forms), so the "
              "test cannot conclude equivalence at any margin")
DIFF_COLUMNS = ("measure", "form_a", "form_b", "n_a", "n_b", "mean_a", "mean_b", "ks", "p")
#: the respondent row of the test over every respondent's mean
ALL = "(mean of respondents)"


# ---- the statistics -----------------------------------------------------------------------------
def cluster_mean(y: np.ndarray, units: Sequence[str]) -> tuple[float, float, int]:
    """(mean of ``y``, its cluster-robust CR1 standard error, clusters) over the clusters ``units``
    (:func:`probegen.stats.variance.ratio_variance`; one cluster: a standard error of 0).

    >>> m, se, c = cluster_mean(np.array([1, 1, 0, 0, 1, 0.]), ["a", "a", "b", "b", "c", "c"])
    >>> round(m, 3), round(se, 3), c
    (0.5, 0.289, 3)
    """
    idx, names = cluster_index(units)
    mean, var = ratio_variance(per_cluster(y, idx, len(names)), per_cluster(np.ones(len(idx)), idx, len(names)))
    return mean, float(np.sqrt(var)) if len(names) > 1 else 0.0, len(names)


def tost(y_a: np.ndarray, units_a: Sequence[str], y_b: np.ndarray, units_b: Sequence[str], margin: float = 0.03,
         alpha: float = 0.05) -> significance.Tost:
    """TOST of equal means of two independent clustered samples at +/- ``margin``: t statistics on
    the cluster-robust SE of the difference with ``clusters_a + clusters_b - 2`` degrees of freedom.

    >>> rng = np.random.default_rng(0)
    >>> u = [str(i // 5) for i in range(2000)]
    >>> t = tost(rng.random(2000) < 0.6, u, rng.random(2000) < 0.6, u, margin=0.05)
    >>> t.equivalent, abs(t.diff) < 0.03
    (True, True)
    """
    ma, sa, ca = cluster_mean(np.asarray(y_a, float), units_a)
    mb, sb, cb = cluster_mean(np.asarray(y_b, float), units_b)
    return significance.tost(ma - mb, float(np.hypot(sa, sb)), ca + cb - 2, margin, alpha)


# ---- reading the runs ---------------------------------------------------------------------------
@dataclass
class FormRun:
    """One respondent's answers on one form."""

    respondent: str  # model|method|variant: the same on every form
    form: int
    dataset: str
    items: list[str]
    y: np.ndarray
    units: list[str]
    k: list[int]


def _forms_block(dataset: str, run: str) -> dict[str, Any]:
    mf = Path(dataset) / "manifest.json"
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ProbegenError(f"{run}: its dataset {dataset} has no readable manifest.json; `probegen forms` needs "
                            "runs on forms made with `make ... --forms K`") from None
    block = manifest.get("forms") if isinstance(manifest, dict) else None
    if not isinstance(block, dict) or not isinstance(block.get("form"), int) or not block.get("family"):
        raise ProbegenError(f"{run}: its dataset {dataset} is not a parallel form (its manifest has no 'forms' block; "
                            "make forms with `make coda21|wordnetqa|spec ... --forms K`)")
    return block


def _foreign_form(r: Any) -> dict[str, Any] | None:
    """The forms block a foreign file's respondent names through its export's manifest (lm-eval), else None."""
    block = (r.manifest or {}).get("forms") if r.adopt else None
    return block if isinstance(block, dict) and isinstance(block.get("form"), int) and block.get("family") else None


def read_form_runs(runs: Sequence[str | Path], lm_eval_metric: str = "acc") -> tuple[list[FormRun], dict[str, Any]]:
    """Every respondent x form of ``runs`` and the family's forms block; one error line where the
    runs are not on forms of one family, cover fewer than two forms, or repeat a respondent on a form.
    Another harness's file names its form through its export's manifest (its ids then checked against
    a probegen run on that form), else joins the given run's form holding its item ids (``adopt_datasets``)."""
    from ..exchange.respondent import identity
    from ..itemstats.table import adopt_datasets, read_runs

    if len(runs) < 2:
        raise ProbegenError("give runs on at least two forms (one run per respondent and form)")
    read = read_runs(runs, lm_eval_metric)  # lm_eval_metric: an lm-eval file's respondent
    adopt_datasets([r for _, r in read if _foreign_form(r) is None])
    out: list[FormRun] = []
    family: dict[str, Any] | None = None
    seen: dict[tuple[str, int], str] = {}
    by_manifest: list[tuple[str, FormRun]] = []
    for run, r in read:
        block = _foreign_form(r)
        if block is None and r.adopt and r.dataset.startswith("?"):
            raise ProbegenError(f"{run} does not name its dataset: give it with a probegen run on its form (it joins "
                                "the form whose items hold its item ids)")
        block = block or _forms_block(r.dataset, run)
        if family is None:
            family = block
        elif block["family"] != family["family"]:
            raise ProbegenError(f"{run} is on a form of family {block['family']} ({block.get('name')}), the "
                                f"first run on family {family['family']}: give runs on the forms of one "
                                "`--forms` build")
        who = identity(r)
        key = (who, int(block["form"]))
        if key in seen:
            raise ProbegenError(f"{run}: {who} on form {key[1]} is also in {seen[key]}; give one run per "
                                "respondent and form")
        seen[key] = run
        items = list(r.cells)
        siblings = block.get("siblings") or []
        dataset = r.dataset if _foreign_form(r) is None else \
            f"{siblings[key[1] - 1] if len(siblings) >= key[1] else f'form{key[1]}'} (named by {Path(run).name})"
        fr = FormRun(who, key[1], dataset, items, np.array([r.cells[i]["correct"] >= 1 for i in items], float),
                     [str(r.cells[i]["unit"]) for i in items], [int(r.cells[i]["k"] or 2) for i in items])
        out.append(fr)
        if _foreign_form(r) is not None:
            by_manifest.append((run, fr))
    assert family is not None
    for run, fr in by_manifest:  # its ids against a probegen run's items on the same form, where there is one
        known = {i for f in out if f.form == fr.form and not any(f is g for _, g in by_manifest) for i in f.items}
        unknown = sorted(set(fr.items) - known) if known else []
        if unknown:
            raise ProbegenError(f"{run}: {len(unknown)} of {len(fr.items)} item ids are not items of form {fr.form} "
                                f"(e.g. {', '.join(unknown[:3])}): not results on that form")
    forms = sorted({f.form for f in out})
    if len(forms) < 2:
        raise ProbegenError(f"the runs cover one form ({family.get('siblings', ['?'])[forms[0] - 1]}); equivalence "
                            "needs runs on at least two forms of the family")
    return out, family


# ---- the analysis -------------------------------------------------------------------------------
def _mean_of_respondents(frs: list[FormRun]) -> tuple[np.ndarray, list[str]]:
    """Per item of one form, the mean correctness over the respondents that answered it, and its unit."""
    acc: dict[str, list[float]] = {}
    unit: dict[str, str] = {}
    for fr in frs:
        for i, y, u in zip(fr.items, fr.y, fr.units):
            acc.setdefault(i, []).append(float(y))
            unit[i] = u
    items = sorted(acc)
    return np.array([np.mean(acc[i]) for i in items]), [unit[i] for i in items]


def _ranks(table: dict[str, dict[int, float]], forms: list[int]) -> list[dict[str, Any]]:
    from scipy import stats

    out = []
    for a, b in combinations(forms, 2):
        who = [r for r in table if a in table[r] and b in table[r]]
        row: dict[str, Any] = {"form_a": a, "form_b": b, "respondents": len(who)}
        if len(who) >= 3:
            xa, xb = [table[r][a] for r in who], [table[r][b] for r in who]
            kt, sp = stats.kendalltau(xa, xb), stats.spearmanr(xa, xb)
            row.update(kendall_tau=float(kt.statistic), kendall_p=float(kt.pvalue), spearman_rho=float(sp.statistic),
                       spearman_p=float(sp.pvalue))
        out.append(row)
    return out


def _difficulty(frs: list[FormRun], forms: list[int], irt_model: str | None) -> tuple[list[dict[str, Any]], str]:
    """KS tests between forms of item p-values and (with at least 3 respondents) IRT difficulties."""
    from scipy import stats

    resp = sorted({f.respondent for f in frs})
    items = {f.form: sorted({i for g in frs if g.form == f.form for i in g.items}) for f in frs}
    cols = [(form, i) for form in forms for i in items[form]]
    col = {c: j for j, c in enumerate(cols)}
    y = np.full((len(resp), len(cols)), np.nan)
    k = np.full(len(cols), 2.0)
    for f in frs:
        r = resp.index(f.respondent)
        for i, v, kk in zip(f.items, f.y, f.k):
            y[r, col[(f.form, i)]] = v
            k[col[(f.form, i)]] = max(2, kk)
    measures = {}
    with np.errstate(invalid="ignore"):
        measures["p"] = np.nanmean(y, 0) if len(resp) >= 2 else None
    note = ""
    if irt_model and len(resp) >= 3:
        from ..itemstats.irt import fit

        measures["irt_b"] = fit(y, k, irt_model).b
    elif irt_model:
        note = f"IRT difficulties need at least 3 respondents; the runs have {len(resp)}"
    form_of = np.array([c[0] for c in cols])
    out = []
    for name, vals in measures.items():
        if vals is None:
            note = note or "item p-values need at least 2 respondents"
            continue
        for a, b in combinations(forms, 2):
            va, vb = vals[form_of == a], vals[form_of == b]
            va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
            ks = stats.ks_2samp(va, vb)
            out.append({"measure": name, "form_a": a, "form_b": b, "n_a": len(va), "n_b": len(vb),
                        "mean_a": float(va.mean()), "mean_b": float(vb.mean()), "ks": float(ks.statistic),
                        "p": float(ks.pvalue)})
    return out, note


def analyse(frs: list[FormRun], family: dict[str, Any], margin: float = 0.03, alpha: float = 0.05,
            n_boot: int = 2000, seed: int = 0, irt_model: str | None = "1pl") -> dict[str, Any]:
    """Everything ``probegen forms`` writes, in memory."""
    forms = sorted({f.form for f in frs})
    names = family.get("siblings") or [f"form{i}" for i in range(1, family.get("of", len(forms)) + 1)]
    respondents = sorted({f.respondent for f in frs})
    rows: list[dict[str, Any]] = []
    acc: dict[str, dict[int, float]] = {}
    for r in respondents:
        for f in sorted((f for f in frs if f.respondent == r), key=lambda f: f.form):
            m, se, c = cluster_mean(f.y, f.units)
            lo, hi = cluster_ci(f.y, f.units, n_boot, seed + f.form) or [float("nan")] * 2  # None: no items
            rows.append({"respondent": r, "form": f.form, "dataset": f.dataset, "items": len(f.y), "units": c,
                         "accuracy": m, "se": se, "ci_lo": lo, "ci_hi": hi})
            acc.setdefault(r, {})[f.form] = m
    eq: list[dict[str, Any]] = []
    by = {(f.respondent, f.form): f for f in frs}
    pooled = {form: _mean_of_respondents([f for f in frs if f.form == form]) for form in forms}
    for who in [*respondents, ALL]:
        for a, b in combinations(forms, 2):
            if who == ALL:
                (ya, ua), (yb, ub) = pooled[a], pooled[b]
            elif (who, a) in by and (who, b) in by:
                ya, ua, yb, ub = by[(who, a)].y, by[(who, a)].units, by[(who, b)].y, by[(who, b)].units
            else:
                continue
            t = tost(ya, ua, yb, ub, margin, alpha)
            eq.append({"respondent": who, "form_a": a, "form_b": b, "diff": t.diff, "se": t.se, "df": t.df,
                       "ci90_lo": t.ci90[0], "ci90_hi": t.ci90[1], "p_lower": t.p_lower, "p_upper": t.p_upper,
                       "p_tost": t.p, "equivalent": t.equivalent, "margin": margin, "margin_met": t.margin_met,
                       "degenerate": t.degenerate})
    difficulty, note = _difficulty(frs, forms, irt_model)
    ranks = _ranks(acc, forms)
    per_resp = [e for e in eq if e["respondent"] != ALL]
    summary = {
        "family": family["family"], "forms": [names[f - 1] for f in forms], "respondents": respondents,
        "margin": margin, "alpha": alpha, "bootstrap": n_boot, "seed": seed,
        "equivalent_pairs": sum(e["equivalent"] for e in per_resp), "pairs": len(per_resp),
        "all_equivalent": all(e["equivalent"] for e in eq),
        # the smallest margin every test would pass (degenerate tests pass none: counted apart)
        "margin_met": max((e["margin_met"] for e in eq if not e["degenerate"]), default=None),
        "margin_met_mean_of_respondents": max((e["margin_met"] for e in eq if e["respondent"] == ALL
                                               and not e["degenerate"]), default=None),
        "degenerate_tests": sum(e["degenerate"] for e in eq),
        "ranks": ranks, "difficulty_note": note,
        "difficulty_min_p": min((d["p"] for d in difficulty), default=None),
        "strata_within_tolerance": family.get("within_tolerance"),
    }
    return {"forms": rows, "equivalence": eq, "difficulty": difficulty, "summary": summary, "names": names}


# ---- writing ------------------------------------------------------------------------------------
def _cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return ""
    return round(v, 6) if isinstance(v, float) else v


def _write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    with atomic_write(path) as fh:
        w = csv.DictWriter(fh, list(columns), lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows({c: _cell(r.get(c)) for c in columns} for r in rows)


def render(res: dict[str, Any]) -> str:
    """report.md: accuracy per form, the TOSTs, rank correlations, difficulty comparisons."""
    s, names = res["summary"], res["names"]
    lines = ["# Parallel forms: equivalence", "",
             f"Family {s['family']}: {', '.join(s['forms'])}; {len(s['respondents'])} respondents. TOST at +/- "
             f"{s['margin']} (alpha {s['alpha']} each side, cluster-robust SEs); accuracy CIs: 95% cluster bootstrap "
             f"({s['bootstrap']} replicates).", "",
             f"**{s['equivalent_pairs']} of {s['pairs']} respondent x form-pair TOSTs conclude equivalence at +/- "
             f"{s['margin']}; {_met(s)}.**", "",
             "## Accuracy per form", "", "| respondent | form | items | clusters | accuracy | 95% CI |",
             "|---|---|---|---|---|---|"]
    for r in res["forms"]:
        lines.append(f"| {r['respondent']} | {names[r['form'] - 1]} | {r['items']} | {r['units']} "
                     f"| {r['accuracy']:.3f} | [{r['ci_lo']:.3f}, {r['ci_hi']:.3f}] |")
    lines += ["", "## Equivalence (TOST)", "",
              "| respondent | forms | diff | 90% CI | p (TOST) | equivalent | margin met |",
              "|---|---|---|---|---|---|---|"]
    for e in res["equivalence"]:
        if e["degenerate"]:
            lines.append(f"| {e['respondent']} | {e['form_a']} vs {e['form_b']} | {e['diff']:+.3f} | - | - | "
                         "degenerate (SE 0) | - |")
            continue
        lines.append(f"| {e['respondent']} | {e['form_a']} vs {e['form_b']} | {e['diff']:+.3f} | [{e['ci90_lo']:+.3f}, "
                     f"{e['ci90_hi']:+.3f}] | {e['p_tost']:.3f} | {'yes' if e['equivalent'] else 'no'} | "
                     f"{e['margin_met']:.3f} |")
    if s["degenerate_tests"]:
        lines += ["", f"{s['degenerate_tests']} test(s) {DEGENERATE}."]
    lines += ["", "## Rank correlation of respondents across forms", ""]
    for r in s["ranks"]:
        if "kendall_tau" in r:
            lines.append(f"- forms {r['form_a']} vs {r['form_b']} ({r['respondents']} respondents): Kendall tau "
                         f"{r['kendall_tau']:.3f} (p {r['kendall_p']:.3f}), Spearman rho {r['spearman_rho']:.3f}")
        else:
            lines.append(f"- forms {r['form_a']} vs {r['form_b']}: {r['respondents']} respondents (rank correlation "
                         "needs 3)")
    lines += ["", "## Item difficulty distributions (two-sample KS)", "",
              "| measure | forms | items | mean | KS D | p |", "|---|---|---|---|---|---|"]
    for d in res["difficulty"]:
        lines.append(f"| {d['measure']} | {d['form_a']} vs {d['form_b']} | {d['n_a']} / {d['n_b']} | "
                     f"{d['mean_a']:.3f} / {d['mean_b']:.3f} | {d['ks']:.3f} | {d['p']:.3f} |")
    if s["difficulty_note"]:
        lines += ["", s["difficulty_note"] + "."]
    return "\n".join(lines) + "\n"


def _met(s: dict[str, Any]) -> str:
    """What the summary line says of the margin every test would pass."""
    deg = s.get("degenerate_tests") or 0
    if s["margin_met"] is None:
        return f"every test is degenerate ({DEGENERATE})"
    rest = f" ({deg} degenerate test(s) left out: no standard error)" if deg else ""
    return f"every test (respondent means included) would pass at +/- {s['margin_met']:.3f}{rest}"


def draw(res: dict[str, Any], path: Path) -> None:
    """forms.png: accuracy per form per respondent with 95% cluster-bootstrap CIs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    resp = res["summary"]["respondents"]
    forms = sorted({r["form"] for r in res["forms"]})
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(resp) + 2), 4))
    width = 0.8 / len(forms)
    for j, f in enumerate(forms):
        rows = {r["respondent"]: r for r in res["forms"] if r["form"] == f}
        xs = [i + (j - (len(forms) - 1) / 2) * width for i, who in enumerate(resp) if who in rows]
        ys = [rows[who]["accuracy"] for who in resp if who in rows]
        # vlines, not error bars: a percentile CI of few replicates may not hold the estimate
        lo = [rows[w]["ci_lo"] for w in resp if w in rows]
        hi = [rows[w]["ci_hi"] for w in resp if w in rows]
        (dots,) = ax.plot(xs, ys, "o", label=res["names"][f - 1])
        ax.vlines(xs, lo, hi, color=dots.get_color())
    ax.set_xticks(range(len(resp)))
    ax.set_xticklabels([r.split("|")[0] + "\n" + r.split("|")[1] for r in resp], fontsize=8)
    ax.set_ylabel("accuracy (95% cluster-bootstrap CI)")
    ax.set_title(f"Parallel forms (TOST margin +/- {res['summary']['margin']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)


def write(res: dict[str, Any], out: str | Path, inputs: Sequence[str | Path]) -> Path:
    """The folder ``out`` (atomically: whole or not at all)."""
    ensure_writable(out, replace=True, inputs=inputs, writer="output")
    with atomic_dir(out) as tmp:
        _write_csv(tmp / "forms.csv", res["forms"], FORM_COLUMNS)
        _write_csv(tmp / "equivalence.csv", res["equivalence"], EQ_COLUMNS)
        _write_csv(tmp / "difficulty.csv", res["difficulty"], DIFF_COLUMNS)
        draw(res, tmp / "forms.png")
        write_json(tmp / "summary.json", {**res["summary"], "runs": [str(r) for r in inputs]})
        with atomic_write(tmp / "report.md") as fh:
            fh.write(render(res))
    return Path(out)


def run_forms(runs: Sequence[str | Path], out: str | Path, margin: float = 0.03, alpha: float = 0.05,
              n_boot: int = 2000, seed: int = 0, irt_model: str | None = "1pl", lm_eval_metric: str = "acc") -> str:
    """Read, analyse and write; returns the line the CLI prints (``lm_eval_metric``: an lm-eval
    file's respondent, :func:`read_form_runs`)."""
    ensure_writable(out, replace=True, inputs=runs, writer="output")
    frs, family = read_form_runs(runs, lm_eval_metric)
    res = analyse(frs, family, margin, alpha, n_boot, seed, irt_model)
    write(res, out, runs)
    s = res["summary"]
    return (f"{len(s['respondents'])} respondents x {len(s['forms'])} forms: {s['equivalent_pairs']} of {s['pairs']} "
            f"TOSTs equivalent at +/- {margin}; {_met(s)}; wrote {out}")
