"""What a dataset kind may do beyond the minimum: one small abstract subclass of :class:`~probegen.tasks.base.Task`
per capability, each adding one command's hooks (generic over the kind's dataset class). A kind derives from those it
implements; a command checks ``isinstance`` (:func:`probegen.tasks.check_options`): one line before any work.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence, cast

from ..errors import ProbegenError
from ..settings import Settings
from .base import D, Fingerprinted, Log, Task, pick

if TYPE_CHECKING:
    import numpy as np

    from ..forms.split import Unit
    from ..runner import Runner
    from ..spec.schema import Spec, SpecSection
    from ..study.design import StudyConfig
    from .bias_inputs import FilterInputs


#: the options of ``eval`` and ``bias`` that a :class:`Subsettable` kind takes
SUBSET_OPTIONS = frozenset({"limit", "sample"})


class Subsettable(Task[D]):
    """``--limit``/``--sample`` cut this kind's datasets (a quick look at a big file: :meth:`subset`)."""

    #: the dataset's attribute holding its records in file order (or override :meth:`records`, :meth:`with_records`)
    records_attribute: ClassVar[str] = "records"
    #: what ``bias`` keeps whole when it takes a subset (its bootstrap cluster; default: one unit)
    cluster_name: ClassVar[str] = ""

    def accepts(self, option: str, command: str = "eval") -> bool:
        return (command in ("eval", "bias") and option in SUBSET_OPTIONS) or super().accepts(option, command)

    def records(self, data: D) -> list[Any]:
        """The dataset's records (its units: groups, items, pairs) in file order."""
        recs = getattr(data, self.records_attribute, None)
        if recs is None:
            raise ProbegenError(f"this {self.title or self.name} dataset has no {self.records_attribute!r} to cut "
                                "to a subset")
        return list(recs)

    def with_records(self, data: D, records: Sequence[Any]) -> D:
        """A copy of ``data`` holding only ``records``."""
        import copy
        import dataclasses

        field_name = getattr(data, "records_field", None)
        if field_name is not None and dataclasses.is_dataclass(data) and not isinstance(data, type):
            return dataclasses.replace(data, **{field_name: list(records)})
        if hasattr(data, "__dict__") and self.records_attribute in vars(data):
            out = copy.copy(data)
            setattr(out, self.records_attribute, list(records))
            return out
        raise ProbegenError(f"{self.title or self.name} dataset's {self.records_attribute!r} cannot be replaced by a "
                            "subset (it is not an attribute of the loaded object)")

    def cluster_of(self, record: Any) -> str:
        """The cluster ``record`` belongs to, kept whole by a ``bias`` subset (default: its own id)."""
        return str(getattr(record, "id", id(record)))

    def subset(self, data: D, how: str, n: int, seed: int = 0,
               whole: str = "unit") -> tuple[D, dict[str, Any]]:
        """(``data`` cut to ``n`` units or whole clusters, ``whole="cluster"``, by :func:`pick`; what was taken)."""
        recs = self.records(data)
        keys = [self.cluster_of(r) for r in recs] if whole == "cluster" else list(range(len(recs)))
        chosen = self.choose(recs, keys, how, n, seed)
        kept = [r for r, k in zip(recs, keys) if k in chosen]
        name = (self.cluster_name or self.unit_name) if whole == "cluster" else self.unit_name
        total = len(dict.fromkeys(keys))
        info: dict[str, Any] = {"how": how, "n": n, "unit": name, "of": total, "taken": len(chosen), "items": len(kept)}
        if how == "sample":
            info["seed"] = seed
        info["all"] = len(chosen) == total
        return (data if info["all"] else self.with_records(data, kept)), info

    def choose(self, records: Sequence[Any], keys: Sequence[Any], how: str, n: int, seed: int) -> set[Any]:
        """The keys (units or clusters, one per record) a subset keeps: :func:`pick` over all of them."""
        return pick(keys, how, n, seed)


class Writable(Task[D]):
    """The kind writes a loaded dataset as a dataset directory (what a filter or a spec build leaves)."""

    @abstractmethod
    def write(self, data: D, out: str | Path) -> Path:
        """Write ``data`` as a dataset directory at ``out``."""


class Filterable(Writable[D]):
    """``probegen filter --artefacts``: AFLite removes the units partial-input classifiers predict."""

    @abstractmethod
    def artefact_inputs(self, data: D) -> FilterInputs:
        """``data`` as AFLite reads it (views, concepts, and how to keep the rows the filter keeps)."""


