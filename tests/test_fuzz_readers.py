"""Fuzzing the import formats (issue 16): seeded mutations of real files, each run through the
command that reads it, must load (exit 0) or fail with exactly one ``probegen: error:`` line
(exit 1), never a traceback.

Formats and the command each goes through: CoDA21 JSON, WordNetQA release JSONL, word-in-context
JSONL and WiC TSV (``probegen stats FILE``), spec YAML (``probegen make spec FILE --check``) and
WN-LMF XML (``probegen make wordnetqa --wordnet-source FILE``, which builds a small probe set from
it). Seeds are real files: the committed CoDA21 export of a probegen build, the WordNetQA
release sample rows (shared/data) and probegen's release export, a ``make wic`` output and its
WiC-TSV rendering, the built-in specs and the Spanish WN-LMF fixture.

Mutations (hypothesis, derandomized so CI sees the same examples every run): byte flips,
insertions of bytes that break parsers, deletions, truncation, a duplicated line, a JSON value
swapped for another type (string, number, null, NaN, Infinity, huge, nested 2000 deep, ...),
and encoding damage (a latin-1 or UTF-16 re-encoding). ``PROBEGEN_FUZZ_EXAMPLES`` raises the
number of examples per format (default 300).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probegen.commands.cli import cli

HERE = Path(__file__).parent
DATA = HERE / "data"
ROOT = HERE.parent
RELEASE_SAMPLE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"
EXAMPLES = int(os.environ.get("PROBEGEN_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])

# ---- seeds ----------------------------------------------------------------------------------------


def _head_lines(path: Path, n: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:n])


def _wordnetqa_seeds() -> list[bytes]:
    seeds = [(DATA / "wordnetqa_release_four_probes.jsonl").read_bytes()]
    seeds += [_head_lines(f, 6) for f in sorted(RELEASE_SAMPLE.glob("*.jsonl"))]
    return seeds


SEEDS = {
    "coda21": [(DATA / "coda21_three_groups.json").read_bytes()],
    "wordnetqa": _wordnetqa_seeds(),
    "wic-jsonl": [(DATA / "wic_semcor_24.jsonl").read_bytes()],
    "wic-tsv": [(DATA / "wic_tsv" / "train" / "train.data.txt").read_bytes()],
    "spec": [p.read_bytes() for p in sorted((ROOT / "templates" / "specs").glob("*.yaml"))],
    "lmf": [(DATA / "lmf" / "es-mini.xml").read_bytes()],
}

# ---- mutations ------------------------------------------------------------------------------------
NASTY = [b"\xff", b"\xc3", b"\xe9", b"\x00", b"\"", b"\\", b"{", b"}", b"[", b"]", b",", b":", b"\n", b"\r", b"\t", b" ",
         b"NaN", b"-Infinity", b"1e400", b"-1", b"0", b"9" * 30, b"null", b"true", b"[[[[", b"\xef\xbb\xbf",
         b"<", b">", b"&", b"&amp;", b"]]>", b"<!--", b"</", b"'", b"%", "\u2028".encode(),
         b": ", b"- ", b"&a *a", b"!!python/object:os.system", b"{{", b"}}", b"\xed\xa0\x80"]
SWAPS: list = ["", " ", "x", 0, -1, 1, 10**30, 2.5, True, None, [], {}, [[]], ["a", "b"], [1, 2], [0, 0], [5, 5],
               float("nan"), float("inf"), float("-inf"), "@@DEEP@@", "\udcff", "a" * 5000]


def json_paths(node, prefix=()):
    """Every path to a value inside a parsed JSON document."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from json_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from json_paths(v, prefix + (i,))


def _swap_json(text: bytes, pick: int, value) -> bytes:
    """``text`` (JSON or JSONL) with one value replaced by ``value`` (written with NaN/Infinity as is)."""
    lines = text.split(b"\n")
    try:
        json.loads(text)
        docs = [(None, text)]  # one JSON document
    except (ValueError, RecursionError):
        docs = [(i, ln) for i, ln in enumerate(lines) if ln.strip()] or [(None, text)]  # JSONL
    i, doc = docs[pick % len(docs)]
    try:
        tree = json.loads(doc)
    except (ValueError, RecursionError):  # an earlier mutation broke it: leave it so
        return text
    paths = list(json_paths(tree))
    path = paths[(pick // len(docs)) % len(paths)]
    if not path:
        tree = value
    else:
        node = tree
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    out = json.dumps(tree, allow_nan=True, ensure_ascii=False).replace('"@@DEEP@@"', "[" * 2000 + "]" * 2000)
    new = out.encode("utf-8", errors="surrogatepass")  # a lone surrogate: bytes that are not UTF-8
    if i is None:
        return new
    lines[i] = new
    return b"\n".join(lines)


def _mutate(data: bytes, op: tuple) -> bytes:
    kind, a, b, extra = op
    n = max(len(data), 1)
    at = a % n
    if kind == "flip":
        return data[:at] + bytes([b % 256]) + data[at + 1:]
    if kind == "insert":
        return data[:at] + extra + data[at:]
    if kind == "delete":
        return data[:at] + data[at + 1 + b % 64:]
    if kind == "truncate":
        return data[:at]
    if kind == "dupline":
        lines = data.splitlines(keepends=True) or [b""]
        j = a % len(lines)
        return b"".join(lines[: j + 1] + [lines[j]] + lines[j + 1:])
    if kind == "swap":
        return _swap_json(data, a, SWAPS[b % len(SWAPS)])
    if kind == "encode":
        text = data.decode("utf-8", errors="replace")
        return text.encode(("latin-1", "utf-16", "cp1252")[b % 3], errors="replace")
    raise AssertionError(kind)


OPS = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "truncate", "dupline", "swap", "swap", "encode"]),
    st.integers(min_value=0, max_value=2**20),
    st.integers(min_value=0, max_value=2**16),
    st.sampled_from(NASTY),
)


