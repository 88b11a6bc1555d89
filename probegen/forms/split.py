"""K parallel forms of one built dataset: disjoint by synset and target lemma, matched on the strata
that drive difficulty.

The pool is cut into *units* that stay whole (a CoDA21 group; a WordNetQA concept with all its
items), each with its strata (part of speech, size or item profile, depth, SemCor frequency, gloss
length, hops); depth, frequency and size are cut into tercile bands, which with the categorical
strata form the assignment cells. Assignment is by construction: units in cell order are dealt to
the form with the fewest units of their cell (then fewest overall, then a seeded order) among the
forms they may join; a unit sharing a synset or lemma with two forms is left out. The same pool and
seed give the same forms; :func:`balance_violations` is the check (:data:`TOLERANCE`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..errors import ProbegenError
from ..io import sha256_text

if TYPE_CHECKING:
    from ..tasks import Formable

#: the stated tolerance: per stratum level, two forms' shares of units differ by at most ``share``;
#: per continuous stratum, two forms' means differ by at most ``sd`` pooled (unit-level) standard deviations
TOLERANCE = {"share": 0.05, "sd": 0.15}
#: numeric strata cut into tercile bands for the assignment cells
BANDED = ("depth", "log_freq", "size")


@dataclass
class Unit:
    """One indivisible piece of the pool: its record indices, what may not recur across forms, its strata."""

    id: str
    records: list[int]
    synsets: frozenset[str]
    lemmas: frozenset[str]
    cat: dict[str, str]
    num: dict[str, float]
    band: dict[str, str] = field(default_factory=dict)

    def cell(self) -> tuple[str, ...]:
        return tuple(self.cat[k] for k in sorted(self.cat)) + tuple(self.band[k] for k in sorted(self.band))

    def levels(self) -> list[tuple[str, str]]:
        """(stratum, level) of every categorical stratum and band."""
        return [*self.cat.items(), *((f"{b}_band", v) for b, v in self.band.items())]

    def keys(self) -> list[tuple[str, str]]:
        """What may not recur across forms: its synsets and target lemmas."""
        return [("s", s) for s in self.synsets] + [("l", lem) for lem in self.lemmas]


def lemma_key(word: str) -> str:
    return " ".join(word.replace("_", " ").split()).casefold()


def word_count(text: str) -> float:
    return float(len(text.split()))


def depth_of(graph: Any, s: str) -> float:
    try:
        return float(graph.depth(s))
    except Exception:  # a synset the graph lacks (an imported set): no depth, the pool's mean fills it
        return float("nan")


def _bands(units: list[Unit]) -> None:
    """Tercile bands (low/mid/high) of the banded strata over the pool (a constant stratum: one band)."""
    for key in BANDED:
        vals = np.array([u.num.get(key, np.nan) for u in units], float)
        if np.all(np.isnan(vals)):
            continue
        fill = float(np.nanmean(vals))
        for u in units:
            if key in u.num and np.isnan(u.num[key]):
                u.num[key] = fill
        vals = np.where(np.isnan(vals), fill, vals)
        cuts = np.unique(np.quantile(vals, [1 / 3, 2 / 3]))
        for u, v in zip(units, vals):
            u.band[key] = ("low", "mid", "high")[min(int(np.searchsorted(cuts, v, side="right")), 2)] \
                if len(cuts) == 2 else str(int(np.searchsorted(cuts, v, side="right")))


def assign(units: list[Unit], k: int, seed: int) -> tuple[list[list[Unit]], list[str]]:
    """(units of each of ``k`` forms, ids of the units left out for sharing with two forms). Here ``a``
    shares synset x with ``c`` and lemma p with ``d``, which went to different forms:

    >>> u = lambda i, s, lem: Unit(i, [0], frozenset(s), frozenset(lem), {"pos": "n"}, {"gloss_len": 1.0})
    >>> forms, out = assign([u("a", {"x"}, {"p"}), u("b", {"y"}, {"q"}), u("c", {"x"}, {"r"}),
    ...                      u("d", {"z"}, {"q", "p"})], 2, 0)
    >>> sorted(sorted(x.id for x in f) for f in forms), out
    ([['b', 'd'], ['c']], ['a'])
    """
    tie = np.random.default_rng([seed, zlib.crc32(b"forms")]).permutation(k).tolist()
    forms: list[list[Unit]] = [[] for _ in range(k)]
    owner: dict[tuple[str, str], int] = {}
    in_cell: dict[tuple[tuple[str, ...], int], int] = {}
    dropped = []
    cont = sorted({key for u in units for key in u.num if key not in BANDED})
    order = sorted(units, key=lambda u: (u.cell(), tuple(u.num.get(c, 0.0) for c in cont),
                                         zlib.crc32(f"{seed}/{u.id}".encode()), u.id))
    for u in order:
        keys = u.keys()
        blocked = {owner[x] for x in keys if x in owner}
        if len(blocked) > 1:
            dropped.append(u.id)
            continue
        allowed = sorted(blocked) if blocked else list(range(k))
        f = min(allowed, key=lambda j: (in_cell.get((u.cell(), j), 0), len(forms[j]), tie[j]))
        forms[f].append(u)
        in_cell[(u.cell(), f)] = in_cell.get((u.cell(), f), 0) + 1
        for x in keys:
            owner[x] = f
    return forms, sorted(dropped)


def _vectors(units: list[Unit]) -> tuple[np.ndarray, list[tuple[str, str]], list[str], np.ndarray]:
    """(unit x column matrix, the level columns, the continuous columns, their pooled SDs): column 0
    counts units, then one indicator per stratum level, then the continuous strata."""
    levels = sorted({lv for u in units for lv in u.levels()})
    cont = sorted({key for u in units for key in u.num})
    x = np.zeros((len(units), 1 + len(levels) + len(cont)))
    col = {lv: 1 + i for i, lv in enumerate(levels)}
    for r, u in enumerate(units):
        x[r, 0] = 1.0
        for lv in u.levels():
            x[r, col[lv]] = 1.0
        for i, key in enumerate(cont):
            x[r, 1 + len(levels) + i] = u.num.get(key, 0.0)
    sd = x[:, 1 + len(levels):].std(0)
    return x, levels, cont, np.where(sd > 0, sd, 1.0)


def _imbalance(sums: np.ndarray, n_levels: int, sd: np.ndarray, tolerance: dict[str, float]) -> float:
    """How far the forms (rows of per-form column sums) are from one another, in tolerance units squared."""
    n = np.maximum(sums[:, :1], 1.0)
    shares = sums[:, 1:1 + n_levels] / n
    means = sums[:, 1 + n_levels:] / n / sd
    size = np.ptp(sums[:, 0]) / max(sums[:, 0].mean(), 1.0)
    return float((np.ptp(shares, 0) ** 2).sum() / tolerance["share"] ** 2
                 + (np.ptp(means, 0) ** 2).sum() / tolerance["sd"] ** 2 + (size / tolerance["share"]) ** 2)


def refine(forms: list[list[Unit]], seed: int, tolerance: dict[str, float] = TOLERANCE,
           sweeps: int = 20) -> list[list[Unit]]:
    """Seeded moves and pairwise swaps between forms, each kept only if it lowers :func:`_imbalance`; what
    moves is a connected component of units sharing a synset or lemma, so the forms stay disjoint."""
    import networkx as nx

    units = [u for f in forms for u in f]
    form_of = [i for i, f in enumerate(forms) for _ in f]
    g = nx.Graph()
    g.add_nodes_from(range(len(units)))
    owner: dict[tuple[str, str], int] = {}
    for r, u in enumerate(units):
        for key in u.keys():
            if key in owner:
                g.add_edge(owner[key], r)
            owner[key] = r
    comps = sorted((sorted(c) for c in nx.connected_components(g)), key=lambda c: c[0])
    xu, levels, _, sd = _vectors(units)
    x = np.stack([xu[c].sum(0) for c in comps])
    where = np.array([form_of[c[0]] for c in comps])
    k = len(forms)
    sums = np.stack([x[where == f].sum(0) for f in range(k)])
    rng = np.random.default_rng([seed, zlib.crc32(b"forms/refine")])
    best = _imbalance(sums, len(levels), sd, tolerance)
    for _ in range(sweeps):
        improved = False
        for r in rng.permutation(len(comps)).tolist():
            a = int(where[r])
            # a move (partner -1: form b gains r) or a swap with a component of another form
            for o, b in [(-1, b) for b in range(k)] + [(o, int(where[o])) for o in
                                                       rng.permutation(len(comps))[:60].tolist()]:
                if a == b:
                    continue
                trial = sums.copy()
                trial[a] += (x[o] if o >= 0 else 0) - x[r]
                trial[b] += x[r] - (x[o] if o >= 0 else 0)
                score = _imbalance(trial, len(levels), sd, tolerance)
                if score < best - 1e-12:
                    sums, best, improved = trial, score, True
                    where[r] = b
                    if o >= 0:
                        where[o] = a
                    break
        if not improved:
            break
    placed = {r: int(where[ci]) for ci, c in enumerate(comps) for r in c}
    return [[u for r, u in enumerate(units) if placed[r] == f] for f in range(k)]


def strata_table(forms: Sequence[Sequence[Unit]]) -> list[dict[str, Any]]:
    """Per form: units, records, counts per level of every categorical stratum and band, and the
    mean and standard deviation of every continuous stratum."""
    out = []
    for units in forms:
        levels: dict[str, dict[str, int]] = {}
        for u in units:
            for key, lv in u.levels():
                levels.setdefault(key, {})
                levels[key][lv] = levels[key].get(lv, 0) + 1
        means = {key: round(float(np.mean([u.num[key] for u in units])), 4)
                 for key in sorted({key for u in units for key in u.num})}
        out.append({"units": len(units), "records": sum(len(u.records) for u in units),
                    "levels": {key: dict(sorted(v.items())) for key, v in sorted(levels.items())}, "means": means})
    return out


def balance_violations(table: Sequence[dict[str, Any]], sds: dict[str, float],
                       tolerance: dict[str, float] = TOLERANCE) -> list[str]:
    """The strata on which two forms differ by more than ``tolerance`` (empty: balanced).

    >>> t = [{"units": 10, "levels": {"pos": {"n": 10}}, "means": {"depth": 5.0}},
    ...      {"units": 10, "levels": {"pos": {"n": 8, "v": 2}}, "means": {"depth": 5.1}}]
    >>> balance_violations(t, {"depth": 1.0})
    ['pos=n: shares 1.000 vs 0.800 (tolerance 0.05)', 'pos=v: shares 0.200 vs 0.000 (tolerance 0.05)']
    """
    bad = []
    keys = sorted({(key, lv) for t in table for key, lvs in t["levels"].items() for lv in lvs})
    for key, lv in keys:
        shares = [t["levels"].get(key, {}).get(lv, 0) / max(t["units"], 1) for t in table]
        if max(shares) - min(shares) > tolerance["share"] + 1e-12:
            bad.append(f"{key}={lv}: shares {max(shares):.3f} vs {min(shares):.3f} (tolerance {tolerance['share']})")
    for key in sorted({key for t in table for key in t["means"]}):
        means = [t["means"][key] for t in table if key in t["means"]]
        sd = sds.get(key) or 0.0
        if sd > 0 and (max(means) - min(means)) / sd > tolerance["sd"] + 1e-12:
            bad.append(f"{key}: means {max(means):.3f} vs {min(means):.3f} ({(max(means) - min(means)) / sd:.2f} SD; "
                       f"tolerance {tolerance['sd']})")
    return bad


def semcor_counts(wordnet: str | None, semcor: str | None) -> dict[str, int] | None:
    """synset -> tagged SemCor occurrences (the frequency stratum); None where the wordnet has no
    sense keys or SemCor is not found (the stratum is then left out and the manifest says so)."""
    from ..data import locate_semcor
    from ..lexicon.sources import open_resource
    from ..semcor import context_index

    try:
        wn = open_resource(wordnet)
        index = context_index(locate_semcor(semcor), wn, wn)
    except ProbegenError:
        return None
    return {s: len(v) for s, v in index.items()}


def _subset(ds: Any, task: Formable, idx: list[int]) -> Any:
    """The dataset of ``task``'s kind holding the records ``idx`` of ``ds`` (pool order), counts recomputed."""
    records = [ds.records[i] for i in sorted(idx)]
    c = task.counts(replace(ds, **{ds.records_field: records}))
    for p, block in (ds.manifest.get("counts") or {}).items():  # WordNetQA: the pool's skipped tallies stay the pool's
        if p in c and isinstance(block, dict) and "skipped" in block:
            c[p]["pool_skipped"] = block["skipped"]
    return replace(ds, **{ds.records_field: records}, manifest={**ds.manifest, "counts": c})


