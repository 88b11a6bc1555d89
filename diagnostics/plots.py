"""Figures: a group's score matrix (CoDA21 Fig. 2), hops x distractor heatmaps, the bias plane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from probegen.errors import ProbegenError


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on servers
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: Path, user_named: bool = False) -> Path:
    """Write ``fig`` as PNG; a file the user named with --out replaces only a figure probegen wrote."""
    from probegen.io import atomic_output_file, atomic_write

    with (atomic_output_file if user_named else atomic_write)(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=130, bbox_inches="tight")
    pyplot().close(fig)
    return path


def group_matrix(rec: dict[str, Any], source: Path | str = "groups.jsonl") -> tuple[np.ndarray, int]:
    """(k x k score matrix, k) of one run record, after checking the fields the figure draws.

    >>> group_matrix({"id": "g", "scores": [[0, 1], [1, 0]], "pred": [1, 0], "gold": [1, 0],
    ...               "rows": ["a.n.01", "b.n.01"], "columns": ["b.n.01", "a.n.01"], "correct": 1.0})[1]
    2
    >>> group_matrix({"id": "g", "scores": [[0, 1]], "pred": [0], "gold": [0], "rows": ["a"], "columns": ["a"],
    ...               "correct": 1})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: groups.jsonl: group g is malformed (scores must be a k x k matrix of numbers, got
    shape (1, 2))
    """
    gid = rec.get("id")
    missing = [f for f in ("scores", "pred", "gold", "rows", "columns", "correct") if f not in rec]
    if missing:
        raise ProbegenError(f"{source}: group {gid} is malformed (missing {', '.join(missing)})")
    try:
        m = np.array(rec["scores"], dtype=float)
    except (TypeError, ValueError):
        m = np.empty((0, 1))
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
        raise ProbegenError(f"{source}: group {gid} is malformed (scores must be a k x k matrix of numbers, got shape "
                            f"{m.shape})")
    k = m.shape[0]
    for f in ("pred", "gold"):
        v = rec[f]
        if not (isinstance(v, list) and len(v) == k and all(isinstance(x, int) and 0 <= x < k for x in v)):
            raise ProbegenError(f"{source}: group {gid} is malformed ({f} must be {k} column indices in 0..{k - 1})")
    for f in ("rows", "columns"):
        if not (isinstance(rec[f], list) and len(rec[f]) == k and all(isinstance(x, str) for x in rec[f])):
            raise ProbegenError(f"{source}: group {gid} is malformed ({f} must be {k} synset names)")
    if not isinstance(rec["correct"], (int, float)):
        raise ProbegenError(f"{source}: group {gid} is malformed (correct must be a number)")
    return m, k


def plot_group_matrix(run: Path, group_id: str | None = None, out: Path | None = None) -> Path:
    """Heatmap of one CoDA21 group's context x definition scores; predicted cells boxed,
    gold cells dotted. Drawn into the run by default, where the run's marker records it."""
    from probegen.io import (
        check_file_replaceable,
        check_output_not_input,
        read_jsonl,
        record_in_output,
        recover,
        verify_output,
    )

    if out is not None:  # before any work: never onto the run itself, nor a file probegen did not write
        check_output_not_input(out, [run])
        check_file_replaceable(out)
    recover(run)  # an interrupted write of the run is finished first
    if not run.exists():
        raise ProbegenError(f"run {run} does not exist")
    verify_output(run)
    rows_file = run / "groups.jsonl"
    if not rows_file.is_file():
        raise ProbegenError(f"{run} is not a CoDA21 evaluation run (no groups.jsonl)")
    rows = read_jsonl(rows_file)  # names the line of malformed JSON
    if not rows:
        raise ProbegenError(f"{rows_file} has no groups")
    if not all(isinstance(r, dict) and "id" in r for r in rows):
        raise ProbegenError(f"{rows_file} is not a CoDA21 run's groups file (every line needs an object with an id)")
    rec = next((r for r in rows if group_id is None or r["id"] == group_id), None)
    if rec is None:
        raise ProbegenError(f"group {group_id!r} not found in {rows_file}")
    m, k = group_matrix(rec, rows_file)
    plt = pyplot()
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
    ax.set_title(f"{rec['id']}  accuracy {rec['correct']:.2f}\nred box: predicted; white ring: gold")
    if out is not None:
        return save_png(fig, out, user_named=True)
    path = save_png(fig, run / f"group-{rec['id']}.png")
    record_in_output(run, path.name)  # a later eval may still replace the run
    return path
