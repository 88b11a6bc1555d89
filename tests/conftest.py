"""Shared fixtures. Real-data fixtures are session-scoped so WordNet/SemCor are parsed once."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest


# ---- tiny random models (tests/tiny_models.py), one per test module that asks -------------------------
@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> str:
    """A random 2-layer Llama (RoPE, GQA) without BOS, saved as a local model directory."""
    import tiny_models

    return tiny_models.tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory) -> str:
    """A random 2-layer GPT-2 (absolute positions) whose tokenizer prepends BOS."""
    import tiny_models

    return tiny_models.tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    """A random 2-layer BertForMaskedLM with the real bert-base-uncased vocabulary (from MiniLM)."""
    import tiny_models

    return tiny_models.tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def graph():
    """The real WordNet 3.0 graph (built once, then cached in the user cache)."""
    from probegen.wordnet_graph import load_graph

    return load_graph()


@pytest.fixture(scope="session")
def clean_hard_nouns():
    """A real clean-hard noun CoDA21 set (first-context choice, so no LM is needed)."""
    from probegen.coda21.config import Coda21Config
    from probegen.coda21.dataset import build
    from probegen.runner import Runner

    return build(Coda21Config(easy=False, clean=True, pos=("n",), context_scorer="first"), progress=False, log=lambda m: None,
                 runner=Runner(log=lambda m: None))

# the headless-Chromium fixture of the study-page tests (tests/study_page.py)
from study_page import browser  # noqa: E402,F401

# the real vLLM server of the served-model tests (tests/vllm_server.py): one per test run
from vllm_server import vllm, vllm_server  # noqa: E402,F401

#: under xdist, the file where the workers list the tests that need the server (set by the controller)
SERVED_LIST = "PROBEGEN_TEST_SERVED_LIST"


def _served(item: pytest.Item) -> bool:
    return "vllm" in getattr(item, "fixturenames", ())


def pytest_configure(config):
    """Under ``pytest -n N --dist loadscope`` (``make test``), the controller names a file, before the
    workers start, in which they list the tests that need the vLLM server (see ServedTogether).

    Each worker (and what it starts: probegen subprocesses, the vLLM server) gets its share of the cores
    as its OpenMP/torch thread count: two workers with torch's default of every core each oversubscribe
    the CPU, and scoring SmolLM2 in two such processes at once took 16 s each instead of 4 s (2 cores)."""
    if hasattr(config, "workerinput"):
        share = max(1, (os.cpu_count() or 1) // int(config.workerinput.get("workercount", 1)))
        os.environ.setdefault("OMP_NUM_THREADS", str(share))
        if "torch" in sys.modules:  # imported before this hook: set its pool too
            sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        return
    if getattr(config.option, "dist", "no") != "loadscope":
        return
    fd, path = tempfile.mkstemp(prefix="probegen-served-", suffix=".txt")
    os.close(fd)
    os.environ[SERVED_LIST] = path
    config.add_cleanup(lambda: os.path.exists(path) and os.unlink(path))


def pytest_collection_modifyitems(config, items):
    """Run alone, the tests that need the vLLM server run last (in file order among themselves): the
    server starts when the first of them runs, so on a small machine it does not compete for the CPU
    with the rest of the suite while it warms up. Under xdist they run first, as one unit of work
    (ServedTogether), so their ~10 minutes overlap the rest, which the other workers take."""
    worker = hasattr(config, "workerinput")
    items.sort(key=lambda item: _served(item) != worker)
    path = os.environ.get(SERVED_LIST)
    if worker and path:
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write("".join(item.nodeid + "\n" for item in items if _served(item)))
        os.replace(tmp, path)  # every worker writes the same list; a reader never sees half of one


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` with one more scope: every test that needs the vLLM server is one unit
    (one server, on one worker); the rest are grouped by module as loadscope does, so module- and
    session-scoped fixtures (the golden runs, the model loads) are built by one worker, not by each.
    (xdist's own ``--dist loadgroup`` would do this with marks, but it silently stops grouping under
    pytest 9.2: pytest-dev/pytest-xdist#1386.)"""
    if getattr(config.option, "dist", "no") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ServedTogether(LoadScopeScheduling):
        served: set[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.served is None:  # read once every worker has collected (schedule() runs then)
                self.served = set(Path(os.environ[SERVED_LIST]).read_text().splitlines())
            return "vllm-server" if nodeid in self.served else nodeid.split("::")[0]

    return ServedTogether(config, log)