def make_forms(ds: Any, kind: str, k: int, seed: int, names: Sequence[str], wordnet: str | None = None,
               semcor: str | None = None, log: Callable[[str], None] = print) -> list[Any]:
    """``k`` parallel forms of the built dataset ``ds`` (of the :class:`~probegen.tasks.Formable` kind
    ``kind``), each with a manifest ``forms`` block (family, number, siblings ``names``, strata, tolerance)."""
    from .. import tasks
    from ..wordnet_graph import load_graph

    task = tasks.get(kind)
    if not isinstance(task, tasks.Formable):
        raise tasks.incapable(task, "forms")
    if k < 2:
        raise ProbegenError(f"--forms needs at least 2 forms, got {k}")
    graph = load_graph(wordnet)
    freq = semcor_counts(wordnet, semcor)
    unit, disjoint = task.form_unit, task.form_disjoint
    units = task.form_units(ds, graph, freq)
    if len(units) < 2 * k:
        raise ProbegenError(f"--forms {k}: the pool has {len(units)} {unit}s, "
                            f"too few for {k} forms (at least {2 * k}); build a larger pool (a higher --limit, "
                            "looser criteria)")
    _bands(units)
    forms, dropped = assign(units, k, seed)
    forms = refine(forms, seed)
    table = strata_table(forms)
    sds = {key: float(np.std([u.num[key] for u in units])) for key in units[0].num}
    bad = balance_violations(table, sds)
    family = sha256_text(f"{ds.fingerprint}/{k}/{seed}")[:16]
    log(f"forms: {len(units)} {unit}s in the pool -> {k} forms of "
        + ", ".join(str(t["units"]) for t in table) + f" ({len(dropped)} left out: they share a synset or lemma "
        "with two forms); " + ("strata within tolerance" if not bad else "OFF TOLERANCE: " + "; ".join(bad[:3])))
    block = {"family": family, "of": k, "siblings": list(names), "seed": seed,
             "unit": unit, "disjoint_by": list(disjoint),
             "strata": {"categorical": sorted(units[0].cat), "banded": sorted(units[0].band),
                        "continuous": sorted(units[0].num), "sd": {key: round(v, 4) for key, v in sorted(sds.items())},
                        "frequency": "SemCor tagged occurrences" if freq is not None else
                        "left out: no SemCor for this wordnet", "per_form": table},
             "tolerance": TOLERANCE, "within_tolerance": not bad, "violations": bad,
             "pool": {"units": len(units), "records": len(ds.records), "left_out": len(dropped),
                      "fingerprint": ds.fingerprint}}
    out = []
    for i, units_i in enumerate(forms, 1):
        sub = _subset(ds, task, [r for u in units_i for r in u.records])
        sub.manifest["forms"] = {**block, "form": i, "name": names[i - 1]}
        out.append(sub)
    return out
