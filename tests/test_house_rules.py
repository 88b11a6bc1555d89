"""House rules: ``ruff check`` (pyflakes, pycodestyle, isort, bugbear; no line over 120 characters) on the
repository, the library (probegen/, commands/, diagnostics/, cli.py) with every rule and tests/ and bench/
with all but the line length, and ``mypy`` on the library; each tool with its configuration in
pyproject.toml, run as CI runs them. Any finding fails the test and is shown in full.

mypy checks the library as it installs: ``commands/`` and ``diagnostics/`` are the packages
``probegen.commands`` and ``probegen.diagnostics`` (pyproject.toml's ``package-dir``), a mapping mypy
cannot read. :func:`installed_layout` builds that layout out of symbolic links to the checkout's
files, and mypy runs there, so probegen's imports of them are checked, not read as ``Any``.

Both tools come with the ``test`` extra (pinned in constraints.txt). mypy keeps its cache in the
system's temporary folder, outside the tree, so a second run takes seconds.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("probegen", "commands", "diagnostics", "cli.py")


def _run(*args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    """``python -m <tool> ...`` from the repository root with this interpreter (the venv's tools)."""
    tool = args[0]
    probe = subprocess.run([sys.executable, "-m", tool, "--version"], cwd=ROOT, capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"{tool} is not installed in {sys.executable}'s environment: it comes with the test extra "
                    f"(pip install -c constraints.txt -e '.[test]')\n{probe.stderr}")
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_ruff_finds_nothing():
    r = _run("ruff", "check", "--no-cache", "--output-format", "concise", *LIBRARY, "tests", "bench", timeout=120)
    assert r.returncode == 0, f"ruff check (rules in pyproject.toml's [tool.ruff]):\n{r.stdout}{r.stderr}"


def installed_layout(into: Path) -> Path:
    """``into`` made the library's installed layout: ``probegen/`` holding a link to every entry of the
    checkout's ``probegen/`` and, under the names ``package-dir`` gives them, links to ``commands/`` and
    ``diagnostics/``; beside it a link to ``cli.py``. Links left from an earlier layout are replaced."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    pkg = into / "probegen"
    pkg.mkdir(parents=True, exist_ok=True)
    for old in pkg.iterdir():
        old.unlink()  # links only: nothing of the checkout is touched
    links = {e.name: e for e in (ROOT / mapping["probegen"]).iterdir() if e.name != "__pycache__"}
    for name, folder in mapping.items():
        if name.count(".") == 1:  # probegen.commands, probegen.diagnostics, probegen.templates
            links[name.split(".")[1]] = ROOT / folder
    for name, target in links.items():
        (pkg / name).symlink_to(target)
    (into / "cli.py").unlink(missing_ok=True)
    (into / "cli.py").symlink_to(ROOT / "cli.py")
    return into


def test_installed_layout_maps_the_packages(tmp_path: Path):
    tree = installed_layout(tmp_path)
    assert (tree / "probegen" / "diagnostics" / "api.py").resolve() == ROOT / "diagnostics" / "api.py"
    assert (tree / "probegen" / "commands" / "cli.py").resolve() == ROOT / "commands" / "cli.py"
    assert (tree / "probegen" / "tasks" / "base.py").resolve() == ROOT / "probegen" / "tasks" / "base.py"
    assert (tree / "cli.py").resolve() == ROOT / "cli.py"


def test_mypy_finds_nothing():
    # one cache per checkout, outside it: warm runs take seconds, a cold one a few minutes
    cache = Path(tempfile.gettempdir()) / f"probegen-mypy-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"
    tree = installed_layout(cache / "layout")
    _run("mypy", "--version", timeout=60)
    # the rules: pyproject.toml's [tool.mypy]; the files: the installed layout (its probegen/ and cli.py)
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                        str(cache / "cache"), "probegen", "cli.py"], cwd=tree, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, f"mypy (rules in pyproject.toml's [tool.mypy]):\n{r.stdout}{r.stderr}"
    checked = re.search(r"no issues found in (\d+) source files", r.stdout)
    assert checked and int(checked.group(1)) > 170, r.stdout  # it really checked the library (178 files when written)


def test_the_lint_rules_apply_to_the_library():
    """A library file with an unused import and a 140-character line fails (the config is really read)."""
    _run("ruff", "--version", timeout=60)
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename", "probegen/_x.py", "-"],
                       cwd=ROOT, input="import os\nx = '" + "y " * 65 + "'\n", capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "F401" in r.stdout and "E501" in r.stdout, r.stdout
