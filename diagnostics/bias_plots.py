"""The bias plane (the bias paper's Figure 1): Bias_C on x, Bias_W on y, one point per dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plots import pyplot, save_png


def _err(r: dict[str, Any]) -> list[float]:
    """Asymmetric error bar lengths from a ratio's CI (zero when no CI).

    >>> _err({"value": 0.5, "ci": [0.25, 0.75]}), _err({"value": 0.5, "ci": None})
    ([0.25, 0.25], [0.0, 0.0])
    """
    ci, v = r.get("ci"), r["value"]
    return [v - ci[0], ci[1] - v] if ci else [0.0, 0.0]


def beside_points(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The plane points of the other runs recorded in ``results["beside"]`` (hollow markers)."""
    return [{**p, "marker": "s", "ms": 6} for p in results.get("beside", [])]


def not_drawn(point: dict[str, Any]) -> str | None:
    """Why a dataset is not on the plane: 'n/a' (a ratio measures nothing on it), 'undefined', or None.

    >>> not_drawn({"bias_c": {"value": 0.4}, "bias_w": {"value": 0.9}}) is None
    True
    >>> not_drawn({"bias_c": {"value": None, "not_applicable": True}, "bias_w": {"value": None}})
    'n/a'
    >>> not_drawn({"bias_c": {"value": None}, "bias_w": {"value": 0.9}})
    'undefined'
    """
    rs = [point.get("bias_c") or {}, point.get("bias_w") or {}]
    if any(r.get("not_applicable") for r in rs):
        return "n/a"
    return "undefined" if any(r.get("value") is None for r in rs) else None


def plot_bias_plane(points: list[dict[str, Any]], out: Path, title: str = "") -> Path:
    """Draw each point (``name``, ``bias_c`` and ``bias_w`` ratio dicts; optional ``marker``, ``ms``, ``color``)
    at (Bias_C, Bias_W) with 95% CI bars; undefined or n/a ones are listed under the axes instead.

    >>> import tempfile
    >>> pts = [{"name": "a", "bias_c": {"value": 0.5, "ci": [0.4, 0.6]}, "bias_w": {"value": 0.9, "ci": None}}]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(plot_bias_plane(pts, Path(d) / "plane.png").read_bytes()[:4])
    b'\x89PNG'
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    drawn: list[Any] = []
    undefined: list[Any] = []
    not_applicable: list[str] = []
    for i, p in enumerate(points):
        c, w = p.get("bias_c") or {}, p.get("bias_w") or {}
        why = not_drawn(p)
        if why:
            (not_applicable if why == "n/a" else undefined).append(p["name"])
            continue
        xe, ye = _err(c), _err(w)
        ax.errorbar(
            c["value"], w["value"], xerr=[[xe[0]], [xe[1]]], yerr=[[ye[0]], [ye[1]]],
            fmt=p.get("marker", "o"), ms=p.get("ms", 7), capsize=3, color=p.get("color", f"C{i % 10}"), label=p["name"],
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
    if not_applicable:
        fig.text(0.01, -0.06, "n/a (ratio measures nothing on this probe): " + ", ".join(not_applicable), fontsize=8,
                 ha="left")
    return save_png(fig, out)
