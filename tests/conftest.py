"""Shared fixtures. Real-data fixtures are session-scoped so WordNet/SemCor are parsed once."""

from __future__ import annotations

import pytest


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


def pytest_collection_modifyitems(config, items):
    """Run alone, the tests that need the vLLM server run last (in file order among themselves): the
    server starts when the first of them runs, so on a small machine it does not compete for the CPU
    with the rest of the suite while it warms up.

    Under ``pytest -n N --dist loadgroup`` (``make test``) the tests are grouped so that what is
    costly to set up is set up once: every test that needs the server in one group (one server, on
    one worker, first, with ``--no-loadscope-reorder``: its ~10 minutes overlap the rest, which the
    other workers take), and every other test with the rest of its module (module- and session-scoped
    fixtures such as the golden runs are built by one worker, not by each)."""
    # xdist's workers collect with dist "no" and its own flag set (xdist.remote.setup_config)
    grouped = bool(getattr(config.option, "loadgroup", False))
    items.sort(key=lambda item: ("vllm" in getattr(item, "fixturenames", ())) != grouped)
    if not grouped:
        return
    for item in items:
        served = "vllm" in getattr(item, "fixturenames", ())
        item.add_marker(pytest.mark.xdist_group("vllm" if served else item.nodeid.split("::")[0]))
