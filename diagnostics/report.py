"""The bias report as Markdown, rendered from the same dict that becomes ``results.json``."""

from __future__ import annotations

from typing import Any

from .bias import fmt_ratio, fmt_scoped
from .tables import fmt as _num
from .tables import generation_section
from .tables import md_table as _table

METHOD = """\
Bias_X = (M_X - M_L) / (M_Full - M_L) (Liu, McCarthy & Korhonen). Near 1: part X alone solves
what the full input solves; near 0: X alone is no better than the label prior; above 1: the rest
of the input hurts. Intervals are 95% percentile bootstrap CIs over units, resampled once per
replicate for all ablations together. The unit is a CoDA21 group, or a WordNetQA concept (synset)
with all its items, across probe types and perturbations: one concept is not independent evidence
up to four times. A ratio is *undefined* when M_Full - M_L is not clearly positive (its CI includes
0 or it is under two standard errors): dividing by noise would give meaningless large numbers. A
ratio is *n/a* on a probe type where it measures nothing by construction (WordNetQA synonymy for
Bias_C and Bias_W); those items are left out of that ratio, and the dataset's section says why.

Every ablation is rendered through the probe's own templates and scored by the same scorer and
score cache as `probegen eval`. CoDA21's Label baseline is exactly 1/k per group (computed, not
scored); WordNetQA's is the majority-position prior (always answer the most frequent gold
position). CoDA21's Definition-only ablation gives every row the same query, so rows tie and the
tie-breaking aligner yields chance: Bias_D near 0 is expected, anything else flags a bug.

Trained controls are cross-validated with units kept whole across folds; `artefact` means the CI
lower bound lies above chance. CoDA21 has no answer a definition alone could reveal, so its
definition-only control asks whether the stored gold order leaks (it should not); the word- and
context-overlap controls show how much a string matcher explains. WordNetQA's choice-only control
is the probe paper's Choice-Only model."""


def invalid_lines(block: dict[str, Any] | None) -> list[str]:
    """What a loader's ``invalid`` block (rows it skipped, per reason) says to a reader ([] without one).

    >>> print("\\n".join(invalid_lines({"policy": "skip", "rows": 40, "kept": 37,
    ...     "skipped": {"no gold choice": {"count": 3, "ids": ["a", "b", "c"]}}})))
    skipped 3 of 40 rows as invalid (--on-invalid skip): the figures cover the 37 kept rows only (3 skipped)
      no gold choice: 3 (a, b, c)
    """
    if not block:
        return []
    if not block.get("skipped"):
        return [f"--on-invalid {block.get('policy', 'skip')}: no row was invalid ({block.get('kept')} of "
                f"{block.get('rows')} rows kept)"]
    n = sum(int(v.get("count", 0)) for v in block["skipped"].values())
    lines = [f"skipped {n} of {block.get('rows')} rows as invalid (--on-invalid {block.get('policy', 'skip')}): "
             f"the figures cover the {block.get('kept')} kept rows only ({n} skipped)"]
    for reason, v in block["skipped"].items():
        ids = list(v.get("ids", []))
        more = f", ... ({v['count'] - len(ids)} more)" if v.get("count", 0) > len(ids) else ""
        lines.append(f"  {reason}: {v.get('count')} ({', '.join(map(str, ids))}{more})")
    return lines


def _acc(a: dict[str, Any] | None) -> str:
    return _num(a["accuracy"], a.get("ci")) if a else "-"


def _summary(datasets: list[dict[str, Any]]) -> list[str]:
    rows = []
    for d in datasets:
        if d.get("skipped"):
            rows.append([d["name"], "skipped: " + d["skipped"]] + [""] * 5)
            continue
        a, r = d["all"]["ablations"], d["all"]["ratios"]
        third = next((k for k in r if k not in ("bias_c", "bias_w")), None)
        flags = [f"{c['control']}/{c['applies_to']}" for c in d.get("controls", []) if c.get("artefact")]
        rows.append(
            [
                d["name"],
                _acc(a.get("full")),
                _acc(a.get("label")),
                fmt_scoped(r.get("bias_c")),
                fmt_scoped(r.get("bias_w")),
                (f"{d['ratio_names'][third]} " + fmt_ratio(r[third])) if third else "-",
                ", ".join(flags) or "none",
            ]
        )
    return _table(["dataset", "M_Full", "M_L", "Bias_C", "Bias_W", "partial-input ratio", "control artefacts"], rows)


