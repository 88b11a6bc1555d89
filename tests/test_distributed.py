"""Data-parallel scoring under torchrun (2 CPU processes, gloo) gives what one process gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


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
