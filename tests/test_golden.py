"""Every command's outputs on small real sets equal those recorded before the task registry and the
one runner (issue 17): the refactor changed no byte a user sees.

The canonical contents are compared exactly except floats, which may differ in the last bits on
another CPU (BLAS kernels differ by instruction set); ``PROBEGEN_GOLDEN_EXACT=1`` (set on the
machine that recorded them) compares the sha256s instead, i.e. byte for byte. Recording:
``PROBEGEN_GOLDEN_RECORD=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import golden_runs
import pytest
from cli_checks import run

LMF = Path(__file__).parent / "data" / "lmf" / "es-mini.xml"


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    from tiny_models import tiny_llama

    root = tmp_path_factory.mktemp("golden")
    tiny = tiny_llama(root / "tiny-llama")
    return golden_runs.produce(root / "w", tiny, str(LMF), run)


def test_every_command_output_is_unchanged(produced):
    if os.environ.get("PROBEGEN_GOLDEN_RECORD"):
        golden_runs.save(produced)
        pytest.skip("recorded the golden outputs")
    golden, hashes = golden_runs.load()
    assert sorted(produced) == sorted(golden)
    exact = bool(os.environ.get("PROBEGEN_GOLDEN_EXACT"))
    problems = []
    for step, got in produced.items():
        want = golden[step]
        if sorted(got["files"]) != sorted(want["files"]):
            problems.append(f"{step}: files {sorted(set(got['files']) ^ set(want['files']))}")
            continue
        for f, content in {"stdout": got["stdout"], **got["files"]}.items():
            if exact:
                if golden_runs.digest(content) != hashes[step][f]:
                    problems.append(f"{step}: {f} differs byte for byte")
            else:
                d = golden_runs.close(content, want["files"].get(f, want["stdout"]) if f != "stdout" else want["stdout"], f)
                if d:
                    problems.append(f"{step}: {d}")
    assert not problems, "\n".join(problems[:20])