class Buildable(Task[D]):
    """``probegen bias`` without ``--dataset`` generates a missing default dataset of this kind."""

    #: the default dataset's folder name (under ``probegen_out/datasets``), which :meth:`build_default` makes
    default_dataset: ClassVar[str]

    @abstractmethod
    def build_default(self, path: Path, wordnet: str | None, semcor: str | None, log: Log, runner: Runner) -> None:
        """Generate a missing default dataset of this kind at ``path`` (``runner`` loads its models)."""


class Exportable(Task[D]):
    """``probegen export``: the kind's release format, and ``lm-eval``/``hf`` from its docs."""

    #: options of ``probegen export`` that apply (the option names of the CLI, with ``_``)
    export_options: ClassVar[frozenset[str]] = frozenset()
    #: export formats (``lm-eval``, ``hf`` and the kind's release format) and the release one
    export_formats: ClassVar[tuple[str, ...]] = ("lm-eval", "hf")
    release_format: ClassVar[str | None] = None

    def accepts(self, option: str, command: str = "eval") -> bool:
        return (command == "export" and option in self.export_options) or super().accepts(option, command)

    @abstractmethod
    def export_docs(self, path: str | Path, split: str | None, seed: int | None, nonce: str | None,
                    pattern: str | None) -> tuple[D, list[dict[str, Any]], dict[str, Any]]:
        """(dataset, multiple-choice docs, export settings) for ``lm-eval`` and ``hf`` exports."""

    @abstractmethod
    def write_release(self, path: str | Path, out: str | Path, split: str | None) -> str:
        """Write the kind's release format to ``out``; the one-line summary."""

    def lm_eval_note(self) -> str:
        """A note for the lm-eval task config and README ("" for none)."""
        return ""

    def lm_eval_metric(self, eval_cmd: str, settings: dict[str, Any]) -> str:
        """How lm-eval's metrics relate to ``probegen eval`` (the README's paragraph)."""
        return f"lm-eval's `acc` is the accuracy of taking each doc's best choice; compare with `{eval_cmd}`."

    def hf_description(self) -> str:
        """What one row of the Hugging Face export is (the dataset card)."""
        return "One row per item: `choices` in the presented order, `gold` the answer's index."


class Studyable(Task[D]):
    """``probegen study make``: units sampled for annotators and rendered per condition."""

    #: options of ``probegen study make`` that apply
    study_options: ClassVar[frozenset[str]] = frozenset()

    def accepts(self, option: str, command: str = "eval") -> bool:
        return (command == "study" and option in self.study_options) or super().accepts(option, command)

    def fingerprint(self, data: D) -> str:
        """A hash of the dataset's content (recorded in studies)."""
        if not isinstance(data, Fingerprinted):
            raise ProbegenError(f"a {self.title or self.name} dataset has no fingerprint: the kind overrides "
                                "Studyable.fingerprint")
        return data.fingerprint

    @abstractmethod
    def study_pool(self, data: D, cfg: StudyConfig) -> tuple[list[Any], str, dict[str, int]]:
        """(units a study samples from, what they are called, skipped counts) for ``study make``."""

    @abstractmethod
    def study_view(self, data: D, unit: Any, condition: str, seed: int) -> dict[str, Any]:
        """What an annotator sees of ``unit`` in ``condition`` (:mod:`probegen.study.views`)."""

    @abstractmethod
    def study_gold(self, unit: Any, seed: int) -> dict[str, Any]:
        """The gold of ``unit`` kept apart from its views."""


class SpecBuildable(Writable[D]):
    """A probe spec of :attr:`spec_shape` (``probegen make spec``) builds a dataset of this kind."""

    #: the probe-spec shape that builds this kind (:mod:`probegen.spec.schema`), and its section's key
    spec_shape: ClassVar[str]

    @abstractmethod
    def spec_section(self) -> SpecSection:
        """The spec's section of :attr:`spec_shape`: fields, defaults and checks."""

    def spec_config(self, spec: Spec) -> Any:
        """The generator configuration of a spec of :attr:`spec_shape` (default: its section's ``config``)."""
        section = self.spec_section()
        if section.config is None:
            raise NotImplementedError(f"kind {self.name!r}: its spec section has no config")
        return section.config(spec)

    def build_from_spec(self, spec: Spec, cfg: Any, wordnet: str | None, semcor: str | None, progress: bool, log: Log,
                        runner: Runner) -> D:
        """Generate the dataset a spec declares (default: its section's ``build``)."""
        section = self.spec_section()
        if section.build is None:
            raise NotImplementedError(f"kind {self.name!r}: its spec section has no build")
        return cast(D, section.build(spec, cfg, wordnet, semcor, progress, log, runner))  # build: untyped

    def spec_models(self, spec: Spec) -> list[str]:
        """The models a spec build loads."""
        return []

    def built_summary(self, data: D) -> str:
        """One line on a freshly built dataset (``probegen make spec``)."""
        return f"{len(self.units(data, 'full', Settings()))} {self.unit_name}s"


