"""Issue 35: reads of user-given paths that are not regular files, and view's tracebacks.

A FIFO named as a run's dataset or as a spec used to block for ever (the open waits for a writer),
``/dev/zero`` used to be read until memory ran out (2.7 GB for ``probegen view``, MemoryError for
``probegen make spec --check``: the 1 MiB cap only looked at a regular file's size). Every such
path is now refused unread by :func:`probegen.io.open_input`, with one error line naming it.

A blocked read fails the test instead of hanging it: the in-process calls run in a thread that is
given a few seconds, after which the FIFO is opened for writing and closed (the blocked reader sees
the end of the file and returns) and the test fails; ``/dev/zero`` is tried in a child process
under a memory limit and a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from cli_checks import assert_one_line_error, run

#: seconds an in-process call may take before it counts as blocked (the refusal itself is instant)
PATIENCE = 30


@pytest.fixture(scope="module", autouse=True)
def _imported():
    """The modules the calls use, imported before any call is timed."""
    import probegen.commands.cli  # noqa: F401
    import probegen.spec.schema  # noqa: F401
    import probegen.tasks  # noqa: F401
    import probegen.view.load  # noqa: F401


def within(fifo: Path, fn: Callable[[], Any]) -> Any:
    """``fn()``, which must not block on ``fifo``: after :data:`PATIENCE` seconds the FIFO is opened
    for writing and closed, which frees a reader stuck in its open, and the test fails."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(PATIENCE)
    if t.is_alive():
        for _ in range(5):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            t.join(2)
            if not t.is_alive():
                break
        pytest.fail(f"blocked for {PATIENCE} s reading the FIFO {fifo}")
    if "error" in box:
        raise box["error"]
    return box["value"]


def fifo_at(path: Path) -> Path:
    os.mkfifo(path)
    return path


def made_run(root: Path, dataset: str | Path, rows: int = 1, recorded: int | None = None) -> Path:
    """A minimal ``probegen eval`` run folder (no marker, as an edited or older run has none) of
    ``rows`` multiple-choice rows whose results.json counts ``recorded`` (default: ``rows``) and names
    ``dataset``."""
    root.mkdir(parents=True)
    results = {"model": "glove-50d", "scorer": {"kind": "static"},
               "dataset": {"path": str(dataset), "kind": "wordnetqa"},
               "eval": {"mode": "full", "nonce": "bkatuhla", "seed": 0, "reduction": None},
               "metrics": {"accuracy": 1.0, "n_items": rows if recorded is None else recorded}}
    (root / "results.json").write_text(json.dumps(results), encoding="utf-8")
    lines = [json.dumps({"id": f"q{i}", "choices": ["a pet", "a tree"], "scores": [[0.9, 0.1]], "pred": [0],
                         "gold": [0], "correct": 1.0}) for i in range(rows)]
    (root / "items.jsonl").write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    return root


# ---- a FIFO ------------------------------------------------------------------------------------------------
def test_view_refuses_a_fifo_named_as_the_dataset(tmp_path):
    fifo = fifo_at(tmp_path / "definitions.jsonl")
    r = made_run(tmp_path / "run", fifo)
    code, _, err = within(fifo, lambda: run("view", r, "--out", tmp_path / "page.html"))
    assert_one_line_error(code, err, str(fifo), "FIFO", "not a regular file")
    assert not (tmp_path / "page.html").exists()
    # the loader says the same to a notebook
    from probegen.errors import ProbegenError
    from probegen.view.load import load_runs

    with pytest.raises(ProbegenError, match="FIFO"):
        within(fifo, lambda: load_runs([r]))


def test_view_refuses_a_fifo_inside_a_dataset_folder(tmp_path):
    ds = tmp_path / "ds"
    ds.mkdir()
    fifo = fifo_at(ds / "items.jsonl")
    r = made_run(tmp_path / "run", ds)
    code, _, err = within(fifo, lambda: run("view", r, "--out", tmp_path / "page.html"))
    assert_one_line_error(code, err, str(fifo), "not a regular file")


def test_make_spec_refuses_a_fifo(tmp_path):
    fifo = fifo_at(tmp_path / "probe.yaml")
    code, out, err = within(fifo, lambda: run("make", "spec", fifo, "--check"))
    assert_one_line_error(code, err, str(fifo), "FIFO", "not a regular file")
    assert out == ""


