"""Building a probe spec: each item shape is a kind's (:meth:`probegen.tasks.SpecBuildable.spec_config`,
:meth:`~probegen.tasks.SpecBuildable.build_from_spec`), so a spec's output is the dataset the matching
``probegen make`` writes, plus a manifest ``spec`` block (the spec's canonical JSON and its sha256).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .schema import Spec

if TYPE_CHECKING:
    from ..runner import Runner
    from ..tasks import SpecBuildable


@dataclass
class Built:
    """A spec's dataset: its kind (a task name: coda21, wordnetqa, wic) and the dataset object."""

    kind: str
    dataset: Any

    def write(self, out: str | Path) -> Path:
        return self.task().write(self.dataset, out)

    def summary(self) -> str:
        return self.task().built_summary(self.dataset)

    def task(self) -> "SpecBuildable":
        """The kind that built the dataset (:func:`build_spec` names a :class:`~probegen.tasks.SpecBuildable` one)."""
        from .. import tasks

        task = tasks.get(self.kind)
        if not isinstance(task, tasks.SpecBuildable):
            raise tasks.incapable(task, "spec")
        return task


def config_for(spec: Spec) -> Any:
    """The generator configuration a spec maps onto (checked: a bad value fails before any work)."""
    from .. import tasks

    cfg = tasks.for_spec_shape(spec.shape).spec_config(spec)
    cfg.validate()
    return cfg


def models_of(spec: Spec) -> list[str]:
    """The models a build loads (resolved up front, so an unknown name fails in a moment)."""
    from .. import tasks

    return tasks.for_spec_shape(spec.shape).spec_models(spec)


def build_spec(spec: Spec, wordnet: str | None = None, semcor: str | None = None, progress: bool = True,
               log: Callable[[str], None] = print, *, runner: Runner) -> Built:
    """Generate the dataset a spec declares (see the module docstring for the mapping); ``runner``
    (a :class:`~probegen.runner.Runner`) loads any model the build scores with."""
    from .. import tasks

    task = tasks.for_spec_shape(spec.shape)
    cfg = config_for(spec)
    record = {"name": spec.name, "sha256": spec.sha256, "spec": spec.to_dict()}
    ds = task.build_from_spec(spec, cfg, wordnet, semcor, progress, log, runner)
    ds.manifest["spec"] = record
    if spec.nonce:  # eval, bias and export read it back (probegen.templating.dataset_nonce)
        ds.manifest["nonce"] = spec.nonce
    return Built(task.name, ds)
