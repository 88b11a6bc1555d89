"""Report and bias-plane figure of ``probegen bias --method trained``, with the paper's BERT points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .bias import fmt_ratio as fmt
from .plots import pyplot, save_png

METHOD = """\
The bias paper's method (Liu, McCarthy & Korhonen): one model per input condition, trained on
the train split and tested on the test split. Full = every context with its target; Context =
the target masked at its position; Word = the target word alone; Label = no input (the training
data's majority label, or majority gold position for choices). Features are the frozen
encoder's last hidden layer averaged over the target's tokens (WiC pairs: [u, v, |u-v|, u*v];
WSD: one row [u, d, |u-d|, u*d] per sense definition d, argmax per item, ties broken at random), classified
by a LogisticRegression; with --finetune the encoder is trained too (GPU).

Bias_C = (M_C - M_L) / (M_Full - M_L) and Bias_W = (M_W - M_L) / (M_Full - M_L), from the mean
accuracies over seeds. Brackets: 95% bootstrap CI over test units (lemmas for WiC-style pairs,
documents for WSD-style items; per-item correctness averaged over seeds, all conditions
resampled together); SD: over the per-seed ratios. A frozen encoder with a convex classifier is
deterministic, so each seed trains on its own seeded share of the training units. A dataset is
context-biased when Bias_C > Bias_W (below the diagonal of the plane), word-biased otherwise.
The paper's figures are BERT fine-tuned on the real WiC and WSD data (dev sets, Table 7)."""


def _acc(c: dict[str, Any]) -> str:
    return f"{c['mean']:.3f} ± {c['sd']:.3f}"


def _sd(r: dict[str, Any]) -> str:
    return "-" if r.get("seed_sd") is None else f"{r['seed_sd']:.2f}"


def _paper_side(p: dict[str, Any]) -> str:
    return "context-biased" if p["bias_c"] > p["bias_w"] else "word-biased"


def _ent(e: dict[str, Any] | None, key: str) -> str:
    if not e or e.get(key) is None:
        return "-"
    x = e[key]
    return ("-" if x.get("mean") is None
            else f"{x['mean']:.3f}" + (f" ({x['mean_multi']:.3f})" if x.get("mean_multi") is not None else ""))


def render_trained_report(results: dict[str, Any]) -> str:
    """The Markdown report of a trained bias run."""
    cfg = results["config"]
    lines = [f"# Context-word bias, trained method: {results['model']}", "",
             f"Method: {results['method']}; {cfg['seeds']} seeds from {cfg['seed']}"
             + ("" if cfg["finetune"] else f", each on {cfg['subsample']:.0%} of the training units") + ".", "",
             "![bias plane](bias_plane.png)", "", "## Accuracies and ratios", "",
             "| dataset | task | train / test | M_Full | M_Context | M_Word | M_Label | Bias_C | SD | Bias_W | SD | "
             "side | paper BERT Bias_C / Bias_W (side) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in results["datasets"]:
        m, r, p = d["conditions"], d["ratios"], d.get("paper")
        ref = f"{p['bias_c']:.3f} / {p['bias_w']:.3f} ({_paper_side(p)})" if p else "-"
        lines.append(
            f"| {d['name']} | {d['kind']} {d['task']} | {d['n_train']} / {d['n_test']} ({d['eval_split']}) | "
            + " | ".join(_acc(m[c]) for c in ("full", "context", "word", "label"))
            + f" | {fmt(r['bias_c'])} | {_sd(r['bias_c'])} | {fmt(r['bias_w'])} | {_sd(r['bias_w'])} | "
              f"{d['side'] or 'undefined'} | {ref} |"
        )
    lines += ["", "## Where each dataset falls", ""]
    for d in results["datasets"]:
        p = d.get("paper")
        if d["side"] is None:
            g = d["bootstrap"]["gap"]
            ci = f" [{g['ci'][0]:.3f}, {g['ci'][1]:.3f}]" if g.get("ci") else ""
            raw = ", ".join(f"{n} {d['ratios'][k]['unchecked_value']:.2f}"
                            for k, n in (("bias_c", "Bias_C"), ("bias_w", "Bias_W"))
                            if d["ratios"][k].get("unchecked_value") is not None)
            lines.append(f"- {d['name']}: undefined: M_Full - M_Label = {g['value']:.3f}{ci} is not clearly above 0, "
                         "so the ratios divide by noise" + (f" (unchecked: {raw})" if raw else "") + "; no side.")
            continue
        same = p and d["side"] == _paper_side(p)
        cmp = (f"; the paper's {p['name']} is {_paper_side(p)} too" if same else
               f"; the paper's {p['name']} is {_paper_side(p)}: a different side") if p else ""
        lines.append(f"- {d['name']}: {d['side']} (Bias_C {d['ratios']['bias_c']['value']:.2f} vs Bias_W "
                     f"{d['ratios']['bias_w']['value']:.2f}){cmp}.")
    lines += ["", "## Sense and label entropy (the paper's Table 4 measure)", "",
              "Mean per-lemma entropy in bits (in brackets: over lemmas seen at least twice). 0 means every use of a "
              "word has one sense / one label, so the word alone gives the answer away.", "",
              "| dataset | part | sense entropy | label entropy | lemmas | single-label share |",
              "|---|---|---|---|---|---|"]
    for d in results["datasets"]:
        for part, e in d["entropy"].items():
            if part == "note":
                continue
            lab = e["label"]
            lines.append(f"| {d['name']} | {part} | {_ent(e, 'sense')} | {_ent(e, 'label')} | {lab['n_words']} | "
                         + ("-" if lab.get("share_single") is None else f"{lab['share_single']:.2f}") + " |")
    lines += ["", "## Method", "", METHOD, ""]
    return "\n".join(lines)


def plot_trained_plane(datasets: list[dict[str, Any]], out: Path, title: str = "") -> Path:
    """Measured datasets (filled, 95% CI bars) and the paper's BERT points (hollow) on the bias plane."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.8, 5.2))
    lo, hi = -0.1, 1.3
    refs: dict[str, Any] = {}
    undefined: list[Any] = []
    for i, d in enumerate(datasets):
        c, w = d["ratios"]["bias_c"], d["ratios"]["bias_w"]
        color = f"C{i % 10}"
        if d.get("paper"):
            refs.setdefault(d["paper"]["name"], (d["paper"], color))
        if c.get("value") is None or w.get("value") is None:
            undefined.append(d["name"])
            continue
        xerr = [[c["value"] - c["ci"][0]], [c["ci"][1] - c["value"]]] if c.get("ci") else None
        yerr = [[w["value"] - w["ci"][0]], [w["ci"][1] - w["value"]]] if w.get("ci") else None
        ax.errorbar(c["value"], w["value"], xerr=xerr, yerr=yerr, fmt="o", ms=7, capsize=3, color=color,
                    label=d["name"])
        for r in (c, w):
            ends = r.get("ci") or [r["value"], r["value"]]
            lo, hi = min(lo, ends[0] - 0.05), max(hi, ends[1] + 0.05)
    for name, (p, color) in refs.items():
        ax.plot(p["bias_c"], p["bias_w"], marker="s", ms=8, mfc="none", mec=color, ls="none", label=name)
        lo, hi = min(lo, p["bias_c"] - 0.05, p["bias_w"] - 0.05), max(hi, p["bias_c"] + 0.05, p["bias_w"] + 0.05)
    ax.plot([lo, hi], [lo, hi], ls="-", color="lightgrey", lw=1)
    ax.text(hi - 0.02, lo + 0.02, "context-biased", ha="right", va="bottom", fontsize=8, color="grey")
    ax.text(lo + 0.02, hi - 0.02, "word-biased", ha="left", va="top", fontsize=8, color="grey")
    ax.axvline(1.0, ls="--", color="grey", lw=1)
    ax.axhline(1.0, ls="--", color="grey", lw=1)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("Bias_C = (M_C - M_L) / (M_Full - M_L)")
    ax.set_ylabel("Bias_W = (M_W - M_L) / (M_Full - M_L)")
    ax.set_title(title or "Context-word bias plane (trained)", fontsize=10)
    ax.legend(loc="upper right", fontsize=7)
    if undefined:
        fig.text(0.01, -0.02, "undefined (M_Full within noise of M_Label): " + ", ".join(undefined), fontsize=8,
                 ha="left")
    return save_png(fig, out)
