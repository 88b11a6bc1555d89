"""``probegen bias --method trained``: the bias paper's own method on word-in-context datasets.

For each input condition a model is trained on the train split and tested on the test split
(Liu, McCarthy & Korhonen train one per condition):

- ``full``: every context with its target;
- ``context``: the target replaced by the encoder's mask token (``[MASK]`` for BERT-style
  tokenizers; the nonce for tokenizers without one), its representation read at that position;
- ``word``: the target word alone, without its sentence;
- ``label``: no input: the majority label (pairs, labels) or the majority gold position
  (choices) of the training data.

Features (frozen encoder, the default): the encoder's last hidden layer averaged over the
tokens of the target span (character offsets from the tokenizer, so the representation is the
target's own, not a sentence embedding; for minilm-l6 the BERT encoder under its pooling). A
WiC pair gives ``[u, v, |u-v|, u*v]`` of its two targets and a LogisticRegression predicts T/F.
A WSD item gives one row ``[u, d, |u-d|, u*d]`` per choice, with ``d`` the mean-pooled encoding
of the sense definition; the classifier scores each row as gold or not and the item's answer is
its argmax (a tie for the top score is broken at random, as the core decides every item). A
one-context label item uses ``u``.

Seeds: LogisticRegression on frozen features is convex and deterministic, so a seed alone
would change nothing; each seed instead trains on a seeded ``subsample`` share of the training
units (lemmas for WiC, documents for WSD), so the mean/SD over seeds (as the paper reports)
shows how much a figure depends on the training data it saw. With ``finetune`` (GPU only) the
encoder is trained too, each seed on the whole train split with its own head initialisation
and batch order.

Bias_C = (M_C - M_L) / (M_Full - M_L), Bias_W = (M_W - M_L) / (M_Full - M_L) from the mean
accuracies over seeds; their 95% CIs come from a bootstrap over test units (the per-item
correctness averaged over seeds, every condition resampled together), and the per-seed ratios
give the SD.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from probegen.errors import ProbegenError
from probegen.runner import Runner
from probegen.scorers.spans import SpanEncoder, SpanFeatures
from probegen.tasks import Task, Trainable, all_tasks, task_of

from . import fitting
from .inputs import view

#: what the trained method needs of an encoder: ``vectors(rows, progress)``, ``mask``, ``dim``, ``name``
Encoder = SpanEncoder

CONDITIONS = {
    "full": "every context with its target",
    "context": "the target masked at its position",
    "word": "the target word alone",
    "label": "no input: the training data's majority label / gold position",
}
RATIOS = {"bias_c": "context", "bias_w": "word"}

@dataclass(frozen=True)
class TrainedConfig:
    """Settings of a trained bias run (recorded in results.json)."""

    seeds: int = 3
    seed: int = 0
    subsample: float = 0.9
    C: float = 1.0
    n_boot: int = 1000
    finetune: bool = False
    epochs: int = 2
    lr: float = 2e-5
    batch_size: int = 32
    max_length: int = 256
    subset: tuple[str, int] | None = None  # --limit / --sample: (how, n), whole lemmas or documents

    def seed_list(self) -> list[int]:
        return [self.seed + i for i in range(self.seeds)]


# ---- the encoder ---------------------------------------------------------------------------------
def load_encoder(model: str, max_length: int = 256, batch_size: int = 32, *, runner: Runner) -> SpanEncoder:
    """The target-span feature encoder of a probegen model, through its scorer's public interface
    (:meth:`~probegen.scorers.spans.SpanFeatures.span_encoder`): a sentence-transformers model's
    transformer, or a masked/causal LM; ``runner`` loads it."""
    scorer = runner.load_scorer(model)
    if not isinstance(scorer, SpanFeatures):
        raise ProbegenError(f"{model} is a {scorer.kind} model: --method trained needs a transformer (token positions)")
    return scorer.span_encoder(max_length, batch_size)


def features(items: list, condition: str, enc: Encoder,
             progress: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, group) for a condition: one row per item (pair/label) or per choice (choice; y = is
    gold, group = item index), as the items' task lays them out (``trained_features``)."""
    return task_of(items).trained_features(items, lambda t: view(t, condition, enc.mask),
                                           lambda rows: enc.vectors(rows, progress))


