"""Issue 46, "Done means": a property test over every reader of respondents' files.

Seeds are real files: a GloVe run on eight WordNetQA release rows (its ``items.jsonl`` and
``results.json``), its Every Eval Ever export, its inspect-ai log (the ``.json`` form), and an
lm-eval ``--log_samples`` file of the set's probegen lm-eval export. Each mutant (the byte, line
and JSON-value mutations of tests/test_fuzz_readers.py, seeded and derandomized) goes through
``probegen items`` beside the unmutated run; the property:

- no traceback: exit 0, or exit 1 with exactly one ``probegen: error:`` line and nothing written;
- exit 0 writes no correctness outside [0, 1] (``responses.csv``, ``respondents.csv``), no
  non-finite number anywhere, and a ``summary.json`` a strict JSON reader accepts;
- a mutation that keeps the content (lines reordered, JSON re-serialised) gives the same table.

Besides those mutations, one aimed at the fields a respondent is read from (``correct``, scores,
``acc``, ``filtered_resps``, labels, units, ids, ``k``...), inside ``probegen_cell`` too, where an
Every Eval Ever row holds it as a JSON string: a blind swap rarely reaches them in a large file.

``PROBEGEN_FUZZ_EXAMPLES`` raises the number of examples (default 20 per format; 500 aimed and blind
mutations over the five formats found nothing more at this commit).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from cli_checks import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_readers import OPS, SWAPS, _mutate, json_paths

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample"
EXAMPLES = int(os.environ.get("PROBEGEN_FUZZ_EXAMPLES", "20"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
TIME = "2026-01-01T00-00-00.000000"
FORMATS = ("run-items", "run-results", "eee", "inspect", "lm-eval")


def _strict(text: str) -> object:
    """``json.loads`` that rejects NaN and +/-Infinity (what a strict reader does)."""
    def no(c: str) -> object:
        raise ValueError(f"non-finite {c}")

    return json.loads(text, parse_constant=no)


class Seeds(dict):
    """The seeds by name (a short repr: a failing example's report does not print every file)."""

    def __repr__(self) -> str:
        return f"<seeds: {', '.join(self)}>"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict:
    """The real files every mutant starts from, and a run to give beside them."""
    import numpy as np

    from probegen.exporters import export

    d = tmp_path_factory.mktemp("fuzz46")
    rows = (RELEASE / "hyponymy-train-sample.jsonl").read_text().splitlines()[:8]
    data = d / "hyponymy-train.jsonl"
    data.write_text("\n".join(rows) + "\n")
    runs = {}
    for name, model in (("a", "glove-50d"), ("b", "minilm-l6")):
        runs[name] = d / f"run-{name}"
        code, _, err = run("eval", "--model", model, "--dataset", data, "--out", runs[name])
        assert code == 0, err
    eee, log = d / "eee", d / "log.json"
    assert run("export", runs["a"], "--format", "eee", "--out", eee)[0] == 0
    assert run("export", runs["a"], "--format", "inspect-log", "--out", log)[0] == 0
    (agg,) = [p for p in eee.rglob("*.json") if not p.name.startswith(".")]
    lm = d / "lm-export"
    export(data, "lm-eval", lm)
    docs = [json.loads(x) for x in (lm / "docs.jsonl").read_text().splitlines()]
    task = json.loads((lm / "manifest.json").read_text())["task"]
    rng = np.random.default_rng(0)
    recs = []
    for i, doc in enumerate(docs):
        lls = (-rng.gamma(2.0, 5.0, len(doc["choices"]))).round(4).tolist()
        norm = [ll / len(c) for ll, c in zip(lls, doc["choices"])]
        recs.append({"doc_id": i, "doc": doc, "target": doc["gold"], "filtered_resps": [[str(x), "False"] for x in lls],
                     "acc": float(int(np.argmax(lls)) == doc["gold"]),
                     "acc_norm": float(int(np.argmax(norm)) == doc["gold"])})
    results = json.dumps({"model_name": "org/lm", "configs": {task: {"dataset_kwargs": {"data_files": {
        "test": str(lm / "docs.jsonl")}}}}})
    return Seeds({
        "dir": d, "runs": runs, "agg": agg, "task": task, "lm-results": results,
        "run-items": (runs["a"] / "items.jsonl").read_bytes(),
        "run-results": (runs["a"] / "results.json").read_bytes(),
        "eee": agg.with_name(f"{agg.stem}_samples.jsonl").read_bytes(),
        "inspect": log.read_bytes(),
        "lm-eval": "".join(json.dumps(r) + "\n" for r in recs).encode(),
    })


#: the fields a respondent is read from: the aimed mutation swaps one of these
FIELDS = ("correct", "score", "value", "acc", "acc_norm", "filtered_resps", "unit", "key", "chosen", "k", "gold",
          "choice_synsets", "choices", "files", "dataset", "id", "sample_id")
CELL = "probegen_cell"


def _swap_named(data: bytes, field: int, pick: int, value) -> bytes:
    """``data`` (JSON or JSONL) with one value of a field in :data:`FIELDS` replaced by ``value``
    (an Every Eval Ever ``probegen_cell`` string decoded, changed and encoded again): the field
    ``field`` (modulo those the file has), then its ``pick``-th occurrence."""
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        docs = [json.loads(text)]
        lines = None
    except (ValueError, RecursionError):
        lines = text.split("\n")
        try:
            docs = [json.loads(ln) if ln.strip() else None for ln in lines]
        except (ValueError, RecursionError):
            return data  # an earlier mutation broke it: leave it so
    targets = []
    for n, doc in enumerate(docs):
        for path in json_paths(doc):
            if path and path[-1] in FIELDS:
                targets.append((n, path, None))
            if path and path[-1] == CELL and isinstance(_get(doc, path), str):
                try:
                    cell = json.loads(_get(doc, path))
                except (ValueError, RecursionError):
                    continue
                targets += [(n, path, sub) for sub in json_paths(cell) if sub and sub[-1] in FIELDS]
    names = sorted({(sub or path)[-1] for _, path, sub in targets}, key=FIELDS.index)
    if not names:
        return data
    name = FIELDS[field] if FIELDS[field] in names else names[field % len(names)]
    mine = [t for t in targets if (t[2] or t[1])[-1] == name]
    n, path, sub = mine[pick % len(mine)]
    if sub is None:
        _set(docs[n], path, value)
    else:
        cell = json.loads(_get(docs[n], path))
        _set(cell, sub, value)
        _set(docs[n], path, json.dumps(cell, allow_nan=True).replace('"@@DEEP@@"', "[" * 2000 + "]" * 2000))
    dump = [json.dumps(d, allow_nan=True).replace('"@@DEEP@@"', "[" * 2000 + "]" * 2000) if d is not None else ""
            for d in docs]
    out = dump[0] if lines is None else "\n".join(dump)
    return out.encode("utf-8", errors="surrogatepass")


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _set(doc, path, value) -> None:
    _get(doc, path[:-1])[path[-1]] = value


AIMED = st.tuples(st.just("named"), st.integers(min_value=0, max_value=len(FIELDS) - 1),
                  st.integers(min_value=0, max_value=len(SWAPS) - 1), st.integers(min_value=0, max_value=2**10))


def _apply(data: bytes, ops: list) -> bytes:
    for op in ops:
        data = _swap_named(data, op[1], op[3], SWAPS[op[2]]) if op[0] == "named" else _mutate(data, op)
    return data


def place(seeds: dict, fmt: str, data: bytes) -> Path:
    """The mutant as the reader finds it, in a fresh folder (readers cache by path): a run folder
    whose items.jsonl or results.json it is (the output marker dropped, as a hand-edited run has
    none), an EEE pair (the checksum recomputed, so the samples are read, not refused as changed),
    an inspect log, or lm-eval samples beside lm-eval's results file."""
    d = seeds["dir"] / "m" / hashlib.sha256(data + fmt.encode()).hexdigest()[:16]
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    if fmt in ("run-items", "run-results"):
        shutil.copytree(seeds["runs"]["a"], d / "run")
        (d / "run" / ".probegen-output.json").unlink()
        (d / "run" / ("items.jsonl" if fmt == "run-items" else "results.json")).write_bytes(data)
        return d / "run"
    if fmt == "eee":
        agg = json.loads(seeds["agg"].read_text())
        agg["detailed_evaluation_results"]["checksum"] = hashlib.sha256(data).hexdigest()
        (d / seeds["agg"].name).write_text(json.dumps(agg))
        (d / f"{seeds['agg'].stem}_samples.jsonl").write_bytes(data)
        return d / f"{seeds['agg'].stem}_samples.jsonl"
    if fmt == "inspect":
        (d / "log.json").write_bytes(data)
        return d / "log.json"
    (d / f"results_{TIME}.json").write_text(seeds["lm-results"])
    (d / f"samples_{seeds['task']}_{TIME}.jsonl").write_bytes(data)
    return d / f"samples_{seeds['task']}_{TIME}.jsonl"


def table(seeds: dict, fmt: str, data: bytes) -> tuple[int, str, list[dict[str, str]] | None]:
    """`probegen items` over the mutant and the other run; checks the property; (exit, stderr, the
    long table without its source column) ."""
    path = place(seeds, fmt, data)
    out = path.parent / "out"
    code, _, err = run("items", path, seeds["runs"]["b"], "--irt", "none", "--bootstrap", 50, "--out", out)
    assert "Traceback" not in err
    if code != 0:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        assert code == 1 and len(lines) >= 1 and lines[-1].startswith("probegen: error: ") and \
            sum(ln.startswith("probegen: error:") for ln in lines) == 1, (code, err[-2000:])
        assert not out.exists()
        return code, err, None
    for name in ("responses.csv", "respondents.csv", "items.csv", "distractors.csv"):
        text = (out / name).read_text()
        assert not any(tok in text.lower().split(",") for tok in ("nan", "inf", "-inf", "infinity")), name
    _strict((out / "summary.json").read_text())
    with open(out / "responses.csv", newline="") as fh:  # the table as a set of rows (file order aside)
        rows = sorted(({k: v for k, v in r.items() if k != "source"} for r in csv.DictReader(fh)),
                      key=lambda r: (r["respondent"], r["item"]))
    for r in rows:
        v = float(r["correct"])
        assert math.isfinite(v) and 0 <= v <= 1, r
    with open(out / "respondents.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            assert 0 <= float(r["accuracy"]) <= 1, r
    return code, err, rows


def _same_content(data: bytes, how: int) -> bytes:
    """``data`` with its content kept: JSONL lines reversed, or every JSON document re-serialised
    with sorted keys and other spacing."""
    text = data.decode("utf-8")
    try:
        doc = json.loads(text)
        return json.dumps(doc, sort_keys=True, indent=1 + how % 3).encode()
    except ValueError:
        pass
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if how % 2:
        lines = lines[::-1]
    return ("\n".join(json.dumps(json.loads(ln), sort_keys=True, separators=(", ", ": ")) for ln in lines)
            + "\n").encode()


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_seeds_read_and_keep_their_table(seeds, fmt):
    """Unmutated, each seed is read (exit 0); with its content kept, the same table."""
    code, err, want = table(seeds, fmt, seeds[fmt])
    assert code == 0, err
    for how in range(3):
        code, err, got = table(seeds, fmt, _same_content(seeds[fmt], how))
        assert code == 0 and got == want, (fmt, how, err)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(FUZZ)
@given(draw=st.data())
def test_mutants_are_read_or_one_line(seeds, fmt, draw):
    """One format per parameter: a run's items.jsonl and results.json, EEE samples, an inspect-ai
    log, lm-eval samples; one to three mutations each."""
    ops = draw.draw(st.lists(st.one_of(OPS, AIMED, AIMED), min_size=1, max_size=3))
    data = _apply(seeds[fmt], ops)
    table(seeds, fmt, data)
