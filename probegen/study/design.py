"""``probegen study make``: sample items, assign them to annotators, write the study directory.

Design (the bias paper's human study): ``n`` items are sampled once and shown in every condition
(paired), each condition to its own ``annotators``. Within a condition ``overlap`` items go to every
annotator (for agreement) and the rest are dealt out in turn, each annotator in their own seeded order.
Items are kept out of a condition where ``probegen bias`` keeps them out of its ratio (the gold's
``kept_out``), so the human ratios are measured on the items the model's are.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProbegenError
from ..io import atomic_dir, file_hashes, write_json, write_jsonl
from ..manifest import CANARY
from ..version import __version__

if TYPE_CHECKING:
    from ..tasks import Dataset, Task
from .store import ANSWERS, ASSIGNMENT, GOLD, ITEMS, MANIFEST, TOKENS
from .views import check_conditions
from .views import study_rng as _rng


@dataclass(frozen=True)
class StudyConfig:
    """How a study is sampled and assigned (recorded in the manifest)."""

    conditions: tuple[str, ...] = ("full", "context", "word")
    n: int = 100
    annotators: int = 2  # per condition
    overlap: int = 50  # items every annotator of a condition answers
    seed: int = 0
    split: str | None = None  # WordNetQA: sample from one split only

    def validate(self) -> None:
        """One-line errors for settings that cannot make a study.

        >>> StudyConfig(n=10, annotators=2, overlap=11).validate()
        Traceback (most recent call last):
        probegen.errors.ProbegenError: --overlap 11 exceeds --n 10
        """
        check_conditions(list(self.conditions))
        if self.n < 1:
            raise ProbegenError("--n must be at least 1")
        if self.annotators < 1:
            raise ProbegenError("--annotators must be at least 1")
        if not 0 <= self.overlap:
            raise ProbegenError("--overlap must be at least 0")
        if self.overlap > self.n:
            raise ProbegenError(f"--overlap {self.overlap} exceeds --n {self.n}")
        if self.overlap and self.annotators < 2:
            raise ProbegenError("--overlap needs at least 2 annotators per condition (agreement is measured between "
                                "them)")


def sample_units(task: Any, data: Dataset, cfg: StudyConfig) -> tuple[list[Any], dict[str, int]]:
    """The sampled dataset units (``task``, or its name, says how to pool them) and what was left out and why."""
    from .. import tasks

    task = tasks.get(task) if isinstance(task, str) else task
    if not isinstance(task, tasks.Studyable):  # `study make` checks it with its options
        raise tasks.incapable(task, "study")
    rng = _rng(cfg.seed, "study-sample")
    pool, label, skipped = task.study_pool(data, cfg)
    if len(pool) < cfg.n:
        raise ProbegenError(_too_few(task, data, cfg, len(pool), label, skipped))
    picks = rng.choice(len(pool), size=cfg.n, replace=False)
    return [pool[int(i)] for i in picks], skipped


def _too_few(task: Any, data: Dataset, cfg: StudyConfig, k: int, label: str, skipped: dict[str, int]) -> str:
    """Why the dataset cannot give ``cfg.n`` units, and settings that work with it where some do."""
    why = "".join(f"; {v} skipped: {key}" for key, v in skipped.items())
    fix = []
    if k == 0 and tuple(cfg.conditions) != ("full",):
        from dataclasses import replace

        k = len(task.study_pool(data, replace(cfg, conditions=("full",)))[0])
        if k == 0:
            return f"the dataset has no {label} a study can use{why}"
        fix.append("--conditions full")
        head = (f"the dataset has no {label} a study can show in the {', '.join(cfg.conditions)} conditions{why}; "
                f"it has {k} for the full condition alone")
    elif k == 0:
        return f"the dataset has no {label} a study can use{why}"
    else:
        head = f"the dataset has only {k} usable {label} for --n {cfg.n}{why}"
    if k < cfg.n:
        fix.append(f"--n {k} or fewer")
    if cfg.overlap > min(k, cfg.n):
        fix.append(f"--overlap {min(k, cfg.n)} or less")
    return f"{head}: use {', '.join(fix[:-1]) + ' and ' if len(fix) > 1 else ''}{fix[-1]}"


def assign(uids: list[str], cfg: StudyConfig, kept_out: dict[str, set[str]] | None = None) -> dict[str, dict[str, Any]]:
    """Annotator id (``<condition>-<j>``) -> condition, items in presentation order, shared items;
    ``kept_out``: condition -> items shown to nobody of it.

    >>> a = assign([f"q{i}" for i in range(10)], StudyConfig(conditions=("full",), n=10, annotators=2, overlap=4))
    >>> sorted(a), [len(x["items"]) for x in a.values()], len(a["full-1"]["shared"])
    (['full-1', 'full-2'], [7, 7], 4)
    >>> b = assign([f"q{i}" for i in range(10)],
    ...            StudyConfig(conditions=("full", "word"), n=10, annotators=1, overlap=0), {"word": {"q0", "q1"}})
    >>> len(b["full-1"]["items"]), sorted(b["word-1"]["items"])[:2]
    (10, ['q2', 'q3'])
    """
    out: dict[str, dict[str, Any]] = {}
    for cond in cfg.conditions:
        shown = [u for u in uids if u not in (kept_out or {}).get(cond, ())]
        order = [shown[int(i)] for i in _rng(cfg.seed, f"study-deal/{cond}").permutation(len(shown))]
        shared, rest = order[: cfg.overlap], order[cfg.overlap :]
        for j in range(cfg.annotators):
            aid = f"{cond}-{j + 1}"
            mine = shared + rest[j :: cfg.annotators]
            mine = [mine[int(i)] for i in _rng(cfg.seed, f"study-order/{aid}").permutation(len(mine))]
            out[aid] = {"condition": cond, "items": mine, "shared": sorted(shared)}
    return out


def kept_out_counts(gold: list[dict[str, Any]], conditions: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """Condition -> reason -> how many sampled items are kept out of it (conditions with none left out).

    >>> kept_out_counts([{"kept_out": {"word": "names the gold"}}, {}], ("full", "word"))
    {'word': {'names the gold': 1}}
    """
    out: dict[str, dict[str, int]] = {}
    for g in gold:
        for cond, why in g.get("kept_out", {}).items():
            if cond in conditions:
                reasons = out.setdefault(cond, {})
                reasons[why] = reasons.get(why, 0) + 1
    return out


def build_study(dataset: str | Path, cfg: StudyConfig, task: Task | None = None) -> dict[str, Any]:
    """Everything a study directory holds but the tokens, in memory (``task``: None, detected and checked)."""
    from .. import tasks

    cfg.validate()
    if task is None:  # a direct library call (`probegen study make` checked its request already)
        tasks.check_options([task := tasks.detect(dataset)], {"split": cfg.split}, "study", [dataset])
    if not isinstance(task, tasks.Studyable):  # check_options said so already: narrows the type
        raise tasks.incapable(task, "study", dataset)
    data = task.load(dataset)
    units, skipped = sample_units(task, data, cfg)
    width = len(str(cfg.n))
    uids = [f"q{i + 1:0{width}d}" for i in range(len(units))]
    items: list[dict[str, Any]] = []
    gold: list[dict[str, Any]] = []
    for uid, unit in zip(uids, units):
        gold.append({"uid": uid, **task.study_gold(unit, cfg.seed)})
        for cond in cfg.conditions:
            if cond not in gold[-1].get("kept_out", {}):  # never shown there: no view to serve
                items.append({"uid": uid, "condition": cond, "view": task.study_view(data, unit, cond, cfg.seed)})
    items.sort(key=lambda r: (list(cfg.conditions).index(r["condition"]), r["uid"]))
    kept_out = {c: {g["uid"] for g in gold if c in g.get("kept_out", {})} for c in cfg.conditions}
    annotators = assign(uids, cfg, kept_out)
    manifest = {
        "kind": "study",
        "probegen_version": __version__,
        "canary": CANARY,
        "dataset": {"path": str(dataset), "name": Path(str(dataset).rstrip("/")).name, "kind": task.name,
                    "fingerprint": task.fingerprint(data)},
        "conditions": list(cfg.conditions),
        "n": cfg.n,
        "annotators_per_condition": cfg.annotators,
        "overlap": cfg.overlap,
        "seed": cfg.seed,
        "split": cfg.split,
        "unit": task.unit_name,
        "design": "paired: the same sampled items in every condition (less those kept out of a condition, as "
                  "`probegen bias` keeps them out of its ratio), different annotators per condition",
        "counts": {
            "items": len(uids),
            "skipped": skipped,
            "per_condition": {c: len(uids) - len(kept_out[c]) for c in cfg.conditions},
            "kept_out": kept_out_counts(gold, cfg.conditions),
            "annotations_planned": sum(len(a["items"]) for a in annotators.values()),
            "per_annotator": {aid: len(a["items"]) for aid, a in annotators.items()},
        },
    }
    return {"manifest": manifest, "items": items, "assignment": {"annotators": annotators}, "gold": gold}


def write_study(study: dict[str, Any], out: str | Path) -> dict[str, str]:
    """Write the study directory in one rename, never over an existing one; returns the tokens."""
    out = Path(out)
    if out.exists():
        raise ProbegenError(f"{out} already exists; a study is never overwritten (it may hold answers): choose another "
                            "--out")
    tokens = {aid: secrets.token_urlsafe(18) for aid in study["assignment"]["annotators"]}
    with atomic_dir(out) as tmp:
        write_jsonl(tmp / ITEMS, study["items"])
        write_json(tmp / ASSIGNMENT, study["assignment"])
        write_jsonl(tmp / GOLD, study["gold"])
        manifest = dict(study["manifest"], files=file_hashes(tmp, [ITEMS, ASSIGNMENT, GOLD]))
        write_json(tmp / MANIFEST, manifest)
        write_json(tmp / TOKENS, tokens)
        (tmp / TOKENS).chmod(0o600)
        (tmp / ANSWERS).mkdir()
    return tokens
