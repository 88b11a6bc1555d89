"""Devices, precision and batch budgets, exercised on the CPU: device resolution and clear errors,
dtype and device in settings and cache keys, the dtype-aware self-check, device maps, the budget
search with a simulated out-of-memory, and the command-line options."""

from __future__ import annotations

import json
import logging
import weakref

import numpy as np
import pytest
from click.testing import CliRunner
from oracles import causal_naive_scores

from probegen.errors import ProbegenError
from probegen.score_cache import ScoreCache

QUERIES = [
    "The heron waded through the marsh and speared a fish. Definition of bkatuhla is",
    "She signed the bkatuhla with the landlord before moving in. Definition of bkatuhla is ",
]
CANDS = [["a large wading bird with a long neck", "a written agreement", "x"], ["a written agreement", "a dog"]]
N_PAIRS = 5

needs_no_cuda = pytest.mark.skipif("__import__('torch').cuda.is_available()", reason="checks the no-CUDA error")


@pytest.fixture
def fresh_checks(monkeypatch):
    """Forget earlier self-checks, so each test's scorer runs its own."""
    from probegen.scorers import causal

    monkeypatch.setattr(causal, "_CHECKED", weakref.WeakKeyDictionary())


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _flat(scores) -> np.ndarray:
    return np.concatenate(scores)


def _run(*args: str):
    from probegen.commands.cli import cli

    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.stderr


# ---- device and dtype resolution -----------------------------------------------------------------
def test_device_and_dtype_resolution():
    from probegen.models import parse_batch_tokens, resolve_device, resolve_dtype

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cpu" if not __import__("torch").cuda.is_available() else resolve_device("cuda"))
    assert resolve_dtype("auto", "cpu") == "float32" and resolve_dtype("bfloat16", "cpu") == "bfloat16"
    for bad in ("tpu", "cuda:x", "gpu0"):
        with pytest.raises(ProbegenError, match="unknown device"):
            resolve_device(bad)
    with pytest.raises(ProbegenError, match="dtype must be one of"):
        resolve_dtype("float64", "cpu")
    assert parse_batch_tokens("8192") == 8192 and parse_batch_tokens("auto") == "auto"
    for bad in ("0", "-5", "lots"):
        with pytest.raises(ProbegenError, match="max_batch_tokens"):
            parse_batch_tokens(bad)


@needs_no_cuda
def test_cuda_without_cuda_is_one_clear_line(tmp_path, tiny_llama):
    from probegen.models import load_scorer

    for device in ("cuda", "cuda:1"):
        with pytest.raises(ProbegenError, match="CUDA is not available"):
            load_scorer(tiny_llama, device=device)
    # the command fails before it reads the dataset or loads the model
    code, err = _run("eval", "--device", "cuda", "--model", "no-such-model", "--dataset", str(tmp_path / "none"),
                     "--out", str(tmp_path / "o"))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("probegen: error: device 'cuda' requested but CUDA is not available")
    assert not (tmp_path / "o").exists()
    code, err = _run("eval", "--max-batch-tokens", "-3", "--model", "glove-50d", "--dataset", str(tmp_path / "none"))
    assert code == 1 and "max_batch_tokens must be" in err
    code, err = _run("eval", "--dtype", "float64", "--model", "glove-50d", "--dataset", str(tmp_path / "none"))
    assert code == 2  # a click usage error


def test_device_options_reach_every_load_in_a_command(tiny_llama):
    import click

    from probegen.commands.options import add_device_options
    from probegen.runner import Runner, Runtime

    seen = {}

    @click.command()
    @add_device_options
    @click.option("--model")
    def cmd(runtime, model):
        seen["runtime"] = runtime
        s = Runner(runtime).load_scorer(model, cache=False)
        seen["settings"], seen["stats"] = s.settings(), s.stats()

    r = CliRunner().invoke(cmd, ["--model", tiny_llama, "--device", "cpu", "--dtype", "bfloat16", "--max-batch-tokens", "512"])
    assert r.exit_code == 0, r.output
    assert seen["runtime"] == Runtime("cpu", "bfloat16", None, 512)
    assert seen["runtime"].settings() == {"device": "cpu", "dtype": "bfloat16", "max_batch_tokens": 512}
    assert seen["settings"]["dtype"] == "bfloat16" and seen["settings"]["device"] == "cpu"
    assert seen["stats"]["max_batch_tokens"] == 512 and seen["stats"]["budget"] == "user"
    # an explicit argument wins over the runtime's settings
    runner = Runner(Runtime(dtype="bfloat16"))
    assert runner.load_scorer(tiny_llama, cache=False, dtype="float32").dtype == "float32"
    assert runner.load_scorer(tiny_llama, cache=False).dtype == "bfloat16"


