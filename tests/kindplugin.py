"""Install the one-folder plugin kind ``tests/kind_plugin/synpick`` for a subprocess, and make a dataset of it.

:func:`install` copies the package folder and writes the ``*.dist-info`` an install leaves (its
``probegen.tasks`` entry point), so ``importlib.metadata`` finds the kind with the directory on
``PYTHONPATH``; no probegen file and no venv is touched. :func:`run` runs ``python -m probegen``
with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(__file__).resolve().parent / "kind_plugin" / "synpick"
KIND = "synonym-pick"


def install(root: Path) -> Path:
    """``root`` holding the package and its dist-info (the directory to put on ``PYTHONPATH``)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PACKAGE, root / "synpick", ignore=shutil.ignore_patterns("__pycache__"))
    return write_dist_info(root, "probegen-synpick", "probegen.tasks", {KIND: "synpick:SynonymPick"})


def write_dist_info(root: Path, dist: str, group: str, entries: dict[str, str]) -> Path:
    """``root`` given the ``pyproject.toml`` of distribution ``dist`` (version 0.1) and the ``*.dist-info`` an
    install of it leaves: its entry points ``{name: "module:object"}`` in ``group``."""
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{dist}"\nversion = "0.1"\ndependencies = ["probegen"]\n\n'
        f'[project.entry-points."{group}"]\n' + "".join(f'{k} = "{v}"\n' for k, v in entries.items()))
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    return root


def write_dataset(graph, out: Path, n: int = 40, seed: int = 0, kind: str = KIND) -> Path:
    """Noun synsets with two one-word lemmas: the word, its synonym (gold) and three other synsets' lemmas."""
    def words(s):
        return [w for w in graph.lemmas(s) if w.isalpha() and w.islower()]

    pool = [s for s in graph.synsets("n") if len(words(s)) >= 2]
    rng = np.random.default_rng(seed)
    picked = [pool[int(i)] for i in sorted(rng.choice(len(pool), size=n, replace=False))]
    rows = []
    for i, s in enumerate(picked):
        word, gold = words(s)[:2]
        choices = [gold] + [words(picked[(i + d) % n])[0] for d in (1, 7, 13)]
        order = rng.permutation(len(choices))
        rows.append({"id": s, "word": word, "definition": graph.definition(s), "lexfile": graph.g.nodes[s]["lexname"], "choices": [choices[j] for j in order],
                     "gold": int(np.argsort(order)[0])})
    out.mkdir(parents=True)
    (out / "manifest.json").write_text(json.dumps({"kind": kind, "source": "WordNet 3.0", "n": n}))
    (out / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def run(args: list, plugin: Path, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """``python -m probegen *args`` with the plugin installed (offline)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)]), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