# ---- one condition, one seed ------------------------------------------------------------------------
def subsample_units(items: list, share: float, seed: int) -> list[int]:
    """Indices of the items whose unit falls in a seeded ``share`` of the units (all if share >= 1).

    >>> from types import SimpleNamespace as N
    >>> its = [N(unit=u) for u in "aabbccddee"]
    >>> keep = subsample_units(its, 0.6, 0)
    >>> len(keep), len({its[i].unit for i in keep})
    (6, 3)
    """
    if share >= 1:
        return list(range(len(items)))
    units = sorted({it.unit for it in items})
    n = max(1, int(round(share * len(units))))
    keep = set(np.asarray(units)[np.random.default_rng(seed).permutation(len(units))[:n]].tolist())
    return [i for i, it in enumerate(items) if it.unit in keep]


def label_correct(train: list, test: list, seed: int) -> np.ndarray:
    """Per test item: does the training data's majority label (or gold position) match?

    >>> from types import SimpleNamespace as N
    >>> tr = [N(task="pair", label=True)] * 3 + [N(task="pair", label=False)]
    >>> label_correct(tr, [N(task="pair", label=True), N(task="pair", label=False)], 0).tolist()
    [True, False]
    """
    return task_of(test).prior_correct(train, test, seed)


def _classifier(C: float, seed: int):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # convex and solved to its optimum (diagnostics.fitting): the seed changes nothing in the fit itself
    return make_pipeline(StandardScaler(), fitting.linear_classifier(C))


def fit_predict(train_xyg, test_xyg, task, C: float, seed: int, ids: list[str] | None = None) -> np.ndarray:
    """Train on frozen features and return per-test-item correctness, decided as ``task`` (the items'
    :class:`~probegen.tasks.Trainable`) says; ``ids`` (the test items' ids) and ``seed``
    seed the core's tie breaking."""
    Xtr, ytr, _ = train_xyg
    Xte, yte, gte = test_xyg
    if len(np.unique(ytr)) < 2:
        raise ProbegenError("the training split has only one label; a classifier cannot be trained")
    clf = fitting.fit(_classifier(C, seed), Xtr, ytr)
    return task.classifier_correct(clf, fitting.quantize_features(Xte), yte, gte, ids, seed)


# ---- a dataset -----------------------------------------------------------------------------------
def train_test(ds, name: str) -> tuple[list, list, str]:
    """(train items, evaluation items, evaluation split): test if it has items, else dev."""
    train = ds.split("train")
    ev = "test" if ds.split("test") else "dev"
    test = ds.split(ev)
    if not train or not test:
        have = sorted({it.split for it in ds.items})
        raise ProbegenError(f"{name}: --method trained needs a train split and a test (or dev) split; it has "
                            f"{', '.join(have)}")
    return train, test, ev


def _stats(xs: list[float]) -> dict[str, Any]:
    a = np.asarray(xs, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "per_seed": [float(x) for x in a]}


def _ratio(m_part: float, m_label: float, m_full: float) -> float | None:
    from .bias import bias_ratio

    return bias_ratio(m_part, m_label, m_full)


def condition_correct(train: list, test: list, enc: Encoder, cfg: TrainedConfig, log: Callable[[str], None] = print,
                      progress: bool = True, finetuner: Callable | None = None, name: str = "",
                      ev: str = "test") -> dict[str, list[np.ndarray]]:
    """Per condition, one per-test-item correctness array per seed (the label condition: the
    training data's majority label on the seed's share of units, or all of them with ``finetuner``)."""
    task = task_of(test)
    seeds = cfg.seed_list()
    ids = [it.id for it in test]
    correct: dict[str, list[np.ndarray]] = {c: [] for c in CONDITIONS}
    for cond in ("full", "context", "word"):
        log(f"{name}: {cond} ({len(train)} train / {len(test)} {ev} items, {len(seeds)} seeds)")
        if finetuner is not None:
            correct[cond] = [finetuner(enc, cond, train, test, s, cfg) for s in seeds]
            continue
        tr, te = features(train, cond, enc, progress), features(test, cond, enc, progress)
        for s in seeds:
            rows = np.isin(tr[2], subsample_units(train, cfg.subsample, s))
            correct[cond].append(fit_predict((tr[0][rows], tr[1][rows], tr[2][rows]), te, task, cfg.C, s, ids))
    for s in seeds:
        keep = subsample_units(train, 1.0 if finetuner else cfg.subsample, s)
        correct["label"].append(label_correct([train[i] for i in keep], test, s))
    return correct


