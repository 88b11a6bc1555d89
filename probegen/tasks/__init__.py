"""The task registry: every dataset kind probegen reads, and the one place that knows them.

``eval``, ``bias``, ``compare``, ``filter``, ``export``, ``stats`` and ``study`` ask the registry
for a dataset's :class:`~probegen.tasks.base.Task` (:func:`detect`) and let the task do what
differs by kind; nothing outside this package compares kind strings.

Every kind registers through the Python entry-point group ``probegen.tasks``, the way pytest
plugins do: the built-in ones (CoDA21 in :mod:`probegen.coda21.task`, multiple choice in
:mod:`probegen.wordnetqa.task`, word-in-context pairs, labels and WSD in
:mod:`probegen.wordincontext.task`) in probegen's own ``pyproject.toml``, a third party's in its::

    [project.entry-points."probegen.tasks"]
    synonym-pairs = "my_package.task:SynonymPairs"

where the object is a :class:`Task` subclass (or an instance). Entry points are loaded once, on
the first registry lookup; one that fails is one clear error naming it. A new kind needs only
:meth:`Task.claims`, :meth:`Task.load` and :meth:`Task.units` (core units per condition): the
base class evaluates, runs the zero-shot ablations and compares from those::

    class SynonymPairs(Task):
        name, title, conditions = "synonym-pairs", "synonym pairs", ("full", "context", "word")

        def claims(self, path): return (path / "pairs.jsonl").is_file()
        def load(self, path, ablations=False): ...      # an object with .manifest and the items
        def units(self, data, condition, settings, style="pattern"):
            return [Unit.choice(it.id, query(it, condition), it.choices, it.gold) for it in data.items]

What only some kinds do is a capability (:mod:`.capabilities`): an abstract subclass of
:class:`Task` with that command's hooks, which a kind derives from instead of (or beside) ``Task``:

- :class:`Subsettable` (``--limit``/``--sample`` of eval and bias): ``records_attribute``, or
  ``records``/``with_records``; ``cluster_of``/``cluster_name`` for bias subsets;
- :class:`Writable` (``write``), and :class:`Filterable` (``filter --artefacts``: ``write``,
  ``artefact_inputs``);
- :class:`Buildable` (``build_default``: ``bias`` generates a missing default dataset);
- :class:`Exportable` (``export``: ``export_docs``, ``write_release``, ``export_formats``,
  ``release_format``, ``export_options``, the lm-eval and HF texts);
- :class:`Studyable` (``study make``: ``study_pool``, ``study_view``, ``study_gold``,
  ``study_options``, ``fingerprint``);
- :class:`SpecBuildable` (``make spec``: ``spec_shape`` and its section, ``spec_section``;
  ``spec_config``, ``build_from_spec``, ``spec_models``, ``built_summary``, and ``write``).

A command that needs one checks it with the options (:func:`check_options`, :func:`check_capable`):
``probegen export`` on a kind that is not :class:`Exportable` is one line
(``DATA: datasets of kind 'synonym-pairs' cannot be exported (the kind does not implement
Exportable)``) before anything is read or written. ``class SynonymPairs(Subsettable)`` with
``records_attribute = "items"`` adds ``--limit``/``--sample`` to the kind above.

>>> [t.name for t in all_tasks()][:4]
['wic', 'wsd', 'label', 'coda21']
>>> get("coda21").title
'CoDA21'
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import DatasetError, ProbegenError
from ..plugins import load_plugins
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

__all__ = ["ENTRY_POINT_GROUP", "Buildable", "Dataset", "Evaluation", "Exportable", "Filterable", "Formable",
           "Settings", "SpecBuildable", "Studyable", "Subsettable", "Task", "Trainable", "Writable", "all_tasks",
           "check_capable", "check_dataset_options", "check_options", "detect", "for_spec_shape", "get", "incapable",
           "pick", "register", "subset_line", "task_of", "with_manifest"]

ENTRY_POINT_GROUP = "probegen.tasks"
#: option values that ask for nothing: given explicitly, they are no error for any kind
NEUTRAL = {"length_norm": "none", "pll": "original", "on_invalid": "error"}

_TASKS: dict[str, Task] = {}
_state = {"plugins": False}


def register(task: Task | type[Task]) -> Task:
    """Add a task (a :class:`Task` subclass or instance); its name must be new. Returns the instance."""
    t = resolve(task)
    name = getattr(t, "name", None)
    if not isinstance(name, str) or not name:
        raise ProbegenError(f"task {type(t).__name__} has no name")
    if name in _TASKS and type(_TASKS[name]) is not type(t):
        raise ProbegenError(f"task {name!r} is registered twice ({type(_TASKS[name]).__name__} and {type(t).__name__})")
    _TASKS[name] = t
    return t


def _plugins() -> None:
    """Register the entry points of group ``probegen.tasks`` (once all of them load)."""
    if _state["plugins"]:
        return
    load_plugins(entry_points(group=ENTRY_POINT_GROUP), "task", ENTRY_POINT_GROUP, resolve, register)
    _state["plugins"] = True  # a broken plugin fails every lookup, never only the first


def all_tasks() -> list[Task]:
    """Every registered task (built-in and plugins) in detection order."""
    _plugins()
    return sorted(_TASKS.values(), key=lambda t: t.priority)


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
    """The :class:`Trainable` kind that reads ``data`` (loaded items, or a dataset holding them), by
    their shape (``item.task``): the first in detection order that declares it."""
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
    """The task whose dataset ``path`` is.

    An interrupted write of ``path`` is finished first (:func:`probegen.io.recover`). A
    directory whose manifest names a kind goes to the task that reads that kind; anything else
    to the first task (in detection order) that claims its shape. A kind no task reads, or a
    path none claims, is one DatasetError naming the path and the known kinds.
    """
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
    """Reject a kind without the capability ``command`` needs (:data:`~probegen.tasks.capabilities.NEEDS`:
    export, study, filter) and an option the user gave that applies to none of ``tasks`` (one line
    each), then let each task check the values that apply to it.

    ``given`` maps option names (``length_norm``) to values; None means not given (a default is
    never an error). ``paths`` (one per task) name the datasets in the message.

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
    path of ``paths``) whose kind lacks the capability ``command`` needs; nothing for a command
    that needs none.

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
    """Detect every dataset of ``paths`` and :func:`check_options` against them; with no paths,
    against ``default_tasks`` (a command's default datasets; none: nothing is checked).
    Returns the tasks (one per path)."""
    tasks = [detect(p) for p in paths]
    if tasks:
        check_options(tasks, given, command, list(paths))
    elif default_tasks:
        check_options(list(default_tasks), given, command)
    return tasks
