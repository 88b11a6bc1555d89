"""Read probegen runs (``eval`` and ``bias`` output folders) into one kind-neutral JSON model for
the ``probegen view`` page.

The model (what the page's script reads)::

    {"version": 1,
     "runs":  [{"label", "path", "command" (eval|bias), "model", "method" (score|generate|letter|trained),
               "settings": {setting: value}, "sets": [{"name", "kind", "path", "conditions": [...],
               "main": condition, "accuracy": {condition: acc}}], "notes"}],
     "items": [{"run", "set", "id", "kind" (group|options|seeds), "meta": {...},
                "conds": {condition: {"q", "c", "s", "p", "g", "ok", "m", "tie", ...}}}],
     "plane": [{"run", "set", "name", "x", "y", "xci", "yci"}],
     "pairs": [{"a", "b" ("run~set~condition"), "items", "diff", "ci_lo", "ci_hi", "a_only", "b_only",
                "p_mcnemar", "p_holm", "significant"}],
     "itemstats": {"path", "rows": [...]}  (``probegen view --items DIR``: :func:`.analysis.item_stats`)}

Per condition an item carries the queries as the model saw them (``q``), the candidates (``c``, or
``cr`` one list per row), scores (``s``, rows x candidates), decisions (``p``), gold (``g``), ``ok`` per
decision, ``m`` (the mean margin of the decision), ``tie`` (rows decided by the seeded tie-break) and for
the generative method ``gen`` and ``x`` (the exchanges). Trained probes give ``ok`` per seed only.

Every file is checked as it is read (one ``ProbegenError`` naming ``FILE:LINE``, or a rows file and both
counts for an incomplete run); a run's marker is verified first. A run's ``method`` and ``settings`` are
what its results.json records (:func:`run_method`).
"""

from __future__ import annotations

import errno
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .. import methods
from ..errors import ProbegenError
from ..io import NotAFile, check_regular, iter_jsonl, parse_json, read_text, recover, verify_output

VERSION = 1
#: (run info, items, plane points) of one run
RunParts = tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]
#: a bias run's conditions in the order shown where its results give none
_ORDER = ("full", "context", "word", "definition", "choice", "label")
#: settings shown for every method, where the run records them
_SETTINGS = ("matching", "split")
#: keys of a multiple-choice row that are shown as the item's attributes (filters)
_MC_META = ("probe", "hops", "distractor_type", "distractor_hops", "split", "synset", "gold_synset", "cluster",
            "pred_type")


