"""Packed scoring through FlexAttention (flat rows, no padding, a BlockMask from per-token vectors)
equals full sequences within 1e-4 nats in float32, for causal (Llama, Qwen2, GPT-2 shapes and the
bundled SmolLM2) and masked models (BERT, RoBERTa); the kernel pick is measured once and remembered.

FlexAttention compiles on first use (tens of seconds on a loaded CPU per model shape), so each
model is scored once per kernel on one batch of mixed shapes: query lengths 1 to 90 tokens,
one-token and 40-token candidates, and candidates sharing leading tokens."""

from __future__ import annotations

import random

import numpy as np
import pytest
import tiny_models

from probegen.scorers import _paths

pytestmark = pytest.mark.skipif(not _paths.flex_available(), reason="this torch has no FlexAttention")

ARCHS = ["llama", "qwen2", "gpt2"]


@pytest.fixture(scope="module")
def causal_models(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("flex-causal")
    return {a: getattr(tiny_models, f"tiny_{a}")(root / a) for a in ARCHS}


@pytest.fixture(scope="module")
def masked_models(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("flex-masked")
    return {a: getattr(tiny_models, f"tiny_{a}")(root / a) for a in ("bert", "roberta")}


def mixed_pairs(vocab: int, seed: int = 0, query_lengths=(1, 5, 37, 90)) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(prefix ids, candidate ids): per query a one-token candidate, a 40-token one, one sharing its first
    20 tokens, one sharing its first 2, and an unrelated three-token one."""
    rng = random.Random(seed)
    out = []
    for n in query_lengths:
        query = tuple(rng.randrange(2, vocab) for _ in range(n))
        long = tuple(rng.randrange(2, vocab) for _ in range(40))
        other = tuple(rng.randrange(2, vocab) for _ in range(3))
        for cand in (long[:1], long, long[:20] + (5, 6), long[:2], other):
            out.append((query, cand))
    return out


def naive_causal(scorer, encoded) -> np.ndarray:
    """Each pair as its own unpadded sequence, the model's full logits: the reference."""
    import torch

    out = []
    with torch.inference_mode():
        for prefix, cont in encoded:
            ids = torch.tensor([list(prefix) + list(cont)])
            lp = torch.log_softmax(scorer.model(input_ids=ids).logits[0].float(), -1)
            out.append(sum(lp[len(prefix) - 1 + t, c].item() for t, c in enumerate(cont)))
    return np.array(out)


@pytest.mark.parametrize("arch", ARCHS)
def test_flex_packed_equals_full_sequences(arch, causal_models):
    from probegen.models import load_scorer

    s = load_scorer(causal_models[arch], cache=False, device="cpu", kernel="flex")
    encoded = mixed_pairs(int(s.model.config.vocab_size))
    ref = naive_causal(s, encoded)
    s.max_batch_tokens = 256  # several flat batches, rows of several queries in one of them
    flex = np.array(s._run("packed", encoded, "flex"))
    np.testing.assert_allclose(flex, ref, atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.array(s._run("packed", encoded, "dense")), ref, atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.array(s._full_scores(encoded)), ref, atol=1e-4, rtol=0)


def test_flex_through_the_scorer_api(causal_models):
    from probegen.models import load_scorer

    s = load_scorer(causal_models["llama"], cache=False, device="cpu", kernel="flex")
    queries = ["The fox sat by the river. Definition of bkatuhla is", "A much longer query, with many more words "
               "in it, so the prefixes differ in length: bkatuhla means", ""]
    cands = [["a small animal", " a formal agreement", "x"], ["a small animal", "a small animal that lives"],
             ["a fox", "the lazy dog"]]
    got = np.concatenate(s.score(queries, cands))
    stats = s.stats()
    assert stats["kernel"] == "flex" and stats["kernel_pick"]["how"] == "user" and stats["self_check"]["passed"]
    full = load_scorer(causal_models["llama"], cache=False, device="cpu", strategy="full")
    np.testing.assert_allclose(got, np.concatenate(full.score(queries, cands)), atol=1e-4, rtol=0)


def test_smollm2_flex_equals_full_sequences():
    from probegen.models import load_scorer

    s = load_scorer("smollm2-135m", cache=False, device="cpu", kernel="flex")
    queries = ["The old fisherman pulled the heavy bkatuhla out of the water at dawn. Definition of bkatuhla is",
               "Definition of bkatuhla is"]
    cands = ["a trap made of netting to catch fish or birds or insects, woven from strong cord, "
             "knotted by hand and spread to dry on the rocks after every tide", "a trap made of wood", "a"]
    encoded = [s.encode_pair(q, c) for q in queries for c in cands]
    n_tokens = np.array([len(c) for _, c in encoded])
    assert n_tokens.min() == 1 and n_tokens.max() >= 30
    flex = np.array(s._run("packed", encoded, "flex"))
    np.testing.assert_allclose(flex, np.array(s._full_scores(encoded)), atol=1e-4, rtol=0)
    # one unbatched sequence at a time: BLAS blocks a 30-layer model's sums differently (the existing
    # paths differ from it by ~1e-5 nats a token too), so the bound is per token
    per_token = np.abs(flex - naive_causal(s, encoded)) / n_tokens
    assert per_token.max() < 1e-4, per_token


def test_tree_ends_follow_the_trie():
    from probegen.scorers.causal import _pack_rows

    encoded = [((5, 6, 7), (10, 11, 12)), ((5, 6, 7), (10, 11, 13)), ((5, 6, 7), (10, 20, 21)), ((5, 6, 7), (30, 31))]
    (row,) = _pack_rows((5, 6, 7), [0, 1, 2, 3], encoded, 100)
    assert row.tokens == [5, 6, 7, 10, 11, 20, 30]
    ends = row.ends()
    # prefix: the whole row; node 10 covers 11 and 20; leaves cover themselves
    assert ends == [7, 7, 7, 6, 5, 6, 7]
    m = row.mask
    for q in range(row.length):
        for kv in range(row.length):
            assert m[q, kv] == (kv <= q < ends[kv]), (q, kv)


# ---- masked ---------------------------------------------------------------------------------------------
def _masked_jobs(scorer, seed: int = 0):
    """Copies of sentences of 3, 12 and 60 pieces: one token masked each, and (word-l2r style) two masked
    together with both scored."""
    rng = random.Random(seed)
    jobs = []
    for n in (3, 12, 60):
        ids = scorer._front + [rng.randrange(1000, 20000) for _ in range(n)] + scorer._back
        start = len(scorer._front)
        jobs += [(ids, [p], [p]) for p in range(start, start + n)]
        jobs.append((ids, [start, start + 1], [start, start + 1]))
    return jobs


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_masked_flex_equals_each_copy_alone(arch, masked_models):
    from probegen.models import load_scorer

    s = load_scorer(masked_models[arch], cache=False, device="cpu", kernel="flex")
    jobs = _masked_jobs(s)
    alone = np.concatenate([s._dense_jobs([j])[0] for j in jobs])
    s.max_batch_tokens = 300  # several flat batches
    flex = np.concatenate(s._run_jobs(jobs, "flex"))
    np.testing.assert_allclose(flex, alone, atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.concatenate(s._run_jobs(jobs, "dense")), alone, atol=1e-4, rtol=0)
    # and through the scorer: PLL of pairs, flex as the user's kernel
    q, c = ["the fox sat by the river and"], [["jumped over the lazy dog", "ran"]]
    dense = load_scorer(masked_models[arch], cache=False, device="cpu", kernel="dense")
    np.testing.assert_allclose(s.score(q, c)[0], dense.score(q, c)[0], atol=1e-4, rtol=0)
    assert s.stats()["kernel"] == "flex" and dense.stats()["kernel"] == "dense"


# ---- the pick -------------------------------------------------------------------------------------------
def test_auto_measures_once_then_remembers(causal_models, tmp_path, monkeypatch, caplog):
    import logging

    from probegen.models import load_scorer

    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path))
    pairs = [(q, c) for q in ("Definition of bkatuhla is", "The fox sat. It is") for c in ("a dog", "a small animal")]
    small = load_scorer(causal_models["llama"], cache=False, device="cpu")
    small.score_pairs(pairs)
    assert small.stats()["kernel"] == "dense" and small.stats()["kernel_pick"]["how"].startswith("not measured")
    assert not _paths.picks_path().exists()

    monkeypatch.setattr(_paths, "PICK_MIN_PAIRS", 1)
    monkeypatch.setattr(_paths, "fastest", lambda times: "flex")  # whichever is faster here, follow the pick
    s = load_scorer(causal_models["llama"], cache=False, device="cpu")
    with caplog.at_level(logging.INFO, logger="probegen.scorers.causal"):
        s.score_pairs(pairs)
    pick = s.stats()["kernel_pick"]
    assert s.stats()["kernel"] == "flex" and pick["how"] == "measured" and pick["flex_pairs_per_s"] > 0
    assert "through the flex attention kernel" in caplog.text
    again = load_scorer(causal_models["llama"], cache=False, device="cpu")
    again.score_pairs(pairs)
    assert again.stats()["kernel_pick"] == {"kernel": "flex", "how": "remembered"}


