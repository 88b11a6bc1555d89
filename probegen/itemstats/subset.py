"""Compact forms: a subset of a dataset's records (``random``; ``anchor``: tinyBenchmarks' k-means of the
response patterns; ``information``: the most Fisher information), and a predictor of a new respondent's
full-set accuracy from the subset (ability with the item parameters fixed, plus the expected score of the
rest, with a 95% interval), validated by leaving respondents out against random subsets of the same size.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..errors import ProbegenError
from .bank import record_index
from .irt import IrtFit, fit, information, prob

if TYPE_CHECKING:
    from ..tasks import Dataset

METHODS = ("random", "anchor", "information")


def record_matrix(y: np.ndarray, rec: np.ndarray, n_records: int) -> np.ndarray:
    """respondents x records: each respondent's mean correctness over a record's items (NaN if none answered)."""
    m = ~np.isnan(y)
    sums, counts = np.zeros((len(y), n_records)), np.zeros((len(y), n_records))
    for i, r in enumerate(rec):
        if r >= 0:
            sums[:, r] += np.where(m[:, i], y[:, i], 0.0)
            counts[:, r] += m[:, i]
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def choose(method: str, size: int, y: np.ndarray, rec: np.ndarray, n_records: int, fitted: IrtFit | None,
           seed: int) -> np.ndarray:
    """Indices of the ``size`` records kept (among those someone answered), sorted."""
    answered = np.unique(rec[(rec >= 0) & (~np.isnan(y)).any(axis=0)])
    rng = np.random.default_rng(seed)
    if method == "random":
        return np.sort(rng.choice(answered, size, replace=False))
    if method == "information":
        if fitted is None:
            raise ProbegenError("--method information needs an IRT fit")
        info = information(fitted, fitted.theta).sum(axis=0)
        per = np.bincount(rec[rec >= 0], weights=info[rec >= 0], minlength=n_records)
        # on the decision grid: information that differs only in another CPU's last bits ties, and record order decides
        from ..core import grid_units

        return np.sort(answered[np.argsort(-grid_units(per[answered]), kind="stable")[:size]])
    from sklearn.cluster import KMeans

    r = record_matrix(y, rec, n_records)[:, answered]
    col = np.nanmean(np.where(np.isnan(r), np.nan, r), axis=0)
    feats = np.where(np.isnan(r), col[None, :], r).T  # records x respondents
    import warnings

    with warnings.catch_warnings():  # tied response patterns: fewer distinct centres than asked, handled below
        warnings.simplefilter("ignore")
        km = KMeans(n_clusters=size, n_init=3, random_state=seed).fit(feats)
    picked: list[int] = []
    for c in range(size):  # the record nearest each centre (not taken yet: tied patterns share centres)
        d = ((feats - km.cluster_centers_[c]) ** 2).sum(axis=1)
        d[picked] = np.inf
        picked.append(int(np.argmin(d)))
    return np.sort(answered[picked])


def predict(fitted: IrtFit, y_row: np.ndarray, shown: np.ndarray) -> tuple[float, float, float]:
    """(predicted full accuracy, 95% low, high) of one respondent from its answers on the items ``shown``."""
    grid = np.linspace(-5, 5, 201)
    p = prob(grid[:, None], fitted.a[None, :], fitted.b[None, :], fitted.c[None, :])  # G x I
    obs = shown & ~np.isnan(y_row)
    yo = y_row[obs]
    ll = (np.log(np.clip(p[:, obs], 1e-12, 1)) * yo + np.log(np.clip(1 - p[:, obs], 1e-12, 1)) * (1 - yo)).sum(1)
    ll += -grid ** 2 / 2
    post = np.exp(ll - ll.max())
    post /= post.sum()
    rest = ~obs
    n = len(y_row)
    acc = (yo.sum() + p[:, rest].sum(axis=1)) / n  # per grid ability
    mean = float(post @ acc)
    var = float(post @ (acc - mean) ** 2 + post @ (p[:, rest] * (1 - p[:, rest])).sum(axis=1) / n ** 2)
    sd = np.sqrt(var)
    return mean, max(0.0, mean - 1.96 * sd), min(1.0, mean + 1.96 * sd)


def _kendall(a: Any, b: Any) -> float | None:
    from scipy.stats import kendalltau

    if len(a) < 3:
        return None
    t = kendalltau(a, b).statistic
    return None if not np.isfinite(t) else float(t)


def validate(y: np.ndarray, k: np.ndarray, rec: np.ndarray, n_records: int, method: str, size: int,
             irt_model: str, seed: int = 0, folds: int = 5, random_draws: int = 5) -> dict[str, Any]:
    """Leave-respondents-out validation of ``method`` at ``size`` against random subsets (see the module doc)."""
    n = len(y)
    if n < 3:
        return {"skipped": f"{n} respondents: leaving respondents out needs at least 3"}
    fold_of = np.random.default_rng(seed).permutation(n) % min(folds, n)
    truth, pred, rand = np.nanmean(y, axis=1), np.zeros(n), np.zeros((random_draws, n))
    for f in range(fold_of.max() + 1):
        train, test = fold_of != f, fold_of == f
        fitted = fit(y[train], k, irt_model)
        kept = choose(method, size, y[train], rec, n_records, fitted, seed)
        shown = np.isin(rec, kept)
        for j in np.flatnonzero(test):
            pred[j] = predict(fitted, y[j], shown)[0]
        for d in range(random_draws):
            shown_r = np.isin(rec, choose("random", size, y[train], rec, n_records, None, seed + 1 + d))
            rand[d, test] = [np.nanmean(np.where(shown_r, y[j], np.nan)) for j in np.flatnonzero(test)]
    rand = np.nan_to_num(rand, nan=0.0)
    return {"respondents": n, "folds": int(fold_of.max() + 1), "method": method, "size": size,
            "mae": float(np.abs(pred - truth).mean()), "kendall_tau": _kendall(pred, truth),
            "random_mae": float(np.abs(rand - truth[None, :]).mean(axis=1).mean()),
            "random_kendall_tau": _mean_or_none([_kendall(r, truth) for r in rand])}


def _mean_or_none(vals: Sequence[float | None]) -> float | None:
    v = [x for x in vals if x is not None]
    return float(np.mean(v)) if v else None


def _record_key(record: Any) -> tuple[str, tuple[str, ...]] | None:
    """(key text, options) of a multiple-choice record (``choices`` and ``answer``), else None."""
    choices, answer = getattr(record, "choices", None), getattr(record, "answer", None)
    if isinstance(choices, tuple) and isinstance(answer, int) and 0 <= answer < len(choices):
        return str(choices[answer]), tuple(str(c) for c in choices)
    return None


def check_records(resp: Any, kind: str, data: Dataset, path: str | Path) -> None:
    """One line where a respondent placed on ``data`` (at ``path``) holds an item whose content is not the
    record's of that id."""
    from .. import tasks
    from ..exchange.respondent import content, contradiction

    task = tasks.get(kind)
    if not isinstance(task, tasks.Subsettable):  # its records cannot be listed: nothing to compare
        return
    known = {}
    for r in task.records(data):
        rk = _record_key(r)
        if rk is not None:
            known[str(getattr(r, "id", ""))] = content(rk[0], rk[1])
    for item, c in resp.content.items():
        why = contradiction(known[item], c) if item in known else None
        if why:
            raise ProbegenError(f"{resp.source}: its item {item} is not item {item} of {path} ({why}): results on "
                                "another dataset that uses the same ids")


