"""The bias plane (the bias paper's Figure 1): Bias_C on x, Bias_W on y, one point per dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plots import _plt, _save


def _err(r: dict[str, Any]) -> list[float]:
    """Asymmetric error bar lengths from a ratio's CI (zero when no CI)."""
    ci, v = r.get("ci"), r["value"]
    return [v - ci[0], ci[1] - v] if ci else [0.0, 0.0]


def plot_bias_plane(points: list[dict[str, Any]], out: Path, title: str = "") -> Path:
    """Draw each dataset at (Bias_C, Bias_W) with 95% CI bars; dashed lines mark 1.0.

    ``points``: ``{"name": str, "bias_c": ratio, "bias_w": ratio}`` with ratio dicts as produced
    by :func:`diagnostics.bias.bootstrap_bias` (``value`` None = undefined). Datasets with an
    undefined ratio are listed under the axes instead of being drawn.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    drawn, undefined = [], []
    for i, p in enumerate(points):
        c, w = p.get("bias_c") or {}, p.get("bias_w") or {}
        if c.get("value") is None or w.get("value") is None:
            undefined.append(p["name"])
            continue
        xe, ye = _err(c), _err(w)
        ax.errorbar(
            c["value"], w["value"], xerr=[[xe[0]], [xe[1]]], yerr=[[ye[0]], [ye[1]]],
            fmt="o", ms=7, capsize=3, color=f"C{i % 10}", label=p["name"],
        )
        drawn.append((c, w))
    ax.axvline(1.0, ls="--", color="grey", lw=1)
    ax.axhline(1.0, ls="--", color="grey", lw=1)
    ax.axvline(0.0, ls=":", color="lightgrey", lw=1)
    ax.axhline(0.0, ls=":", color="lightgrey", lw=1)
    lo, hi = -0.1, 1.3  # always show the unit square; widen to every CI
    for c, w in drawn:
        for r in (c, w):
            ends = r.get("ci") or [r["value"], r["value"]]
            lo, hi = min(lo, ends[0] - 0.05), max(hi, ends[1] + 0.05)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("Bias_C = (M_C - M_L) / (M_Full - M_L)   (context alone)")
    ax.set_ylabel("Bias_W = (M_W - M_L) / (M_Full - M_L)   (word alone)")
    ax.set_title(title or "Context-word bias plane (95% bootstrap CIs)")
    if drawn:
        ax.legend(loc="best", fontsize=8)
    if undefined:
        fig.text(0.01, -0.02, "undefined (M_Full within noise of M_L): " + ", ".join(undefined), fontsize=8, ha="left")
    return _save(fig, out)
