"""The run of ``probegen filter --artefacts``: the dataset loaded, filtered (:mod:`probegen.diagnostics.filtering`)
and written as a new dataset."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from probegen import tasks
from probegen.diagnostics.aflite import FilterSettings
from probegen.diagnostics.filtering import check_holdout, filter_units


def filter_dataset(path: str | Path, out: Path, s: FilterSettings, log: Callable[[str], None] = print,
                   task: tasks.Task | None = None) -> dict[str, Any]:
    """Filter the dataset at ``path`` into ``out``; returns the manifest's ``filter`` record. ``task``: the
    dataset's task once the caller checked it and ``s`` (None: detected and checked here)."""
    if task is None:  # a direct library call (`probegen filter` checked its request already)
        check_holdout(s.holdout)
        task = tasks.detect(path)
    if not isinstance(task, tasks.Filterable):  # `probegen filter` checks it with its options
        raise tasks.incapable(task, "filter", path)
    data = task.load(path, ablations=True)
    record: dict[str, Any]
    kept, record = filter_units(task.artefact_inputs(data), task.name, s, path, data.manifest, log)
    manifest = {**data.manifest, "filter": record}
    manifest["counts"] = task.counts(kept)
    task.write(dataclasses.replace(kept, manifest=manifest), out)
    return record
