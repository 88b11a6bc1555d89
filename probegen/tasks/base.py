"""The :class:`Task` base class: everything probegen knows about one dataset kind (a built-in or one
registered through the ``probegen.tasks`` entry-point group). It implements the generic path from
:meth:`Task.units` alone (evaluation, ablations, comparison, chance): a new kind needs :meth:`~Task.claims`,
:meth:`~Task.load` and :meth:`~Task.units` (:meth:`~Task.prompt_units` where a chat model is asked otherwise).
Capabilities: :mod:`probegen.tasks.capabilities`; bias hooks return plain data (:mod:`probegen.tasks.bias_inputs`).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Mapping, Protocol, Sequence, runtime_checkable

from typing_extensions import TypeVar

from ..errors import DatasetError, ProbegenError
from ..settings import Settings

if TYPE_CHECKING:
    from .bias_inputs import BiasInputs

Log = Callable[[str], None]
COMMANDS = ("eval", "bias", "export", "study", "filter")
#: a kind's dataset class (``Task[Coda21Dataset]``); a bare ``Task`` is ``Task[Any]``: any kind fits ``dict[str, Task]``
D = TypeVar("D", bound="Dataset", default=Any)


@runtime_checkable
class Dataset(Protocol):
    """What :meth:`Task.load` returns for every kind: an object with a ``manifest`` dict (``{}`` for a
    file that has none); checked on return (:meth:`Task.__init_subclass__`)."""

    manifest: dict[str, Any]


@runtime_checkable
class Fingerprinted(Protocol):
    """A dataset that hashes its own content (probegen's: :attr:`probegen.dataset.Dataset.fingerprint`)."""

    @property
    def fingerprint(self) -> str: ...


def with_manifest(data: Dataset, manifest: dict[str, Any]) -> Dataset:
    """A copy of ``data`` with ``manifest`` in place of its own."""
    import copy
    import dataclasses

    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return dataclasses.replace(data, manifest=manifest)
    out = copy.copy(data)
    out.manifest = manifest
    return out


def _checked_load(load: Callable[..., Any]) -> Callable[..., Any]:
    """``load`` that fails with one line when what it returns is no :class:`Dataset` (no manifest dict)."""

    @functools.wraps(load)
    def checked(self: Task, path: str | Path, *args: Any, **kwargs: Any) -> Dataset:
        data = load(self, path, *args, **kwargs)
        if not (isinstance(data, Dataset) and isinstance(data.manifest, dict)):
            raise DatasetError(f"{path}: the {self.name!r} kind's load returned a {type(data).__name__} without a "
                               "manifest dict (a loaded dataset has one: probegen.tasks.Dataset)")
        return data

    checked.__dict__["manifest_checked"] = True
    return checked


@dataclass
class Evaluation:
    """What :meth:`Task.evaluate` returns: per-unit rows (written to ``rows_file``), metrics and the
    ``eval`` block of results.json."""

    rows_file: str
    rows: list[dict[str, Any]]
    metrics: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)


