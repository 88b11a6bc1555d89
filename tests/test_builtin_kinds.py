"""The built-in dataset kinds are plugins of the core (issue 49 §1): they register through the entry-point
group a third party uses, the registry imports none of them, and the spec schema and the registry do not
import each other as a side effect."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from probegen import tasks
from probegen.errors import ProbegenError
from probegen.plugins import Registry

BUILTIN = {"coda21", "wordnetqa", "wic", "wsd", "label"}


def test_every_builtin_kind_is_an_entry_point_of_the_plugin_group():
    eps = {ep.name: ep.value for ep in entry_points(group=tasks.ENTRY_POINT_GROUP)}
    assert BUILTIN <= set(eps), "reinstall (make install): the installed metadata lacks the built-in kinds"
    assert all(eps[k].startswith("probegen.") and ".tasks." not in eps[k] for k in BUILTIN)  # in their folders


def test_the_registry_knows_no_kind_without_its_entry_points(monkeypatch):
    """No list of built-ins hides in the registry: with an empty entry-point group it holds no kind."""
    empty = Registry("task", tasks.ENTRY_POINT_GROUP, tasks.resolve)
    empty.entry_points = lambda group: []
    monkeypatch.setattr(tasks, "REGISTRY", empty)
    assert tasks.all_tasks() == []
    with pytest.raises(ProbegenError, match="unknown dataset kind 'coda21'"):
        tasks.get("coda21")


@pytest.mark.parametrize("module,absent", [
    ("probegen.tasks", ("probegen.coda21", "probegen.wordnetqa", "probegen.wordincontext", "probegen.spec")),
    ("probegen.spec.schema", ("probegen.tasks",)),
])
def test_importing_a_core_module_imports_no_kind_and_no_registry_side_effect(module, absent):
    """At run time, not only in the source: importing the registry loads no kind and no spec module, and
    the spec schema loads the registry only when a spec is read (no import cycle, no rebinding)."""
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith({absent!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"importing {module} imported {out}"