def resampling_line(d: dict[str, Any]) -> str:
    """The sentence that states a dataset's bootstrap resampling unit.

    >>> resampling_line({"unit": "concept", "resampling_unit": "concept (synset)", "all": {"n_units": 40}})
    'Bootstrap resampling unit: concept (synset); 40 concepts.'
    """
    unit = d.get("resampling_unit", d["unit"])
    return f"Bootstrap resampling unit: {unit}; {d['all']['n_units']} {d['unit']}s."


def _ratio_rows(d: dict[str, Any], r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for k, v in r.items():
        over = ", ".join(v["over"]) if v.get("over") else ("none" if "over" in v else "all items")
        rows.append([d["ratio_names"][k], v["ablation"], fmt_ratio(v), over])
    return rows


def _shown(d: dict[str, Any]) -> list[str]:
    """Rows skipped as invalid (count and ids per reason), the subset taken, and where the exact
    model input is: the lines under a dataset's heading.

    >>> print("\\n".join(_shown({"files": {"units": "wqa/ablations.jsonl"}, "unit": "concept",
    ...     "subset": {"how": "limit", "n": 3, "unit": "concept", "of": 12, "taken": 3, "items": 9,
    ...                "all": False}})))  # doctest: +NORMALIZE_WHITESPACE
    **Subset:** the first 3 of the 12 concepts in file order (9 items): the figures cover these only.
    <BLANKLINE>
    What the model saw: `wqa/ablations.jsonl` holds one line per scored condition and scored unit (a group or an
    item): the exact query and candidate texts it scored, and the gold.
    <BLANKLINE>
    """
    from probegen.tasks import subset_line

    lines = []
    inv = invalid_lines(d.get("invalid"))
    if inv:
        lines += [f"**Invalid rows:** {inv[0]}.", ""] + [f"- {ln.strip()}" for ln in inv[1:]] + [""]
    if d.get("subset"):
        lines += [f"**Subset:** {subset_line(d['subset'])}.", ""]
    seen = (d.get("files") or {}).get("units")
    if seen:
        lines += [f"What the model saw: `{seen}` holds one line per scored condition and scored unit (a group or an "
                  "item): the exact query and candidate texts it scored, and the gold.", ""]
    return lines


def _dataset(d: dict[str, Any]) -> list[str]:
    lines = [f"## {d['name']}", "", f"`{d['path']}` ({d['kind']}; {d['all']['n_units']} {d['unit']}s, "
             f"{d.get('n_items', int(d['all']['n_items']))} items). {resampling_line(d)}", ""]
    lines += _shown(d)
    a, r, gap = d["all"]["ablations"], d["all"]["ratios"], d["all"]["gap"]
    rows = [[name, d["ablation_help"].get(name, ""), _acc(a.get(name))] for name in d["ablation_order"] if name in a]
    lines += ["### Ablations", ""] + _table(["ablation", "input", "accuracy [95% CI]"], rows) + [""]
    gci = gap.get("ci")
    lines.append(
        f"M_Full - M_L = {gap['value']:.3f}" + (f" [{gci[0]:.3f}, {gci[1]:.3f}]" if gci else "")
        + f", SE {gap['se']:.3f}: ratios "
          f"{'defined' if gap['defined'] else '**undefined** (full input within noise of the label prior)'}."
    )
    lines += ["", "### Bias ratios", ""]
    lines += _table(["ratio", "ablation", "value [95% CI]", "over"], _ratio_rows(d, r))
    for e in d.get("exclusions", []):
        lines += ["", f"{e['name']} leaves out {e['probe']}: {e['reason']}."]
    if d.get("subsets"):
        names = [n for n in d["ablation_order"] if n in a]
        head = ["subset", d["unit"] + "s"] + [f"M_{n}" for n in names] + [d["ratio_names"][k] for k in r]
        rows = []
        for sub, s in d["subsets"].items():
            sa = s["ablations"]
            rows.append([sub, str(s["n_units"])] + [_num(sa.get(n, {}).get("accuracy")) for n in names]
                        + [fmt_ratio(s["ratios"].get(k)) for k in r])
        lines += ["", "### Subsets", ""] + _table(head, rows)
    lines += ["", "### Trained partial-input controls", ""]
    rows = []
    for c in d.get("controls", []):
        if c.get("skipped"):
            rows.append([c["control"], c["applies_to"], "skipped: " + c["skipped"], "", "", ""])
            continue
        top = ", ".join(t["feature"] for t in c.get("top_features", [])[:3])
        note = c["note"] + (f"; top features: {top}" if top else "")
        rows.append([c["control"], c["applies_to"], _acc(c), _num(c["chance"]), "**yes**" if c["artefact"] else "no",
                     note])
    lines += _table(["control", "applies to", "accuracy [95% CI]", "chance", "above chance", "how"],
                    rows) if rows else ["(none)"]
    lines += ["", "### Dataset measures", ""]
    ent = d.get("entropy", {})
    rows = []
    for key, label in (("sense", "sense entropy of target lemmas"), ("label", "label entropy per word")):
        e = ent.get(key)
        if not e or not e.get("n_words"):
            rows.append([label, ent.get(f"{key}_note", "not applicable"), "", "", ""])
            continue
        rows.append([label, f"{e['n_words']} words / {e['n_items']} items", _num(e["mean"]),
                     f"{_num(e['mean_multi'])} ({e['n_multi']} words)", _num(e["share_single"])])
    lines += _table(["measure", "over", "mean (bits)", "mean over words in >= 2 items", "share with one value"], rows)
    for note in d.get("notes", []):
        lines += ["", f"- {note}"]
    return lines + [""]


def render_report(results: dict[str, Any], plot: str | None = "bias_plane.png") -> str:
    """Markdown for a whole ``probegen bias`` run.

    >>> md = render_report({"model": "m", "seed": 0, "datasets": [],
    ...                     "bootstrap": {"n": 10, "unit": {"wordnetqa": "concept (synset)"}}}, plot=None)
    >>> print(md.splitlines()[2])
    Scorer: -. Seed 0, 10 bootstrap replicates, resampling wordnetqa by concept (synset). Nonce `None`, pattern `None`.
    >>> md = render_report({"model": "m", "seed": 0, "datasets": [], "bootstrap": {"n": 10},
    ...                     "eval": {"method": "letter", "nonce": "bkatuhla", "pattern": None}}, plot=None)
    >>> print(md.splitlines()[2])
    Scorer: -. Seed 0, 10 bootstrap replicates. Method letter. Nonce `bkatuhla`.
    """
    scorer = results.get("scorer", {})
    settings = ", ".join(f"{k}={v}" for k, v in sorted(scorer.items()))
    boot = results.get("bootstrap", {})
    units = "; ".join(f"{kind} by {u}" for kind, u in sorted((boot.get("unit") or {}).items()))
    ev = results.get("eval") or {}
    # only the settings that applied: an asked (letter/generate) run records its method and no pattern
    applied = (f"Method {ev['method']}. Nonce `{ev.get('nonce')}`." if ev.get("method")
               else f"Nonce `{ev.get('nonce')}`, pattern `{ev.get('pattern')}`.")
    lines = [
        f"# Context-word bias: {results['model']}",
        "",
        f"Scorer: {settings or '-'}. Seed {results.get('seed')}, {boot.get('n')} bootstrap replicates"
        + (f", resampling {units}" if units else "") + ". " + applied,
        "",
    ]
    if plot:
        lines += [f"![bias plane]({plot})", ""]
    lines += ["## Summary", ""] + _summary(results["datasets"]) + [""]
    for d in results["datasets"]:
        if not d.get("skipped"):
            from .eval_markdown import bias_sections

            lines += _dataset(d) + generation_section(d.get("generation")) + bias_sections(d)
    lines += ["## Method", "", METHOD, ""]
    from probegen import methods

    used = {g.get("method", "generate") for d in results["datasets"] for g in (d.get("generation") or {}).values() if g}
    used.add((results.get("eval") or {}).get("method"))  # the method the run recorded (none: the cloze method)
    for m in methods.all_methods():  # each method's paragraph once, in registry order
        if m.name in used and m.report_text:
            lines += [m.report_text, ""]
    return "\n".join(lines)
