"""Every docstring example in probegen/ and diagnostics/ runs, module by module.

Modules are discovered by walking the packages, so a new module's examples run without editing
this file; the counts below make sure the walk really finds and runs them (a parametrisation over
modules with no examples would pass while testing nothing).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import probegen
import probegen.diagnostics

# probegen.diagnostics lives in the repository's diagnostics/ (mapped in pyproject), so an editable
# install's walk of probegen does not see it: walk both, each module once
PACKAGES = (probegen, probegen.diagnostics)
# modules whose examples the suite once skipped or that once had none: each must keep some
MUST_HAVE_EXAMPLES = (
    "probegen.aligner",
    "probegen.text",
    "probegen.coda21.items",
    "probegen.contexts",
    "probegen.coda21.grouping",
    "probegen.wordnetqa.probes",
    "probegen.diagnostics.aflite",
    "probegen.diagnostics.report",
    "probegen.diagnostics.bias_plots",
    "probegen.run.run_bias",
)
MIN_TOTAL = 120  # examples across both packages (157 when written)


def _modules() -> list[str]:
    names = []
    for pkg in PACKAGES:
        names.append(pkg.__name__)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
    return sorted(set(names))


def _tests(name: str) -> list[doctest.DocTest]:
    mod = importlib.import_module(name)
    return [t for t in doctest.DocTestFinder().find(mod) if t.examples]


MODULES = _modules()
WITH_EXAMPLES = [m for m in MODULES if _tests(m)]


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in _tests(name):
        runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.attempted > 0
    assert res.failed == 0, f"{name}: {res.failed} of {res.attempted} docstring examples failed (see the output above)"


def test_examples_are_found_and_counted():
    total = sum(len(t.examples) for m in MODULES for t in _tests(m))
    assert total >= MIN_TOTAL, f"only {total} docstring examples found in probegen/ and diagnostics/"
    missing = [m for m in MUST_HAVE_EXAMPLES if m not in WITH_EXAMPLES]
    assert not missing, f"modules without docstring examples: {missing}"