def test_a_command_with_device_options_must_take_the_runtime():
    """Options a command would accept and silently ignore are a programming error, caught at import."""
    from probegen.commands.options import add_device_options

    with pytest.raises(TypeError, match="takes a `runtime` parameter"):
        add_device_options(lambda model: None)


# ---- dtype: settings, cache keys, the rounding-aware self-check ------------------------------------
def test_dtype_is_in_the_cache_key_and_device_is_not(tiny_llama, tmp_path, fresh_checks):
    import torch

    from probegen.models import load_scorer
    from probegen.scorers.causal import rounding_tolerance

    cache = ScoreCache(tmp_path / "c.sqlite")
    fp32 = load_scorer(tiny_llama, cache=cache, device="auto", dtype="auto")
    assert (fp32.device, fp32.dtype) == ("cpu", "float32")
    a = _flat(fp32.score(QUERIES, CANDS))
    bf16 = load_scorer(tiny_llama, cache=cache, dtype="bfloat16")
    assert next(bf16.model.parameters()).dtype == torch.bfloat16 and bf16.model is not fp32.model
    assert bf16.settings()["dtype"] == "bfloat16" and bf16.stats()["dtype"] == "bfloat16"
    b = _flat(bf16.score(QUERIES, CANDS))
    assert bf16.stats()["pairs_computed"] == N_PAIRS  # never served from float32 entries
    n_tokens = [len(bf16.encode_pair(q, c)[1]) for q, cs in zip(QUERIES, CANDS) for c in cs]
    assert np.all(np.abs(a - b) <= [rounding_tolerance("bfloat16", n) for n in n_tokens])
    assert not np.array_equal(a, b)
    check = bf16.stats()["self_check"]
    assert check["passed"] and check["dtype"] == "bfloat16" and bf16.strategy == "packed"
    # the device is recorded but not part of the key: another device with the same dtype hits the cache
    other = load_scorer(tiny_llama, cache=cache)
    other.device = "cuda:7"
    assert "device" in other.settings() and "device" not in other.cache_settings()
    np.testing.assert_array_equal(_flat(other.score(QUERIES, CANDS)), a)
    assert other.stats()["pairs_computed"] == 0


def test_rounding_tolerance_scales_with_dtype_and_tokens():
    from probegen.scorers.causal import rounding_tolerance

    assert rounding_tolerance("float32", 50) == 1e-3
    assert rounding_tolerance("bfloat16", 10) > 0.22 > rounding_tolerance("float16", 10) > 1e-3
    assert rounding_tolerance("bfloat16", 20) > rounding_tolerance("bfloat16", 10)


def _shifted_packed(monkeypatch, per_token: float) -> None:
    """Make the packed path differ from full sequences by ``per_token`` nats per scored token."""
    from probegen.scorers.causal import CausalScorer

    packed = CausalScorer._packed_scores

    def shifted(self, enc):
        return [v + per_token * len(c) for v, (_, c) in zip(packed(self, enc), enc)]

    monkeypatch.setattr(CausalScorer, "_packed_scores", shifted)


def test_self_check_falls_back_loudly_and_records_it(tiny_llama, fresh_checks, monkeypatch, caplog):
    from probegen.models import ModelStore, load_scorer

    _shifted_packed(monkeypatch, 0.01)  # far beyond float32 rounding
    store = ModelStore()  # one runner's models: its scorers share the loaded model
    s = load_scorer(tiny_llama, cache=False, store=store)
    with caplog.at_level(logging.WARNING, logger="probegen.scorers.causal"):
        got = _flat(s.score(QUERIES, CANDS))
    assert s.strategy == "full"
    check = s.stats()["self_check"]
    assert check["passed"] is False and check["fallback"] == "full" and "differs from full sequences" in check["reason"]
    assert s.stats()["strategy"] == "full"
    assert any("fails its self-check" in r.getMessage() for r in caplog.records)
    np.testing.assert_allclose(got, causal_naive_scores(s, [(q, c) for q, cs in zip(QUERIES, CANDS) for c in cs]), atol=1e-4)
    # another scorer on the same loaded model reuses the verdict (and its record)
    again = load_scorer(tiny_llama, cache=False, store=store)
    assert again.strategy == "full" and again.stats()["self_check"] == check


def test_bfloat16_rounding_does_not_trigger_the_fallback(tiny_llama, fresh_checks, monkeypatch):
    from probegen.models import load_scorer

    _shifted_packed(monkeypatch, 0.015)  # bf16 rounding seen on an H100: up to 0.22 nats over ~15 tokens
    s = load_scorer(tiny_llama, cache=False, dtype="bfloat16")
    s.score(QUERIES, CANDS)
    assert s.strategy == "packed" and s.stats()["self_check"]["passed"]


