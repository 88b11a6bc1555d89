"""Issue 35 §2/§5: one validation of one request for the notebook calls and the command line.

Every option of ``eval`` and ``bias`` is walked: a bad value given on the command line and the same
value given to :func:`probegen.score` / :func:`probegen.bias` fail with the same message, before any
work (no model is loaded, nothing is written). The notebook call raises a ``TypeError`` for a wrong
type and a ``ValueError`` for a value out of range, naming the argument.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import probegen
from probegen import request_options as opts
from probegen.commands.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"

#: bad values per request field: (command-line text, the same value as a notebook argument)
BAD: dict[str, list[tuple[str, object]]] = {
    "seed": [("-1", -1), (str(2**70), 2**70), ("abc", "abc")],
    "n_boot": [("1", 1), ("0", 0), ("-5", -5), ("99999999999999999999", 99999999999999999999),
               ("1000000000", 1000000000), ("abc", "abc")],
    "limit": [("0", 0), ("2.5", "2.5"), ("x", "x")],
    "sample": [("0", 0), ("-3", -3)],
    "batch_size": [("0", 0), ("q", "q")],
    "permutations": [("0", 0), ("101", 101), ("all", "all")],
    "debias_share": [("0", 0), ("1", 1), ("1.5", 1.5), ("nan", float("nan")), ("x", "x")],
    "method": [("nosuch", "nosuch")],
    "scorer": [("lstm", "lstm")],
    "reduction": [("max", "max")],
    "matching": [("greedy", "greedy")],
    "length_norm": [("bytes", "bytes")],
    "split": [("val", "val")],
    "pll": [("word-r2l", "word-r2l")],
    "on_invalid": [("ignore", "ignore")],
    "nonce": [("", "")],
    "pattern": [(" ", " ")],
    "probe": [("", "")],
    "prompts": [("", "")],
    "folds": [("1", 1), ("101", 101)],
    "seeds": [("0", 0)],
    "device": [("tpu", "tpu"), ("cuda:x", "cuda:x")],
    "dtype": [("float8", "float8")],
    "adaptive": [("", "")],
    "budget": [("0", 0), ("-2", -2)],
    "target_se": [("0", 0), ("nan", float("nan")), ("-0.1", -0.1)],
    "batch_items": [("0", 0)],
    "randomesque": [("0", 0)],
}
#: notebook-only bad values (a type the command line cannot express): the message names the argument
NOTEBOOK_ONLY: dict[str, list[object]] = {
    "seed": [True, 1.0, None], "n_boot": [2.0, True], "limit": [2.5, "3"], "controls": ["yes", 1],
    "finetune": [None], "human": ["study-dir"], "permutations": [2.0], "method": [3],
}
#: click parameters that are not request fields (the device options a notebook call does not take:
#: ``score``/``bias`` take device and dtype) and the flags whose bad values click itself refuses
NOT_NOTEBOOK = {"device_map", "max_batch_tokens", "api_base", "api_key_env", "concurrency", "api_timeout"}


def _param_names(command: click.Command) -> set[str]:
    return {p.name for p in command.params if p.name}


def _field(command: str, param: str) -> str:
    return {"release_probe": "probe", "prompts_file": "prompts"}.get(param, param)


def _flag(command: click.Command, name: str) -> str:
    return next(p.opts[0] for p in command.params if p.name == name)


def _cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.stderr


@pytest.fixture(autouse=True)
def _no_model(monkeypatch):
    """No model may load or resolve while options are checked: every failure comes before any work."""
    def never(*a, **k):
        raise AssertionError("a model was loaded or resolved before the options were checked")

    monkeypatch.setattr("probegen.models.load_scorer", never)
    monkeypatch.setattr("probegen.models.resolve_model", never)


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_every_option_of_the_command_is_in_the_one_table(command):
    """A new option of eval or bias must be added to the table (and so get one range and one message)."""
    cmd = cli.commands[command]
    table = {o.name for o in (opts.EVAL_OPTIONS if command == "eval" else opts.BIAS_OPTIONS)}
    table |= {o.name for o in opts.RUNTIME_OPTIONS}
    fields = {_field(command, n) for n in _param_names(cmd)} - NOT_NOTEBOOK
    if command == "bias":
        fields = {"datasets" if f == "datasets" else f for f in fields}
    assert fields <= table, sorted(fields - table)
    assert fields - {"model", "dataset", "datasets", "out", "human", "beside", "controls", "finetune"} <= set(BAD), \
        sorted(fields - set(BAD))


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_a_bad_value_fails_with_one_message_through_the_cli_and_the_notebook_call(command, tmp_path):
    cmd = cli.commands[command]
    call = probegen.score if command == "eval" else probegen.bias
    names = {_field(command, n): n for n in _param_names(cmd)}
    walked = 0
    for field, values in BAD.items():
        if field not in names:
            continue
        flag = _flag(cmd, names[field])
        for text, value in values:
            out = tmp_path / f"{field}-{walked}"
            with pytest.raises((TypeError, ValueError)) as caught:
                call("glove-50d", DATA, out=out, **{field: value})
            message = str(caught.value)
            assert message.startswith(f"{field} ({flag})"), message
            code, err = _cli(command, "--model", "glove-50d", "--dataset", DATA, "--out", out, flag, text)
            assert code == 2 and "Traceback" not in err, (flag, text, err)
            assert message in " ".join(err.split()), (flag, text, message, err)
            assert not out.exists()
            walked += 1
    assert walked >= (20 if command == "eval" else 18)


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_the_notebook_call_names_the_argument_of_a_wrong_type(command, tmp_path):
    call = probegen.score if command == "eval" else probegen.bias
    table = {o.name for o in (opts.EVAL_OPTIONS if command == "eval" else opts.BIAS_OPTIONS)}
    for field, values in NOTEBOOK_ONLY.items():
        if field not in table:
            continue
        for value in values:
            with pytest.raises((TypeError, ValueError), match=rf"^{field} \(--"):
                call("glove-50d", DATA, out=tmp_path / "x", **{field: value})
    for model, dataset, name in ((None, DATA, "model"), (["glove-50d"], DATA, "model"), ("glove-50d", None, "dataset"),
                                 (42, DATA, "model")):
        with pytest.raises(TypeError, match=rf"^{name} \(--"):
            call(model, dataset, out=tmp_path / "x")
    assert not (tmp_path / "x").exists()


def _bootstrap_params():
    """Every command's --bootstrap (walked, so a new one is covered too)."""
    found = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))
        found.extend((path, p) for p in cmd.params if p.name == "n_boot")

    walk(cli, ())
    return found


def test_bootstrap_is_bounded_everywhere_it_is_taken():
    """eval, bias, compare, items and study score take --bootstrap: the same bound and message."""
    params = _bootstrap_params()
    assert {path for path, _ in params} >= {("eval",), ("bias",), ("compare",), ("items",), ("study", "score")}
    for _, param in params:
        with pytest.raises(click.BadParameter, match=r"n_boot \(--bootstrap\) must be an integer from 2 to 100000"):
            param.type.convert("1000000000", param, None)


def test_the_option_table_rejects_what_it_should():
    assert opts.N_BOOT.check(2) == 2 and opts.N_BOOT.check(100_000) == 100_000
    assert opts.PERMUTATIONS.check("rotations") == "rotations"
    assert opts.HUMAN.check(["a", Path("b")]) == ("a", "b")
    assert opts.DEBIAS_SHARE.parse("0.05") == 0.05
    with pytest.raises(ValueError, match="finite"):
        opts.DEBIAS_SHARE.check(float("inf"))
    with pytest.raises(TypeError):
        opts.CONTROLS.check(None)
