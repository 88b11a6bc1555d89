"""probegen.score / probegen.bias: the CLI's paths as functions, with the CLI's results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import probegen
from probegen.errors import ProbegenError

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"


def _cli(*args: str) -> None:
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.stderr


def _strip(results: dict) -> dict:
    """results.json without what differs between two runs (timings, the folder it was written to)."""
    return {k: v for k, v in results.items() if k not in ("run", "report", "plots")}


def test_score_equals_the_cli(tmp_path):
    data = RELEASE / "hyponymy-train-sample.jsonl"
    _cli("eval", "--model", "glove-50d", "--dataset", str(data), "--sample", "12", "--bootstrap", "300", "--out", str(tmp_path / "cli"))
    run = probegen.score("glove-50d", data, out=tmp_path / "api", sample=12, n_boot=300)
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert _strip(run.results) == _strip(cli)
    assert (tmp_path / "cli" / "items.jsonl").read_bytes() == (tmp_path / "api" / "items.jsonl").read_bytes()
    assert len(run.rows) == 12 and run.path == tmp_path / "api"


def test_bias_equals_the_cli(tmp_path):
    data = RELEASE / "definitions-train-sample.jsonl"
    _cli("bias", "--model", "glove-50d", "--dataset", str(data), "--limit", "10", "--bootstrap", "100", "--no-controls",
         "--out", str(tmp_path / "cli"))
    run = probegen.bias("glove-50d", data, out=tmp_path / "api", limit=10, n_boot=100, controls=False)
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert run.results["datasets"][0]["all"] == cli["datasets"][0]["all"]
    assert len(run.rows) == 10


def test_wrong_options_fail_as_on_the_command_line(tmp_path):
    data = RELEASE / "definitions-train-sample.jsonl"
    with pytest.raises(ProbegenError, match="--limit and --sample cannot be used together"):
        probegen.score("glove-50d", data, out=tmp_path / "a", limit=3, sample=3)
    with pytest.raises(TypeError, match="unknown options colour"):
        probegen.score("glove-50d", data, out=tmp_path / "b", colour="red")
    with pytest.raises(TypeError, match="unknown options depth"):
        probegen.bias("glove-50d", data, out=tmp_path / "c", depth=3)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
