"""The :class:`Task` base class: everything probegen knows about one dataset kind.

A task is one kind of probe (CoDA21 alignment, multiple choice, word-in-context pairs, WSD, or a
third-party kind registered through the ``probegen.tasks`` entry-point group). It says

- which paths are its datasets (:meth:`Task.claims`), how to read and check them
  (:meth:`Task.load`, :meth:`Task.validate`) and write them (:meth:`Task.write`);
- which command options apply to it (:attr:`Task.options` and the per-command sets), so an
  option given for another kind is one clear error (:func:`probegen.tasks.check_options`);
- how a loaded dataset becomes core units (:class:`probegen.core.Unit`) per condition
  (:meth:`Task.units`: full input, context only, word only, ...), how it is evaluated
  (:meth:`Task.evaluate`) and summarised (:meth:`Task.summary`);
- its bias ablations and ratios, its statistics, exports and study rendering.

The base class implements the generic path from :meth:`units` alone (evaluation, the zero-shot
ablations, paired comparison, chance level): a new kind needs :meth:`claims`, :meth:`load` and
:meth:`units`, and may override the rest. The built-in kinds override most hooks to delegate
to their own modules (``probegen.coda21``, ``probegen.wordnetqa``, ``probegen.wordincontext``),
which keep the logic; the task classes are only the dispatch.

Hooks that serve ``diagnostics`` (bias analysis, AFLite filtering) receive a record of the plain
callables diagnostics offers (:class:`BiasAnalyses`, :class:`ArtefactFilters`) and pick theirs from
it: the library never imports ``diagnostics``, and no module is passed around.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ..errors import ProbegenError
from ..templating import default_nonce

Log = Callable[[str], None]
COMMANDS = ("eval", "bias", "export", "study")


@dataclass(frozen=True)
class Settings:
    """How a task renders queries and decides (defaults filled in; ``split`` None = every item)."""

    nonce: str = field(default_factory=default_nonce)  # templates/nonce_words.json, written once
    pattern: str = "definition-of"
    matching: str = "alignment"
    length_norm: str = "none"
    split: str | None = None
    seed: int = 0


@dataclass
class Evaluation:
    """What :meth:`Task.evaluate` returns: the per-unit rows (written to ``rows_file``), the
    metrics and the ``eval`` block of results.json (the caller adds the reduction)."""

    rows_file: str
    rows: list[dict[str, Any]]
    metrics: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)


Analysis = Callable[[Any, dict[str, list[dict[str, Any]]], Any], dict[str, Any]]


@dataclass(frozen=True)
class BiasAnalyses:
    """The zero-shot bias analyses ``diagnostics`` offers the kinds (:meth:`Task.bias_analysis` picks
    one): ``analysis(data, records, cfg) -> results entry``; ``units`` takes the task first (the
    generic one: one unit per record of the generic scoring)."""

    units: Callable[..., dict[str, Any]]
    alignment: Analysis
    choice: Analysis


@dataclass(frozen=True)
class ArtefactFilters:
    """The AFLite adapters ``diagnostics`` offers the kinds (:meth:`Task.artefact_filter` picks and
    makes one): over alignment groups and over multiple-choice items."""

    alignment: Callable[[], Any]
    choice: Callable[[], Any]


class Task(ABC):
    """One dataset kind; see the module doc. Subclasses set the class attributes and implement
    :meth:`claims`, :meth:`load` and (for the generic path) :meth:`units`."""

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
    export_options: ClassVar[frozenset[str]] = frozenset()
    study_options: ClassVar[frozenset[str]] = frozenset()
    #: options of ``eval`` and ``bias`` that apply to every kind that can be cut (a quick look at a
    #: big file: :meth:`subset`)
    generic_options: ClassVar[frozenset[str]] = frozenset({"limit", "sample"})
    #: the attribute of a loaded dataset that holds its records (groups, items, pairs) in file order, so
    #: ``--limit``/``--sample`` can cut it (:meth:`subset`); None (a plugin's default): the kind cannot be
    #: cut, and the options are one line at option-check time, before any work (a kind may instead
    #: override :meth:`records` and :meth:`with_records`)
    records_attribute: ClassVar[str | None] = None
    #: what ``bias`` keeps whole when it takes a subset (its bootstrap cluster; default: one unit)
    cluster_name: ClassVar[str] = ""
    #: options that only a language model uses (rejected for embedding and static models)
    lm_only_options: ClassVar[tuple[str, ...]] = ()
    #: conditions :meth:`units` renders (``full`` first)
    conditions: ClassVar[tuple[str, ...]] = ("full",)
    #: False: evaluated by a trained probe (``diagnostics.trained``), not by scoring
    zero_shot: ClassVar[bool] = True
    rows_file: ClassVar[str] = "items.jsonl"
    #: export formats (``lm-eval``, ``hf`` and the kind's release format) and the release one
    export_formats: ClassVar[tuple[str, ...]] = ()
    release_format: ClassVar[str | None] = None
    #: the probe-spec shape that builds this kind (``probegen make spec``), if any
    spec_shape: ClassVar[str | None] = None

    def __repr__(self) -> str:
        return f"<task {self.name}>"

    # ---- detection, reading, writing -------------------------------------------------------------
    def manifest_kinds(self) -> tuple[str, ...]:
        """The manifest kinds this task reads."""
        return self.kinds or (self.name,)

    @abstractmethod
    def claims(self, path: Path) -> bool:
        """True if ``path`` (it exists; a dataset directory or file) is a dataset of this kind."""

    def claims_directory(self, path: Path) -> bool:
        """A directory whose manifest names one of :meth:`manifest_kinds`, or (no kind named) that
        holds :attr:`rows_file`: the directory rule of the tasks that write probegen datasets."""
        from ..io import read_manifest

        mf = path / "manifest.json"
        kind = read_manifest(mf).get("kind") if mf.is_file() else None
        return kind in self.manifest_kinds() or (kind is None and (path / self.rows_file).exists())

    @abstractmethod
    def load(self, path: str | Path, ablations: bool = False) -> Any:
        """The dataset at ``path``, validated in full (``ablations``: every row must be one the
        ablations can cut). It has a ``manifest`` dict."""

    def validate(self, data: Any) -> None:
        """Checks beyond those of :meth:`load` (none by default)."""

    def write(self, data: Any, out: str | Path) -> Path:
        """Write ``data`` as a dataset directory at ``out``."""
        raise ProbegenError(f"probegen cannot write {self.title or self.name} datasets")

    def counts(self, data: Any) -> dict[str, Any]:
        """The manifest's ``counts`` block of ``data``."""
        return {"units": len(self.units(data, self.conditions[0], Settings()))}

    def fingerprint(self, data: Any) -> str:
        """A hash of the dataset's content (recorded in studies)."""
        return data.fingerprint

    # ---- options ----------------------------------------------------------------------------------
    def accepts(self, option: str, command: str = "eval") -> bool:
        """Whether ``option`` of ``command`` (eval, bias, export, study) applies to this kind."""
        sets = {"eval": self.options, "bias": self.bias_options, "export": self.export_options,
                "study": self.study_options}
        # the generic ones (--limit/--sample) cut the records of any kind that names them; a trained
        # probe keeps whole clusters
        generic = command in ("eval", "bias") and option in self.generic_options and self.can_subset()
        return option in sets[command] or generic

    @classmethod
    def can_subset(cls) -> bool:
        """Whether ``--limit``/``--sample`` can cut this kind's datasets: it names their
        :attr:`records_attribute`, or overrides :meth:`records` and :meth:`with_records`."""
        return cls.records_attribute is not None or (cls.records is not Task.records
                                                     and cls.with_records is not Task.with_records)

    def check_given(self, given: Mapping[str, Any], command: str = "eval") -> None:
        """Checks of option values that apply (e.g. two that contradict each other); ``given``
        holds only the options the user set."""

    # ---- units, evaluation ------------------------------------------------------------------------
    def units(self, data: Any, condition: str, settings: Settings, style: str = "pattern") -> list[Any]:
        """The core units of ``data`` in ``condition`` (queries rendered for a scorer of query
        ``style``); the generic evaluation, ablations and comparison build on it."""
        raise ProbegenError(f"{self.title or self.name} datasets have no {condition!r} condition")

    def scorer_reduction(self, reduction: str, settings: Settings) -> str:
        """The LM reduction to load the scorer with (a kind may need another, e.g. per-token means)."""
        return reduction

    def evaluate(self, data: Any, scorer: Any, settings: Settings, progress: bool = True) -> Evaluation:
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
        """Bias ablation -> what it shows; ``label`` (no input) is computed, not scored."""
        return {**{c: f"{c} condition" for c in self.conditions}, "label": "no input: chance (computed)"}

    @property
    def ratios(self) -> dict[str, str]:
        """Bias ratio -> its ablation."""
        return {k: v for k, v in (("bias_c", "context"), ("bias_w", "word")) if v in self.conditions}

    @property
    def resampling_unit(self) -> str:
        """What the bias bootstrap resamples."""
        return self.unit_name

    def select_split(self, data: Any, split: str, name: str = "the dataset") -> Any:
        """``data`` cut to one split (kinds without splits keep it whole; ``name`` names it in errors)."""
        return data

    # ---- subsets (--limit, --sample) ---------------------------------------------------------------
    def records(self, data: Any) -> list[Any]:
        """The dataset's records (its units: groups, items, pairs) in file order."""
        recs = getattr(data, self.records_attribute, None) if self.records_attribute else None
        if recs is None:
            raise ProbegenError(f"{self.title or self.name} datasets cannot be cut to a subset (no records)")
        return list(recs)

    def with_records(self, data: Any, records: Sequence[Any]) -> Any:
        """``data`` holding only ``records``: a dataclass container with a ``records_field`` (probegen's
        datasets) is replaced field-wise; another object (a plugin's) is copied with its
        :attr:`records_attribute` set to the records kept."""
        import copy
        import dataclasses

        field_name = getattr(data, "records_field", None)
        if field_name is not None and dataclasses.is_dataclass(data) and not isinstance(data, type):
            return dataclasses.replace(data, **{field_name: list(records)})
        if self.records_attribute and hasattr(data, "__dict__") and self.records_attribute in vars(data):
            out = copy.copy(data)
            setattr(out, self.records_attribute, list(records))
            return out
        raise ProbegenError(f"{self.title or self.name} datasets cannot be cut to a subset")

    def cluster_of(self, record: Any) -> str:
        """The cluster ``record`` belongs to, kept whole by a ``bias`` subset (default: its own id)."""
        return str(getattr(record, "id", id(record)))

    def subset(self, data: Any, how: str, n: int, seed: int = 0, whole: str = "unit") -> tuple[Any, dict[str, Any]]:
        """(``data`` cut to ``n`` units, what was taken): ``how`` ``limit`` takes the first ``n``
        (file order), ``sample`` ``n`` drawn with ``seed``; ``whole`` ``cluster`` takes whole
        clusters (:meth:`cluster_of`: what the bias bootstrap resamples) instead of single units.
        The records kept stay in file order; ``n`` at least the total keeps everything."""
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

    def score_ablations(self, data: Any, scorer: Any, settings: Settings, progress: bool = True,
                        evaluator: Callable[..., Any] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Every scored ablation's per-unit records, through one request table (``evaluator``:
        a stand-in for the kind's one-mode evaluator, for tests)."""
        from . import generic

        return generic.score_rows(self, data, scorer, [a for a in self.ablations if a != "label"], settings, progress)

    def bias_analysis(self, offered: BiasAnalyses) -> Analysis:
        """The zero-shot bias analysis of this kind, picked from those ``diagnostics`` offers:
        ``analysis(data, records, cfg) -> dataset entry`` (by default the generic one over units)."""
        return lambda data, records, cfg: offered.units(self, data, records, cfg)

    def build_default(self, path: Path, wordnet: str | None, semcor: str | None, log: Log, runner: Any) -> None:
        """Generate a missing default dataset of this kind at ``path`` (``probegen bias`` defaults;
        ``runner``: the command's :class:`~probegen.runner.Runner`, which loads any model the build needs)."""
        raise ProbegenError(f"dataset {path} does not exist")

    def unit_correctness(self, data: Any, scorer: Any, seed: int = 0,
                         progress: bool = True) -> dict[str, tuple[float, float]]:
        """Per unit id: (summed correctness, weight) of one model (``probegen compare``)."""
        from ..templating import dataset_nonce
        from . import generic

        settings = Settings(nonce=dataset_nonce(getattr(data, "manifest", None)), seed=seed)
        rows = generic.score_rows(self, data, scorer, ["full"], settings, progress)["full"]
        return {str(r["id"]): (float(r["accuracy"]), 1.0) for r in rows}

    def chance(self, data: Any) -> float:
        """Random-guess accuracy over the dataset's units."""
        from . import generic

        return generic.chance(self.units(data, "full", Settings()))

    def artefact_filter(self, offered: ArtefactFilters) -> Any:
        """The AFLite adapter of this kind, made by one of those ``diagnostics`` offers (none by default)."""
        raise ProbegenError(f"filter --artefacts does not support {self.title or self.name} datasets")

    # ---- stats, export, study, spec ---------------------------------------------------------------
    def stats(self, path: str | Path, log: Log) -> str:
        """``probegen stats``: sizes (and leak rates where the kind can tell)."""
        data = self.load(path)
        return f"{path}  (kind: {self.name}; {len(self.units(data, 'full', Settings()))} {self.unit_name}s)"

    def export_docs(self, path: str | Path, split: str | None, seed: int | None, nonce: str | None,
                    pattern: str | None) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
        """(dataset, multiple-choice docs, export settings) for ``lm-eval`` and ``hf`` exports."""
        raise ProbegenError(f"{path} is a {self.name} dataset; probegen cannot export it")

    def write_release(self, path: str | Path, out: str | Path, split: str | None) -> str:
        """Write the kind's release format to ``out``; the one-line summary."""
        raise ProbegenError(f"{path} is a {self.name} dataset; it has no release format to export")

    def lm_eval_note(self) -> str:
        """A note for the lm-eval task config and README ("" for none)."""
        return ""

    def lm_eval_metric(self, eval_cmd: str, settings: dict[str, Any]) -> str:
        """How lm-eval's metrics relate to ``probegen eval`` (the README's paragraph)."""
        return f"lm-eval's `acc` is the accuracy of taking each doc's best choice; compare with `{eval_cmd}`."

    def hf_description(self) -> str:
        """What one row of the Hugging Face export is (the dataset card)."""
        return "One row per item: `choices` in the presented order, `gold` the answer's index."

    def study_pool(self, data: Any, cfg: Any) -> tuple[list[Any], str, dict[str, int]]:
        """(units a study samples from, what they are called, skipped counts) for ``study make``."""
        raise ProbegenError(f"probegen study does not support {self.title or self.name} datasets")

    def study_view(self, unit: Any, condition: str, seed: int) -> dict[str, Any]:
        """What an annotator sees of ``unit`` in ``condition`` (:mod:`probegen.study.views`)."""
        raise ProbegenError(f"probegen study does not support {self.title or self.name} datasets")

    def study_gold(self, unit: Any, seed: int) -> dict[str, Any]:
        """The gold of ``unit`` kept apart from its views."""
        raise ProbegenError(f"probegen study does not support {self.title or self.name} datasets")

    def spec_config(self, spec: Any) -> Any:
        """The generator configuration of a spec of :attr:`spec_shape`."""
        raise ProbegenError(f"no probe spec builds {self.name} datasets")

    def build_from_spec(self, spec: Any, cfg: Any, wordnet: str | None, semcor: str | None, progress: bool, log: Log,
                        runner: Any = None) -> Any:
        """Generate the dataset a spec declares (``runner``: the :class:`~probegen.runner.Runner` that
        loads any model the build scores with)."""
        raise ProbegenError(f"no probe spec builds {self.name} datasets")

    def spec_models(self, spec: Any) -> list[str]:
        """The models a spec build loads."""
        return []

    def built_summary(self, data: Any) -> str:
        """One line on a freshly built dataset (``probegen make spec``)."""
        return f"{len(self.units(data, 'full', Settings()))} {self.unit_name}s"


SUBSET_HOWS = ("limit", "sample")


def pick(keys: Sequence[Any], how: str, n: int, seed: int = 0) -> set[Any]:
    """The distinct ``keys`` (in first-seen order) a subset of ``n`` keeps: the first ``n``
    (``limit``) or ``n`` drawn without replacement by a generator seeded with ``seed`` (``sample``).

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


_INSTANCES: dict[type, Task] = {}


def resolve(task: "Task | type[Task]") -> Task:
    """A task instance from a Task subclass or instance (a TypeError for anything else). A class has
    one instance (tasks keep no state), so a kind's own code that names its class (``task_of``) gets
    the registry's."""
    if isinstance(task, type) and issubclass(task, Task):
        if task not in _INSTANCES:
            _INSTANCES[task] = task()
        return _INSTANCES[task]
    if isinstance(task, Task):
        return task
    raise TypeError(f"{task!r} is neither a probegen Task subclass nor an instance of one")


def titles(tasks: Sequence[Task]) -> str:
    """The tasks' titles for a message: "CoDA21", "CoDA21 and multiple-choice (WordNetQA)"."""
    names = [t.title or t.name for t in tasks]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
