"""Figures: a group's score matrix (CoDA21 Fig. 2), hops x distractor heatmaps, the bias plane."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from probegen.errors import ProbegenError


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on servers
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    from probegen.io import atomic_write

    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=130, bbox_inches="tight")
    _plt().close(fig)
    return path


def plot_group_matrix(run: Path, group_id: str | None = None, out: Path | None = None) -> Path:
    """Heatmap of one CoDA21 group's context x definition scores; predicted cells boxed,
    gold cells dotted."""
    rows_file = run / "groups.jsonl"
    if not rows_file.exists():
        raise ProbegenError(f"{run} is not a CoDA21 evaluation run (no groups.jsonl)")
    rec = None
    with open(rows_file, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if group_id is None or r["id"] == group_id:
                rec = r
                break
    if rec is None:
        raise ProbegenError(f"group {group_id!r} not found in {rows_file}")
    plt = _plt()
    m = np.array(rec["scores"])
    k = len(m)
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * k, 0.8 + 0.6 * k))
    im = ax.imshow(m, cmap="viridis")
    fig.colorbar(im, ax=ax, label="score")
    for i, (p, g) in enumerate(zip(rec["pred"], rec["gold"])):
        ax.add_patch(plt.Rectangle((p - 0.5, i - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
        ax.plot(g, i, marker="o", ms=6, mfc="none", mec="white", mew=1.5)
    ax.set_xticks(range(k), [c.split(".")[0] for c in rec["columns"]], rotation=60, ha="right")
    ax.set_yticks(range(k), [c.split(".")[0] for c in rec["rows"]])
    ax.set_xlabel("definition of")
    ax.set_ylabel("context of (target hidden)")
    ax.set_title(f"{rec['id']}  accuracy {rec['accuracy']:.2f}\nred box: predicted; white ring: gold")
    return _save(fig, out or run / f"group-{rec['id']}.png")
