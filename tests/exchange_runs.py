"""Real runs the exchange tests export and read back (tests/test_exchange_*.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from probegen.commands.cli import cli

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / \
    "definitions-train-sample.jsonl"


def invoke(*args: str):
    """``probegen ARGS`` in-process (exceptions propagate: a traceback is a test failure)."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def glove_coda_run(clean_hard_nouns, tmp_path_factory, groups: int) -> Path:
    """A real CoDA21 eval run (glove-50d, the first ``groups`` clean-hard noun groups): items are
    group rows ``<group>#<row>``."""
    from probegen.coda21.dataset import Coda21Dataset, write

    ds = write(Coda21Dataset(clean_hard_nouns.groups[:groups], clean_hard_nouns.manifest),
               tmp_path_factory.mktemp("coda") / f"coda-{groups}")
    out = ds.parent / "run"
    r = invoke("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
    assert r.exit_code == 0, r.output
    return out


def glove_wnqa_run(tmp_path_factory) -> Path:
    """A real `probegen eval` run: GloVe on the 40 WordNetQA release-sample definition questions."""
    out = tmp_path_factory.mktemp("runs") / "glove"
    r = invoke("eval", "--model", "glove-50d", "--dataset", str(SAMPLE), "--out", str(out))
    assert r.exit_code == 0, r.output
    return out