def test_every_reader_refuses_a_fifo_unread(tmp_path):
    """The io readers every loader goes through: one error naming the path, never a wait."""
    from probegen import io
    from probegen.errors import ProbegenError
    from probegen.spec.schema import read_raw

    fifo = fifo_at(tmp_path / "rows.jsonl")
    for name, call in {"read_text": lambda: io.read_text(fifo), "read_bytes": lambda: io.read_bytes(fifo, 10),
                       "iter_jsonl": lambda: list(io.iter_jsonl(fifo)), "first_jsonl_row": lambda: io.first_jsonl_row(fifo),
                       "read_manifest": lambda: io.read_manifest(fifo), "sha256_file": lambda: io.sha256_file(fifo),
                       "read_raw": lambda: read_raw(fifo)}.items():
        with pytest.raises(ProbegenError, match="FIFO") as e:
            within(fifo, call)
        assert str(fifo) in str(e.value) and "\n" not in str(e.value), name
    # a dataset detected at a FIFO: one line, unread
    from probegen import tasks

    with pytest.raises(ProbegenError, match="not a regular file"):
        within(fifo, lambda: tasks.detect(fifo))
    # a folder is still the error open() gives, and a regular file is read as before
    with pytest.raises(ProbegenError, match="cannot read .*: Is a directory"):
        io.read_text(tmp_path)
    (tmp_path / "ok.jsonl").write_text('{"a": 1}\n')
    assert io.read_jsonl(tmp_path / "ok.jsonl") == [{"a": 1}] and io.first_jsonl_row(tmp_path / "ok.jsonl") == {"a": 1}


def test_option_files_refuse_a_fifo(tmp_path):
    """Files named by an option: --prompts, --templates."""
    from probegen.errors import ProbegenError
    from probegen.generate.prompts import prompt_templates
    from probegen.templating import question_templates

    fifo = fifo_at(tmp_path / "templates.yaml")
    for call in (lambda: prompt_templates(str(fifo)), lambda: question_templates("en", str(fifo))):
        with pytest.raises(ProbegenError, match="FIFO") as e:
            within(fifo, call)
        assert str(fifo) in str(e.value)


def test_an_output_whose_marker_is_a_fifo_is_refused_not_waited_on(tmp_path):
    """probegen's own records in a folder the user names (the marker an output is replaced by)."""
    from probegen.errors import ProbegenError
    from probegen.io import MARKER, ensure_writable

    out = tmp_path / "out"
    out.mkdir()
    fifo = fifo_at(out / MARKER)
    with pytest.raises(ProbegenError, match="probegen did not write it"):
        within(fifo, lambda: ensure_writable(out, replace=True))


# ---- /dev/zero (a child process: the old code read it until memory ran out) ------------------------------
CHILD = """
import json, sys
from click.testing import CliRunner
from probegen.commands.cli import cli
out = {}
for name, args in json.loads(sys.argv[1]).items():
    r = CliRunner().invoke(cli, args)
    out[name] = [r.exit_code, r.stderr, type(r.exception).__name__ if r.exception is not None else None]
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_refused_unread(tmp_path):
    import resource

    r = made_run(tmp_path / "run", "/dev/zero")
    calls = {"view": ["view", str(r), "--out", str(tmp_path / "page.html")],
             "spec": ["make", "spec", "/dev/zero", "--check"]}

    def cap() -> None:  # what the child may map: its imports fit, gigabytes of zeros do not
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    try:
        p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(calls)], capture_output=True, text=True,
                           timeout=240, preexec_fn=cap, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("reading /dev/zero did not stop within 240 s")
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    for name in calls:
        code, err, exc = got[name]
        assert exc in (None, "SystemExit"), (name, exc, err)
        assert_one_line_error(code, err, "/dev/zero", "character device", "not a regular file")
    assert not (tmp_path / "page.html").exists()


# ---- view: no traceback, no silent page ----------------------------------------------------------------------
def test_view_of_a_symlink_loop_is_one_line(tmp_path):
    loop = tmp_path / "run"
    loop.symlink_to(tmp_path / "run")
    code, _, err = run("view", loop, "--out", tmp_path / "page.html")
    assert_one_line_error(code, err, str(loop), "loop of symbolic links")
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    code, _, err = run("view", a, "--out", tmp_path / "page.html")
    assert_one_line_error(code, err, str(a), "loop of symbolic links")


def test_view_of_an_incomplete_run_is_one_line_naming_the_file_and_the_counts(tmp_path):
    r = made_run(tmp_path / "run", tmp_path / "gone.jsonl", rows=0, recorded=5)
    code, _, err = run("view", r, "--out", tmp_path / "page.html")
    line = assert_one_line_error(code, err, str(r / "items.jsonl"), "holds 0 row(s)", "counts 5", "incomplete")
    assert str(r / "results.json") in line
    assert not (tmp_path / "page.html").exists()
    # two of five rows: the same; all five: the page is written
    r2 = made_run(tmp_path / "run2", tmp_path / "gone.jsonl", rows=2, recorded=5)
    code, _, err = run("view", r2, "--out", tmp_path / "page.html")
    assert_one_line_error(code, err, "holds 2 row(s)", "counts 5")
    r3 = made_run(tmp_path / "run3", tmp_path / "gone.jsonl", rows=5)
    code, _, err = run("view", r3, "--out", tmp_path / "page.html")
    assert code == 0, err
