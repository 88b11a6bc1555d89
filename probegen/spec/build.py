"""Building a probe spec: each item shape is a kind's (the kind registers its section,
:meth:`probegen.tasks.SpecBuildable.spec_section`) and maps onto its generator, so a spec's output
is a dataset of that kind that ``probegen stats/eval/bias/export`` read unchanged. Built in:

- ``alignment`` -> :class:`probegen.coda21.config.Coda21Config` (members ``relation.hops`` steps of
  ``relation.name`` from a shared synset; ``min_semcor`` is the clean/noisy threshold);
- ``multiple_choice`` -> :class:`probegen.wordnetqa.config.WordNetQAConfig` (a built-in probe, or a
  relation probe whose templates the manifest records as ``probe_templates``);
- ``wic_pair`` -> :class:`probegen.wordincontext.wic.WicConfig`.

The manifest gets a ``spec`` block: the canonical JSON of the spec (as data) and its sha256.
Everything else in the output equals what the matching ``probegen make`` command writes.

The mapping of a shape is its kind's (:meth:`probegen.tasks.SpecBuildable.spec_config`,
:meth:`~probegen.tasks.SpecBuildable.build_from_spec`, in :mod:`probegen.coda21.spec`,
:mod:`probegen.wordnetqa.spec` and :mod:`probegen.wordincontext.spec`); this module dispatches
through the task the registry names for the spec's shape.
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