class Formable(Task[D]):
    """``--forms K``: a built dataset is cut into parallel forms, disjoint by what :attr:`form_disjoint` names."""

    #: what a form unit is (kept whole) and what two forms may not share
    form_unit: ClassVar[str]
    form_disjoint: ClassVar[tuple[str, ...]]

    @abstractmethod
    def form_units(self, data: D, graph: Any, freq: dict[str, int] | None) -> list[Unit]:
        """The pool's units with their strata (``freq``: SemCor counts per synset, None without SemCor)."""

    @abstractmethod
    def form_synsets(self, data: D) -> list[str]:
        """The synsets a form asks about (two forms of one probe share none)."""


class Trainable(Task[D]):
    """The trained method fits a probe on items of :attr:`shape`; these hooks lay the items out."""

    #: the items' shape (their ``task`` field): :func:`probegen.tasks.task_of` finds the kind by it
    shape: ClassVar[str]
    #: an item holds a second context (encoded like the first); the probe scores each candidate choice
    second_context: ClassVar[bool] = False
    scores_choices: ClassVar[bool] = False
    #: the bias paper's BERT figures for this kind (the report's reference point), if it has any
    paper_bert: ClassVar[dict[str, Any] | None] = None

    @abstractmethod
    def trained_features(self, items: Sequence[Any], view: Callable[[Any], tuple[str, Any]],
                         vectors: Callable[[list[tuple[str, Any]]], np.ndarray]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X, y, group) of ``items``: ``view`` gives a context's (text, span), ``vectors`` encodes rows."""

    @abstractmethod
    def prior_correct(self, train: Sequence[Any], test: Sequence[Any], seed: int) -> np.ndarray:
        """Per test item: is the training data's prior (majority label or gold position) right?"""

    @abstractmethod
    def classifier_correct(self, clf: Any, X: np.ndarray, y: np.ndarray, groups: np.ndarray,
                           ids: Sequence[str] | None = None, seed: int = 0) -> np.ndarray:
        """Per test item: is a fitted classifier's decision right?"""

    @abstractmethod
    def gold_text(self, item: Any) -> str:
        """The item's gold label as text (label entropy)."""

    def sense_text(self, item: Any) -> str | None:
        """The sense an item's gold names when its meta records no synset (None: it names none)."""
        return None

    @abstractmethod
    def head_classes(self, train: Sequence[Any]) -> list[Any] | None:
        """The classes a fine-tuning head outputs (None: one score per choice)."""

    @abstractmethod
    def gold_index(self, item: Any, classes: Sequence[Any] | None) -> int:
        """The gold class index of ``item`` among ``classes``."""

    def bootstrap_unit(self, data: D) -> str:
        """What the trained method's bootstrap resamples."""
        return "unit (item's 'unit' field)"


#: the capability each command needs of a dataset's kind, and what its datasets cannot be without it
NEEDS: dict[str, tuple[type[Task], str]] = {
    "export": (Exportable, "exported"),
    "study": (Studyable, "made into a study"),
    "filter": (Filterable, "filtered"),
    "spec": (SpecBuildable, "built from a probe spec"),
    "forms": (Formable, "cut into parallel forms"),
}


def incapable(task: Task, command: str, path: str | Path | None = None) -> ProbegenError:
    """The one line that says the kind of ``task`` lacks the capability ``command`` needs (:data:`NEEDS`).

    >>> from probegen.tasks import get
    >>> print(incapable(get("wsd"), "export", "wsd-data"))
    wsd-data: datasets of kind 'wsd' cannot be exported (the kind does not implement Exportable)
    """
    capability, verb = NEEDS[command]
    where = f"{path}: " if path is not None else ""
    return ProbegenError(f"{where}datasets of kind {task.name!r} cannot be {verb} (the kind does not implement "
                         f"{capability.__name__})")
