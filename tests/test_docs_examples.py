"""The README's and docs' examples are real (issue 39 §3): every shell command parses on the real CLI
(tests/docs_examples.py), every Python block compiles and, unless marked, runs on small data, and the
README's five-minute tour runs as pasted. One test per block, named ``file:line``.

The checker itself is tested on temporary Markdown: a wrong or renamed option, an unknown or missing
subcommand, a missing required option, a bad choice, a missing make target or script option must each
be reported, so a stale page cannot pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import docs_examples as dx
import pytest

REPO = dx.REPO
VENV_BIN = Path(sys.executable).parent
SAMPLE = REPO.parent / "shared" / "data" / "wordnetqa-release-sample"
BLOCKS = [b for b in dx.all_blocks() if b.kind != "other"]
PYTHON_BLOCKS = [b for b in BLOCKS if b.kind == "python"]
PYTHON_TIMEOUT = 300  # seconds per Python block (a block should take seconds; this catches a hang)
TOUR_TIMEOUT = 600
_RAN: dict[str, tuple[int, str]] = {}  # a Python example's source -> (exit code, failure message)


def _params(blocks):
    return [pytest.param(b, id=b.id) for b in blocks]


# ------------------------------------------------------------------------------------ the docs


def test_the_docs_have_examples_to_check():
    """The extractor finds the docs' commands: a parser that silently found none would pass every
    per-block test while checking nothing."""
    probegen_cmds = [c for b in BLOCKS if b.kind == "shell" for c in dx.probegen_commands(b)]
    assert len(probegen_cmds) >= 20, f"only {len(probegen_cmds)} probegen commands found in README.md and docs/"
    assert any(b.path == "README.md" for b in BLOCKS), "no checkable block in README.md"


@pytest.mark.parametrize("block", _params(BLOCKS))
def test_block_checks(block: dx.Block):
    """Shell commands parse on the real CLI (options, subcommands, choices, required options), make
    targets and bench scripts exist, Python compiles, YAML/TOML parse, markers are known ones."""
    problems = dx.check_block(block)
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="session")
def docs_workspace(tmp_path_factory) -> Path:
    """The scratch folder Python blocks run in, holding what the docs' Python examples name: the
    WordNetQA release sample under its release names (definitions-train.jsonl, hypernymy-train.jsonl,
    ...) and a small WordNetQA definitions set at probegen_out/datasets/wordnetqa-definitions."""
    ws = tmp_path_factory.mktemp("docs-python")
    for f in SAMPLE.glob("*-sample.jsonl"):
        shutil.copy(f, ws / f.name.replace("-sample", ""))
    r = subprocess.run([str(VENV_BIN / "probegen"), "make", "wordnetqa", "--probe", "definitions", "--limit", "60"],
                       cwd=ws, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return ws


def _python_params():
    """Every Python block; a marked one is a visible skip with its reason (it is still compiled by
    test_block_checks)."""
    return [pytest.param(b, id=b.id, marks=[pytest.mark.skip(reason=f"{b.id} not run: {b.skip_reason} "
                                                                     f"({dx.SKIP_REASONS.get(b.skip_reason, '?')})")]
                         if b.skip_reason is not None else []) for b in PYTHON_BLOCKS]


@pytest.mark.parametrize("block", _python_params())
def test_python_block_runs(block: dx.Block, docs_workspace: Path):
    """Each unmarked Python block runs as a script in the scratch folder (a fresh interpreter, the
    test suite's caches)."""
    source = dx.python_source(block)
    if source not in _RAN:  # the same example on two pages runs once
        script = docs_workspace / f"block_{block.path.replace('/', '_')}_{block.line}.py"
        script.write_text(source, encoding="utf-8")
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, str(script)], cwd=docs_workspace, capture_output=True, text=True,
                           timeout=PYTHON_TIMEOUT)
        _RAN[source] = (r.returncode, f"{block.id} failed after {time.perf_counter() - t0:.0f} s:\n{r.stderr[-3000:]}")
    code, why = _RAN[source]
    assert code == 0, why



