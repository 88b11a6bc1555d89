"""CoDA21 context-definition alignment (the task class; the logic lives in :mod:`probegen.coda21`).
Datasets: a probegen directory (``groups.jsonl``, kind ``coda21``) or a release-schema file (not ``.jsonl``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..settings import Settings
from ..tasks.base import Evaluation, Log
from ..tasks.capabilities import Buildable, Exportable, Filterable, Formable, SpecBuildable, Studyable, Subsettable

if TYPE_CHECKING:
    from ..forms.split import Unit as FormUnit
    from ..runner import Runner
    from ..spec.schema import Spec, SpecSection
    from ..tasks.bias_inputs import BiasInputs, FilterInputs
    from .dataset import Coda21Dataset

NOTE = (
    "One doc per CoDA21 context; the choices are its group's definitions in probegen's seeded "
    "column order. lm-eval takes each context's best definition on its own, which is probegen's "
    "`--matching simple`; one-to-one alignment of a whole group is probegen's own metric "
    "(`probegen eval`, the default) and cannot be expressed as an lm-eval task."
)
ABLATIONS = {
    "full": "true target word in its context",
    "context": "context with the target replaced by the nonce (the standard task)",
    "word": "the target word alone",
    "definition": "no context, no word: every row the same query",
    "label": "no input: 1/k per group (computed)",
}
RATIOS = {"bias_c": "context", "bias_w": "word", "bias_d": "definition"}


class Coda21Task(Subsettable["Coda21Dataset"], Filterable["Coda21Dataset"], Buildable["Coda21Dataset"],
                 Exportable["Coda21Dataset"], Studyable["Coda21Dataset"], SpecBuildable["Coda21Dataset"],
                 Formable["Coda21Dataset"]):
    """CoDA21 alignment groups (see the module doc): every capability."""

    name = "coda21"
    title = "CoDA21"
    unit_name = "group"
    priority = 80  # its file rule (anything not .jsonl) is a catch-all: asked after the others
    options = frozenset({"scorer", "reduction", "nonce", "pattern", "matching", "pll", "debias_share"})
    bias_options = frozenset({"scorer", "reduction", "nonce", "pattern", "folds", "controls", "method", "debias_share"})
    export_options = frozenset({"seed", "nonce", "pattern"})
    lm_only_options = ("pattern", "nonce")
    conditions = ("full", "context", "word", "definition")
    ablation_names, ratio_names = ABLATIONS, RATIOS
    rows_file = "groups.jsonl"
    export_formats = ("coda21-json", "lm-eval", "hf")
    release_format = "coda21-json"
    spec_shape = "alignment"
    default_dataset = "coda21-clean-easy"  # ``probegen bias`` without --dataset
    form_unit, form_disjoint = "group", ("synset", "target lemma")

    # ---- detection, reading, writing ---------------------------------------------------------------
    def claims(self, path: Path) -> bool:
        """A directory of :meth:`claims_directory`, or a file that is not ``.jsonl``."""
        return self.claims_directory(path) if path.is_dir() else path.suffix != ".jsonl"

    def load(self, path: str | Path, ablations: bool = False) -> Coda21Dataset:
        from .dataset import load

        return load(path)

    def write(self, data: Coda21Dataset, out: str | Path) -> Path:
        from .dataset import write

        return write(data, out)

    def counts(self, data: Coda21Dataset) -> dict[str, Any]:
        from .dataset import counts

        return counts(data.groups)

    # ---- options, units, evaluation -----------------------------------------------------------------
    def check_given(self, given: Mapping[str, Any], command: str = "eval") -> None:
        """A malformed ``--pattern`` fails now, before any dataset or model is read."""
        from .render import patterns_for

        if "pattern" in given:
            patterns_for(given["pattern"])

    unit_is_mean = True  # a group's accuracy is its rows' mean (the paper's mean over groups)

    def item_units(self, data: Coda21Dataset) -> dict[str, str]:
        """One item per row of a group, ``<group>#<row>``, counted in its group."""
        return {f"{g.id}#{r}": str(g.id) for g in data.groups for r in range(len(g.items))}

    def units(self, data: Coda21Dataset, condition: str, settings: Settings, style: str = "pattern") -> list[Any]:
        """One unit per group: its rows in ``condition`` against its definitions (seeded column order)."""
        from .evaluate import group_unit
        from .render import patterns_for, render_group

        patterns = patterns_for(settings.pattern)
        return [group_unit(g, render_group(g, style, condition, settings.nonce, patterns), settings)
                for g in data.groups]

    def prompt_units(self, data: Coda21Dataset, condition: str, settings: Settings) -> list[Any]:
        """One unit per group, its rows with the word to define in square brackets; the prompt names the nonce."""
        from ..core import PromptUnit
        from .evaluate import group_unit
        from .render import prompt_row

        units = [group_unit(g, [prompt_row(it.context, condition, settings.nonce) for it in g.items], settings)
                 for g in data.groups]
        return [PromptUnit(u.id, u.queries, u.candidates, u.decision, u.gold, fields=(("nonce", settings.nonce),))
                for u in units]

    def evaluate(self, data: Coda21Dataset, scorer: Any, settings: Settings, progress: bool = True) -> Evaluation:
        """The standard task (context condition), aligned by ``settings.matching``."""
        from .evaluate import evaluate

        res = evaluate(data, scorer, settings, "context", progress=progress)
        config = {"nonce": settings.nonce, "pattern": settings.pattern, "matching": settings.matching,
                  "mode": "context", "seed": settings.seed}
        return Evaluation(self.rows_file, res["groups"], res["metrics"], config)

    def summary(self, model: str, metrics: dict[str, Any]) -> str:
        """The paper's Table 2 layout: accuracy per POS with the random baseline and group count."""
        lines = [f"{'model':<24} {'pos':<5} {'accuracy':>9} {'random':>7} {'groups':>7}"]
        for pos in ("noun", "verb", "all"):
            if pos in metrics:
                m = metrics[pos]
                lines.append(f"{model:<24} {pos:<5} {m['accuracy']:>9.3f} {m['random']:>7.3f} {m['groups']:>7}")
        return "\n".join(lines)

    # ---- bias, comparison, filtering ----------------------------------------------------------------
    def score_ablations(self, data: Coda21Dataset, scorer: Any, settings: Settings, progress: bool = True,
                        evaluator: Callable[..., Any] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Every scored ablation through the standard evaluator, as one request table."""
        from .evaluate import evaluate_modes

        modes = [m for m in ABLATIONS if m != "label"]
        return {m: res["groups"] for m, res in zip(modes, evaluate_modes(data, scorer, settings, modes, progress))}

    def decision(self, settings: Settings) -> str:
        return settings.matching

    def bias_inputs(self, data: Coda21Dataset, records: dict[str, list[dict[str, Any]]]) -> BiasInputs:
        from .bias import bias_inputs

        return bias_inputs(data, records)

    def build_default(self, path: Path, wordnet: str | None, semcor: str | None, log: Log, runner: Runner) -> None:
        """``probegen make coda21 --easy`` into ``path``."""
        from .config import Coda21Config
        from .dataset import build, write

        log(f"{path} is missing: generating it (as `probegen make coda21 --easy`); this takes a while")
        write(build(Coda21Config(easy=True), wordnet=wordnet, semcor=semcor, progress=True, log=log, runner=runner),
              path)

    def correctness(self, data: Coda21Dataset, scorer: Any, seed: int = 0, progress: bool = True
                    ) -> tuple[dict[str, tuple[float, float]], list[tuple[str, str, float]]]:
        """Per group (accuracy, 1): the paper's mean of group accuracies; per context (``<group>#<row>``) right."""
        from ..templating import dataset_nonce
        from .evaluate import evaluate

        settings = Settings(nonce=dataset_nonce(data.manifest), seed=seed)
        groups = evaluate(data, scorer, settings, progress=progress)["groups"]
        items = [(r["id"], f"{r['id']}#{i}", float(p == g)) for r in groups
                 for i, (p, g) in enumerate(zip(r["pred"], r["gold"]))]
        return {r["id"]: (r["correct"], 1.0) for r in groups}, items

    def chance(self, data: Coda21Dataset) -> float:
        """Mean 1/k over groups."""
        import numpy as np

        return float(np.mean([1.0 / g.k for g in data.groups]))

    def artefact_inputs(self, data: Coda21Dataset) -> FilterInputs:
        from .bias import filter_inputs

        return filter_inputs(data)

    def form_units(self, data: Coda21Dataset, graph: Any, freq: dict[str, int] | None) -> list[FormUnit]:
        """One unit per group: strata pos, size (k), ancestor depth, median log SemCor frequency, mean gloss length."""
        import numpy as np

        from ..forms.split import Unit, depth_of, lemma_key, word_count

        out = []
        for i, g in enumerate(data.groups):
            num = {"size": float(g.k), "depth": depth_of(graph, g.ancestor),
                   "gloss_len": float(np.mean([word_count(it.definition) for it in g.items]))}
            if freq is not None:
                num["log_freq"] = float(np.median([np.log1p(freq.get(it.synset, 0)) for it in g.items]))
            out.append(Unit(g.id, [i], frozenset(it.synset for it in g.items),
                            frozenset(lemma_key(it.lemma) for it in g.items), {"pos": g.pos}, num))
        return out

    def form_synsets(self, data: Coda21Dataset) -> list[str]:
        """Every group member's synset."""
        return [str(m.synset) for g in data.groups for m in g.items]

    # ---- stats, export, study, spec -----------------------------------------------------------------
    def stats(self, path: str | Path, log: Log) -> str:
        """Groups and synsets per POS beside the paper's Table 1, and the leak rate per POS."""
        from ..leaks import format_leak_rates, morphology_for
        from .contexts import leak_rates_of
        from .dataset import counts, load
        from .reference import table1

        ds = load(path)
        variant = ds.manifest.get("config", {}).get("variant")
        ref = table1()
        lines = [f"{path}  (variant: {variant or 'unknown'})",
                 f"{'variant':<12} {'pos':<5} {'groups':>7} {'paper':>6} {'ratio':>6}   {'synsets':>8} {'paper':>6} "
                 f"{'ratio':>6}"]
        for pos, c in counts(ds.groups).items():
            if c["groups"] == 0:
                continue
            r = ref.get((variant, pos))
            if r:
                lines.append(f"{variant:<12} {pos:<5} {c['groups']:>7} {r['groups']:>6} "
                             f"{c['groups'] / r['groups']:>6.2f}   {c['unique_synsets']:>8} {r['unique_synsets']:>6} "
                             f"{c['unique_synsets'] / r['unique_synsets']:>6.2f}")
            else:
                lines.append(f"{str(variant):<12} {pos:<5} {c['groups']:>7} {'-':>6} {'-':>6}   "
                             f"{c['unique_synsets']:>8} {'-':>6} {'-':>6}")
        lines.append(format_leak_rates(leak_rates_of(ds, morphology_for(ds.manifest, log))))
        return "\n".join(lines)

    def export_docs(self, path: str | Path, split: str | None, seed: int | None, nonce: str | None,
                    pattern: str | None) -> tuple[Coda21Dataset, list[dict[str, Any]], dict[str, Any]]:
        """One doc per context, rendered exactly as ``probegen eval --matching simple`` does."""
        from ..templating import dataset_nonce
        from .dataset import load
        from .export import coda21_docs
        from .render import patterns_for

        seed, pattern = seed or 0, pattern or Settings.pattern
        patterns_for(pattern)  # a malformed pattern fails before the dataset is read
        ds = load(path)
        nonce = nonce or dataset_nonce(ds.manifest)
        docs = coda21_docs(ds, seed=seed, nonce=nonce, pattern=pattern)
        return ds, docs, {"nonce": nonce, "pattern": pattern, "seed": seed, "mode": "context", "matching": "simple"}

    def write_release(self, path: str | Path, out: str | Path, split: str | None) -> str:
        """The original CoDA21 release schema (one JSON file)."""
        from ..io import atomic_output_file, check_docs_back, json_text, parse_json, read_text
        from .dataset import export_coda21_json, load

        ds = load(path)
        doc = export_coda21_json(ds)

        def read_back(tmp: Path) -> None:  # every group of each part of speech, by id, as written
            back = parse_json(read_text(tmp), tmp)
            check_docs_back(Path(out), Path(out).name, doc["n"] + doc["v"], back["n"] + back["v"])

        with atomic_output_file(out, check=read_back) as fh:
            fh.write(json_text(doc, indent=1))
        return f"wrote {out} ({len(ds.groups)} groups, {self.release_format})"

    def lm_eval_note(self) -> str:
        return NOTE

    def lm_eval_metric(self, eval_cmd: str, settings: dict[str, Any]) -> str:
        return (
            f"Each doc's `acc` is the prediction of `{eval_cmd} --matching simple` for that context "
            "(`--seed`, `--nonce`, `--pattern` as exported; summed log-probs), but lm-eval averages over "
            "contexts while probegen averages group accuracies, so the two means differ when group sizes do. "
            "`acc_norm` divides each definition's log-prob by its length in characters.\n\n" + NOTE
        )

    def hf_description(self) -> str:
        return ("One row per CoDA21 context. `choices` are the definitions of its group (`group`, `k` rows) "
                "in probegen's seeded column order and `gold` the index of its own definition. " + NOTE)

    def study_pool(self, data: Coda21Dataset, cfg: Any) -> tuple[list[Any], str, dict[str, int]]:
        """Every group (a group is aligned as one study item)."""
        return list(data.groups), "groups", {}

    def study_view(self, data: Coda21Dataset, unit: Any, condition: str, seed: int) -> dict[str, Any]:
        from .study import align_view

        return align_view(unit, condition, seed)

    def study_gold(self, unit: Any, seed: int) -> dict[str, Any]:
        from .study import align_gold

        return align_gold(unit, seed)

    def spec_section(self) -> SpecSection:
        from .spec import SECTION

        return SECTION

    def spec_models(self, spec: Spec) -> list[str]:
        """The definition embedder and the context scorer (unless contexts are taken first-come)."""
        from .spec import alignment_of

        scorer = [spec.contexts.scorer] if spec.contexts.scorer != "first" else []
        return [alignment_of(spec).embedder, *scorer]

    def built_summary(self, data: Coda21Dataset) -> str:
        c = data.manifest.get("counts", {})
        return ", ".join(f"{p}: {v['groups']} groups / {v['unique_synsets']} synsets"
                         for p, v in c.items() if v["groups"])