def same_dataset(table: Any, records: Sequence[Any], rec: np.ndarray, dataset: str | Path,
                 items_dir: str | Path) -> None:
    """One line unless the items folder answered ``dataset``'s questions: each item's key must be the
    record's where it has options; where none can be compared, its runs must name ``dataset``."""
    from ..exchange.respondent import dataset_key

    items = table.items
    compared = 0
    for r in table.respondents:
        for i, it in enumerate(items):
            cell = r.cells.get(it)
            if cell is None or rec[i] < 0 or not isinstance(cell["key"], str):
                continue
            mine = _record_key(records[rec[i]])
            if mine is None:
                continue
            key, options = mine
            if cell["key"] == key:
                compared += 1
            elif cell["key"] in options or len(cell["key"]) > 2:  # a label of another question, not a letter
                raise ProbegenError(f"{items_dir}: item {it} of {r.source} has the key {cell['key'][:60]!r}, item "
                                    f"{it} of {dataset} {key[:60]!r}: its runs answered another dataset that uses "
                                    "the same ids")
    named = {r.dataset for r in table.respondents}
    if not compared and dataset_key(dataset) not in named:
        raise ProbegenError(f"{items_dir}: its runs are on {', '.join(sorted(named))[:200]}, not {dataset}, and "
                            "no item's content can be compared: give the items folder of runs on this dataset")