def find_tour(blocks: list[dx.Block]) -> dx.Block | None:
    """The README's tour: the one shell block marked ``<!-- docs-test: tour -->``."""
    tours = [b for b in blocks if b.marker == "tour"]
    assert len(tours) <= 1, f"more than one block is marked as the tour: {[b.id for b in tours]}"
    return tours[0] if tours else None


def _out_paths(block: dx.Block) -> list[str]:
    """The ``--out`` values of the block's probegen commands: what the tour must leave behind."""
    outs = []
    for c in dx.probegen_commands(block):
        for i, w in enumerate(c.argv):
            if w == "--out" and i + 1 < len(c.argv):
                outs.append(c.argv[i + 1])
            elif w.startswith("--out="):
                outs.append(w.split("=", 1)[1])
    return outs


#: what the tour's folder does not borrow from the clone: its outputs must land in the scratch folder
NOT_LINKED = {".git", "probegen_out", "site", ".pytest_cache"}


def run_tour(block: dx.Block, cwd: Path) -> subprocess.CompletedProcess:
    """Run the tour as pasted, under ``bash -e -o pipefail`` (so any failing line fails it), with the
    venv's bin first on PATH and the suite's caches (PROBEGEN_CACHE as the environment has it). The
    scratch folder stands for the clone's root: it links the clone's top-level entries (.venv,
    templates, bench, ...), so ``.venv/bin/probegen`` or ``templates/specs/...`` work as in a clone,
    while probegen_out/ and every other output is written in the scratch folder."""
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED and not (cwd / entry.name).exists():
            (cwd / entry.name).symlink_to(entry)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    script = cwd / "tour.sh"
    script.write_text(block.text, encoding="utf-8")
    return subprocess.run(["bash", "-e", "-o", "pipefail", str(script)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TOUR_TIMEOUT)


def test_readme_tour_runs_as_pasted(tmp_path: Path):
    """The README's five-minute tour runs as pasted in an empty folder, exits 0, and writes every
    ``--out`` it names."""
    tour = find_tour([b for b in dx.all_blocks() if b.path == "README.md"])
    assert tour is not None, ("README.md has no five-minute tour: mark its one ```bash block with the line "
                              "'<!-- docs-test: tour -->' just above the fence (issue 39: a test runs it as pasted)")
    assert tour.kind == "shell", f"{tour.id}: the tour must be a ```bash block, not {tour.lang!r}"
    cmds = dx.probegen_commands(tour)
    assert cmds, f"{tour.id}: the tour runs no probegen command"
    t0 = time.perf_counter()
    r = run_tour(tour, tmp_path)
    took = time.perf_counter() - t0
    assert r.returncode == 0, f"{tour.id}: the tour exited {r.returncode} after {took:.0f} s:\n{r.stderr[-4000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-4000:]
    missing = [o for o in _out_paths(tour) if not (tmp_path / o).exists()]
    assert not missing, f"{tour.id}: the tour did not write {missing}"
    assert (tmp_path / "probegen_out").is_dir() or _out_paths(tour), f"{tour.id}: the tour wrote nothing"


# ------------------------------------------------------------------------------- the checker


def _md(tmp_path: Path, text: str, name: str = "page.md") -> list[dx.Block]:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return dx.extract_blocks(p, tmp_path)


def _problems(tmp_path: Path, text: str) -> list[str]:
    return [p for b in _md(tmp_path, text) for p in dx.check_block(b, REPO)]


def test_extracts_blocks_with_lines_languages_and_markers(tmp_path):
    blocks = _md(tmp_path, """\
        # Title

        ```bash
        probegen data
        ```

        <!-- docs-test: skip needs-gpu -->
        ```python
        print(1)
        ```

        ```
        just text
        ```

        ```
        $ probegen models
        glove-50d  ...
        ```

        ```text
        probegen eval --model M --dataset D [--out DIR]
        ```
        """)
    assert [(b.line, b.lang, b.kind, b.marker) for b in blocks] == [
        (3, "bash", "shell", None), (8, "python", "python", "skip needs-gpu"), (12, "", "other", None),
        (16, "", "shell", None), (21, "text", "shell", None)]
    assert blocks[0].id == "page.md:3" and blocks[1].skip_reason == "needs-gpu"
    assert [c.argv for c in dx.shell_commands(blocks[3])] == [["probegen", "models"]]  # output lines ignored


def test_splits_shell_lines_into_commands(tmp_path):
    (block,) = _md(tmp_path, """\
        ```bash
        # a comment line
        .venv/bin/probegen eval --model glove-50d \\
            --dataset D   # a trailing comment
        PROBEGEN_CACHE=/tmp/c python -m probegen stats D && probegen export D --out x.jsonl | head -3; make demo
        torchrun --standalone --nproc_per_node 2 -m probegen eval --model M --dataset D
        for f in a b; do python bench/bench_gpu.py --cpu-smoke; done
        head=$(scontrol show hostnames "$X" | head -n1)
        ```
        """)
    got = [(c.line, *dx.classify(c.argv)) for c in dx.shell_commands(block)]
    assert got == [
        (3, "probegen", ["eval", "--model", "glove-50d", "--dataset", "D"], ".venv/bin/probegen"),
        (5, "probegen", ["stats", "D"], "python"),
        (5, "probegen", ["export", "D", "--out", "x.jsonl"], "probegen"),
        (5, "external", ["-3"], "head"),
        (5, "make", ["demo"], "make"),
        (6, "probegen", ["eval", "--model", "M", "--dataset", "D"], "torchrun"),
        (7, "external", ["f", "in", "a", "b"], "for"),
        (7, "script", ["--cpu-smoke"], "bench/bench_gpu.py"),
        (7, "external", [], "done"),
    ]


def test_reports_a_wrong_option_with_file_and_line(tmp_path):
    problems = _problems(tmp_path, """\
        Intro.

        ```bash
        probegen data
        probegen eval --modle glove-50d --dataset D
        ```
        """)
    assert len(problems) == 1 and problems[0].startswith("page.md:5: probegen eval --modle"), problems
    assert "No such option '--modle'" in problems[0]


def test_reports_a_renamed_option_in_a_copy_of_a_real_doc_block(tmp_path):
    """A real block of the docs, copied with one option renamed, fails; the original passes."""
    block = next(b for b in BLOCKS if b.kind == "shell" and any("--dataset" in c.argv for c in dx.probegen_commands(b)))
    assert dx.check_block(block) == []
    (copy,) = _md(tmp_path, f"```bash\n{block.text.replace('--dataset', '--data-set')}```\n")
    problems = dx.check_block(copy)
    assert problems and all("No such option '--data-set'" in p for p in problems), problems


def test_a_renamed_cli_option_fails_the_real_docs(monkeypatch):
    """The other direction: rename ``eval --dataset`` in the CLI itself (as a refactor would) and the
    README/docs blocks that use it are reported."""
    from probegen.commands.cli import cli

    param = next(p for p in cli.commands["eval"].params if "--dataset" in getattr(p, "opts", ()))
    monkeypatch.setattr(param, "opts", ["--data"])
    failing = [b.id for b in BLOCKS if b.kind == "shell" and any("--dataset" in p for p in dx.check_block(b))]
    assert len(failing) >= 3, failing


@pytest.mark.parametrize("cmd,needle", [
    ("probegen eval --model M", "Missing option '--dataset'"),
    ("probegen make", "Missing command (one of: coda21"),
    ("probegen make coda22", "No such command 'coda22'"),
    ("probegen make coda21 --pos nouns", "'nouns' is not one of"),
    ("probegen items RUN --irt 1pl|4pl --out DIR", "'4pl' is not one of"),  # each alternative checked
    ("probegen stats D E F", "unexpected extra argument"),
    ("probegen make wordnetqa --seed -1", "--seed"),
    ("make no-such-target", "no target 'no-such-target'"),
    ("python bench/no_such_bench.py", "does not exist"),
    (".venv/bin/python bench/bench_gpu.py --no-such-flag", "has no option --no-such-flag"),
])
def test_reports_each_kind_of_stale_command(tmp_path, cmd, needle):
    problems = _problems(tmp_path, f"```bash\n{cmd}\n```\n")
    assert problems and needle in problems[0], problems


@pytest.mark.parametrize("cmd", [
    "probegen make coda21 [--easy] [--noisy] [--pos noun|verb|both] [--seed N] [--out DIR]",
    "probegen bias --model M [--dataset D ...] [--out DIR]",
    "probegen study make|serve|score|export|import ...",
    "probegen subset DATASET --items DIR --size N --method random|anchor|information --out OUT",
    "probegen bias --model M --method letter --dataset DATASET --beside probegen_out/bias/no-such-run",
    "probegen make spec coda21-clean-hard --set concepts.pos=[verb] --seed 1 --out /tmp/x",
    "probegen eval --help",
    "python bench/contamination_forms.py --lite FORM OUT",
    ".venv/bin/python bench/bench_gpu.py --cpu-smoke",
    "make demo",
    "vllm serve some/model --port 8000",
])
def test_accepts_synopses_placeholders_and_other_programs(tmp_path, cmd):
    assert _problems(tmp_path, f"```bash\n{cmd}\n```\n") == []


def test_reports_unknown_markers_and_broken_python(tmp_path):
    problems = _problems(tmp_path, """\
        <!-- docs-test: skip needs-gpus -->
        ```bash
        probegen data
        ```

        <!-- docs-test: later -->
        ```python
        def f(:
            pass
        ```
        """)
    assert len(problems) == 3, problems
    assert "unknown skip reason 'needs-gpus'" in problems[0]
    assert "unknown docs-test marker 'later'" in problems[1]
    assert problems[2].startswith("page.md:8: Python does not compile")


def test_interactive_python_blocks_are_compiled_without_prompts(tmp_path):
    (block,) = _md(tmp_path, "```pycon\n>>> import probegen\n>>> for i in range(2):\n...     i\n0\n1\n```\n")
    assert dx.python_source(block) == "import probegen\nfor i in range(2):\n    i\n"
    assert dx.check_block(block) == []
    (bad,) = _md(tmp_path, "```pycon\n>>> print(1\n1\n```\n")
    assert "Python does not compile" in dx.check_block(bad)[0]


def test_finds_the_tour_and_runs_it_as_pasted(tmp_path):
    """The tour runner on a tiny stand-in tour: found by its marker, run with the venv's probegen on
    PATH under -e (a failing line fails it)."""
    text = "<!-- docs-test: tour -->\n```bash\nprobegen models > models.txt\nprobegen data --out nope\n```\n"
    assert find_tour(_md(tmp_path, "```bash\nprobegen data\n```\n")) is None
    tour = find_tour(_md(tmp_path, text))
    assert tour is not None and tour.line == 2
    r = run_tour(tour, tmp_path)
    assert r.returncode != 0 and "No such option" in r.stderr  # the second line fails the run
    assert "glove-50d" in (tmp_path / "models.txt").read_text()
    good = find_tour(_md(tmp_path, text.replace("probegen data --out nope\n", "")))
    assert run_tour(good, tmp_path).returncode == 0


def test_the_command_line_checker_exits_1_on_a_problem(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```bash\nprobegen eval --model M --dataset D --no-such-option\n```\n", encoding="utf-8")
    r = subprocess.run([sys.executable, str(REPO / "tests" / "docs_examples.py"), str(page)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and re.search(r"p\.md:2: .*No such option '--no-such-option'", r.stdout), r
