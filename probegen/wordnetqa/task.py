"""Multiple choice: WordNetQA items, generated or imported (the task class; the logic lives in
:mod:`probegen.wordnetqa`). Datasets: a probegen directory (``items.jsonl``, kind ``wordnetqa``) or a
release-schema ``.jsonl`` file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import ProbegenError
from ..settings import Settings
from ..tasks.base import Evaluation, Log
from ..tasks.capabilities import Buildable, Exportable, Filterable, Formable, SpecBuildable, Studyable, Subsettable

if TYPE_CHECKING:
    from ..forms.split import Unit as FormUnit
    from ..runner import Runner
    from ..spec.schema import SpecSection
    from ..tasks.bias_inputs import BiasInputs, FilterInputs
    from .dataset import WordNetQADataset

ABLATIONS = {
    "full": "question and choices",
    "context": "question with the target word masked by the nonce",
    "word": "target word and choices, no sentence",
    "choice": "choices without the question",
    "label": "no input: always the most frequent gold position (computed)",
}
RATIOS = {"bias_c": "context", "bias_w": "word", "bias_choice": "choice"}
# Ratios that measure nothing on a probe type, by construction: bias leaves its items out of the ratio
# and a study out of the ratio's condition, so people and models are measured on the same items.
EXCLUDED_RATIOS = {
    "synonymy": {
        "bias_c": "a synonymy stem is the definition alone (no sentence, no target word), so its Context "
        "query is its Full query and Bias_C would be 1 by construction",
        "bias_w": "the synonymy Word query names the concept's first lemma, which the gold choice lists "
        "verbatim, so Bias_W would measure string copying",
    },
}


def excluded_conditions(probe: str) -> dict[str, str]:
    """Condition -> why an item of ``probe`` is kept out of it (the ablations of :data:`EXCLUDED_RATIOS`).

    >>> sorted(excluded_conditions("synonymy")), excluded_conditions("definitions")
    (['context', 'word'], {})
    """
    return {RATIOS[r]: why for r, why in EXCLUDED_RATIOS.get(probe, {}).items() if r in RATIOS}
# A WordNetQA concept (synset) has items in up to four probe types: resampling probe:concept
# clusters would count one concept up to four times as if independent (intervals too narrow).
RESAMPLING_UNIT = "concept (synset): all items about one synset, across probe types and perturbations"


class MultipleChoiceTask(Subsettable["WordNetQADataset"], Filterable["WordNetQADataset"], Buildable["WordNetQADataset"],
                         Exportable["WordNetQADataset"], Studyable["WordNetQADataset"],
                         SpecBuildable["WordNetQADataset"], Formable["WordNetQADataset"]):
    """Multiple-choice questions (see the module doc): every capability."""

    name = "wordnetqa"
    title = "multiple-choice (WordNetQA)"
    priority = 90  # its file rule (any .jsonl) is a catch-all: asked last
    options = frozenset({"scorer", "reduction", "length_norm", "split", "pll", "on_invalid", "probe", "debias_share"})
    bias_options = frozenset({"scorer", "reduction", "nonce", "split", "folds", "controls", "method", "on_invalid",
                              "probe", "debias_share"})
    cluster_name = "concept"  # a bias subset keeps every item of a synset (the bootstrap's unit)
    excluded_ratios = EXCLUDED_RATIOS  # ratios that measure nothing on a probe type (the bias analysis reads it)
    export_options = frozenset({"split"})
    study_options = frozenset({"split"})
    conditions = ("full", "context", "word", "choice")
    ablation_names, ratio_names = ABLATIONS, RATIOS
    export_formats = ("wordnetqa-json", "lm-eval", "hf")
    release_format = "wordnetqa-json"
    spec_shape = "multiple_choice"
    default_dataset = "wordnetqa-definitions"  # ``probegen bias`` without --dataset
    form_unit, form_disjoint = "concept", ("concept synset", "target lemma", "definitions/synonymy gold synset")

    # ---- detection, reading, writing ---------------------------------------------------------------
    def claims(self, path: Path) -> bool:
        """A directory with a ``wordnetqa`` manifest or (without a kind) ``items.jsonl``; a ``.jsonl`` file."""
        return self.claims_directory(path) if path.is_dir() else path.suffix == ".jsonl"

    def load(self, path: str | Path, ablations: bool = False, on_invalid: str = "error",
             probe: str | None = None) -> WordNetQADataset:
        """The dataset at ``path`` (``on_invalid``, ``probe``: :func:`probegen.wordnetqa.dataset.load`)."""
        from .dataset import load

        return load(path, ablations=ablations, on_invalid=on_invalid, probe=probe)

    def write(self, data: WordNetQADataset, out: str | Path) -> Path:
        from .dataset import write

        return write(data, out)

    def counts(self, data: WordNetQADataset) -> dict[str, Any]:
        from .dataset import counts

        return counts(data.items)

    # ---- options, units, evaluation -----------------------------------------------------------------
    def check_given(self, given: Mapping[str, Any], command: str = "eval") -> None:
        """Summed and mean log-probs are never mixed by a length normalisation.

        >>> MultipleChoiceTask().check_given({"reduction": "mean",
        ...                                   "length_norm": "chars"})  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        probegen.errors.ProbegenError: --reduction mean --length-norm chars would divide a per-token mean by
        characters; use --length-norm chars with --reduction sum, or --length-norm tokens
        """
        reduction, norm = given.get("reduction"), given.get("length_norm")
        if reduction == "mean" and norm == "chars":
            raise ProbegenError(
                "--reduction mean --length-norm chars would divide a per-token mean by characters; "
                "use --length-norm chars with --reduction sum, or --length-norm tokens"
            )
        if reduction == "sum" and norm == "tokens":
            raise ProbegenError("--length-norm tokens is the per-token mean (--reduction mean); it cannot be used with "
                                "--reduction sum")

    def scorer_reduction(self, reduction: str, settings: Settings) -> str:
        """Per-token normalisation is the scorer's mean reduction."""
        return "mean" if settings.length_norm == "tokens" else reduction

    def units(self, data: WordNetQADataset, condition: str, settings: Settings, style: str = "pattern") -> list[Any]:
        """One unit per item (of ``settings.split``): its query in ``condition`` against its choices."""
        return self._units(data, settings, lambda it, t: t.query(it, style, condition, settings.nonce))

    def prompt_units(self, data: WordNetQADataset, condition: str, settings: Settings) -> list[Any]:
        """One unit per item (of ``settings.split``): its bare question stem in ``condition``."""
        return self._units(data, settings, lambda it, t: t.prompt(it, condition, settings.nonce))

    def _units(self, data: WordNetQADataset, settings: Settings, query: Callable[[Any, Any], str]) -> list[Any]:
        from ..core import Unit
        from .render import templates_of

        items = [it for it in data.items if settings.split is None or it.split == settings.split]
        t = templates_of(data)  # the dataset's own templates
        return [Unit.choice(it.id, query(it, t), it.choices, it.answer) for it in items]

    def evaluate(self, data: WordNetQADataset, scorer: Any, settings: Settings, progress: bool = True) -> Evaluation:
        """The full question of every item (of ``settings.split``), argmax with seeded ties."""
        from .evaluate import evaluate_mc

        res = evaluate_mc(data, scorer, settings, progress=progress)
        config = {"nonce": settings.nonce, "seed": settings.seed, "mode": "full",
                  "length_norm": res["metrics"]["length_norm"], "split": settings.split}
        return Evaluation(self.rows_file, res["items"], res["metrics"], config)

    def summary(self, model: str, metrics: dict[str, Any]) -> str:
        from .evaluate import summary

        return summary(model, metrics)

    # ---- bias, comparison, filtering ----------------------------------------------------------------
    @property
    def resampling_unit(self) -> str:
        return RESAMPLING_UNIT

    def cluster_of(self, record: Any) -> str:
        """The concept (synset) an item is about, across probe types: what the bias bootstrap resamples."""
        return str(record.synset)

    def item_units(self, data: WordNetQADataset) -> dict[str, str]:
        """Each item counted in its concept (the unit of this kind's correctness)."""
        return {str(it.id): self.cluster_of(it) for it in data.items}

    def select_split(self, data: WordNetQADataset, split: str, name: str = "the dataset") -> WordNetQADataset:
        """The items of one split (a ProbegenError naming ``name`` if it has none)."""
        import dataclasses

        items = data.split(split)
        if not items:
            raise ProbegenError(f"{name} has no items in split {split!r}")
        # mypy's dataclasses.replace does not bind the inherited ItemsDataset[R] field to MCItem
        return dataclasses.replace(data, items=items)  # type: ignore[arg-type]

    def score_ablations(self, data: WordNetQADataset, scorer: Any, settings: Settings, progress: bool = True,
                        evaluator: Callable[..., Any] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Every scored ablation as one request table (or through ``evaluator``, one mode at a time)."""
        modes = [m for m in ABLATIONS if m != "label"]
        if evaluator is not None:
            return {m: evaluator(data, scorer, settings, mode=m, progress=progress)["items"] for m in modes}
        from .evaluate import evaluate_mc_modes

        res = evaluate_mc_modes(data, scorer, settings, modes, progress=progress)
        return {m: r["items"] for m, r in zip(modes, res)}

    def bias_inputs(self, data: WordNetQADataset, records: dict[str, list[dict[str, Any]]]) -> BiasInputs:
        from .bias import bias_inputs

        return bias_inputs(data, records)

    def build_default(self, path: Path, wordnet: str | None, semcor: str | None, log: Log, runner: Runner) -> None:
        """``probegen make wordnetqa --probe <the name's suffix>`` into ``path``."""
        from . import dataset as mcd
        from .config import WordNetQAConfig

        probe = path.name.split("-", 1)[1] if "-" in path.name else "definitions"
        log(f"{path} is missing: generating it (as `probegen make wordnetqa --probe {probe}`)")
        try:
            cfg = WordNetQAConfig(probes=(probe,))
        except TypeError:
            raise ProbegenError(f"{path} is missing; generate it first with `probegen make wordnetqa`") from None
        mcd.write(mcd.build(cfg, wordnet=wordnet, progress=True, log=log), path)

    def correctness(self, data: WordNetQADataset, scorer: Any, seed: int = 0, progress: bool = True
                    ) -> tuple[dict[str, tuple[float, float]], list[tuple[str, str, float]]]:
        """Per concept (items right, items) across probe types, and per item (its concept, its id, right or wrong)."""
        from ..templating import dataset_nonce
        from .evaluate import evaluate_mc

        out: dict[str, list[float]] = {}
        items: list[tuple[str, str, float]] = []
        settings = Settings(nonce=dataset_nonce(data.manifest), seed=seed)
        for r in evaluate_mc(data, scorer, settings, progress=progress)["items"]:
            unit = str(r.get("synset") or r.get("cluster") or r["id"])
            u = out.setdefault(unit, [0.0, 0.0])
            u[0] += float(bool(r["correct"]))
            u[1] += 1.0
            items.append((unit, str(r["id"]), float(bool(r["correct"]))))
        return {k: (v[0], v[1]) for k, v in out.items()}, items

    def chance(self, data: WordNetQADataset) -> float:
        """Mean 1/(number of choices) over items."""
        import numpy as np

        return float(np.mean([1.0 / len(it.choices) for it in data.items]))

    def artefact_inputs(self, data: WordNetQADataset) -> FilterInputs:
        from .bias import filter_inputs

        return filter_inputs(data)

    def form_units(self, data: WordNetQADataset, graph: Any, freq: dict[str, int] | None) -> list[FormUnit]:
        """One unit per concept (its items): strata pos, probe/distractor profile, depth, log frequency, gloss, hops."""
        import numpy as np

        from ..forms.split import Unit, depth_of, lemma_key, word_count

        by: dict[str, list[int]] = {}
        for i, it in enumerate(data.items):
            by.setdefault(it.synset, []).append(i)
        out = []
        for concept, idx in by.items():
            its = [data.items[i] for i in idx]
            profile = "+".join(sorted({it.probe for it in its})) + "|" + "+".join(sorted({it.distractor_type
                                                                                          for it in its}))
            num = {"size": float(len(its)), "depth": depth_of(graph, concept),
                   "hops": float(np.mean([it.hops for it in its])), "gloss_len": word_count(its[0].definition or "")}
            if freq is not None:
                num["log_freq"] = float(np.log1p(freq.get(concept, 0)))
            # the concept is asked about: it and its word may not recur; ISA answers (general hypernyms) may
            synsets = {concept} | {it.gold_synset for it in its if it.probe in ("definitions", "synonymy")}
            out.append(Unit(concept, idx, frozenset(synsets), frozenset(lemma_key(it.word) for it in its),
                            {"pos": its[0].pos, "profile": profile}, num))
        return out

    def form_synsets(self, data: WordNetQADataset) -> list[str]:
        """Every item's concept synset."""
        return [str(it.synset or it.cluster or it.id) for it in data.items]

    # ---- stats, export, study, spec -----------------------------------------------------------------
    def stats(self, path: str | Path, log: Log) -> str:
        """Questions, items and synsets per probe beside the paper's, and the leak rate."""
        from ..leaks import format_leak_rates, morphology_for, record_leak_rates
        from .dataset import counts, load
        from .reference import size_table

        mc = load(path)
        return "\n".join([str(path), size_table(counts(mc.items)),
                          format_leak_rates(record_leak_rates(mc.items, morphology_for(mc.manifest, log)))])

    def export_docs(self, path: str | Path, split: str | None, seed: int | None, nonce: str | None,
                    pattern: str | None) -> tuple[WordNetQADataset, list[dict[str, Any]], dict[str, Any]]:
        """One doc per item (of ``split``): the full question, where nonce and pattern play no part."""
        from .dataset import load
        from .export import wordnetqa_docs

        ds = load(path)
        docs = wordnetqa_docs(ds, split=split)
        return ds, docs, ({"mode": "full", "split": split} if split else {"mode": "full"})

    def write_release(self, path: str | Path, out: str | Path, split: str | None) -> str:
        """The WordNetQA release JSONL (optionally one split)."""
        from ..io import atomic_output_file, check_docs_back, dumps, read_jsonl
        from .dataset import export_release, load

        rows = export_release(load(path), split)

        def read_back(tmp: Path) -> None:
            check_docs_back(Path(out), Path(out).name, rows, read_jsonl(tmp))

        with atomic_output_file(out, check=read_back) as fh:
            for r in rows:
                fh.write(dumps(r) + "\n")
        return f"wrote {out} ({len(rows)} questions, {self.release_format})"

    def lm_eval_metric(self, eval_cmd: str, settings: dict[str, Any]) -> str:
        split = f" --split {settings['split']}" if settings.get("split") else ""
        return (f"lm-eval's `acc` equals `{eval_cmd}{split}` (summed log-probs, `--length-norm none`); "
                f"`acc_norm` equals `{eval_cmd}{split} --length-norm chars`.")

    def hf_description(self) -> str:
        return "One row per WordNetQA item: `choices` in the presented order, `gold` the answer's index."

    def study_pool(self, data: WordNetQADataset, cfg: Any) -> tuple[list[Any], str, dict[str, int]]:
        """One item per concept cluster (see :func:`probegen.wordnetqa.study.choice_pool`)."""
        from .study import choice_pool

        return choice_pool(data, cfg)

    def study_view(self, data: WordNetQADataset, unit: Any, condition: str, seed: int) -> dict[str, Any]:
        from .render import templates_of
        from .study import mc_view

        return mc_view(unit, condition, templates_of(data))

    def study_gold(self, unit: Any, seed: int) -> dict[str, Any]:
        from .study import mc_gold

        return mc_gold(unit, excluded_conditions(unit.probe))

    def spec_section(self) -> SpecSection:
        from .spec import SECTION

        return SECTION

    def built_summary(self, data: WordNetQADataset) -> str:
        c = data.manifest.get("counts", {})
        return ", ".join(f"{p}: {v['unique_questions']} questions / {v['items']} items" for p, v in c.items())
