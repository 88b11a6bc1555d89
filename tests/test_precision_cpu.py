"""A precision below float32 on the CPU (``--dtype int8``: dynamic int8 Linear layers; bfloat16) is
validated at run time, never assumed: its first units' choices against float32, refused in one line
with the measured agreement under 96%."""

from __future__ import annotations

import numpy as np
import pytest
import tiny_models

from probegen.errors import ProbegenError
from probegen.scorers import _precision

QUERIES = ["The fox sat by the river. Definition of bkatuhla is", "Definition of bkatuhla is",
           "A much longer query, with many more words in it: bkatuhla means", "She kept the little plant. It is"]
CANDS = [["a small animal", " a formal agreement", "x", "a plant that lives in the forest"]] * 4


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    return tiny_models.tiny_bert(tmp_path_factory.mktemp("tiny-bert-precision"), initializer_range=0.5)


def test_int8_quantises_the_body_not_the_head(tiny_llama):
    import torch

    from probegen.models import load_scorer

    fp32 = load_scorer(tiny_llama, cache=False, device="cpu")
    s = load_scorer(tiny_llama, cache=False, device="cpu", dtype="int8")
    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    quantised = [m for m in s.model.modules() if isinstance(m, QLinear)]
    assert len(quantised) == 2 * 7  # q, k, v, o, gate, up, down of both layers
    assert not isinstance(s.model.get_output_embeddings(), QLinear)  # the head stays float32
    assert s.model.get_output_embeddings().weight.dtype == torch.float32
    assert s.dtype == "int8" and s.settings()["dtype"] == "int8" and s.cache_settings() != fp32.cache_settings()
    assert not any(isinstance(m, QLinear) for m in fp32.model.modules())  # the float model is intact
    got = np.concatenate(s.score(QUERIES, CANDS))
    ref = np.concatenate(fp32.score(QUERIES, CANDS))
    assert not np.array_equal(got, ref) and np.abs(got - ref).max() < 1.0  # quantised, yet close
    check = s.stats()["precision_check"]
    assert check["checked"] and check["units"] == 4 and check["against"] == "float32"
    assert check["agreement"] >= 0.96 and check["max_abs_diff"] == pytest.approx(np.abs(got - ref)[:16].max(), rel=1e-2)


@pytest.mark.parametrize("dtype", ["int8", "bfloat16"])
def test_a_precision_that_flips_choices_is_refused_with_its_agreement(tiny_llama, dtype, monkeypatch):
    from probegen.models import load_scorer
    from probegen.scorers import _batch

    monkeypatch.setattr(_batch, "_PRECISION", type(_batch._PRECISION)())
    s = load_scorer(tiny_llama, cache=False, device="cpu", dtype=dtype)
    real = s._reference

    class Flipped:  # a float32 reference whose choices are the lowest-scoring candidates
        def _score_uncached(self, pairs):
            return -real()._score_uncached(pairs)

    s._reference = Flipped
    with pytest.raises(ProbegenError) as e:
        s.score(QUERIES, CANDS)
    msg = str(e.value)
    assert "\n" not in msg and f"--dtype {dtype} refused" in msg and "of 4 units" in msg and "96%" in msg


def test_bfloat16_is_checked_and_passes_on_a_real_model_shape(tiny_llama, monkeypatch):
    from probegen.models import ModelStore, load_scorer
    from probegen.scorers import _batch

    monkeypatch.setattr(_batch, "_PRECISION", type(_batch._PRECISION)())
    store = ModelStore()  # the runner's loaded models: a second scorer of the same model shares it
    s = load_scorer(tiny_llama, cache=False, device="cpu", dtype="bfloat16", store=store)
    s.score(QUERIES, CANDS)
    check = s.stats()["precision_check"]
    assert check["checked"] and check["dtype"] == "bfloat16" and check["agree"] == 4
    assert check["cpu_bf16"] == _precision.cpu_has_bf16()
    again = load_scorer(tiny_llama, cache=False, device="cpu", dtype="bfloat16", store=store)  # once per model
    assert again.stats()["precision_check"] == check


def test_masked_int8_is_checked_too(tiny_bert):
    from probegen.models import load_scorer

    s = load_scorer(tiny_bert, cache=False, device="cpu", dtype="int8")
    q, c = ["the fox sat by the river and", "she kept the plant"], [["jumped over the dog", "ran"], ["a", "water"]]
    s.score(q, c)
    check = s.stats()["precision_check"]
    assert check["checked"] and check["units"] == 2 and check["dtype"] == "int8"


def test_agreement_counts_the_units_choices():
    assert _precision.agreement(np.array([0.0, 1, 2, 1, 0]), np.array([0.0, 1, 0, 1, 2]), [2, 3]) == (1, 2)
    units = _precision.first_units([("a", "x"), ("a", "y"), ("b", "x"), ("c", "x"), ("c", "z")], 1)
    assert units == [[("a", "x"), ("a", "y")]]


def test_int8_is_cpu_only_and_not_for_embedders():
    from probegen.models import load_scorer, resolve_dtype

    assert resolve_dtype("int8", "cpu") == "int8"
    with pytest.raises(ProbegenError, match="CPU only"):
        resolve_dtype("int8", "cuda:0")
    with pytest.raises(ProbegenError, match="int8 applies to causal and masked"):
        load_scorer("minilm-l6", dtype="int8", device="cpu")