def load_runs(paths: Iterable[str | Path], log: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """The page's model of the runs at ``paths`` (``probegen eval`` or ``bias`` folders; ``log`` gets nothing)."""
    model: dict[str, Any] = {"version": VERSION, "runs": [], "items": [], "plane": []}
    seen: set[str] = set()
    for i, p in enumerate(paths):
        run = Path(p)
        _check_not_a_loop(run)
        key = os.path.realpath(run)
        if key in seen:
            raise ProbegenError(f"{run}: named twice")
        seen.add(key)
        info, items, plane = load_run(run, i)
        model["runs"].append(info)
        model["items"].extend(items)
        model["plane"].extend(plane)
    if not model["runs"]:
        raise ProbegenError("no run given")
    _label_runs(model["runs"])
    from .analysis import side_pairs

    model["pairs"] = side_pairs(model)  # the compare tab's paired tests (issue 36)
    return model


def _label_runs(runs: list[dict[str, Any]]) -> None:
    """Short distinct labels: the model, then the folder name where two runs share a model."""
    base = [f"{r['model']}" + (f" ({r['method']})" if r.get("method") and not methods.recorded(r["method"]).default
                               else "") for r in runs]
    for r, b in zip(runs, base):
        r["label"] = b if base.count(b) == 1 else f"{b} [{Path(r['path']).name}]"


def _check_not_a_loop(run: Path) -> None:
    try:
        os.stat(run)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ProbegenError(f"run {run} is a loop of symbolic links: it leads to no folder") from None
    except ValueError:  # a NUL in the name: the exists check says it is not there
        pass


def load_run(run: Path, index: int) -> RunParts:
    """(run info, items, plane points) of the run folder ``run``."""
    recover(run)
    if not run.exists():
        raise ProbegenError(f"run {run} does not exist")
    if not run.is_dir():
        raise ProbegenError(f"{run} is not a run folder (probegen eval or probegen bias output)")
    res_file = run / "results.json"
    if not res_file.is_file():
        raise ProbegenError(f"{run} is not a probegen run: no results.json (view reads probegen eval and bias output "
                            "folders)")
    verify_output(run)
    results = parse_json(read_text(res_file), res_file)
    if not isinstance(results, dict):
        raise ProbegenError(f"{res_file}: not a JSON object")
    if isinstance(results.get("datasets"), list):
        return _bias_run(run, index, results)
    if isinstance(results.get("dataset"), str) and isinstance(results.get("kind"), str):
        results = {**results, "dataset": {"path": results["dataset"], "kind": results["kind"]},
                   "eval": {"mode": "full"}, "method": methods.trained_method().name}
    if isinstance(results.get("dataset"), dict):
        return _eval_run(run, index, results)
    raise ProbegenError(f"{res_file}: neither an eval run (no 'dataset' object) nor a bias run (no 'datasets' list)")


def run_method(results: dict[str, Any]) -> str:
    """The method of a run (a registered name) from what its results.json records: its scorer's or ``eval``
    block's ``method``, a trained probe's own ``method`` text, else its generative block's, else the default.

    >>> run_method({"scorer": {"kind": "letter", "method": "letter"}}), run_method({"scorer": {"kind": "causal"}})
    ('letter', 'score')
    >>> run_method({"method": "frozen encoder + LogisticRegression"}), run_method({"generation": {"asks": 3}})
    ('trained', 'generate')
    """
    for b in (results.get("scorer"), results.get("eval")):
        if isinstance(b, dict) and methods.is_method(b.get("method")):
            return str(b["method"])
    top = results.get("method")
    if isinstance(top, str):  # a trained probe records its own words ("frozen encoder + ...")
        return top if methods.is_method(top) else methods.trained_method().name
    per_set = [e.get("generation") for e in results.get("datasets") or [] if isinstance(e, dict)]
    gens = [results.get("generation")] + [g for b in per_set if isinstance(b, dict) for g in b.values()]
    g = next((g for g in gens if isinstance(g, dict) and g), None)
    return (methods.generation_method(g) if g else methods.default()).name


def _settings(results: dict[str, Any], method: str) -> dict[str, Any]:
    """The settings the run was made with, as results.json records them, those that applied to ``method``."""
    ev: dict[str, Any] = results["eval"] if isinstance(results.get("eval"), dict) else {}
    scorer: dict[str, Any] = results["scorer"] if isinstance(results.get("scorer"), dict) else {}
    m = methods.recorded(method)
    keys = _SETTINGS + m.shown_settings(ev, scorer)
    out = {k: ev[k] for k in keys if isinstance(ev.get(k), (str, int, float)) and not isinstance(ev.get(k), bool)}
    for k in m.scorer_settings():
        if isinstance(scorer.get(k), (str, int)):
            out[k] = scorer[k]
    return out


def missing_method(results: dict[str, Any]) -> str | None:
    """The method a run's ``eval`` block records that no installed package provides, else None.

    >>> missing_method({"eval": {"method": "yesno"}}), missing_method({"eval": {"method": "letter"}})
    ('yesno', None)
    """
    ev = results.get("eval")
    name = ev.get("method") if isinstance(ev, dict) else None
    return name if isinstance(name, str) and not methods.is_method(name) else None


def _info(run: Path, results: dict[str, Any], command: str) -> dict[str, Any]:
    missing = missing_method(results)
    if missing is not None:
        raise ProbegenError(f"{run / 'results.json'}: the run was made with --method {missing}, which no installed "
                            f"package provides (entry-point group {methods.ENTRY_POINT_GROUP}; installed: "
                            f"{', '.join(m.name for m in methods.all_methods())}): install the plugin that defines it "
                            "to view this run")
    method = run_method(results)
    scorer: dict[str, Any] = results["scorer"] if isinstance(results.get("scorer"), dict) else {}
    blocks: list[dict[str, Any]] = [results[k] for k in ("eval", "config") if isinstance(results.get(k), dict)]
    nonce = next((b["nonce"] for b in blocks if b.get("nonce")), None)
    return {"path": str(run), "command": command, "model": str(results.get("model", "?")), "method": method,
            "scorer": scorer.get("kind"), "nonce": nonce if isinstance(nonce, str) else None,
            "settings": _settings(results, method), "asked": _asked(method, command), "sets": [], "notes": []}


def _asked(method: str, command: str) -> dict[str, Any]:
    """What the page needs of the run's method: whether its rows are a distribution over the options,
    what a row's confidence is, and the ``--method`` to show ("" for the default method).

    >>> _asked("letter", "bias")["flag"], _asked("score", "eval")["flag"], _asked("trained", "eval")["flag"]
    ('letter', '', 'trained')
    """
    m = methods.recorded(method)
    return {"distribution": m.asks, "confidence": m.view_confidence,
            "flag": "" if m.default else (m.flag(command) or m.name)}


def _expected_rows(*counts: Any) -> int | None:
    """The first count results.json records for a rows file (a whole number), or None."""
    for v in counts:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v == int(v) and v >= 0:
            return int(v)
    return None


def _check_rows(path: Path, got: int, want: int | None, res_file: Path) -> None:
    """One line for a rows file that holds another number of rows than results.json counts."""
    if want is not None and got != want:
        raise ProbegenError(f"{path} holds {got} row(s) but {res_file} counts {want}: the run is incomplete "
                            "(interrupted, or its files were changed); run it again")


def _eval_run(run: Path, index: int, results: dict[str, Any]) -> RunParts:
    info = _info(run, results, "eval")
    ds = results["dataset"]
    kind = str(ds.get("kind", "?"))
    ev: dict[str, Any] = results["eval"] if isinstance(results.get("eval"), dict) else {}
    cond = str(ev.get("mode") or "full")
    rows_name = (results.get("files") or {}).get("rows") or next(
        (n for n in ("groups.jsonl", "items.jsonl") if (run / n).is_file()), None)
    if rows_name is None or not (run / rows_name).is_file():
        raise ProbegenError(f"{run}: no groups.jsonl or items.jsonl (the per-unit rows of an eval run)")
    p = Path(str(ds.get("path") or "dataset"))
    name = p.stem if p.suffix in (".jsonl", ".json") else p.name
    entries = {rid: entry for rid, entry in _read_rows(run / rows_name, kind)}
    metrics: dict[str, Any] = results["metrics"] if isinstance(results.get("metrics"), dict) else {}
    whole: dict[str, Any] = metrics["all"] if isinstance(metrics.get("all"), dict) else {}
    _check_rows(run / rows_name, len(entries),
                _expected_rows(results.get("n_test"), metrics.get("n_items"), whole.get("groups")),
                run / "results.json")
    for ex in _exchanges(run):
        if (e := entries.get(ex.pop("unit"))) is not None:
            e.setdefault("x", []).append(ex)
    if texts_note := _add_texts(entries, ds.get("path"), kind, cond, ev, info["scorer"], info["method"]):
        info["notes"].append(texts_note)
    items = [_item(index, name, rid, {cond: e}) for rid, e in entries.items()]
    acc = _accuracy(results.get("metrics"))
    info["sets"].append({"name": name, "kind": kind, "path": str(ds.get("path", "")), "conditions": [cond],
                         "main": cond, "accuracy": {cond: acc} if acc is not None else {}, "n": len(items)})
    for key in ("subset", "invalid"):
        if results.get(key):
            info["notes"].append(f"{key}: {_short(results[key])}")
    if isinstance(results.get("adaptive"), dict):  # what an adaptive test gave and why, step by step
        info["notes"] += _adaptive_notes(results["adaptive"])
    return info, items, []


def _adaptive_notes(block: dict[str, Any]) -> list[str]:
    """The view's lines of an adaptive run: its outcome, then each step's ability, SE and records given."""
    from ..itemstats.adaptive import summary_lines

    try:
        lines = summary_lines(block)
        for s in block.get("steps") or []:
            given = ", ".join(f"{r} (information {v:.2f})" for r, v in zip(s["record_ids"], s["information"]))
            lines.append(f"step {s['step']}: ability {s['theta_before']:.2f} (SE {s['se_before']:.3f}) -> gave {given}"
                         f" -> ability {s['theta']:.2f} (SE {s['se']:.3f})")
    except (KeyError, TypeError, ValueError) as e:
        raise ProbegenError(f"results.json: the adaptive block is not one probegen writes ({e})") from None
    return lines


def _bias_run(run: Path, index: int, results: dict[str, Any]) -> RunParts:
    info = _info(run, results, "bias")
    helps: dict[str, Any] = results["conditions"] if isinstance(results.get("conditions"), dict) else {}
    shared_help = {k: x for k, x in helps.items() if isinstance(x, str)}
    items: list[dict[str, Any]] = []
    plane: list[dict[str, Any]] = []
    for e in results["datasets"]:
        if not isinstance(e, dict) or not isinstance(e.get("files"), dict):
            continue
        name = str(e.get("name", "?"))
        kind = str(e.get("kind", "?"))
        files = {k: v for k, v in e["files"].items() if isinstance(v, str)}
        order = [c for c in e.get("ablation_order", []) if c in files] + [
            c for c in files if c not in e.get("ablation_order", []) and c != "units"]
        conds: dict[str, dict[str, dict[str, Any]]] = {}
        whole: dict[str, Any] = e["all"] if isinstance(e.get("all"), dict) else {}
        want = _expected_rows(e.get("n_test"), whole.get("n_items"))
        if "correct" in files:  # --method trained: right or wrong per seed and condition, one file
            conds, order = _per_seed(_inside(run, files["correct"])), []
            for n in [len(c) for c in conds.values()] or [0]:
                _check_rows(_inside(run, files["correct"]), n, want, run / "results.json")
        for c in order:
            f = _inside(run, files[c])
            if f.is_file() and f.suffix == ".jsonl":
                conds[c] = {rid: entry for rid, entry in _read_rows(f, kind)}
                _check_rows(f, len(conds[c]), want, run / "results.json")
        if not conds:
            info["notes"].append(f"{name}: no per-condition rows to show")
            continue
        if "units" in files:
            _add_seen(_inside(run, files["units"]), conds)
        ids: dict[str, None] = {}
        for rows in conds.values():
            ids.update(dict.fromkeys(rows))
        for rid in ids:
            items.append(_item(index, name, rid, {c: rows[rid] for c, rows in conds.items() if rid in rows}))
        acc = {c: v.get("accuracy") for c, v in ((e.get("all") or {}).get("ablations")
                                                 or {}).items() if isinstance(v, dict)}
        acc.update({c: v.get("mean") for c, v in (e.get("conditions") or {}).items() if isinstance(v, dict)
                    and "mean" in v})
        info["sets"].append({"name": name, "kind": kind, "path": str(e.get("path", "")), "conditions": list(conds),
                             "main": "context" if "context" in conds else next(iter(conds)), "accuracy": acc,
                             "n": len(ids), "help": e.get("ablation_help") or shared_help})
        ratios = (e.get("all") or {}).get("ratios") or e.get("ratios") or {}
        bc, bw = ratios.get("bias_c") or {}, ratios.get("bias_w") or {}
        plane.append({"run": index, "set": name, "name": name, "x": _num(bc.get("value")), "y": _num(bw.get("value")),
                      "xci": _ci(bc.get("ci")), "yci": _ci(bw.get("ci"))})
    _attach_bias_exchanges(run, items)  # the generative method: exchanges of every dataset and condition
    for b in results.get("beside") or []:
        if isinstance(b, dict):
            plane.append({"run": None, "set": None, "name": str(b.get("name", "")), "x": _num(b.get("bias_c")),
                          "y": _num(b.get("bias_w")), "xci": None, "yci": None, "beside": str(b.get("run", ""))})
    return info, items, plane


def _per_seed(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{condition: {id: entry}} of a trained bias run's ``correct.jsonl`` (right or wrong per seed)."""
    conds: dict[str, dict[str, dict[str, Any]]] = {}
    for line, row in iter_jsonl(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise ProbegenError(f"{where}: a row needs a string 'id'")
        for c, v in row.items():
            if c == "id":
                continue
            if not isinstance(v, list) or not all(isinstance(x, bool) for x in v):
                raise ProbegenError(f"{where}: '{c}' must be a list of true/false (one per seed)")
            conds.setdefault(c, {})[row["id"]] = {"kind": "seeds", "ok": [int(x) for x in v], "meta": {}}
    return {c: conds[c] for c in sorted(conds, key=lambda c: _ORDER.index(c) if c in _ORDER else len(_ORDER))}


def _inside(run: Path, name: Any) -> Path:
    if not isinstance(name, str) or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ProbegenError(f"{run / 'results.json'}: file name {name!r} is outside the run")
    return run / name


@dataclass(frozen=True)
class RowShape:
    """One per-unit row layout (``group``: rows against columns; ``options``: one query against its
    choices; ``seeds``: a trained probe's right or wrong per seed), asked instead of compared by name."""

    name: str
    #: the row carries scores (a margin, ties); a trained probe's has none
    scored: bool = True
    #: one query stands for the row (the choices are scored against the first query)
    one_query: bool = False
    #: the row names its own candidates (a choice list), which the rebuilt texts do not replace
    own_candidates: bool = False


ROW_SHAPES: dict[str, RowShape] = {s.name: s for s in (
    RowShape("group"), RowShape("options", one_query=True, own_candidates=True), RowShape("seeds", scored=False))}


def row_shape(e: dict[str, Any]) -> RowShape:
    """The :class:`RowShape` of a condition entry (``seeds`` for one without a shape: a trained probe's).

    >>> row_shape({"kind": "options"}).one_query, row_shape({}).scored
    (True, False)
    """
    return ROW_SHAPES[str(e.get("kind", "seeds"))]


def _read_rows(path: Path, kind: str) -> Iterable[tuple[str, dict[str, Any]]]:
    """(id, condition entry) per row of a per-unit rows file, each row checked (FILE:LINE on error)."""
    seen: set[str] = set()
    for line, row in iter_jsonl(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict):
            raise ProbegenError(f"{where}: a row must be a JSON object")
        rid = row.get("id")
        if not isinstance(rid, str) or not rid:
            raise ProbegenError(f"{where}: a row needs a non-empty string 'id'")
        if rid in seen:
            raise ProbegenError(f"{where}: id {rid!r} is repeated")
        seen.add(rid)
        yield rid, _entry(row, where)


def _one(v: Any) -> Any:
    """A one-row unit's pred or gold as a list (older runs wrote a bare ``i``)."""
    return v if isinstance(v, list) else [v]


def _entry(row: dict[str, Any], where: str) -> dict[str, Any]:
    """The condition entry of one row (group, multiple choice, or a trained probe's per-seed row)."""
    if "rows" in row and "columns" in row:  # a CoDA21 group
        k = len(row.get("rows") or [])
        s = _matrix(row.get("scores"), k, len(row.get("columns") or []), where)
        p, g = (_indices(row.get("pred"), k, len(row["columns"]), where, "pred"),
                _indices(row.get("gold"), k, len(row["columns"]), where, "gold"))
        e: dict[str, Any] = {"kind": "group", "s": s, "p": p, "g": g, "rl": _strs(row["rows"], where, "rows"),
             "cl": _strs(row["columns"], where, "columns"),
             "ok": [int(a == b) for a, b in zip(p, g)], "meta": {"pos": row.get("pos"), "k": k}}
    elif "choices" in row:  # multiple choice
        n = len(row["choices"]) if isinstance(row["choices"], list) else 0
        c = _strs(row["choices"], where, "choices")
        sc = row.get("scores")
        s = _matrix(sc if isinstance(sc, list) and sc and isinstance(sc[0], list) else [sc], 1, n, where)
        p = _indices(_one(row.get("pred")), 1, n, where, "pred")
        g = _indices(_one(row.get("gold")), 1, n, where, "gold")
        meta = {k: row[k] for k in _MC_META if isinstance(row.get(k), (str, int, float))
                and not isinstance(row.get(k), bool)}
        syn = row.get("synset") or row.get("gold_synset")
        if isinstance(syn, str) and syn.count(".") >= 2:
            meta["pos"] = syn.rsplit(".", 2)[-2]
        e = {"kind": "options", "s": s, "p": p, "g": g, "c": c, "ok": [int(p[0] == g[0])], "meta": meta}
        if isinstance(row.get("choice_types"), list) and len(row["choice_types"]) == n:
            e["ct"] = [str(t) for t in row["choice_types"]]
    elif isinstance(row.get("correct"), list):  # a trained probe: right or wrong per seed
        if not all(isinstance(x, bool) for x in row["correct"]):
            raise ProbegenError(f"{where}: 'correct' must be a list of true/false")
        e = {"kind": "seeds", "ok": [int(x) for x in row["correct"]], "meta": {}}
    else:
        raise ProbegenError(f"{where}: not a row probegen writes (no rows/columns, choices or correct)")
    if row_shape(e).scored:
        e["m"] = _margin(e["s"], e["p"])
        ties = [r for r, srow in enumerate(e["s"]) if srow and sum(1 for v in srow if v == max(srow)) > 1]
        if ties:
            e["tie"] = ties
    if isinstance(row.get("generation"), dict):
        e["gen"] = row["generation"]
    cat = row.get("adaptive")
    if isinstance(cat, dict):  # an adaptive run: why this unit was given
        e["meta"].update({f"adaptive {k}": v for k, v in cat.items() if isinstance(v, (str, int, float))
                          and not isinstance(v, bool)})
    return e


def _margin(s: list[list[float]], p: list[int]) -> float | None:
    """Mean over rows of the chosen candidate's score minus the best other one's."""
    out = []
    for row, j in zip(s, p):
        others = [v for i, v in enumerate(row) if i != j]
        if others:
            out.append(row[j] - max(others))
    return round(sum(out) / len(out), 6) if out else None


def _matrix(m: Any, rows: int, cols: int, where: str) -> list[list[float]]:
    if not isinstance(m, list) or len(m) != rows or not all(isinstance(r, list) and len(r) == cols for r in m):
        raise ProbegenError(f"{where}: 'scores' must be {rows} x {cols} numbers")
    for r in m:
        for v in r:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ProbegenError(f"{where}: 'scores' must hold finite numbers (got {v!r})")
    return m


def _indices(v: Any, n: int, width: int, where: str, key: str) -> list[int]:
    if not isinstance(v, list) or len(v) != n or not all(isinstance(x, int) and not isinstance(x, bool)
                                                         and 0 <= x < width for x in v):
        raise ProbegenError(f"{where}: '{key}' must be {n} index(es) below {width}")
    return v


def _strs(v: Any, where: str, key: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ProbegenError(f"{where}: '{key}' must be a list of strings")
    return v


def _item(run: int, name: str, rid: str, conds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    kind = "seeds"
    for e in conds.values():
        meta.update({k: v for k, v in e.pop("meta", {}).items() if v is not None})
        kind = e.pop("kind", kind)
    _share_candidates(conds)
    return {"run": run, "set": name, "id": rid, "kind": kind, "meta": meta, "conds": conds}


def _share_candidates(conds: dict[str, dict[str, Any]]) -> None:
    """Drop a condition's candidate list where it equals the previous condition's (``c`` absent = same)."""
    prev = None
    for e in conds.values():
        c = e.get("c")
        if c is not None and c == prev:
            del e["c"]
            e["cs"] = 1  # same candidates as the condition before
        elif c is not None:
            prev = c


def _add_seen(path: Path, conds: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Queries and candidates of each (condition, unit) from a bias run's ``ablations.jsonl``."""
    for line, row in iter_jsonl(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict) or not isinstance(row.get("condition"), str) or not isinstance(row.get("id"), str):
            raise ProbegenError(f"{where}: a line needs 'condition' and 'id' strings")
        e = conds.get(row["condition"], {}).get(row["id"])
        if e is None:
            continue
        q = _strs(row.get("queries"), where, "queries")
        cands: list[Any]
        if "candidates" in row:
            cands = _strs(row["candidates"], where, "candidates")
        elif isinstance(row.get("candidates_per_query"), list):
            cands = [_strs(c, where, "candidates_per_query") for c in row["candidates_per_query"]]
        else:
            raise ProbegenError(f"{where}: no 'candidates' or 'candidates_per_query'")
        _set_texts(e, q, cands, where)


def _set_texts(e: dict[str, Any], q: list[str], cands: Any, where: str) -> None:
    """Put the queries and candidates on entry ``e`` (checked against its scores and its choices)."""
    shape = row_shape(e)
    if "s" in e and len(q) != len(e["s"]) and not (shape.one_query and len(q) >= 1):
        raise ProbegenError(f"{where}: {len(q)} queries for {len(e['s'])} score rows")
    e["q"] = q[:1] if shape.one_query else q
    if cands and isinstance(cands[0], list):
        if all(c == cands[0] for c in cands):
            cands = cands[0]
        else:
            e["cr"] = cands
            return
    if shape.own_candidates and e.get("c") is not None:
        return  # the row's own choices (identical texts, same order)
    e["c"] = cands


def _add_texts(entries: dict[str, dict[str, Any]], ds_path: Any, kind: str, cond: str, ev: dict[str, Any],
               scorer_kind: str | None, method: str) -> str | None:
    """Queries and candidates of an eval run, rebuilt from its dataset with the run's settings (the units
    the scorer got); a note if that is not possible."""
    if not entries:
        return None
    # a trained probe: the items' texts, as a prompt shows them
    seeds = not any(row_shape(e).scored for e in entries.values())
    if not isinstance(ds_path, str) or not Path(ds_path).exists():
        return f"the dataset {ds_path} is not there any more: queries are not shown (the run's rows are)"
    check_regular(ds_path, "dataset")  # a FIFO or a device named as the dataset: one line, never read
    try:
        from .. import tasks
        from ..tasks import Settings

        task = tasks.detect(ds_path)
        data = task.load(ds_path)
        settings = Settings(nonce=str(ev.get("nonce") or Settings.nonce),
                            pattern=str(ev.get("pattern") or Settings.pattern),
                            matching=str(ev.get("matching") or "alignment"), split=ev.get("split"),
                            seed=int(ev.get("seed") or 0))
        m = methods.recorded(method)
        units = (task.prompt_units(data, cond, settings) if seeds or m.asks
                 else task.units(data, cond, settings, m.style(scorer_kind)))
    except NotAFile:  # a FIFO or a device inside the dataset: refused unread, as at the top
        raise
    except Exception as exc:  # noqa: BLE001 - the rows are still shown; say why the texts are not
        if seeds:
            return None
        return (f"the queries could not be rebuilt from {ds_path} ({type(exc).__name__}: {exc}): the run's rows are "
                "shown")
    off = 0
    for u in units:
        e = entries.get(u.id)
        if e is None:
            continue
        if not row_shape(e).scored:
            fields = [f"{k}: {v}" for k, v in getattr(u, "fields", ()) if isinstance(v, str)]
            e["q"] = fields + [q for q in u.queries if q]
            e["c"], e["g"] = (list(u.candidates[0]), list(u.gold)) if u.candidates else ([], [])
            continue
        if "g" in e and list(u.gold) != e["g"]:
            off += 1
            continue
        _set_texts(e, list(u.queries), [list(c) for c in u.candidates], u.id)
    if off:
        return f"{off} unit(s) of {ds_path} no longer match the run (the dataset changed?): their queries are not shown"
    return None


def _attach_bias_exchanges(run: Path, items: list[dict[str, Any]]) -> None:
    """A bias run's exchanges: to the condition of the unit whose options and queries they show."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        by_id.setdefault(it["id"], []).append(it)
    for ex in _exchanges(run):
        prompt = "\n".join(m.get("content", "") for m in ex["messages"] if isinstance(m, dict)
                           and m.get("role") == "user")
        shown = ((e, c) for it in by_id.get(ex.pop("unit"), []) for e, c in _with_candidates(it["conds"]))
        e = next((e for e, c in shown if c is not None and sorted(c) == sorted(ex["options"])
                  and all(q in prompt for q in (e.get("q") or [])[:1])), None)
        if e is not None:
            e.setdefault("x", []).append(ex)


def _with_candidates(conds: dict[str, dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Each condition entry with its candidates (``c`` absent: the previous condition's)."""
    shared = None
    for e in conds.values():
        shared = e.get("c", shared)
        yield e, shared


def _exchanges(run: Path) -> Iterator[dict[str, Any]]:
    """The checked exchanges of a run's ``responses.jsonl`` (none without one)."""
    path = run / "responses.jsonl"
    keep = ("unit", "ask", "order", "option_order", "options", "messages", "errors", "status", "answer", "random_rows")
    for line, row in iter_jsonl(path) if path.is_file() else ():
        where = f"{path}:{line}"
        if not (isinstance(row, dict) and isinstance(row.get("unit"), str) and isinstance(row.get("messages"), list)):
            raise ProbegenError(f"{where}: an exchange needs 'unit' (string) and 'messages' (list)")
        yield {**{k: row.get(k) for k in keep}, "options": _strs(row.get("options") or [], where, "options")}


def _accuracy(metrics: Any) -> float | None:
    if not isinstance(metrics, dict):
        return None
    acc = metrics.get("accuracy")
    for v in (acc, acc.get("mean") if isinstance(acc, dict) else None,
              (metrics.get("all") or {}).get("accuracy") if isinstance(metrics.get("all"), dict) else None):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _ci(v: Any) -> list[float] | None:
    if isinstance(v, list) and len(v) == 2 and all(_num(x) is not None for x in v):
        return [float(v[0]), float(v[1])]
    return None


def _short(v: Any) -> str:
    import json

    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) < 300 else s[:297] + "..."