def _bias_ratios(correct: dict[str, list[np.ndarray]], acc: dict[str, dict[str, Any]], test: list,
                 cfg: TrainedConfig) -> tuple[dict, dict]:
    """(ratios with value, CI and seed SD; the bootstrap) from per-item correctness and per-condition accuracies."""
    from .bias import UnitTable, bootstrap_bias, unit_sums

    n_seeds = len(cfg.seed_list())
    per_seed_ratio = {
        r: _stats([x for x in (_ratio(acc[a]["per_seed"][i], acc["label"]["per_seed"][i], acc["full"]["per_seed"][i])
                               for i in range(n_seeds)) if x is not None] or [np.nan])
        for r, a in RATIOS.items()
    }
    mean_item = {c: np.mean(np.stack(vs).astype(np.float64), axis=0) for c, vs in correct.items()}
    table: UnitTable = unit_sums(mean_item, [it.unit for it in test])
    boot = bootstrap_bias(table, RATIOS, n_boot=cfg.n_boot, seed=cfg.seed)
    ratios = {}
    for r, a in RATIOS.items():
        b = boot["ratios"][r]
        raw = _ratio(acc[a]["mean"], acc["label"]["mean"], acc["full"]["mean"])
        # like the zero-shot report: undefined unless M_Full - M_L is clearly positive (dividing by noise)
        ratios[r] = {"ablation": a, "value": raw if boot["gap"]["defined"] else None, "unchecked_value": raw,
                     "ci": b["ci"] if boot["gap"]["defined"] else None,
                     "seed_mean": _nan_none(per_seed_ratio[r]["mean"]), "seed_sd": _nan_none(per_seed_ratio[r]["sd"])}
    return ratios, boot


def measure(ds, name: str, enc: Encoder, cfg: TrainedConfig, log: Callable[[str], None] = print,
            progress: bool = True, finetuner: Callable | None = None) -> dict[str, Any]:
    """Accuracies per condition and seed, bias ratios with SD and bootstrap CIs, entropies, for one dataset."""
    train, test, ev = train_test(ds, name)
    task = test[0].task
    t0 = time.perf_counter()
    correct = condition_correct(train, test, enc, cfg, log, progress, finetuner, name, ev)
    acc = {c: _stats([float(v.mean()) for v in vs]) for c, vs in correct.items()}
    ratios, boot = _bias_ratios(correct, acc, test, cfg)
    side = None
    if ratios["bias_c"]["value"] is not None and ratios["bias_w"]["value"] is not None:
        side = "context-biased" if ratios["bias_c"]["value"] > ratios["bias_w"]["value"] else "word-biased"
    return {
        "name": name,
        "path": ds.source,
        "kind": ds.kind,
        "task": task,
        "eval_split": ev,
        "n_train": len(train),
        "n_test": len(test),
        "n_test_units": len({it.unit for it in test}),
        "conditions": acc,
        "ratios": ratios,
        "bootstrap": {"gap": boot["gap"], "ablations": boot["ablations"], "unit": task_of(test).bootstrap_unit(ds)},
        "side": side,
        "paper": task_of(test).paper_bert,
        "entropy": entropies(ds.items),
        "manifest": {k: ds.manifest.get(k) for k in ("kind", "seed", "config", "source_format") if k in ds.manifest},
        "timings": {"train_and_test_s": round(time.perf_counter() - t0, 3)},
        "_correct": correct,
        "_test_ids": [it.id for it in test],
    }


