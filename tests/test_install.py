"""A clean install: the wheel adds one top-level name, ``probegen``, and runs from there.

The repository keeps its layout (``cli.py``, ``commands/``, ``diagnostics/``, ``templates/`` at the
top), and pyproject.toml maps them under ``probegen``. This test builds the real wheel from a copy
of the sources (nothing is written into the repository), installs it into a scratch virtual
environment that sees this environment's dependencies but not the editable install, and checks
the names it adds, ``probegen --help`` and one real evaluation run from the scratch install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"
SOURCES = ("pyproject.toml", "README.md", "cli.py", "probegen", "commands", "diagnostics", "templates")


def _top_level(names: list[str]) -> set[str]:
    """The top-level names a wheel's files install as (its .dist-info excluded)."""
    tops = {n.split("/")[0] for n in names}
    return {t for t in tops if not t.endswith((".dist-info", ".data"))}


def test_top_level_names_of_a_wheel():
    assert _top_level(["probegen/__init__.py", "probegen/commands/cli.py", "probegen-0.1.0.dist-info/RECORD"]) == {"probegen"}
    assert _top_level(["cli.py", "probegen/x.py", "diagnostics/__init__.py"]) == {"cli.py", "probegen", "diagnostics"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    # the build backend (setuptools) comes from this environment: no index is reached
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    [whl] = out.glob("probegen-*.whl")
    return whl


def test_the_wheel_adds_only_probegen(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        [entry] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = z.read(entry).decode()
    assert _top_level(names) == {"probegen"}, sorted(_top_level(names))
    assert "probegen = probegen.commands.cli:main" in entry_points
    # every module of the repository's folders is in the wheel, under probegen
    for folder, package in (("probegen", "probegen"), ("commands", "probegen/commands"), ("diagnostics", "probegen/diagnostics")):
        for f in (ROOT / folder).rglob("*.py"):
            assert f"{package}/{f.relative_to(ROOT / folder).as_posix()}" in names, f
    for f in (ROOT / "templates").rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts:
            assert f"probegen/templates/{f.relative_to(ROOT / 'templates').as_posix()}" in names, f
    assert "probegen/view/static/view.js" in names or any(n.startswith("probegen/view/static/") for n in names)


def test_installed_wheel_runs_help_and_a_real_eval(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    before = {p.name for p in site.iterdir()}
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    added = {p.name for p in site.iterdir()} - before
    assert {a for a in added if not a.endswith(".dist-info")} == {"probegen"}, sorted(added)
    assert (venv / "bin" / "probegen").exists()
    # the dependencies come from this environment's site-packages, added by a .pth line: that folder's own
    # .pth files (the editable install's finder among them) are not run, so `probegen` is the wheel's
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    where = subprocess.run([str(py), "-c", "import probegen, probegen.diagnostics, probegen.commands.cli, probegen.templates as t;"
                            "print(probegen.__file__); print(probegen.diagnostics.__file__); print(list(t.__path__)[0])"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert where.returncode == 0, where.stderr[-3000:]
    assert all(line.startswith(str(site)) for line in where.stdout.split()), where.stdout
    for name in ("cli", "commands", "diagnostics", "templates"):
        r = subprocess.run([str(py), "-c", f"import {name}"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, name
    r = subprocess.run([str(venv / "bin" / "probegen"), "--help"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 0 and "Usage: probegen" in r.stdout, r.stderr[-2000:]
    args = ["eval", "--model", "glove-50d", "--dataset", str(RELEASE / "definitions-train-sample.jsonl"), "--bootstrap", "100"]
    r = subprocess.run([str(venv / "bin" / "probegen"), *args, "--out", str(tmp_path / "wheel")],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    # the same run from the repository (the editable install) gives the same numbers
    r = subprocess.run([sys.executable, "-m", "probegen", *args, "--out", str(tmp_path / "repo")],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    wheel_run, repo_run = (json.loads((tmp_path / side / "results.json").read_text()) for side in ("wheel", "repo"))
    assert wheel_run["metrics"]["n_items"] == 40 and wheel_run["metrics"] == repo_run["metrics"]
    assert (tmp_path / "wheel" / "report.md").exists()
