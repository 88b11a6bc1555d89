"""The task registry: every dataset kind probegen reads, and the one place that knows them.

Commands ask the registry for a dataset's :class:`~probegen.tasks.base.Task` (:func:`detect`) and
let it do what differs by kind. Every kind, built-in or a third party's, registers through the
entry-point group ``probegen.tasks`` (``name = "package.module:TaskClass"``), loaded once on the
first lookup (docs/plugins.md). What only some kinds do is a capability (:mod:`.capabilities`) that
a command checks before any work (:func:`check_options`, :func:`check_capable`).

>>> [t.name for t in all_tasks()][:4]
['wic', 'wsd', 'label', 'coda21']
>>> get("coda21").title
'CoDA21'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import DatasetError, ProbegenError
from ..plugins import Registry
from ..settings import Settings
from .base import (
    COMMANDS,
    Dataset,
    Evaluation,
    Task,
    pick,
    resolve,
    subset_line,
    titles,
    with_manifest,
)
from .capabilities import (
    NEEDS,
    SUBSET_OPTIONS,
    Buildable,
    Exportable,
    Filterable,
    Formable,
    SpecBuildable,
    Studyable,
    Subsettable,
    Trainable,
    Writable,
    incapable,
)

__all__ = ["ENTRY_POINT_GROUP", "REGISTRY", "Buildable", "Dataset", "Evaluation", "Exportable", "Filterable",
           "Formable", "Settings", "SpecBuildable", "Studyable", "Subsettable", "Task", "Trainable", "Writable",
           "all_tasks", "check_capable", "check_dataset_options", "check_options", "detect", "for_spec_shape", "get",
           "incapable", "pick", "register", "subset_line", "task_of", "with_manifest"]

ENTRY_POINT_GROUP = "probegen.tasks"
#: option values that ask for nothing: given explicitly, they are no error for any kind
NEUTRAL = {"length_norm": "none", "pll": "original", "on_invalid": "error"}

REGISTRY: Registry[Task] = Registry("task", ENTRY_POINT_GROUP, resolve)  # the built-ins are entry points too


def register(task: Task | type[Task]) -> Task:
    """Add a task (a :class:`Task` subclass or instance); its name must be new. Returns the instance."""
    return REGISTRY.add(task)


def all_tasks() -> list[Task]:
    """Every registered task (built-in and plugins) in detection order."""
    return sorted(REGISTRY.all(), key=lambda t: t.priority)


def get(name: str) -> Task:
    """The task named ``name`` (a ProbegenError naming the known kinds otherwise)."""
    tasks = all_tasks()
    for t in tasks:
        if t.name == name:
            return t
    raise ProbegenError(f"unknown dataset kind {name!r}; known kinds: {', '.join(t.name for t in tasks)}")


def for_spec_shape(shape: str) -> SpecBuildable:
    """The task a probe spec of ``shape`` builds (one of the :class:`SpecBuildable` kinds)."""
    tasks = [t for t in all_tasks() if isinstance(t, SpecBuildable)]
    for t in tasks:
        if t.spec_shape == shape:
            return t
    raise ProbegenError(f"no dataset kind is built by spec shape {shape!r}; shapes: "
                        f"{', '.join(t.spec_shape for t in tasks)}")


def task_of(data: Any) -> Trainable:
    """The first :class:`Trainable` kind (detection order) whose shape is that of ``data``'s items
    (``item.task``; ``data``: the items or a dataset holding them)."""
    items = data if isinstance(data, (list, tuple)) else data.items
    shape = items[0].task if items else None
    for t in all_tasks():
        if isinstance(t, Trainable) and t.shape == shape:
            return t
    raise ProbegenError(f"no trainable dataset kind reads {shape!r} items")


def _manifest_kind(p: Path) -> str | None:
    from ..io import read_manifest

    mf = p / "manifest.json"
    return read_manifest(mf).get("kind") if p.is_dir() and mf.is_file() else None


def detect(path: str | Path) -> Task:
    """The task whose dataset ``path`` is: the one reading its manifest's kind, else the first (in
    detection order) that claims it; a DatasetError naming the known kinds otherwise."""
    from ..dataset import find

    p = find(path)
    tasks = all_tasks()
    known = ", ".join(t.name for t in tasks)
    kind = _manifest_kind(p)
    candidates = [t for t in tasks if kind in t.manifest_kinds()] if kind is not None else tasks
    for t in candidates:
        if t.claims(p):
            return t
    if kind is not None:
        raise DatasetError(f"{p}: manifest kind {kind!r} is not a dataset kind probegen knows ({known})")
    raise DatasetError(f"{p} is not a dataset of a kind probegen knows ({known}): no manifest.json naming its kind, "
                       "and not a file or folder layout any of them reads")


def check_options(tasks: Sequence[Task], given: Mapping[str, Any], command: str = "eval",
                  paths: Sequence[str | Path] = ()) -> None:
    """Reject a kind without the capability ``command`` needs and an option the user gave that applies
    to none of ``tasks`` (one line each), then let each task check its values. ``given``: option name
    (``length_norm``) -> value, None if not given; ``paths`` (one per task) name the datasets.

    >>> check_options([get("coda21")], {"pattern": "is", "split": None})
    >>> check_options([get("wic")], {"pattern": "is"}, paths=["wic-data"])
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --pattern applies to CoDA21 datasets only; wic-data is a WiC dataset
    """
    if command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}; choose from {', '.join(COMMANDS)}")
    check_capable(tasks, command, paths)
    # an option set to the value that asks for nothing (``--length-norm none``) applies anywhere
    given = {k: v for k, v in given.items() if v is not None and not (k in NEUTRAL and v == NEUTRAL[k])}
    for opt in given:
        if any(t.accepts(opt, command) for t in tasks):
            continue
        if command in ("eval", "bias") and opt in SUBSET_OPTIONS:
            cannot = [f"{p} is a {t.title or t.name} dataset" for p, t in zip(paths, tasks)
                      if not isinstance(t, Subsettable)] or \
                [f"{t.title or t.name} datasets" for t in tasks if not isinstance(t, Subsettable)][:1]
            raise ProbegenError(f"--{opt} cannot cut {', '.join(cannot)}: its kind names no records to take a subset "
                                "of (the kind does not implement Subsettable)")
        where = [t for t in all_tasks() if t.accepts(opt, command)]
        applies = (f"applies to {titles(where)} datasets only" if where
                   else f"applies to no dataset kind of probegen {command}")
        shown = [f"{p} is a {t.title or t.name} dataset" for p, t in zip(paths, tasks)]
        if not shown:
            shown = [f"this is a {t.title or t.name} dataset" for t in tasks[:1]]
        raise ProbegenError(f"--{opt.replace('_', '-')} {applies}; {', '.join(shown)}")
    for t in tasks:
        t.check_given({k: v for k, v in given.items() if t.accepts(k, command)}, command)


def check_capable(tasks: Sequence[Task], command: str, paths: Sequence[str | Path] = ()) -> None:
    """One line (:func:`~probegen.tasks.capabilities.incapable`) for the first of ``tasks`` (one per
    path of ``paths``) whose kind lacks the capability ``command`` needs.

    >>> check_capable([get("coda21")], "export")
    >>> check_capable([get("coda21"), get("wic")], "filter", ["c", "w"])
    Traceback (most recent call last):
    probegen.errors.ProbegenError: w: datasets of kind 'wic' cannot be filtered (the kind does not implement Filterable)
    """
    if command not in NEEDS:
        return
    capability = NEEDS[command][0]
    shown: list[str | Path | None] = [*paths, *[None] * (len(tasks) - len(paths))]
    for t, p in zip(tasks, shown):
        if not isinstance(t, capability):
            raise incapable(t, command, p)


def check_dataset_options(paths: Sequence[str | Path], given: Mapping[str, Any], command: str,
                          default_tasks: Sequence[Task] = ()) -> list[Task]:
    """The tasks of ``paths``, checked by :func:`check_options` (with no paths: ``default_tasks``)."""
    tasks = [detect(p) for p in paths]
    if tasks:
        check_options(tasks, given, command, list(paths))
    elif default_tasks:
        check_options(list(default_tasks), given, command)
    return tasks