def _nan_none(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def entropies(items: list) -> dict[str, Any]:
    """Sense entropy and per-word label entropy (the bias paper's Table 4 measure), all items and per split."""
    from .entropy import label_entropy, sense_entropy

    task = task_of(items)

    def senses(its):
        out = []
        for it in its:
            m = it.meta or {}
            if "synsets" in m:
                out += [(it.lemma, s) for s in m["synsets"]]
            elif "synset" in m:
                out.append((it.lemma, m["synset"]))
            elif task.sense_text(it) is not None:  # a choice item's gold definition names its sense
                out.append((it.lemma, task.sense_text(it)))
        return out

    def labels(its):
        return [(it.lemma, task.gold_text(it)) for it in its]

    out: dict[str, Any] = {}
    for part in ("all", "train", "test"):
        its = items if part == "all" else [it for it in items if it.split == part]
        if not its:
            continue
        s = senses(its)
        out[part] = {"sense": sense_entropy(s) if s else None, "label": label_entropy(labels(its))}
    out["note"] = ("sense: per-lemma entropy of the synsets its contexts are tagged with; label: per-word entropy of "
                   "the gold labels (T/F for pairs, the gold definition for choices). 0 = the word alone gives it "
                   "away.")
    return out


# ---- the run -------------------------------------------------------------------------------------
def load_datasets(paths: list[str | Path], subset: tuple[str, int] | None = None, seed: int = 0,
                  log: Callable[[str], None] = print, kinds: Sequence[Any] | None = None) -> list[tuple[str, Any]]:
    """(name, dataset) of every word-in-context dataset, all validated before any model is loaded;
    ``subset`` (``--limit``/``--sample``) keeps whole lemmas (WSD: documents) of every split. ``kinds``:
    the datasets' tasks (one per path) when the caller detected them (None: detected here)."""
    from probegen import tasks

    out = []
    for p, known in zip(paths, kinds or [None] * len(paths)):
        task = known or tasks.detect(p)
        if task.zero_shot:
            raise ProbegenError(f"{p}: --method trained measures word-in-context datasets (probegen make wic/wsd, a "
                                "generic word-in-context JSONL, or a WiC release copy); use --method zeroshot for "
                                "CoDA21 and WordNetQA")
        ds = task.load(p)
        q = Path(p)
        name = q.name if q.is_dir() else q.stem
        if subset is not None and isinstance(task, tasks.Subsettable):  # check_options took --limit/--sample only then
            ds, info = task.subset(ds, subset[0], subset[1], seed, whole="cluster")
            ds = tasks.with_manifest(ds, {**ds.manifest, "subset": info})
            log(f"{p}: {tasks.subset_line(info)}")
        train_test(ds, name)
        out.append((name, ds))
    return out


def require_gpu() -> None:
    """Fail with one line when --finetune has no GPU to run on."""
    import torch

    if not torch.cuda.is_available():
        raise ProbegenError("--finetune needs a CUDA GPU and none is available; drop --finetune to train a classifier "
                            "on the frozen encoder (CPU)")


def run_trained(
    model: str,
    datasets: list[str | Path],
    out: Path,
    cfg: TrainedConfig = TrainedConfig(),
    log: Callable[[str], None] = print,
    progress: bool = True,
    encoder: Encoder | None = None,
    allow_cpu_finetune: bool = False,
    *,
    runner: Runner,
    kinds: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Validate the datasets (``kinds``: their tasks if the caller detected them), load the encoder, train and
    test every condition, write the report.

    ``encoder`` replaces the model's (tests); ``allow_cpu_finetune`` lets tests run the
    fine-tuning loop on a tiny model without a GPU. ``runner`` loads the model (features are
    shared across ranks under ``torchrun``; rank 0 alone logs and writes).
    """
    log, progress = runner.main_log(log), progress and runner.progress
    if not datasets:
        raise ProbegenError("--method trained needs --dataset (a probegen wic/wsd directory, a word-in-context JSONL "
                            "or a WiC copy)")
    loaded = load_datasets(datasets, cfg.subset, cfg.seed, log, kinds)
    if cfg.finetune and not allow_cpu_finetune:
        require_gpu()
    t0 = time.perf_counter()
    enc = encoder or load_encoder(model, cfg.max_length, cfg.batch_size, runner=runner)
    log(f"model {model}: encoder {type(enc.net).__name__} ({enc.dim} dims, mask {enc.mask!r}; "
        f"{time.perf_counter() - t0:.1f} s to load)")
    finetuner = None
    if cfg.finetune:
        from .finetune import finetune_correct

        finetuner = finetune_correct
    entries = [measure(ds, name, enc, cfg, log, progress, finetuner) for name, ds in loaded]
    return write_trained(model, entries, out, cfg, log, runner=runner)


def write_trained(model: str, entries: list[dict[str, Any]], out: Path, cfg: TrainedConfig,
                  log: Callable[[str], None] = print, *, runner: Runner) -> dict[str, Any]:
    """Write results.json, report.md, bias_plane.png and per-item correctness (``<name>/correct.jsonl``)
    (rank 0 alone under ``torchrun``)."""
    from probegen.io import write_json, write_jsonl

    from .trained_report import plot_trained_plane, render_trained_report

    for e in entries:
        e["files"] = {"correct": f"{e['name']}/correct.jsonl", "seeds": cfg.seed_list()}
    results: dict[str, Any] = {
        "model": model,
        "method": "finetune" if cfg.finetune else "frozen encoder + LogisticRegression",
        "config": asdict(cfg),
        "conditions": CONDITIONS,
        "datasets": [{k: v for k, v in e.items() if not k.startswith("_")} for e in entries],
        "paper_bert": {t.name: t.paper_bert for t in all_tasks() if isinstance(t, Trainable) and t.paper_bert},
        "plot": "bias_plane.png",
    }
    with runner.output_dir(out) as tmp:
        for e in entries:
            # per test item (in the dataset's order): correct or not, per condition, one value per seed
            rows = [{"id": it_id, **{c: [bool(v[i]) for v in e["_correct"][c]] for c in CONDITIONS}}
                    for i, it_id in enumerate(e["_test_ids"])]
            write_jsonl(tmp / e["name"] / "correct.jsonl", rows)
        plot_trained_plane(results["datasets"], tmp / "bias_plane.png", title=f"Context-word bias, trained: {model}")
        (tmp / "report.md").write_text(render_trained_report(results), encoding="utf-8")
        write_json(tmp / "results.json", results)
    runner.main_log(log)(f"wrote {out}")
    return results


def summary_table(results: dict[str, Any]) -> str:
    """A short plain-text summary for the terminal."""
    from .trained_report import fmt

    lines = [f"{'dataset':<22} {'M_Full':>13} {'M_C':>13} {'M_W':>13} {'M_L':>13}  {'Bias_C':<22} {'Bias_W':<22} side"]
    for d in results["datasets"]:
        m = d["conditions"]
        cells = [f"{m[c]['mean']:.3f}±{m[c]['sd']:.3f}" for c in ("full", "context", "word", "label")]
        lines.append(f"{d['name']:<22} " + " ".join(f"{c:>13}" for c in cells) + "  "
                     + f"{fmt(d['ratios']['bias_c']):<22} {fmt(d['ratios']['bias_w']):<22} {d['side'] or 'undefined'}")
    return "\n".join(lines)


# ---- probegen eval on a word-in-context dataset ---------------------------------------------------------
def eval_trained(model: str, dataset: str | Path, out: Path, cfg: TrainedConfig = TrainedConfig(),
                 log: Callable[[str], None] = print, encoder: Encoder | None = None,
                 *, runner: Runner, task: Task) -> str:
    """``probegen eval`` on a word-in-context dataset: a linear probe on the frozen encoder, full input
    (``task``: the dataset's, which the caller detected when it checked the request).

    Trained on the train split, tested on the test (else dev) split, one run per seed; writes
    ``results.json`` (accuracy mean/SD, the label prior) and ``items.jsonl`` (per test item, per
    seed: correct or not). Returns a one-line summary. ``runner`` loads the model (rank 0 alone
    writes under ``torchrun``).
    """
    from probegen.io import write_json, write_jsonl

    (name, ds), = load_datasets([dataset], cfg.subset, cfg.seed, log, [task])
    train, test, ev = train_test(ds, name)
    enc = encoder or load_encoder(model, cfg.max_length, cfg.batch_size, runner=runner)
    tr, te = features(train, "full", enc), features(test, "full", enc)
    correct, prior = [], []
    for s in cfg.seed_list():
        keep = subsample_units(train, cfg.subsample, s)
        rows = np.isin(tr[2], keep)
        correct.append(fit_predict((tr[0][rows], tr[1][rows], tr[2][rows]), te, task_of(test), cfg.C, s,
                                   [it.id for it in test]))
        prior.append(label_correct([train[i] for i in keep], test, s))
    acc = _stats([float(c.mean()) for c in correct])
    lab = _stats([float(c.mean()) for c in prior])
    results = {
        "model": model, "dataset": str(dataset), "kind": ds.kind, "task": test[0].task, "eval_split": ev,
        "method": "linear probe (LogisticRegression) on the frozen encoder's target-span vectors, full input",
        "config": asdict(cfg), "n_train": len(train), "n_test": len(test),
        "metrics": {"accuracy": acc, "label_prior": lab},
    }
    with runner.output_dir(out) as tmp:
        write_jsonl(tmp / "items.jsonl",
                    ({"id": it.id, "correct": [bool(c[i]) for c in correct]} for i, it in enumerate(test)))
        write_json(tmp / "results.json", results)
    runner.main_log(log)(f"wrote {out}")
    return (f"{name}: accuracy {acc['mean']:.3f} ± {acc['sd']:.3f} on {len(test)} {ev} items "
            f"({len(cfg.seed_list())} seeds; label prior {lab['mean']:.3f})")
