"""The command line: help is instant, bad input gives one clear line and a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run

ROOT = Path(__file__).resolve().parent.parent


def test_help_lists_commands_with_examples():
    code, out, _ = run("--help")
    assert code == 0
    for cmd in ("make", "eval", "stats", "export", "data", "models"):
        assert cmd in out
    code, out, _ = run("make", "coda21", "--help")
    assert code == 0 and "Examples" in out and "--easy" in out


def test_help_does_not_import_torch():
    code = "import sys; from probegen.commands.cli import cli; from click.testing import CliRunner; CliRunner().invoke(cli, ['--help']); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_data_is_one_line(tmp_path):
    code, _, err = run("--wordnet", str(tmp_path / "nowhere"), "data")
    assert_one_line_error(code, err, "WordNet")


def test_malformed_dataset_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(bad), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "not valid JSON")
    assert not (tmp_path / "o" / "results.json").exists()


def _tiny_dataset(path: Path, k: int) -> Path:
    path.mkdir()
    items = [
        {"synset": f"s{i}.n.01", "lemma": f"s{i}", "definition": f"thing {i}", "context": {"text": f"a w{i} b", "char_span": [2, 2 + len(f'w{i}')]}}
        for i in range(k)
    ]
    (path / "groups.jsonl").write_text(json.dumps({"id": "g", "pos": "n", "ancestor": "a.n.01", "relation": "parent", "items": items}) + "\n")
    return path


def test_empty_and_oversized_groups_are_one_line(tmp_path):
    for k in (1, 40):
        d = _tiny_dataset(tmp_path / f"d{k}", k)
        code, _, err = run("stats", str(d))
        assert_one_line_error(code, err, "group g")


@pytest.mark.real
def test_unknown_model_is_one_line(tmp_path):
    d = _tiny_dataset(tmp_path / "d", 5)
    code, _, err = run("eval", "--model", "no-such-model-xyz", "--dataset", str(d), "--out", str(tmp_path / "o"), env={"HF_HUB_OFFLINE": "1"})
    assert_one_line_error(code, err, "no-such-model-xyz")


def test_unwritable_output_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run("make", "coda21", "--out", str(blocker / "sub"))
    assert_one_line_error(code, err, "cannot write")


def test_console_script_exit_code(tmp_path):
    """The installed `probegen` entry point exits non-zero with one line on stderr."""
    exe = Path(sys.executable).parent / "probegen"
    if not exe.exists():
        pytest.skip("console script not installed (run `make install`)")
    r = subprocess.run([str(exe), "--wordnet", str(tmp_path / "nope"), "data"], capture_output=True, text=True)
    assert r.returncode == 1
    assert_one_line_error(r.returncode, r.stderr)


@pytest.mark.parametrize("probe", ["coda21", "wordnetqa"])
def test_unknown_reference_model_fails_before_generation(probe, tmp_path):
    code, _, err = run("make", probe, "--adversarial", "--against", "no-such-model-xyz", "--out", str(tmp_path / "d"),
                       env={"HF_HUB_OFFLINE": "1"})
    assert_one_line_error(code, err, "no-such-model-xyz")
    assert not (tmp_path / "d").exists()


def test_filter_and_compare_bad_input_is_one_line(tmp_path):
    code, _, err = run("filter", str(tmp_path / "missing"), "--artefacts", "--budget", "5")
    assert_one_line_error(code, err, "does not exist")
    code, _, err = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--model", "glove-50d", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "does not exist")


def test_progress_in_a_log_is_plain_lines(tmp_path):
    # stderr to a file (a Slurm or CI log): no carriage-return redraws, one line per update, the last at 100%
    import subprocess
    import sys

    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        r = subprocess.run([sys.executable, "-m", "probegen", "eval", "--model", "glove-50d", "--dataset",
                            str(Path(__file__).parent / "data" / "coda21_three_groups.json"), "--out", str(tmp_path / "o")],
                           stderr=fh, stdout=subprocess.DEVNULL, timeout=300)
    text = log.read_text()
    assert r.returncode == 0, text
    assert "\r" not in text
    bars = [ln for ln in text.splitlines() if ln.startswith("scoring with glove-50d")]
    assert bars and "100%" in bars[-1], text


def test_an_error_line_stays_one_line_whatever_it_quotes(capsys):
    """Every character str.splitlines() breaks at is escaped, and no blank ends the line (the reader
    fuzzer found a form feed-like separator and a blank value each splitting or padding the line)."""
    import pytest as _pytest

    from probegen.commands.cli import _fail

    with _pytest.raises(SystemExit) as e:
        _fail("bad id 'a\nb\x1cc\u2028d\x85e' got  ")
    err = capsys.readouterr().err
    assert e.value.code == 1 and len(err.strip().splitlines()) == 1 and err.strip().splitlines()[0] == err.rstrip("\n")
    assert "\\x1c" in err and "\\u2028" in err and err.endswith("got\n")