def mutants(fmt: str):
    """A seed of ``fmt`` with one to three mutations applied."""
    return st.tuples(st.sampled_from(range(len(SEEDS[fmt]))), st.lists(OPS, min_size=1, max_size=3)).map(
        lambda t: _apply(SEEDS[fmt][t[0]], t[1]))


def _apply(data: bytes, ops: list) -> bytes:
    for op in ops:
        data = _mutate(data, op)
    return data


# ---- running a mutant ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A scratch folder shared by every example of the module."""
    return tmp_path_factory.mktemp("fuzz")


def place(work: Path, data: bytes, name: str) -> Path:
    """Write a mutant to a fresh folder (paths are never reused: readers cache by path)."""
    d = work / hashlib.sha256(data + name.encode()).hexdigest()[:16]
    d.mkdir(exist_ok=True)
    f = d / name
    f.write_bytes(data)
    return f


def invoke(args: list[str]):
    """The CLI in-process; a WN-LMF mutant gets a private cache (its wn database is thrown away)."""
    env = {"PROBEGEN_CACHE": str(Path(args[3]).parent / "cache")} if args[:2] == ["make", "wordnetqa"] else None
    return CliRunner().invoke(cli, args, env=env)


def check_contract(args: list[str], data: bytes) -> None:
    """Exit 0, or exit 1 with exactly one ``probegen: error:`` line; no exception escapes."""
    r = invoke(args)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(r.exception))
        raise AssertionError(f"traceback for probegen {' '.join(args)} on {data[:300]!r}...\n{tb}")
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("probegen: error:")]
    assert "Traceback" not in r.stderr, r.stderr
    if r.exit_code == 0:
        assert not err, r.stderr
        return
    assert r.exit_code == 1 and len(err) == 1 and r.stderr.strip().splitlines()[-1] == err[0], (r.exit_code, r.stderr[-2000:])
    assert err[0] != "probegen: error: ", r.stderr


def test_the_seeds_load(work):
    """Unmutated, every seed loads: the fuzzing starts from files the readers accept."""
    for fmt, seeds in SEEDS.items():
        for i, data in enumerate(seeds):
            r = invoke(_args(work, fmt, data))
            assert r.exit_code == 0, (fmt, i, r.stderr[-1000:])


def _args(work: Path, fmt: str, data: bytes) -> list[str]:
    if fmt == "coda21":
        return ["stats", str(place(work, data, "coda21.json"))]
    if fmt == "wordnetqa":
        return ["stats", str(place(work, data, "release-train.jsonl"))]
    if fmt == "wic-jsonl":
        return ["stats", str(place(work, data, "items.jsonl"))]
    if fmt == "wic-tsv":
        f = place(work, data, "train.data.txt")
        gold = (DATA / "wic_tsv" / "train" / "train.gold.txt").read_bytes()
        (f.parent / "train.gold.txt").write_bytes(gold)
        return ["stats", str(f)]
    if fmt == "spec":
        return ["make", "spec", str(place(work, data, "spec.yaml")), "--check"]
    if fmt == "lmf":
        f = place(work, data, "lexicon.xml")
        return ["make", "wordnetqa", "--wordnet-source", str(f), "--contexts", "examples", "--probe", "hypernymy",
                "--distractors", "isa,sister", "--out", str(f.parent / "out")]
    raise AssertionError(fmt)


@pytest.mark.parametrize("fmt", ["coda21", "wordnetqa", "wic-jsonl", "wic-tsv", "spec", "lmf"])
@settings(FUZZ)
@given(draw=st.data())
def test_fuzz_reader(work, fmt, draw):
    """One format per parameter: CoDA21 JSON, WordNetQA release JSONL, word-in-context JSONL, WiC
    TSV, spec YAML, WN-LMF XML."""
    data = draw.draw(mutants(fmt))
    check_contract(_args(work, fmt, data), data)


def test_mutations_change_the_files():
    """The mutation operators do what they say (a swap reaches NaN and deep nesting)."""
    seed = SEEDS["coda21"][0]
    assert _mutate(seed, ("truncate", 10, 0, b"")) == seed[:10]
    swapped = {_swap_json(seed, p, v) for p in range(5) for v in (float("nan"), "@@DEEP@@")}
    assert any(b"NaN" in s for s in swapped) and any(b"[" * 2000 in s for s in swapped)
