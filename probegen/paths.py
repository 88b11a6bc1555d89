"""Where probegen keeps its caches, and the repository-relative locations it knows about."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: where runs and made datasets go when no ``--out`` is given (``./probegen_out``, as the CLI says)
DEFAULT_ROOT = Path("probegen_out")


def slug(name: str) -> str:
    """A model or dataset name as one path component (``models/x y`` -> ``models_x_y``).

    >>> slug("/data/BAAI/bge small/")
    'data_BAAI_bge_small'
    """
    return name.strip("/").replace("/", "_").replace(" ", "_")


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
    return list(dict.fromkeys(out))


def set_aside(path: Path, what: str, error: BaseException, then: str = "rebuilding it",
              companions: tuple[str, ...] = ()) -> Path | None:
    """Rename a damaged cache file (and its ``companions`` suffixes, e.g. ``-wal``) to ``<name>.corrupt-<time>``,
    kept for inspection, with one warning line; the new path, or None if ``path`` was already gone."""
    import logging
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 10**9:09d}"
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    except OSError as e:
        from .errors import ProbegenError

        raise ProbegenError(f"{what} {path} is corrupt and cannot be moved aside ({e.strerror or e}); remove "
                            "it") from None
    for suffix in companions:
        try:
            os.rename(f"{path}{suffix}", f"{aside}{suffix}")
        except OSError:
            pass  # absent, or gone with its database: nothing to keep
    why = " ".join(f"{type(error).__name__}: {error}".split())[:200]
    logging.getLogger("probegen.cache").warning("%s %s is corrupt (%s); moved it to %s, %s", what, path, why,
                                                aside.name, then)
    return aside
