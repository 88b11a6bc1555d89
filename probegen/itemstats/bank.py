"""An item bank (``probegen items ... --bank BANK``): per item its IRT parameters, record, the record's
content fingerprint, strata and cluster, and the provenance; :func:`check_dataset` refuses a dataset the
bank was not fitted on, by item ids and by content.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ProbegenError
from .cat import CatBank

FORMAT = "probegen-item-bank"
VERSION = 1
#: record fields that make a bank's strata (content balance), where a record has them
STRATA_KEYS = ("pos", "probe", "hops", "distractor_type")


def record_json(record: Any) -> Any:
    """A record's content as JSON data (its ``to_json()``, a dataclass's fields, else its repr)."""
    import dataclasses

    if hasattr(record, "to_json"):
        return record.to_json()
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    return repr(record)


def record_fingerprint(record: Any) -> str:
    """sha256 of a record's content (canonical JSON)."""
    from ..io import json_text, sha256_text

    return sha256_text(json_text(record_json(record)))


def record_strata(record: Any) -> dict[str, Any]:
    """The record's values of :data:`STRATA_KEYS` it has.

    >>> record_strata({"pos": "n", "hops": 2, "word": "x"})
    {'pos': 'n', 'hops': 2}
    """
    data = record_json(record) if not isinstance(record, dict) else record
    return {k: data[k] for k in STRATA_KEYS if isinstance(data, dict) and data.get(k) is not None}


def stratum_label(strata: dict[str, Any]) -> str:
    """One label of a record's strata (the content-balance cell).

    >>> stratum_label({"pos": "n", "hops": 2}), stratum_label({})
    ('pos=n;hops=2', 'all')
    """
    return ";".join(f"{k}={v}" for k, v in strata.items()) or "all"


def record_index(items: Sequence[str], records: Sequence[str]) -> np.ndarray:
    """For each table item, the index of its record (an item ``<record>#<row>`` is a group's row); -1 if none."""
    where = {r: i for i, r in enumerate(records)}
    return np.array([where.get(it, where.get(it.rsplit("#", 1)[0], -1)) for it in items], dtype=int)


def dataset_fingerprint(fingerprints: Sequence[str]) -> str:
    """sha256 over the records' fingerprints in dataset order: the dataset's content."""
    from ..io import sha256_text

    return sha256_text("\n".join(fingerprints))


def load_dataset(path: str | Path) -> tuple[Any, Any, list[Any], list[str]]:
    """(task, data, records, record ids) of a dataset an adaptive test can cut to records."""
    from .. import tasks

    task = tasks.detect(path)
    if not isinstance(task, tasks.Subsettable):
        raise ProbegenError(f"{path}: datasets of kind {task.name!r} cannot be given adaptively (the kind does not "
                            "implement Subsettable: its records cannot be given a few at a time)")
    data = task.load(path)
    records = task.records(data)
    return task, data, records, [str(getattr(r, "id", i)) for i, r in enumerate(records)]


@dataclass
class Bank:
    """A bank read back: its JSON (:attr:`info`) and the engine's arrays over the records it holds."""

    info: dict[str, Any]
    path: Path

    @property
    def items(self) -> list[dict[str, Any]]:
        return list(self.info["items"])

    def records(self) -> list[str]:
        """The record ids the bank holds, in first-seen order."""
        return list(dict.fromkeys(str(it["record"]) for it in self.items))

    def engine(self) -> CatBank:
        """The engine's view (:class:`~.cat.CatBank`)."""
        recs = self.records()
        where = {r: i for i, r in enumerate(recs)}
        first = {str(it["record"]): it for it in reversed(self.items)}
        return CatBank(a=np.array([float(it["a"]) for it in self.items]),
                       b=np.array([float(it["b"]) for it in self.items]),
                       c=np.array([float(it["c"]) for it in self.items]),
                       record=np.array([where[str(it["record"])] for it in self.items], int),
                       stratum=[stratum_label(first[r].get("strata") or {}) for r in recs],
                       cluster=[str(first[r].get("cluster") or r) for r in recs])


