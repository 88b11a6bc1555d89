"""Where probegen keeps its caches, and the repository-relative locations it knows about."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """The user cache directory (``$PROBEGEN_CACHE`` or ``~/.cache/probegen``), created on demand."""
    root = os.environ.get("PROBEGEN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "probegen"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_data_candidates() -> list[Path]:
    """Folders that may hold the shared WordNet/SemCor archives, nearest first."""
    out: list[Path] = []
    env = os.environ.get("PROBEGEN_SHARED")
    if env:
        out.append(Path(env) / "data")
    for base in (REPO_ROOT, Path.cwd()):
        out.append(base.parent / "shared" / "data")
        out.append(base / "shared" / "data")
    seen: list[Path] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen
