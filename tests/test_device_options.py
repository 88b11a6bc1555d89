"""Every command that loads a model takes --device/--dtype/--device-map/--max-batch-tokens."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from probegen.commands.cli import cli

MODEL_COMMANDS = [
    ["eval", "--model", "glove-50d", "--dataset", "x"],
    ["bias", "--model", "glove-50d"],
    ["compare", "a", "b", "--model", "glove-50d"],
    ["filter", "x", "--artefacts", "--budget", "3"],
    ["make", "coda21"],
    ["make", "wordnetqa", "--adversarial"],
]


@pytest.mark.parametrize("args", MODEL_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_model_commands_have_the_device_options(args):
    r = CliRunner().invoke(cli, [*args, "--help"])
    assert r.exit_code == 0
    for opt in ("--device", "--dtype", "--device-map", "--max-batch-tokens"):
        assert opt in r.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
@pytest.mark.parametrize("args", MODEL_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_cuda_without_a_gpu_is_one_line_before_any_work(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be generated or written
    r = CliRunner().invoke(cli, [*args, "--device", "cuda"])
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.exit_code == 1 and len(lines) == 1 and "CUDA is not available" in lines[0], r.output
    assert not any(tmp_path.iterdir())
