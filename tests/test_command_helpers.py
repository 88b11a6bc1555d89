"""What the commands share (commands/forms.py, options.py, cli.py): every folder a make command writes named
and checked before any work, eval's --method default read from the method registry, and the line a Ctrl-C
leaves per command."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from cli_checks import run
from click.testing import CliRunner

from probegen.commands.cli import cli
from probegen.commands.forms import make_outputs
from probegen.errors import ProbegenError

NO_DATA = {"wordnet": None, "semcor": None}


def test_make_outputs_names_every_folder_and_checks_each_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert make_outputs(None, "coda21-clean-hard", NO_DATA) == [Path("probegen_out", "datasets", "coda21-clean-hard")]
    out = str(tmp_path / "set")
    assert make_outputs(out, "x", NO_DATA, adversarial=True) == [tmp_path / "set", tmp_path / "set-twin"]
    assert make_outputs(out, "x", NO_DATA, n_forms=3) == [tmp_path / f"set-form{i}" for i in (1, 2, 3)]
    with pytest.raises(ProbegenError, match="--forms is not available with --adversarial"):
        make_outputs(out, "x", NO_DATA, n_forms=2, adversarial=True)
    with pytest.raises(ProbegenError, match="inside the input"):  # nor in an input (a spec file's folder)
        make_outputs(out, "x", NO_DATA, inputs=[str(tmp_path)])
    (tmp_path / "set-twin").mkdir()
    (tmp_path / "set-twin" / "notes.txt").write_text("not probegen's")
    with pytest.raises(ProbegenError):  # the twin too is checked before any work
        make_outputs(out, "x", NO_DATA, adversarial=True)
    assert make_outputs(out, "x", NO_DATA) == [tmp_path / "set"]


def test_eval_method_default_is_the_registrys_first_eval_method(monkeypatch):
    import probegen.methods

    command = cli.commands["eval"]
    param = next(p for p in command.params if p.name == "method")
    ctx = click.Context(command)
    assert param.get_default(ctx) == probegen.methods.names("eval")[0] == "score"
    monkeypatch.setattr(probegen.methods, "names", lambda command: ["letter", "score", "generate"])
    assert param.get_default(ctx) == "letter"
    help_text = " ".join(CliRunner().invoke(cli, ["eval", "--help"]).output.split())
    assert "the others. [default: letter]" in help_text


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("args, target, said", [
    (["stats", "x"], "probegen.tasks.detect", "interrupted"),
    (["eval", "--model", "glove-50d", "--dataset", "x"], "probegen.run.api.run_eval_request",
     "interrupted; no output was left half-written; scores computed so far are cached, so rerunning resumes"),
    (["make", "coda21", "--out", "x"], "probegen.commands.cli.make_outputs",
     "interrupted; no output was left half-written; any model scores computed so far are cached and reused by a "
     "rerun"),
], ids=["stats", "eval", "make"])
def test_ctrl_c_says_what_it_leaves_behind(monkeypatch, args, target, said):
    monkeypatch.setattr(target, _interrupt)
    code, _, err = run(*args)
    assert code == 130 and err.strip() == f"probegen: error: {said}", err
