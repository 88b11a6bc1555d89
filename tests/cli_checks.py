"""The CLI as the tests drive it: in-process runs and the one-line error contract, shared by every
test module that checks what a user sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from click.testing import CliRunner


def run(*args: Any, env: dict | None = None) -> tuple[int, str, str]:
    """Run ``probegen ARGS`` in-process; (exit code, stdout, stderr). An exception that escaped the
    CLI (a would-be traceback) fails the test at once."""
    from probegen.commands.cli import cli

    r = CliRunner().invoke(cli, [str(a) for a in args], env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


def assert_one_line_error(code: int, err: str, *needles: str, status: int = 1) -> str:
    """Exit ``status``, and stderr ends with exactly one ``probegen: error:`` line containing every
    needle (progress lines of the work done before the failure may precede it; no traceback)."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("probegen: error:")]
    assert code == status and len(errors) == 1 and lines[-1] == errors[0], (code, err)
    assert "Traceback" not in err
    for n in needles:
        assert n in errors[0], errors[0]
    return errors[0]


def never(name: str) -> Callable[..., Any]:
    """A stand-in for an expensive step that the test says must not run."""

    def fail(*a: Any, **k: Any) -> Any:
        raise AssertionError(f"{name} ran although the input or output should have been refused first")

    return fail


def linked_cache(home: Path, fresh: tuple[str, ...] = ("scores.sqlite", "responses.sqlite")) -> Path:
    """``home`` made a probegen cache (``PROBEGEN_CACHE``) that links to the user's converted models and
    parsed data, with no entry whose name starts with one of ``fresh`` (those caches start empty)."""
    from probegen.paths import cache_dir

    home.mkdir(parents=True, exist_ok=True)
    for f in cache_dir().glob("*"):
        if not f.name.startswith(fresh):
            (home / f.name).symlink_to(f.resolve())
    return home