# ---- device map ------------------------------------------------------------------------------------
def test_device_map_auto_loads_and_scores(tiny_llama, fresh_checks):
    from probegen.models import load_scorer

    mapped = load_scorer(tiny_llama, cache=False, device_map="auto")
    plain = load_scorer(tiny_llama, cache=False)
    assert mapped.model is not plain.model  # loaded through accelerate's placement (one device here: no hooks)
    assert mapped.settings()["device_map"] == "auto" and "device_map" not in mapped.cache_settings()
    assert mapped.cache_settings() == plain.cache_settings()
    np.testing.assert_allclose(_flat(mapped.score(QUERIES, CANDS)), _flat(plain.score(QUERIES, CANDS)), atol=1e-5)


# ---- batch budgets -----------------------------------------------------------------------------------
def _oom_above(monkeypatch, cls, limit: int, calls: list[int]) -> None:
    """Make ``cls._probe`` behave like a GPU with room for ``limit`` tokens."""
    import torch

    probe = cls._probe

    def fake(self, budget):
        calls.append(budget)
        if budget > limit:
            raise torch.cuda.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {budget} tokens")
        probe(self, budget)

    monkeypatch.setattr(cls, "_probe", fake)


def test_budget_search_backs_off_on_oom_and_is_remembered(tiny_llama, cache_dir, monkeypatch, fresh_checks):
    from probegen.models import load_scorer
    from probegen.scorers.causal import CausalScorer

    calls: list[int] = []
    _oom_above(monkeypatch, CausalScorer, 5000, calls)
    default = load_scorer(tiny_llama, cache=False)
    assert default.stats()["budget"] == "default" and default.max_batch_tokens == CausalScorer.max_batch_tokens
    ref = _flat(default.score(QUERIES, CANDS))
    assert calls == []  # CPU defaults: no search

    s = load_scorer(tiny_llama, cache=False, max_batch_tokens="auto")
    got = _flat(s.score(QUERIES, CANDS))
    assert calls == [1 << 17, 1 << 16, 1 << 15, 1 << 14, 1 << 13, 1 << 12]  # halved until it fits
    st = s.stats()
    assert st["max_batch_tokens"] == 4096 and st["batch_rows"] == 128 and st["budget"] == "auto (searched)"
    np.testing.assert_allclose(got, ref, atol=1e-5)
    stored = json.loads((cache_dir / "batch_budgets.json").read_text())
    assert list(stored.values()) == [4096]

    calls.clear()
    again = load_scorer(tiny_llama, cache=False, max_batch_tokens="auto")
    again.score(QUERIES, CANDS)
    assert calls == [] and again.stats()["budget"] == "auto (remembered)" and again.max_batch_tokens == 4096
    # a user budget wins and is never searched
    user = load_scorer(tiny_llama, cache=False, max_batch_tokens=300)
    user.score(QUERIES, CANDS)
    assert calls == [] and user.stats()["budget"] == "user" and user.max_batch_tokens == 300


def test_out_of_memory_while_scoring_halves_the_budget(tiny_llama, monkeypatch, fresh_checks):
    import torch

    from probegen.models import load_scorer
    from probegen.scorers.causal import CausalScorer

    packed = CausalScorer._packed_scores

    def tight(self, enc):
        if self.max_batch_tokens > 1024:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return packed(self, enc)

    ref = _flat(load_scorer(tiny_llama, cache=False).score(QUERIES, CANDS))
    monkeypatch.setattr(CausalScorer, "_packed_scores", tight)
    s = load_scorer(tiny_llama, cache=False, max_batch_tokens=4096, strategy="packed")
    s._checked = True  # the self-check would also hit the fake limit
    np.testing.assert_allclose(_flat(s.score(QUERIES, CANDS)), ref, atol=1e-5)
    assert s.max_batch_tokens == 1024 and "halved after out-of-memory" in s.stats()["budget"]


def test_masked_budget_search(tiny_bert, cache_dir, monkeypatch):
    from probegen.models import load_scorer
    from probegen.scorers.masked import MaskedScorer

    calls: list[int] = []
    _oom_above(monkeypatch, MaskedScorer, 3000, calls)
    ref = _flat(load_scorer(tiny_bert, cache=False).score(QUERIES, CANDS))
    s = load_scorer(tiny_bert, cache=False, max_batch_tokens="auto")
    np.testing.assert_allclose(_flat(s.score(QUERIES, CANDS)), ref, atol=1e-5)
    assert calls[-1] == 2048 and s.max_batch_tokens == 2048 and s.stats()["budget"] == "auto (searched)"