def _load(dataset: str | Path) -> tuple[Any, Any]:
    from .. import tasks

    task = tasks.detect(dataset)
    if not isinstance(task, tasks.Subsettable) or not isinstance(task, tasks.Writable):
        raise ProbegenError(f"{dataset}: datasets of kind {task.name!r} cannot be cut to a compact form "
                            "(the kind does not implement Subsettable and Writable)")
    return task, task.load(dataset)


def run_subset(dataset: str | Path, items_dir: str | Path, size: int, method: str, seed: int, out: str | Path,
               log: Callable[[str], None] = print) -> str:
    """``probegen subset``: check everything, choose, validate, then write the dataset (whole or not at all)."""
    from ..io import ensure_writable
    from .analyse import load_items

    if method not in METHODS:
        raise ProbegenError(f"unknown --method {method!r}; one of {', '.join(METHODS)}")
    ensure_writable(out, replace=True, inputs=[dataset, items_dir], writer="dataset")
    table, _, summary = load_items(items_dir)
    task, data = _load(dataset)
    records = task.records(data)
    ids = [str(getattr(r, "id", i)) for i, r in enumerate(records)]
    y, _, items, k = table.matrix()
    rec = record_index(items, ids)
    if (rec < 0).all():
        raise ProbegenError(f"{items_dir} holds no item of {dataset} (its runs are on another dataset)")
    same_dataset(table, records, rec, dataset, items_dir)
    answered = len(np.unique(rec[rec >= 0]))
    if size > answered:
        raise ProbegenError(f"--size {size} is larger than the set: {answered} records of {dataset} have answers "
                            f"in {items_dir}")
    irt_model = (summary.get("irt") or {}).get("model") or "2pl"
    keep = rec >= 0
    y, k, rec = y[:, keep], k[keep], rec[keep]
    log(f"fitting {irt_model.upper()} on {len(y)} respondents x {y.shape[1]} items")
    fitted = fit(y, k, irt_model)
    kept = choose(method, size, y, rec, len(ids), fitted, seed)
    log("validating by leaving respondents out")
    check = validate(y, k, rec, len(ids), method, size, irt_model, seed)
    _write(task, data, [records[i] for i in kept], out, {
        "parent": str(dataset), "parent_fingerprint": task.fingerprint(data), "method": method, "seed": seed,
        "size": size, "of": len(records), "items_dir": str(items_dir), "irt_model": irt_model}, fitted, y, rec, kept,
        check)
    mae = (f"leave-respondents-out MAE {check['mae']:.3f} vs {check['random_mae']:.3f} for random subsets"
           if "mae" in check else check["skipped"])
    return f"kept {size} of {len(records)} records ({method}); {mae}; wrote {out}"


def _write(task: Any, data: Dataset, kept_records: list[Any], out: str | Path, info: dict[str, Any], fitted: IrtFit,
           y: np.ndarray, rec: np.ndarray, kept: np.ndarray, check: dict[str, Any]) -> None:
    """The compact dataset, its manifest's ``compact_form`` block, and ``predictor.json`` beside its records."""
    from ..io import record_in_output, write_json
    from ..tasks.base import with_manifest

    sub = task.with_records(data, kept_records)
    manifest = {**sub.manifest, "compact_form": info}
    if "counts" in manifest:
        manifest["counts"] = task.counts(sub)
    path = task.write(with_manifest(sub, manifest), out)
    shown = np.isin(rec, kept)
    write_json(Path(path) / "predictor.json", {
        "how": "ability from the subset's answers with these item parameters fixed (posterior on a grid, N(0,1) "
               "prior); full accuracy = (right on the subset + sum of P(right) on the rest) / items",
        "model": fitted.model, "items": int(len(rec)), "subset_items": int(shown.sum()),
        "a": fitted.a.round(6).tolist(), "b": fitted.b.round(6).tolist(), "c": fitted.c.round(6).tolist(),
        "in_subset": shown.tolist(), "validation": check})
    record_in_output(path, "predictor.json")