class Task(ABC, Generic[D]):
    """One dataset kind; see the module doc."""

    #: the kind string (results.json ``dataset.kind``, registry key)
    name: ClassVar[str]
    #: how messages name the kind ("--pattern applies to CoDA21 datasets only")
    title: ClassVar[str] = ""
    #: what one unit of the kind is (a group, an item, a pair)
    unit_name: ClassVar[str] = "item"
    #: manifest ``kind`` values it reads (default: its name)
    kinds: ClassVar[tuple[str, ...]] = ()
    #: detection order: lower is asked first (built-ins with catch-all file rules ask last)
    priority: ClassVar[int] = 50
    #: options that apply, per command (the option names of the CLI, with ``_``)
    options: ClassVar[frozenset[str]] = frozenset({"scorer", "reduction", "nonce", "pll"})
    bias_options: ClassVar[frozenset[str]] = frozenset({"scorer", "reduction", "nonce", "method"})
    #: options that only a language model uses (rejected for embedding and static models)
    lm_only_options: ClassVar[tuple[str, ...]] = ()
    #: conditions :meth:`units` renders (``full`` first)
    conditions: ClassVar[tuple[str, ...]] = ("full",)
    #: False: evaluated by a trained probe (``diagnostics.trained``), not by scoring
    zero_shot: ClassVar[bool] = True
    #: bias ablation -> what it shows (None: one per condition, and ``label``: no input, chance computed)
    ablation_names: ClassVar[Mapping[str, str] | None] = None
    #: bias ratio -> its ablation (None: ``bias_c``, ``bias_w`` where their conditions exist)
    ratio_names: ClassVar[Mapping[str, str] | None] = None
    rows_file: ClassVar[str] = "items.jsonl"
    #: a unit's score is the mean of its items (CoDA21: a group's rows), not a count of items right
    unit_is_mean: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A kind's own ``load`` is wrapped to check that it returns a :class:`Dataset`."""
        super().__init_subclass__(**kwargs)
        load = cls.__dict__.get("load")
        if callable(load) and not getattr(load, "__isabstractmethod__", False) \
                and not getattr(load, "manifest_checked", False):
            cls.load = _checked_load(load)  # type: ignore[method-assign]  # wraps the subclass's own load once, at class creation

    def __repr__(self) -> str:
        return f"<task {self.name}>"

    # ---- detection, reading ------------------------------------------------------------------------
    def manifest_kinds(self) -> tuple[str, ...]:
        """The manifest kinds this task reads."""
        return self.kinds or (self.name,)

    @abstractmethod
    def claims(self, path: Path) -> bool:
        """True if ``path`` (it exists; a dataset directory or file) is a dataset of this kind."""

    def claims_directory(self, path: Path) -> bool:
        """A directory whose manifest names one of :meth:`manifest_kinds`, or (no kind) holds :attr:`rows_file`."""
        from ..io import read_manifest

        mf = path / "manifest.json"
        kind = read_manifest(mf).get("kind") if mf.is_file() else None
        return kind in self.manifest_kinds() or (kind is None and (path / self.rows_file).exists())

    @abstractmethod
    def load(self, path: str | Path, ablations: bool = False) -> D:
        """The dataset at ``path``, validated in full (``ablations``: every row one the ablations can cut)."""

    def validate(self, data: D) -> None:
        """Checks beyond those of :meth:`load` (none by default)."""

    def counts(self, data: D) -> dict[str, Any]:
        """The manifest's ``counts`` block of ``data``."""
        return {"units": len(self.units(data, self.conditions[0], Settings()))}

    # ---- options ----------------------------------------------------------------------------------
    def accepts(self, option: str, command: str = "eval") -> bool:
        """Whether ``option`` of ``command`` (:data:`COMMANDS`) applies to this kind."""
        return option in {"eval": self.options, "bias": self.bias_options}.get(command, frozenset())

    def check_given(self, given: Mapping[str, Any], command: str = "eval") -> None:
        """Checks of the option values the user set (``given``), e.g. two that contradict each other."""

    # ---- units, evaluation ------------------------------------------------------------------------
    def item_units(self, data: D) -> dict[str, str]:
        """Item id (as ``probegen.exchange.runs.record_cells`` names it) -> the unit its correctness counts in."""
        return {str(u.id): str(u.id) for u in self.units(data, "full", Settings())}

    @abstractmethod
    def units(self, data: D, condition: str, settings: Settings, style: str = "pattern") -> list[Any]:
        """The core units of ``data`` in ``condition``, queries rendered for a scorer of query ``style``."""

    def prompt_units(self, data: D, condition: str, settings: Settings) -> list[Any]:
        """The units as a chat model is asked them (the asking methods; by default :meth:`units`)."""
        return self.units(data, condition, settings)

    def scorer_units(self, data: D, condition: str, settings: Settings, scorer: Any) -> list[Any]:
        """The units ``scorer`` is given: :meth:`prompt_units` if it asks (keeps exchanges), else :meth:`units`."""
        from ..core import as_unit_scorer

        sc = as_unit_scorer(scorer)
        if sc.exchanges() is not None:
            return self.prompt_units(data, condition, settings)
        return self.units(data, condition, settings, sc.query_style)

    def scorer_reduction(self, reduction: str, settings: Settings) -> str:
        """The LM reduction to load the scorer with."""
        return reduction

    def evaluate(self, data: D, scorer: Any, settings: Settings, progress: bool = True) -> Evaluation:
        """Score and decide every unit of the full condition (``probegen eval``)."""
        from . import generic

        rows = generic.score_rows(self, data, scorer, ["full"], settings, progress)["full"]
        return Evaluation(self.rows_file, rows, generic.metrics(rows),
                          {"nonce": settings.nonce, "seed": settings.seed, "mode": "full"})

    def summary(self, model: str, metrics: dict[str, Any]) -> str:
        """The terminal table of ``probegen eval``."""
        from . import generic

        return generic.summary(model, metrics)

    # ---- bias, comparison -----------------------------------------------------------------------
    @property
    def ablations(self) -> dict[str, str]:
        """Bias ablation -> what it shows (:attr:`ablation_names`); ``label`` is computed, not scored."""
        if self.ablation_names is not None:
            return dict(self.ablation_names)
        return {**{c: f"{c} condition" for c in self.conditions}, "label": "no input: chance (computed)"}

    @property
    def ratios(self) -> dict[str, str]:
        """Bias ratio -> its ablation (:attr:`ratio_names`)."""
        if self.ratio_names is not None:
            return dict(self.ratio_names)
        return {k: v for k, v in (("bias_c", "context"), ("bias_w", "word")) if v in self.conditions}

    #: per stratum of :meth:`bias_inputs`, the ratios that measure nothing there and why
    excluded_ratios: ClassVar[Mapping[str, Mapping[str, str]]] = {}

    @property
    def resampling_unit(self) -> str:
        """What the bias bootstrap resamples."""
        return self.unit_name

    def select_split(self, data: D, split: str, name: str = "the dataset") -> D:
        """``data`` cut to one split (kinds without splits keep it whole; ``name``: for errors)."""
        return data

    def score_ablations(self, data: D, scorer: Any, settings: Settings, progress: bool = True,
                        evaluator: Callable[..., Any] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Every scored ablation's per-unit records, one request table (``evaluator``: a test stand-in)."""
        from . import generic

        return generic.score_rows(self, data, scorer, [a for a in self.ablations if a != "label"], settings, progress)

    def bias_inputs(self, data: D, records: dict[str, list[dict[str, Any]]]) -> BiasInputs:
        """What ``probegen bias`` measures of ``data`` scored into ``records`` (default: one unit per record)."""
        from .bias_inputs import BiasInputs, record_table

        return BiasInputs(table=lambda strata: record_table(records), unit=self.unit_name,
                          n_items=len(records["full"]))

    def decision(self, settings: Settings) -> str:
        """The decision rule of this kind's units under ``settings`` (:data:`probegen.core.DECISIONS`)."""
        return "argmax"

    def unit_correctness(self, data: D, scorer: Any, seed: int = 0,
                         progress: bool = True) -> dict[str, tuple[float, float]]:
        """Per unit id: (summed correctness, weight) of one model (``probegen compare``)."""
        return self.correctness(data, scorer, seed, progress)[0]

    def correctness(self, data: D, scorer: Any, seed: int = 0, progress: bool = True
                    ) -> tuple[dict[str, tuple[float, float]], list[tuple[str, str, float]]]:
        """Per unit (as :meth:`unit_correctness`) and per decision (unit, item, 1.0 right) for McNemar's test."""
        from ..templating import dataset_nonce
        from . import generic

        settings = Settings(nonce=dataset_nonce(data.manifest), seed=seed)
        rows = generic.score_rows(self, data, scorer, ["full"], settings, progress)["full"]
        units = {str(r["id"]): (float(r["correct"]), 1.0) for r in rows}
        return units, [(str(r["id"]), str(r["id"]), float(r["correct"] == 1.0)) for r in rows]

    def chance(self, data: D) -> float:
        """Random-guess accuracy over the dataset's units."""
        from . import generic

        return generic.chance(self.units(data, "full", Settings()))

    # ---- stats -------------------------------------------------------------------------------------
    def stats(self, path: str | Path, log: Log) -> str:
        """``probegen stats``: sizes (and leak rates where the kind can tell)."""
        data = self.load(path)
        return f"{path}  (kind: {self.name}; {len(self.units(data, 'full', Settings()))} {self.unit_name}s)"


SUBSET_HOWS = ("limit", "sample")


def pick(keys: Sequence[Any], how: str, n: int, seed: int = 0) -> set[Any]:
    """The distinct ``keys`` a subset of ``n`` keeps: the first ``n`` (``limit``) or ``n`` seeded draws (``sample``).

    >>> sorted(pick(["a", "a", "b", "c"], "limit", 2))
    ['a', 'b']
    >>> pick(["a", "b", "c"], "sample", 2, seed=1) == pick(["a", "b", "c"], "sample", 2, seed=1)
    True
    >>> sorted(pick(["a", "b"], "sample", 5))
    ['a', 'b']
    """
    import numpy as np

    if how not in SUBSET_HOWS:
        raise ValueError(f"unknown subset {how!r}; choose from {', '.join(SUBSET_HOWS)}")
    if n < 1:
        raise ProbegenError(f"--{how} must be at least 1 (got {n})")
    distinct = list(dict.fromkeys(keys))
    if n >= len(distinct):
        return set(distinct)
    if how == "limit":
        return set(distinct[:n])
    idx = np.random.default_rng([seed, 0x5AB5E7]).choice(len(distinct), size=n, replace=False)
    return {distinct[i] for i in idx}


def subset_line(info: dict[str, Any]) -> str:
    """The sentence that says what a subset took (eval summary, bias report).

    >>> subset_line({"how": "sample", "n": 20, "unit": "concept", "of": 300, "taken": 20, "items": 61, "seed": 0,
    ...              "all": False})
    'a seeded sample (seed 0) of 20 of the 300 concepts (61 items): the figures cover these only'
    >>> subset_line({"how": "limit", "n": 500, "unit": "item", "of": 45, "taken": 45, "items": 45, "all": True})
    '--limit 500 asks for more than the 45 items there are: all of them are used'
    """
    unit, of = info["unit"], info["of"]
    if info.get("all"):
        return f"--{info['how']} {info['n']} asks for more than the {of} {unit}s there are: all of them are used"
    items = f" ({info['items']} items)" if info.get("items") not in (None, info["taken"]) else ""
    if info["how"] == "sample":
        return (f"a seeded sample (seed {info.get('seed')}) of {info['taken']} of the {of} {unit}s{items}: the figures "
                "cover these only")
    return f"the first {info['taken']} of the {of} {unit}s in file order{items}: the figures cover these only"


@functools.cache
def _instance(cls: type[Task]) -> Task:
    return cls()


def resolve(task: "Task | type[Task]") -> Task:
    """The one instance of a Task subclass (tasks keep no state), or the instance given (else TypeError)."""
    if isinstance(task, type) and issubclass(task, Task):
        return _instance(task)
    if isinstance(task, Task):
        return task
    raise TypeError(f"{task!r} is neither a probegen Task subclass nor an instance of one")


def titles(tasks: Sequence[Task]) -> str:
    """The tasks' titles for a message: "CoDA21", "CoDA21 and multiple-choice (WordNetQA)"."""
    names = [t.title or t.name for t in tasks]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
