"""Data-parallel scoring under torchrun (2 CPU processes, gloo) gives what one process gives.

Every command that scores (``eval``, ``bias``, ``compare``, ``make coda21`` with context scoring)
runs under ``torchrun --nproc_per_node 2`` with outputs byte-identical to one process (the
``run`` block, timings and work counters aside) and the same stdout: rank 0 alone writes and speaks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiny_models

LMF = Path(__file__).parent / "data" / "lmf" / "es-mini.xml"
#: keys that may differ between two runs of one command: timings, work counters, the process count
VOLATILE = {"run", "timings", "scorer_stats"}


def _run(args: list[str], cache: Path, launcher: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PROBEGEN_CACHE": str(cache), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.run([*launcher, "-m", "probegen", *args], env=env, capture_output=True, text=True, timeout=900)


def _why(p) -> str:
    """A failed launch's story: the ranks' own tracebacks come before torchrun's summary, so keep both."""
    err = p.stderr
    return err if len(err) <= 8000 else err[:5000] + "\n[...]\n" + err[-3000:]


def _torchrun(n: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}"]


def _comparable(run_dir: Path) -> dict:
    res = json.loads((run_dir / "results.json").read_text())
    res.pop("run")  # timings, work counters and the process count: the only fields that may differ
    return res


def _share_cache(src: Path, dst: Path) -> None:
    """Link the parsed WordNet graph and converted models into a fresh cache (no score cache)."""
    dst.mkdir(parents=True, exist_ok=True)
    for p in [*src.glob("*.pickle"), *src.glob("models/**/*")]:
        if p.is_file() and not p.name.startswith("."):
            (dst / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            os.link(p, dst / p.relative_to(src))


@pytest.mark.real
@pytest.mark.parametrize("model,groups", [("glove-50d", None), ("smollm2-135m", 6)])
def test_torchrun_two_processes_give_the_same_results_as_one(clean_hard_nouns, tmp_path, model, groups):
    """Real clean-hard nouns: the same metrics and byte-identical per-group records, scores included."""
    from probegen.coda21.dataset import Coda21Dataset, write
    from probegen.paths import cache_dir

    ds = clean_hard_nouns if groups is None else Coda21Dataset(clean_hard_nouns.groups[:groups], clean_hard_nouns.manifest)
    write(ds, tmp_path / "ds")
    outs = {}
    for name, launcher in (("one", [sys.executable]), ("two", _torchrun(2))):
        cache = tmp_path / f"cache-{name}"
        _share_cache(cache_dir(), cache)
        p = _run(["eval", "--model", model, "--dataset", str(tmp_path / "ds"), "--out", str(tmp_path / name)], cache, launcher)
        assert p.returncode == 0, _why(p)
        outs[name] = tmp_path / name
    one, two = _comparable(outs["one"]), _comparable(outs["two"])
    assert one["metrics"] == two["metrics"]
    assert one == two
    assert (outs["one"] / "groups.jsonl").read_bytes() == (outs["two"] / "groups.jsonl").read_bytes()
    run = json.loads((outs["two"] / "results.json").read_text())["run"]
    assert run["distributed"] == {"processes": 2, "backend": "gloo"}


def test_ranks_share_fixed_chunks_and_gather_everything(tmp_path):
    """Two gloo ranks each compute half the chunks; every rank ends with every value, rank 0 caches."""
    script = tmp_path / "job.py"
    script.write_text(
        "import json, sys\n"
        "import numpy as np\n"
        "from probegen import distributed as dist\n"
        "from probegen.scorers.base import Scorer\n"
        "class S(Scorer):\n"
        "    kind = 'static'\n"
        "    chunk_pairs = 3\n"
        "    def _score_uncached(self, pairs):\n"
        "        self.mine = getattr(self, 'mine', 0) + len(pairs)\n"
        "        return np.array([len(q) * 10.0 + len(c) for q, c in pairs])\n"
        "dist.init_from_env()\n"
        "s = S('toy', cache=sys.argv[1])\n"
        "pairs = [(f'q{i}' * (i + 1), f'c{j}' * (j + 1)) for i in range(7) for j in range(2)]\n"
        "v = s.score_pairs(pairs)\n"
        "json.dump({'rank': dist.rank(), 'mine': s.mine, 'values': [v[p] for p in pairs], 'stats': s.stats()},\n"
        "          open(sys.argv[2] + str(dist.rank()), 'w'))\n"
        "again = S('toy', cache=sys.argv[1]).score_pairs(pairs)  # all from rank 0's cache now\n"
        "assert again == v, 'cache'\n"
        "dist.shutdown()\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.run([*_torchrun(2), str(script), str(tmp_path / "c.sqlite"), str(tmp_path / "out")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, _why(p)
    r0, r1 = (json.loads((tmp_path / f"out{r}").read_text()) for r in (0, 1))
    expected = [len(f'q{i}' * (i + 1)) * 10.0 + len(f'c{j}' * (j + 1)) for i in range(7) for j in range(2)]
    assert r0["values"] == r1["values"] == expected
    assert 0 < r0["mine"] < 14 and r0["mine"] + r1["mine"] == 14  # each rank computed a share, none all
    assert r0["stats"]["pairs_computed"] == r1["stats"]["pairs_computed"] == 14


# ---- every scoring command: torchrun == one process ------------------------------------------------------
def _drop(x, keys=VOLATILE):
    if isinstance(x, dict):
        return {k: _drop(v, keys) for k, v in x.items() if k not in keys}
    if isinstance(x, list):
        return [_drop(v, keys) for v in x]
    return x


def assert_same_outputs(one: Path, two: Path) -> None:
    """Every file under ``one`` and ``two`` equal byte for byte; JSON equal but for :data:`VOLATILE`
    keys (and the output marker's hash of results.json, which holds the timings)."""
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(two) for p in two.rglob("*") if p.is_file())
    for rel in files:
        a, b = one / rel, two / rel
        if rel.name == ".probegen-output.json":
            ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
            assert sorted(ja.pop("files")) == sorted(jb.pop("files")) and ja == jb, rel
        elif rel.suffix == ".json":
            assert _drop(json.loads(a.read_text())) == _drop(json.loads(b.read_text())), rel
        else:
            assert a.read_bytes() == b.read_bytes(), rel


def one_and_two(tmp_path: Path, name: str, argv: list[str]) -> dict[str, tuple[Path, str]]:
    """Run ``probegen argv --out ...`` in one process and under torchrun with 2 gloo ranks, each
    with a fresh score cache; {"one"|"two": (output, stdout with the output path replaced)}."""
    from probegen.paths import cache_dir

    runs = {}
    for who, launcher in (("one", [sys.executable]), ("two", _torchrun(2))):
        cache = tmp_path / f"cache-{name}-{who}"
        _share_cache(cache_dir(), cache)
        out = tmp_path / f"{name}-{who}"
        p = _run([*argv, "--device", "cpu", "--out", str(out)], cache, launcher)
        assert p.returncode == 0, _why(p)
        runs[who] = (out, p.stdout.replace(str(out), "<OUT>"))
    return runs


def assert_same_run(runs: dict[str, tuple[Path, str]]) -> None:
    (one, out1), (two, out2) = runs["one"], runs["two"]
    assert out1 == out2  # rank 0 alone prints the summary
    assert_same_outputs(one, two)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return tiny_models.tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def coda21_runs(tmp_path_factory, tiny):
    """`make coda21` with a context scorer (the tiny LM) on the small LMF wordnet, 1 and 2 processes."""
    root = tmp_path_factory.mktemp("make-coda21")
    argv = ["make", "coda21", "--wordnet-source", str(LMF), "--contexts", "examples", "--pos", "noun", "--k-min", "2",
            "--noisy", "--context-scorer", tiny]
    return one_and_two(root, "coda21", argv)


@pytest.fixture(scope="module")
def small_mc(tmp_path_factory) -> str:
    """A small multiple-choice set (51 hypernymy items) from the LMF wordnet."""
    from probegen.paths import cache_dir

    out = tmp_path_factory.mktemp("wqa") / "wqa"
    p = _run(["make", "wordnetqa", "--wordnet-source", str(LMF), "--contexts", "examples", "--probe", "hypernymy",
              "--distractors", "isa,sister", "--out", str(out)], cache_dir(), [sys.executable])
    assert p.returncode == 0, _why(p)
    return str(out)


def test_make_coda21_with_context_scoring_under_torchrun(coda21_runs):
    assert_same_run(coda21_runs)
    manifest = json.loads((coda21_runs["two"][0] / "manifest.json").read_text())
    assert manifest["context_scorer"]["kind"] == "causal"  # contexts were chosen by scoring, not taken first


def test_bias_under_torchrun(tmp_path, tiny, coda21_runs, small_mc):
    runs = one_and_two(tmp_path, "bias", ["bias", "--model", tiny, "--dataset", str(coda21_runs["one"][0]),
                                          "--dataset", small_mc, "--bootstrap", "50"])
    assert_same_run(runs)
    assert sorted(p.name for p in runs["two"][0].iterdir() if p.is_dir()) == sorted([coda21_runs["one"][0].name, "wqa"])


def test_compare_under_torchrun(tmp_path, tiny, coda21_runs, small_mc):
    runs = one_and_two(tmp_path, "compare", ["compare", small_mc, small_mc, "--model", tiny, "--model", "glove-50d",
                                             "--bootstrap", "50"])
    assert_same_run(runs)


def test_eval_under_torchrun_on_a_small_set(tmp_path, tiny, small_mc):
    runs = one_and_two(tmp_path, "eval", ["eval", "--model", tiny, "--dataset", small_mc])
    assert_same_run(runs)
    assert json.loads((runs["two"][0] / "results.json").read_text())["run"]["distributed"] == {"processes": 2, "backend": "gloo"}
