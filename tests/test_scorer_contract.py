"""One contract, run over every scorer kind: the same (query, candidate) pairs give one finite
float64 score per pair, a cache round trip computes nothing and returns the same values, scoring
is deterministic and does not depend on how the pairs are grouped or ordered.

causal = a tiny random Llama, masked = a tiny random BERT with the real bert-base-uncased
vocabulary (both built from configs), embedding = the bundled MiniLM, static = the bundled GloVe.
"""

from __future__ import annotations

import numpy as np
import pytest
import tiny_models

from probegen.scorers import KINDS

QUERIES = [
    "The heron waded through the marsh and speared a fish. Definition of bkatuhla is",
    "She signed the bkatuhla with the landlord before moving in. Definition of bkatuhla is ",
    "Definition of bkatuhla is",
]
CANDS = [
    ["a large wading bird with a long neck", "a written agreement", "a plant grown indoors"],
    ["a written agreement", "a large wading bird with a long neck"],
    ["a plant grown indoors", "a written agreement", "a written agreement"],  # a duplicate pair
]
N_UNIQUE = 7


@pytest.fixture(scope="module")
def model_of(tmp_path_factory):
    """kind -> model name or path, built on first use."""
    built: dict[str, str] = {}
    makers = {
        "causal": lambda: tiny_models.tiny_llama(tmp_path_factory.mktemp("llama")),
        "masked": lambda: tiny_models.tiny_bert(tmp_path_factory.mktemp("bert")),
        "embedding": lambda: "minilm-l6",
        "static": lambda: "glove-50d",
    }

    def get(kind: str) -> str:
        if kind not in built:
            built[kind] = makers[kind]()
        return built[kind]

    get.kinds = set(makers)  # type: ignore[attr-defined]
    return get


def test_the_contract_covers_every_kind(model_of):
    assert model_of.kinds == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_scorer_contract(kind, model_of, tmp_path):
    from probegen.models import load_scorer

    name = model_of(kind)
    cache = tmp_path / "scores.sqlite"
    s = load_scorer(name, cache=cache)
    assert s.kind == kind
    out = s.score(QUERIES, CANDS)
    # shape: one float64 array per query, one finite score per candidate
    assert len(out) == len(QUERIES)
    for row, cands in zip(out, CANDS):
        assert row.shape == (len(cands),) and row.dtype == np.float64
        assert np.all(np.isfinite(row))
    assert out[2][1] == out[2][2]  # the duplicate pair: one score
    assert s.stats()["pairs_computed"] == N_UNIQUE
    # settings: what changes scores, JSON-serialisable
    settings = s.settings()
    assert settings["model"] and settings["kind"] == kind and "version" in settings
    import json

    json.dumps(settings)

    # cache round trip: a fresh scorer on the same cache computes nothing, returns the same values
    again = load_scorer(name, cache=cache)
    back = again.score(QUERIES, CANDS)
    assert again.stats()["pairs_computed"] == 0 and again.stats()["backend_calls"] == 0
    assert again.stats()["pairs_cached"] == N_UNIQUE
    for a, b in zip(out, back):
        np.testing.assert_array_equal(a, b)

    # determinism: fresh uncached scorers give bit-identical scores
    first = load_scorer(name, cache=False).score(QUERIES, CANDS)
    second = load_scorer(name, cache=False).score(QUERIES, CANDS)
    for a, b, c in zip(first, second, out):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, atol=1e-5, rtol=0)

    # grouping and order do not matter: each pair on its own, in reverse order
    pairs = [(q, c) for q, cands in zip(QUERIES, CANDS) for c in cands]
    alone = load_scorer(name, cache=False).score([q for q, _ in reversed(pairs)], [[c] for _, c in reversed(pairs)])
    np.testing.assert_allclose(np.concatenate(alone)[::-1], np.concatenate(out), atol=1e-4, rtol=0)

    # score_matrix: every query against one shared candidate list
    m = load_scorer(name, cache=False).score_matrix(QUERIES, CANDS[0])
    assert m.shape == (len(QUERIES), len(CANDS[0])) and m.dtype == np.float64
    np.testing.assert_allclose(m[0], out[0], atol=1e-4, rtol=0)
