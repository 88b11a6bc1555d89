"""``probegen bias --method trained``, its analysis: the bias paper's method on word-in-context datasets (the
run is :mod:`probegen.run.trained`).

One classifier per input condition (Liu, McCarthy & Korhonen) on the frozen encoder's last layer averaged over
the target span. The fit is convex and deterministic, so each seed trains on its own seeded ``subsample`` of the
training units (WiC lemmas, WSD documents); ``finetune`` (GPU) trains the encoder. Bias ratios from the mean
accuracies over seeds; CIs from a bootstrap over test units, SD over seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from probegen.errors import ProbegenError
from probegen.tasks import Trainable, task_of

from . import fitting
from .bias import UnitTable, bias_ratio, bootstrap_bias, fmt_ratio, unit_sums

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


Features = tuple[np.ndarray, np.ndarray, np.ndarray]


def subsample_units(items: list[Any], share: float, seed: int) -> list[int]:
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


def fit_predict(train_xyg: Features, test_xyg: Features, task: Trainable, C: float, seed: int,
                ids: list[str] | None = None) -> np.ndarray:
    """Train on frozen features (X, y, group) and return per-test-item correctness as ``task`` decides it;
    ``ids`` (the test items') and ``seed`` seed the core's tie breaking."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    Xtr, ytr, _ = train_xyg
    Xte, yte, gte = test_xyg
    if len(np.unique(ytr)) < 2:
        raise ProbegenError("the training split has only one label; a classifier cannot be trained")
    # convex and solved to its optimum (diagnostics.fitting): the seed changes nothing in the fit itself
    clf = fitting.fit(make_pipeline(StandardScaler(), fitting.linear_classifier(C)), Xtr, ytr)
    return np.asarray(task.classifier_correct(clf, fitting.quantize_features(Xte), yte, gte, ids, seed))


def seeds_correct(train: list[Any], test: list[Any], tr: Features, te: Features, cfg: TrainedConfig
                  ) -> list[np.ndarray]:
    """Per seed, the classifier's per-test-item correctness on features ``tr``/``te`` (X, y, group), each
    seed trained on its seeded share of the training units."""
    task, ids = task_of(test), [it.id for it in test]
    rows = [np.isin(tr[2], subsample_units(train, cfg.subsample, s)) for s in cfg.seed_list()]
    return [fit_predict((tr[0][r], tr[1][r], tr[2][r]), te, task, cfg.C, s, ids) for s, r in zip(cfg.seed_list(), rows)]


def prior_correct(train: list[Any], test: list[Any], share: float, seeds: list[int]) -> list[np.ndarray]:
    """Per seed and test item: does the majority label (or gold position) of the seed's ``share`` of the
    training units match?

    >>> from types import SimpleNamespace as N
    >>> tr = [N(task="pair", label=True, unit=u) for u in "abc"] + [N(task="pair", label=False, unit="d")]
    >>> prior_correct(tr, [N(task="pair", label=True), N(task="pair", label=False)], 1.0, [0])[0].tolist()
    [True, False]
    """
    prior = task_of(test).prior_correct
    return [np.asarray(prior([train[i] for i in subsample_units(train, share, s)], test, s)) for s in seeds]


def train_test(ds: Any, name: str) -> tuple[list[Any], list[Any], str]:
    """(train items, evaluation items, evaluation split): test if it has items, else dev."""
    train = ds.split("train")
    ev = "test" if ds.split("test") else "dev"
    test = ds.split(ev)
    if not train or not test:
        have = sorted({it.split for it in ds.items})
        raise ProbegenError(f"{name}: --method trained needs a train split and a test (or dev) split; it has "
                            f"{', '.join(have)}")
    return train, test, ev


def seed_stats(xs: list[float]) -> dict[str, Any]:
    """Mean, SD and the per-seed values of one figure."""
    a = np.asarray(xs, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "per_seed": [float(x) for x in a]}


def _nan_none(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def bias_ratios(correct: dict[str, list[np.ndarray]], acc: dict[str, dict[str, Any]], test: list[Any],
                cfg: TrainedConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ratios with value, CI and seed SD; the bootstrap) from per-item correctness and per-condition accuracies."""
    n_seeds = len(cfg.seed_list())
    per_seed_ratio = {
        r: seed_stats([x for x in (bias_ratio(acc[a]["per_seed"][i], acc["label"]["per_seed"][i],
                                              acc["full"]["per_seed"][i]) for i in range(n_seeds)) if x is not None]
                      or [np.nan])
        for r, a in RATIOS.items()
    }
    mean_item = {c: np.mean(np.stack(vs).astype(np.float64), axis=0) for c, vs in correct.items()}
    table: UnitTable = unit_sums(mean_item, [it.unit for it in test])
    boot = bootstrap_bias(table, RATIOS, n_boot=cfg.n_boot, seed=cfg.seed)
    ratios = {}
    defined = boot["gap"]["defined"]
    for r, a in RATIOS.items():
        raw = bias_ratio(acc[a]["mean"], acc["label"]["mean"], acc["full"]["mean"])
        # like the zero-shot report: undefined unless M_Full - M_L is clearly positive (dividing by noise)
        ratios[r] = {"ablation": a, "value": raw if defined else None, "unchecked_value": raw,
                     "ci": boot["ratios"][r]["ci"] if defined else None,
                     "seed_mean": _nan_none(per_seed_ratio[r]["mean"]), "seed_sd": _nan_none(per_seed_ratio[r]["sd"])}
    return ratios, boot


def entropies(items: list[Any]) -> dict[str, Any]:
    """Sense entropy and per-word label entropy (the bias paper's Table 4 measure), all items and per split."""
    from .entropy import label_entropy, sense_entropy

    task = task_of(items)

    def senses(its: list[Any]) -> list[tuple[str, str]]:
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

    out: dict[str, Any] = {}
    for part in ("all", "train", "test"):
        its = items if part == "all" else [it for it in items if it.split == part]
        if not its:
            continue
        s = senses(its)
        out[part] = {"sense": sense_entropy(s) if s else None,
                     "label": label_entropy([(it.lemma, task.gold_text(it)) for it in its])}
    out["note"] = ("sense: per-lemma entropy of the synsets its contexts are tagged with; label: per-word entropy of "
                   "the gold labels (T/F for pairs, the gold definition for choices). 0 = the word alone gives it "
                   "away.")
    return out


def summary_table(results: dict[str, Any]) -> str:
    """A short plain-text summary for the terminal."""
    lines = [f"{'dataset':<22} {'M_Full':>13} {'M_C':>13} {'M_W':>13} {'M_L':>13}  {'Bias_C':<22} {'Bias_W':<22} side"]
    for d in results["datasets"]:
        m = d["conditions"]
        cells = [f"{m[c]['mean']:.3f}±{m[c]['sd']:.3f}" for c in ("full", "context", "word", "label")]
        lines.append(f"{d['name']:<22} " + " ".join(f"{c:>13}" for c in cells) + "  "
                     + f"{fmt_ratio(d['ratios']['bias_c']):<22} {fmt_ratio(d['ratios']['bias_w']):<22} "
                     + f"{d['side'] or 'undefined'}")
    return "\n".join(lines)