def test_auto_keeps_dense_when_flex_fails_the_check(causal_models, tmp_path, monkeypatch):
    import torch

    from probegen.models import load_scorer

    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path))
    monkeypatch.setattr(_paths, "PICK_MIN_PAIRS", 1)
    monkeypatch.setattr(_paths, "fastest", lambda times: "flex")
    real = _paths.tree_block_mask
    # a broken mask: every token of the flat batch sees everything before it (rows leak into each other)
    monkeypatch.setattr(_paths, "tree_block_mask", lambda end: real(torch.full_like(end, end.shape[0])))
    s = load_scorer(causal_models["qwen2"], cache=False, device="cpu")
    s.score_pairs([(q, c) for q in ("Definition of bkatuhla is", "It is") for c in ("a dog", "a small animal")])
    assert s.stats()["kernel"] == "dense" and s.stats()["kernel_pick"]["flex"] == "fails the self-check"


# ---- feeding ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["causal", "masked"])
def test_feed_worker_packs_ahead_with_identical_scores(kind, causal_models, masked_models, monkeypatch):
    """With ``feed_worker`` (on CUDA by default) every batch is laid out in the worker thread one batch
    ahead, and the scores equal packing inline (to the last bit on a quiet CPU), for both kernels."""
    import threading

    from probegen.models import load_scorer

    path = causal_models["llama"] if kind == "causal" else masked_models["bert"]
    s = load_scorer(path, cache=False, device="cpu")
    s.max_batch_tokens = 200  # many batches
    prepares = {"dense": "_dense_batch", "flex": "_flex_batch"}
    seen: list[str] = []
    for name in prepares.values():
        original = getattr(type(s), name)

        def spy(*args, _original=original, **kwargs):
            seen.append(threading.current_thread().name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(type(s), name, spy)
    work = mixed_pairs(int(s.model.config.vocab_size)) if kind == "causal" else _masked_jobs(s)
    run = (lambda k: np.array(s._run("packed", work, k))) if kind == "causal" else (
        lambda k: np.concatenate(s._run_jobs(work, k)))
    for kernel in prepares:
        s.feed_worker = False
        inline = run(kernel)
        assert seen and all(t == threading.current_thread().name for t in seen)
        seen.clear()
        s.feed_worker = True
        ahead = run(kernel)
        assert len(seen) >= 2 and all(t.startswith("probegen-feed") for t in seen), seen
        seen.clear()
        # the same ops on the same tensors; a busy CPU's threaded reductions may still move the last bit
        np.testing.assert_allclose(ahead, inline, atol=1e-5, rtol=0)