# ---- embedding and static -------------------------------------------------------------------------------
def test_embedding_dtype_and_static_records_what_ran(tmp_path):
    from probegen.models import load_scorer

    cache = ScoreCache(tmp_path / "c.sqlite")
    fp32 = load_scorer("minilm-l6", cache=cache)
    bf16 = load_scorer("minilm-l6", cache=cache, dtype="bfloat16")
    assert (fp32.dtype, bf16.dtype, bf16.device) == ("float32", "bfloat16", "cpu")
    a, b = _flat(fp32.score(QUERIES, CANDS)), _flat(bf16.score(QUERIES, CANDS))
    assert bf16.stats()["pairs_computed"] == N_PAIRS  # dtype is part of the key
    np.testing.assert_allclose(a, b, atol=0.03)
    glove = load_scorer("glove-50d", dtype="bfloat16", device="auto")
    assert (glove.settings()["device"], glove.settings()["dtype"]) == ("cpu", "float32")  # numpy on the CPU


# ---- end to end on real data --------------------------------------------------------------------------------
@pytest.mark.real
def test_eval_device_auto_runs_on_cpu_and_records_it(clean_hard_nouns, tiny_llama, tmp_path, monkeypatch):
    from probegen.coda21.dataset import Coda21Dataset, write

    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))
    d = write(Coda21Dataset(clean_hard_nouns.groups[:3], dict(clean_hard_nouns.manifest)), tmp_path / "ds")
    code, err = _run("eval", "--model", tiny_llama, "--dataset", str(d), "--device", "auto", "--out", str(tmp_path / "run"))
    assert code == 0, err
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["scorer"]["device"] == "cpu" and res["scorer"]["dtype"] == "float32"
    stats = res["run"]["scorer_stats"]
    assert stats["strategy"] == "packed" and stats["self_check"]["passed"] and stats["budget"] == "default"


@pytest.mark.real
def test_bench_gpu_cpu_smoke(clean_hard_nouns, tmp_path, monkeypatch, capsys):
    """bench/bench_gpu.py end to end on the CPU (tiny shapes) over real CoDA21 groups and WordNetQA
    definitions items."""
    import importlib.util
    from pathlib import Path

    from cli_checks import run

    code, _, err = run("make", "wordnetqa", "--probe", "definitions", "--limit", "4", "--out", tmp_path / "wqa")
    assert code == 0, err
    from probegen.coda21.dataset import Coda21Dataset, write
    from probegen.scorers import _budget

    d = write(Coda21Dataset(clean_hard_nouns.groups[:3], dict(clean_hard_nouns.manifest)), tmp_path / "ds")
    path = Path(__file__).resolve().parent.parent / "bench" / "bench_gpu.py"
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # the bench lowers the search start and uses a fresh budget file: restored after the test
    monkeypatch.setattr(_budget, "START_TOKENS", _budget.START_TOKENS)
    monkeypatch.setattr(_budget, "budget_path", _budget.budget_path)
    table = bench.main(["--cpu-smoke", "--dataset", str(d), "--wordnetqa", str(tmp_path / "wqa")])
    out = capsys.readouterr().out
    assert "CPU SMOKE RUN" in out and "1 group(s)" in out and "2 WordNetQA definitions items" in out
    assert {r["shape"] for r in table} == {"smollm2-135m", "llama-1.7b", "roberta-large", "llama-7b"}
    causal = {"smollm2-135m", "llama-1.7b", "llama-7b"}
    assert {r["shape"] for r in table if r["data"] == "wordnetqa-definitions"} == causal
    assert {r["method"] for r in table} == {
        "lm-eval style (batch 8)", "packed, default budget", "packed, auto budget", "packed, flex, auto budget",
        "full, auto budget", "lm-eval 0.4.13 HFLM (batch 8)",
        "PLL, default budget", "PLL, auto budget", "PLL, flex, auto budget", "PLL word-l2r, auto budget",
    }
    for r in table:
        assert r["pairs_per_s"] > 0 and r["pairs"] > 0 and r["tokens"] > 0 and r["tokens_per_s"] > 0
        assert "mfu" not in r  # no named peak for a CPU
        if r["method"].startswith("packed"):  # prefix and shared candidate tokens once
            assert r["tokens"] < next(x["tokens"] for x in table if (x["shape"], x["data"]) == (r["shape"], r["data"])
                                      and "HFLM" in x["method"])
        if "l2r" not in r["method"]:  # same scores as the reference method, up to float32 rounding
            assert r["max_abs_diff"] < 1e-3, r
        if r["method"] == "packed, auto budget" and r["data"] == "coda21":  # searched once per shape
            assert r["self_check"]["passed"] and r["searched"]["budget"] == "auto (searched)" and "auto (" in r["budget"]
