"""The run of ``probegen bias --method trained`` and of ``probegen eval`` on a word-in-context dataset:
datasets checked and loaded, the encoder loaded and its features read, outputs written; the analysis is
:mod:`probegen.diagnostics.trained`."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from probegen.diagnostics.inputs import view
from probegen.diagnostics.trained import (
    CONDITIONS,
    Features,
    TrainedConfig,
    bias_ratios,
    entropies,
    prior_correct,
    seed_stats,
    seeds_correct,
    train_test,
)
from probegen.errors import ProbegenError
from probegen.runner import Runner
from probegen.scorers.spans import SpanEncoder, SpanFeatures
from probegen.tasks import Task, Trainable, all_tasks, task_of

Log = Callable[[str], None]
DEFAULT = TrainedConfig()
#: fine-tunes a copy of the encoder for one condition and seed: per-test-item correctness
Finetuner = Callable[[SpanEncoder, str, list[Any], list[Any], int, TrainedConfig], np.ndarray]


def load_encoder(model: str, max_length: int = 256, batch_size: int = 32, *, runner: Runner) -> SpanEncoder:
    """The target-span feature encoder of a probegen model (its scorer's
    :meth:`~probegen.scorers.spans.SpanFeatures.span_encoder`), loaded by ``runner``."""
    scorer = runner.load_scorer(model)
    if not isinstance(scorer, SpanFeatures):
        raise ProbegenError(f"{model} is a {scorer.kind} model: --method trained needs a transformer (token positions)")
    return scorer.span_encoder(max_length, batch_size)


def features(items: list[Any], condition: str, enc: SpanEncoder, progress: bool = False) -> Features:
    """(X, y, group) for a condition: one row per item (pair/label) or per choice (choice; y = is gold,
    group = item index), as the items' task lays them out (``trained_features``)."""
    return task_of(items).trained_features(items, lambda t: view(t, condition, enc.mask),
                                           lambda rows: enc.vectors(rows, progress))


def condition_correct(train: list[Any], test: list[Any], enc: SpanEncoder, cfg: TrainedConfig, log: Log = print,
                      progress: bool = True, finetuner: Finetuner | None = None, name: str = "",
                      ev: str = "test") -> dict[str, list[np.ndarray]]:
    """Per condition, one per-test-item correctness array per seed (the label condition: the training data's
    majority on the seed's share of units, or all of them with ``finetuner``)."""
    seeds = cfg.seed_list()
    correct: dict[str, list[np.ndarray]] = {}
    for cond in ("full", "context", "word"):
        log(f"{name}: {cond} ({len(train)} train / {len(test)} {ev} items, {len(seeds)} seeds)")
        if finetuner is not None:
            correct[cond] = [finetuner(enc, cond, train, test, s, cfg) for s in seeds]
        else:
            tr, te = features(train, cond, enc, progress), features(test, cond, enc, progress)
            correct[cond] = seeds_correct(train, test, tr, te, cfg)
    correct["label"] = prior_correct(train, test, 1.0 if finetuner else cfg.subsample, seeds)
    return correct


def measure(ds: Any, name: str, enc: SpanEncoder, cfg: TrainedConfig, log: Log = print, progress: bool = True,
            finetuner: Finetuner | None = None) -> dict[str, Any]:
    """Accuracies per condition and seed, bias ratios with SD and bootstrap CIs, entropies, for one dataset."""
    train, test, ev = train_test(ds, name)
    t0 = time.perf_counter()
    correct = condition_correct(train, test, enc, cfg, log, progress, finetuner, name, ev)
    acc = {c: seed_stats([float(v.mean()) for v in vs]) for c, vs in correct.items()}
    ratios, boot = bias_ratios(correct, acc, test, cfg)
    c, w = ratios["bias_c"]["value"], ratios["bias_w"]["value"]
    side = None if c is None or w is None else "context-biased" if c > w else "word-biased"
    return {
        "name": name,
        "path": ds.source,
        "kind": ds.kind,
        "task": test[0].task,
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


def load_datasets(paths: list[str | Path], subset: tuple[str, int] | None = None, seed: int = 0, log: Log = print,
                  kinds: Sequence[Any] | None = None) -> list[tuple[str, Any]]:
    """(name, dataset) of every word-in-context dataset, all validated before any model is loaded; ``subset``
    (``--limit``/``--sample``) keeps whole lemmas (WSD: documents) of every split. ``kinds``: the datasets'
    tasks when the caller detected them (None: detected here)."""
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


def run_trained(model: str, datasets: list[str | Path], out: Path, cfg: TrainedConfig = DEFAULT,
                log: Log = print, progress: bool = True, encoder: SpanEncoder | None = None,
                allow_cpu_finetune: bool = False, *, runner: Runner,
                kinds: Sequence[Any] | None = None) -> dict[str, Any]:
    """Validate the datasets (``kinds``: their tasks if the caller detected them), load the encoder, train and
    test every condition, write the report.

    ``encoder`` replaces the model's and ``allow_cpu_finetune`` runs the fine-tuning loop without a GPU
    (tests). ``runner`` loads the model; under ``torchrun`` rank 0 alone logs and writes.
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
    finetuner: Finetuner | None = None
    if cfg.finetune:
        from probegen.run.finetune import finetune_correct

        finetuner = finetune_correct
    entries = [measure(ds, name, enc, cfg, log, progress, finetuner) for name, ds in loaded]
    return write_trained(model, entries, out, cfg, log, runner=runner)


def write_trained(model: str, entries: list[dict[str, Any]], out: Path, cfg: TrainedConfig, log: Log = print, *,
                  runner: Runner) -> dict[str, Any]:
    """Write results.json, report.md, bias_plane.png and per-item correctness (``<name>/correct.jsonl``)
    (rank 0 alone under ``torchrun``)."""
    from probegen.diagnostics.trained_report import plot_trained_plane, render_trained_report
    from probegen.io import write_json, write_jsonl

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


def eval_trained(model: str, dataset: str | Path, out: Path, cfg: TrainedConfig = DEFAULT, log: Log = print,
                 encoder: SpanEncoder | None = None, *, runner: Runner, task: Task) -> str:
    """``probegen eval`` on a word-in-context dataset (``task``: its task, detected by the caller): a linear
    probe on the frozen encoder, full input, one run per seed; writes ``results.json`` (accuracy mean/SD, the
    label prior) and ``items.jsonl`` (per test item and seed: correct or not). Returns a one-line summary."""
    from probegen.io import write_json, write_jsonl

    ((name, ds),) = load_datasets([dataset], cfg.subset, cfg.seed, log, [task])
    train, test, ev = train_test(ds, name)
    enc = encoder or load_encoder(model, cfg.max_length, cfg.batch_size, runner=runner)
    correct = seeds_correct(train, test, features(train, "full", enc), features(test, "full", enc), cfg)
    acc = seed_stats([float(c.mean()) for c in correct])
    lab = seed_stats([float(c.mean()) for c in prior_correct(train, test, cfg.subsample, cfg.seed_list())])
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
