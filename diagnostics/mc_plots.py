"""WordNetQA figure: accuracy by hops x distractor type (the paper's Figure 3), one panel per probe, from
the ``by_hops_distractor`` metrics (probe -> hops -> distractor type -> {accuracy, n})."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from probegen.errors import ProbegenError

from .plots import pyplot, save_png

TYPE_ORDER = ("random", "sister", "isa")


def hops_grid(cells: dict[str, dict[str, dict[str, Any]]]) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(hop labels, type labels, accuracy matrix with NaN for empty cells, count matrix).

    >>> h, t, acc, n = hops_grid({"1": {"random": {"accuracy": 0.9, "n": 10}}, "2": {"isa": {"accuracy": 0.5, "n": 4}}})
    >>> h, t, n.tolist()
    (['1', '2'], ['random', 'isa'], [[10, 0], [0, 4]])
    """
    hops = sorted(cells, key=int)
    present = {t for ts in cells.values() for t in ts}
    types = [t for t in TYPE_ORDER if t in present] + sorted(present - set(TYPE_ORDER))
    acc = np.full((len(hops), len(types)), np.nan)
    n = np.zeros((len(hops), len(types)), dtype=int)
    for i, h in enumerate(hops):
        for j, t in enumerate(types):
            c = cells[h].get(t)
            if c:
                acc[i, j] = c["accuracy"]
                n[i, j] = c["n"]
    return hops, types, acc, n


def plot_hops_heatmap(metrics: dict[str, Any], path: Path, title: str = "") -> Path:
    """Draw accuracy by hops (rows) x distractor type (columns), one panel per probe type."""
    grid = metrics.get("by_hops_distractor") or {}
    if not grid:
        raise ProbegenError("no hops x distractor breakdown in these metrics (not a WordNetQA evaluation?)")
    plt = pyplot()
    probes = list(grid)
    fig, axes = plt.subplots(1, len(probes), figsize=(3.4 * len(probes) + 1.0, 3.8), squeeze=False,
                             layout="constrained")
    im = None
    for ax, probe in zip(axes[0], probes):
        hops, types, acc, n = hops_grid(grid[probe])
        im = ax.imshow(np.ma.masked_invalid(acc), cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
        for i in range(len(hops)):
            for j in range(len(types)):
                if n[i, j]:
                    ax.text(j, i, f"{acc[i, j]:.2f}\nn={n[i, j]}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(types)), types)
        ax.set_xlabel("distractor type")
        isa = any(h != "0" for h in hops)
        ax.set_yticks(range(len(hops)), hops if isa else ["-"] * len(hops))
        ax.set_ylabel("hops (k)" if isa else "no hops (not an ISA probe)")
        pm = metrics.get("by_probe", {}).get(probe, {})
        sub = f"\nacc {pm['accuracy']:.2f}, cluster {pm['strict_cluster_accuracy']:.2f}" if pm else ""
        ax.set_title(f"{probe}{sub}", fontsize=10)
    fig.colorbar(im, ax=list(axes[0]), label="accuracy", shrink=0.85)
    if title:
        fig.suptitle(title, fontsize=11)
    return save_png(fig, Path(path))