def build_bank(rows: Sequence[dict[str, Any]], summary: dict[str, Any], respondents: Sequence[str],
               dataset: str | Path) -> dict[str, Any]:
    """The bank of an analysis (item ``rows`` with IRT parameters, ``summary``) of runs on ``dataset``."""
    irt = summary.get("irt") or {}
    if not irt.get("model") or not rows or "a" not in rows[0]:
        raise ProbegenError("--bank needs an IRT fit (--irt 1pl, 2pl or 3pl, not none)")
    task, _, records, ids = load_dataset(dataset)
    item_ids = [str(r["item"]) for r in rows]
    rec = record_index(item_ids, ids)
    if (rec < 0).any():
        missing = [i for i, r in zip(item_ids, rec) if r < 0]
        raise ProbegenError(f"--bank: {len(missing)} item(s) of the runs are not records of {dataset} "
                            f"(e.g. {', '.join(missing[:3])}): the runs are not on that dataset")
    prints = [record_fingerprint(r) for r in records]
    items = [{"item": row["item"], "record": ids[r], "a": float(row["a"]), "b": float(row["b"]),
              "c": float(row["c"]), "k": int(row["k"]), "fingerprint": prints[r], "strata": record_strata(records[r]),
              "cluster": str(task.cluster_of(records[r])), "flags": row.get("flags") or ""}
             for row, r in zip(rows, rec)]
    return {"format": FORMAT, "version": VERSION,
            "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            "dataset": {"path": str(dataset), "kind": task.name, "fingerprint": dataset_fingerprint(prints),
                        "records": len(records)},
            "irt": {"model": irt["model"], "prior": "theta ~ N(0, 1)", "loglik": irt.get("loglik"),
                    "respondents": len(respondents), "respondent_names": list(respondents)},
            "items": items}


def read_bank(path: str | Path) -> Bank:
    """A bank file back, or one line: not a bank, or a bank without IRT parameters."""
    from ..io import parse_json, read_text

    p = Path(path)
    if not p.is_file():
        raise ProbegenError(f"{p} is not an item bank (no such file)")
    info = parse_json(read_text(p, what="item bank"), p)
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise ProbegenError(f"{p} is not a probegen item bank (write one with probegen items RUNS --bank FILE)")
    items = info.get("items")
    if not isinstance(items, list) or not items:
        raise ProbegenError(f"{p}: the bank holds no item")
    irt = info.get("irt")
    bad = next((it for it in items if not isinstance(it, dict) or not all(
        isinstance(it.get(x), (int, float)) and not isinstance(it.get(x), bool) for x in ("a", "b", "c"))), None)
    if not isinstance(irt, dict) or not irt.get("model") or bad is not None:
        what = "no IRT model" if not isinstance(irt, dict) or not irt.get("model") else \
            f"item {bad.get('item') if isinstance(bad, dict) else bad!r} has no IRT parameters (a, b, c)"
        raise ProbegenError(f"{p}: the bank has {what}; calibrate it with probegen items RUNS --irt 2pl --bank FILE")
    if not isinstance(info.get("dataset"), dict) or not info["dataset"].get("fingerprint"):
        raise ProbegenError(f"{p}: the bank does not name the dataset it was fitted on")
    for it in items:
        if "record" not in it or "fingerprint" not in it:
            raise ProbegenError(f"{p}: item {it.get('item')!r} has no record or content fingerprint")
    return Bank(info, p)


def check_dataset(bank: Bank, task: Any, records: Sequence[Any], ids: Sequence[str], dataset: str | Path) -> list[int]:
    """The indices into ``records`` of the bank's records; one line unless ``dataset`` is the one it was
    fitted on (kind, ids, content)."""
    d = bank.info["dataset"]
    if d.get("kind") != task.name:
        raise ProbegenError(f"{bank.path} was fitted on a {d.get('kind')} dataset ({d.get('path')}); {dataset} is a "
                            f"{task.name} dataset")
    where = {r: i for i, r in enumerate(ids)}
    absent = [r for r in bank.records() if r not in where]
    if absent:
        raise ProbegenError(f"{bank.path} was fitted on another dataset ({d.get('path')}): {len(absent)} of its "
                            f"records are not in {dataset} (e.g. {', '.join(absent[:3])})")
    prints = {str(it["record"]): it["fingerprint"] for it in bank.items}
    changed = [r for r in bank.records() if record_fingerprint(records[where[r]]) != prints[r]]
    if changed:
        raise ProbegenError(f"{bank.path} was fitted on another dataset ({d.get('path')}): {len(changed)} record(s) of "
                            f"{dataset} have the same id but other content (e.g. {changed[0]})")
    if dataset_fingerprint([record_fingerprint(r) for r in records]) != d["fingerprint"]:
        raise ProbegenError(f"{bank.path} was fitted on another dataset ({d.get('path')}): {dataset} holds the bank's "
                            "records unchanged but other records beside them (added or removed since)")
    return [where[r] for r in bank.records()]
