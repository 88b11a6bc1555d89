"""The README's CLI promises: every command's --help has examples, and the documented exit codes."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from probegen.commands.cli import cli


def _commands(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.commands):
            out += _commands(cmd.commands[name], path + (name,))
    return out


COMMANDS = _commands(cli)


def test_the_walk_finds_every_command():
    names = {" ".join(p) for p in COMMANDS}
    assert {"", "data", "models", "make", "make coda21", "make wordnetqa", "stats", "export", "eval", "plot-group",
            "bias", "compare", "filter"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "probegen")
def test_help_has_examples(path):
    r = CliRunner().invoke(cli, [*path, "--help"])
    assert r.exit_code == 0, r.output
    text = r.output
    assert "Examples:" in text, f"`probegen {' '.join(path)} --help` has no Examples block"
    block = text.split("Examples:", 1)[1]
    assert "probegen" in block  # the examples are commands, not prose


@pytest.mark.parametrize(
    "args",
    [
        ["no-such-command"],
        ["eval", "--dataset", "x"],  # a required option missing
        ["eval", "--model", "m", "--dataset", "x", "--reduction", "median"],  # not one of the choices
        ["stats", "--no-such-option", "x"],
        ["make", "coda21", "--pos", "adverb"],
    ],
    ids=["unknown-command", "missing-option", "bad-choice", "unknown-option", "bad-subcommand-choice"],
)
def test_usage_errors_exit_2(args):
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert "Usage:" in r.stderr and "Error:" in r.stderr


def test_expected_failures_exit_1_with_one_line(tmp_path):
    r = CliRunner().invoke(cli, ["stats", str(tmp_path / "missing")])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and lines[0].startswith("probegen: error:"), r.output
