"""House rules: ``ruff check`` (pyflakes, pycodestyle, isort, bugbear; no line over 120 characters) on the
repository, the library (probegen/, commands/, diagnostics/, cli.py) with every rule and tests/ and bench/
with all but the line length, and ``mypy`` on the library; each tool with its configuration in
pyproject.toml, run as CI runs them. Any finding fails the test and is shown in full.

Both tools come with the ``test`` extra (pinned in constraints.txt). mypy keeps its cache in the
system's temporary folder, outside the tree, so a second run takes seconds.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
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


def test_mypy_finds_nothing():
    # one cache per checkout, outside it: warm runs take seconds, a cold one about a minute
    cache = Path(tempfile.gettempdir()) / f"probegen-mypy-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"
    r = _run("mypy", "--cache-dir", str(cache), timeout=600)  # the files to check: pyproject.toml's [tool.mypy]
    assert r.returncode == 0, f"mypy (rules in pyproject.toml's [tool.mypy]):\n{r.stdout}{r.stderr}"
    checked = re.search(r"no issues found in (\d+) source files", r.stdout)
    assert checked and int(checked.group(1)) > 100, r.stdout  # it really checked the library (142 files when written)


def test_the_lint_rules_apply_to_the_library():
    """A library file with an unused import and a 140-character line fails (the config is really read)."""
    _run("ruff", "--version", timeout=60)
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename", "probegen/_x.py", "-"],
                       cwd=ROOT, input="import os\nx = '" + "y " * 65 + "'\n", capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "F401" in r.stdout and "E501" in r.stdout, r.stdout
