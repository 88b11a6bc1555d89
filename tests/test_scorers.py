"""The scorer protocol: prefix reuse equals naive scoring, reductions, the score cache, resume,
and every backend (tiny random causal/masked LMs built from configs; the real bundled models)."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pytest
import tiny_models
from oracles import causal_naive_scores

from probegen.score_cache import ScoreCache
from probegen.scorers.base import Scorer, boundary_split

QUERIES = [
    "The fox sat by the river. Definition of bkatuhla is",
    "Definition of bkatuhla is ",  # trailing space moves to the continuation
    "A much longer query, with many more words in it, so the prefixes differ in length: bkatuhla means",
    "",  # no context at all: the first token is conditioned on a dummy prefix
]
CANDS = [
    ["a small animal", " a formal agreement", "x", "a plant that lives in the forest, kept on the windowsill"],
    ["a small animal", "the river bank"],
    ["a formal written agreement", "a dog"],
    ["a fox", "the lazy dog"],
]


# ---- tiny models ------------------------------------------------------------------------------------
# tiny_llama, tiny_gpt2, tiny_bert: tests/conftest.py


def _flat(scores: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(scores)


def _pairs() -> list[tuple[str, str]]:
    return [(q, c) for q, cs in zip(QUERIES, CANDS) for c in cs]


# ---- boundary ----------------------------------------------------------------------------------------
def test_boundary_split_follows_lm_eval():
    assert boundary_split("Definition of X is ", "a dog") == ("Definition of X is", " a dog")
    assert boundary_split("Definition of X is", "a dog") == ("Definition of X is", " a dog")
    assert boundary_split("Definition of X is", " a dog") == ("Definition of X is", " a dog")
    assert boundary_split("ends with newline\n", "a") == ("ends with newline", "\na")
    assert boundary_split("", "a dog") == ("", "a dog")


# ---- causal: prefix reuse == naive -----------------------------------------------------------------
@pytest.mark.parametrize("fixture", ["tiny_llama", "tiny_gpt2"])
def test_causal_prefix_reuse_equals_naive(fixture, request):
    from probegen.models import load_scorer

    path = request.getfixturevalue(fixture)
    strategy = "packed"
    s = load_scorer(path, cache=False, batch_size=3, strategy=strategy)  # small batches: several of each
    s.max_row_tokens = 24  # packed rows split
    assert s.kind == "causal" and s.query_style == "pattern"
    fast = _flat(s.score(QUERIES, CANDS))
    assert s.strategy == strategy, "the self-check must accept prefix reuse on a standard decoder"
    check = s.stats()["self_check"]
    assert check["passed"] and check["strategy"] == "packed" and check["max_abs_diff"] < 1e-4
    naive = causal_naive_scores(s, _pairs())
    np.testing.assert_allclose(fast, naive, atol=1e-4, rtol=0)
    full = load_scorer(path, cache=False, prefix_reuse=False)
    np.testing.assert_allclose(_flat(full.score(QUERIES, CANDS)), naive, atol=1e-4, rtol=0)
    assert np.all(fast < 0)


def test_causal_bos_is_prepended_when_the_tokenizer_uses_one(tiny_gpt2, tiny_llama):
    from probegen.models import load_scorer

    gpt2, llama = load_scorer(tiny_gpt2, cache=False), load_scorer(tiny_llama, cache=False)
    prefix, _ = gpt2.encode_pair("Definition of it is", "a dog")
    assert prefix[0] == gpt2.tok.bos_token_id
    prefix, cont = llama.encode_pair("Definition of it is", "a dog")
    assert prefix[0] != llama.tok.bos_token_id
    assert llama.tok.decode(list(cont)) == " a dog"


def test_packed_rows_share_candidate_prefixes():
    from probegen.scorers.causal import _pack_rows

    encoded = [((5, 6, 7), (10, 11, 12)), ((5, 6, 7), (10, 11, 13)), ((5, 6, 7), (20,))]
    (row,) = _pack_rows((5, 6, 7), [0, 1, 2], encoded, 100)
    assert row.tokens == [5, 6, 7, 10, 11]  # 10, 11 shared; last tokens are never inputs
    assert row.positions == [0, 1, 2, 3, 4]
    assert row.mask[4].tolist() == [True] * 5 and row.mask[3].tolist() == [True] * 4 + [False]
    assert sorted(row.targets) == sorted([(2, 10, 0), (3, 11, 0), (4, 12, 0), (2, 10, 1), (3, 11, 1), (4, 13, 1), (2, 20, 2)])
    rows = _pack_rows((5, 6, 7), [0, 1, 2], encoded, 5)  # too long for one row: split
    assert len(rows) == 2 and all(r.tokens[:3] == [5, 6, 7] for r in rows)


def test_sequence_logprob_matches_naive(tiny_llama):
    import torch

    from probegen.models import load_scorer

    s = load_scorer(tiny_llama, cache=False)
    texts = ["The quick brown fox jumps.", "A dog.", "x"]
    got = s.sequence_logprob(texts)
    for text, value in zip(texts, got):
        ids = s.tok(text, add_special_tokens=False).input_ids
        with torch.no_grad():
            lp = torch.log_softmax(s.model(input_ids=torch.tensor([ids])).logits[0], -1)
        ref = sum(lp[i - 1, ids[i]].item() for i in range(1, len(ids)))
        assert value == pytest.approx(ref, abs=1e-4)


def test_sum_and_mean_are_recorded_and_differ(tiny_llama, tmp_path):
    from probegen.models import load_scorer

    cache = ScoreCache(tmp_path / "s.sqlite")
    total = load_scorer(tiny_llama, reduction="sum", cache=cache)
    mean = load_scorer(tiny_llama, reduction="mean", cache=cache)
    assert total.settings()["reduction"] == "sum" and mean.settings()["reduction"] == "mean"
    a, b = _flat(total.score(QUERIES, CANDS)), _flat(mean.score(QUERIES, CANDS))
    n_tokens = np.array([len(total.encode_pair(q, c)[1]) for q, c in _pairs()])
    np.testing.assert_allclose(b, a / n_tokens, atol=1e-5)
    assert not np.allclose(a, b)
    assert mean.stats()["pairs_cached"] == 0  # a mean score is never served from a sum entry


def test_score_matrix(tiny_llama):
    from probegen.models import load_scorer

    s = load_scorer(tiny_llama, cache=False)
    m = s.score_matrix(QUERIES[:3], ["a dog", "a fox"])
    assert m.shape == (3, 2) and m.dtype == np.float64
    np.testing.assert_allclose(m[1], s.score([QUERIES[1]], [["a dog", "a fox"]])[0], atol=1e-5)


# ---- non-finite scores -------------------------------------------------------------------------------
def _overflowing_head(scorer):
    """Make the real LM head overflow like float16 does: +inf logits (a forward hook on the module)."""

    def hook(module, args, output):
        output = output.clone()
        output[..., 0] = float("inf")
        return output

    return scorer.model.get_output_embeddings().register_forward_hook(hook)


def test_non_finite_score_is_never_cached(tiny_llama, tmp_path):
    from probegen.errors import NonFiniteScore, ProbegenError
    from probegen.models import load_scorer

    cache = ScoreCache(tmp_path / "c.sqlite")
    s = load_scorer(tiny_llama, cache=cache)
    handle = _overflowing_head(s)
    try:
        with pytest.raises(NonFiniteScore) as e:
            s.score(QUERIES[:2], CANDS[:2])
    finally:
        handle.remove()
    msg = str(e.value)
    assert isinstance(e.value, ProbegenError) and "\n" not in msg
    assert s.name in msg and "non-finite" in msg
    assert repr(QUERIES[0]) in msg and repr(CANDS[0][0]) in msg  # names the pair
    assert len(cache) == 0
    with pytest.raises(ValueError, match="non-finite"):
        cache.put_many([("k", float("nan"))])
    assert len(cache) == 0
    # the hook removed, the same scorer scores and caches normally
    assert np.all(np.isfinite(_flat(s.score(QUERIES[:2], CANDS[:2])))) and len(cache) == 6


def test_non_finite_score_is_one_cli_line(tiny_llama, tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from probegen.commands.cli import cli
    from probegen.scorers.causal import CausalScorer

    d = tmp_path / "d"
    d.mkdir()
    items = [
        {"synset": f"s{i}.n.01", "lemma": f"s{i}", "definition": f"thing {i}", "context": {"text": f"a w{i} b", "char_span": [2, 2 + len(f"w{i}")]}}
        for i in range(5)
    ]
    (d / "groups.jsonl").write_text(json.dumps({"id": "g", "pos": "n", "ancestor": "a.n.01", "relation": "parent", "items": items}) + "\n")
    logits = CausalScorer._logits
    monkeypatch.setattr(CausalScorer, "_logits", lambda self, h: logits(self, h) * float("nan"))
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))
    r = CliRunner().invoke(cli, ["eval", "--model", tiny_llama, "--dataset", str(d), "--out", str(tmp_path / "o")])
    lines = [line for line in r.stderr.splitlines() if line.startswith("probegen: error:")]
    assert r.exit_code == 1 and len(lines) == 1 and "non-finite" in lines[0], r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "o" / "results.json").exists()


# ---- cache and resume ---------------------------------------------------------------------------------
class Counting(Scorer):
    """A backend that counts the pairs it computes, and can fail after some chunks."""

    kind = "static"
    query_style = "plain"
    chunk_pairs = 2

    def __init__(self, cache, fail_after: int | None = None) -> None:
        super().__init__("counting", cache=cache)
        self.seen: list[tuple[str, str]] = []
        self.fail_after = fail_after

    def _score_uncached(self, pairs):
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise KeyboardInterrupt  # a run killed halfway
        self.seen.extend(pairs)
        return np.array([len(q) * 0.1 + len(c) for q, c in pairs], dtype=np.float64)


def test_cache_hit_is_identical_and_computes_nothing(tmp_path):
    path = tmp_path / "scores.sqlite"
    first = Counting(path)
    a = first.score(QUERIES, CANDS)
    assert len(first.seen) == len(_pairs())
    second = Counting(path)
    b = second.score(QUERIES, CANDS)
    assert second.seen == [] and second.counters["backend_calls"] == 0
    assert second.counters["pairs_cached"] == len(_pairs())
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_duplicate_pairs_are_computed_once(tmp_path):
    s = Counting(False)
    out = s.score(["q", "q"], [["a", "b", "a"], ["b"]])
    assert sorted(s.seen) == [("q", "a"), ("q", "b")]
    assert out[0][0] == out[0][2] and out[0][1] == out[1][0]


def test_resume_after_partial_run(tmp_path):
    path = tmp_path / "scores.sqlite"
    killed = Counting(path, fail_after=4)
    with pytest.raises(KeyboardInterrupt):
        killed.score(QUERIES, CANDS)
    done = set(killed.seen)
    assert 0 < len(done) < len(_pairs())
    resumed = Counting(path)
    out = resumed.score(QUERIES, CANDS)
    assert set(resumed.seen) == set(_pairs()) - done  # only the missing pairs
    np.testing.assert_allclose(_flat(out), _flat(Counting(False).score(QUERIES, CANDS)))


def test_real_backend_cache_second_call_computes_nothing(tiny_llama, tmp_path):
    from probegen.models import load_scorer

    s = load_scorer(tiny_llama, cache=tmp_path / "c.sqlite")
    a = s.score(QUERIES, CANDS)
    calls = s.counters["backend_calls"]
    b = load_scorer(tiny_llama, cache=tmp_path / "c.sqlite").score(QUERIES, CANDS)
    assert s.counters["backend_calls"] == calls
    np.testing.assert_array_equal(_flat(a), _flat(b))


def _writer(path: str, start: int) -> None:
    c = ScoreCache(path)
    for i in range(start, start + 200, 20):
        c.put_many((f"k{j}", float(j)) for j in range(i, i + 20))


def test_score_cache_two_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    # no process creates the table first: both set up the same new file at once
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, s)) for s in (0, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    got = ScoreCache(path).get_many(f"k{j}" for j in range(400))
    assert len(got) == 400 and got["k399"] == 399.0


# ---- masked ----------------------------------------------------------------------------------------------
def test_masked_pll_with_tiny_bert(tiny_bert):
    import torch

    from probegen.models import load_scorer

    s = load_scorer(tiny_bert, cache=False, batch_size=5)
    assert s.kind == "masked"
    q, c = "Definition of bkatuhla is", "a large wading bird"
    got = s.score([q], [[c, "a tree"]])[0]
    ids, start, end = s.encode_pair(q, c)
    assert ids[0] == s.tok.cls_token_id and ids[-1] == s.tok.sep_token_id
    assert s.tok.decode(ids[start:end]) == c
    ref = 0.0
    with torch.no_grad():
        for p in range(start, end):
            masked = list(ids)
            masked[p] = s.tok.mask_token_id
            lp = torch.log_softmax(s.model(input_ids=torch.tensor([masked])).logits[0, p], -1)
            ref += lp[ids[p]].item()
    assert got[0] == pytest.approx(ref, abs=1e-4)
    mean = load_scorer(tiny_bert, cache=False, reduction="mean").score([q], [[c]])[0][0]
    assert mean == pytest.approx(ref / (end - start), abs=1e-5)


@pytest.fixture(scope="module")
def peaky_bert(tmp_path_factory) -> str:
    """A tiny random BERT whose predictions depend strongly on the input (large init), so PLL
    variants that mask different tokens give clearly different scores."""
    return tiny_models.tiny_bert(tmp_path_factory.mktemp("peaky-bert"), seed=3, initializer_range=0.5)


PLL_PAIRS = [
    ("The heron waded through the marsh. Definition of bkatuhla is", "an unbelievably tall wading-bird"),
    ("Definition of bkatuhla is", "a bkatuhla"),  # the nonce itself: four pieces
    ("Definition of bkatuhla is", "a tree"),  # single-piece words only: both variants agree
]


def _naive_pll(scorer, query: str, candidate: str, l2r: bool) -> float:
    """Reference PLL: one forward pass per candidate token with full logits. Words come from
    WordPiece's own marker (a piece starting with ## continues the previous word), not from the
    tokenizer's word ids that the scorer uses."""
    import torch

    ids, start, end = scorer.encode_pair(query, candidate)
    pieces = scorer.tok.convert_ids_to_tokens(ids)
    total = 0.0
    for p in range(start, end):
        masked = list(ids)
        masked[p] = scorer.tok.mask_token_id
        q = p + 1
        while l2r and q < end and pieces[q].startswith("##"):  # later pieces of the same word
            masked[q] = scorer.tok.mask_token_id
            q += 1
        with torch.no_grad():
            lp = torch.log_softmax(scorer.model(input_ids=torch.tensor([masked])).logits[0, p], -1)
        total += lp[ids[p]].item()
    return total


def test_pll_variants_equal_a_naive_reference(peaky_bert):
    from probegen.models import load_scorer

    original = load_scorer(peaky_bert, cache=False, batch_size=3)
    l2r = load_scorer(peaky_bert, cache=False, batch_size=3, pll="word-l2r")
    assert original.settings()["method"] == "pll" and l2r.settings()["method"] == "pll-word-l2r"
    queries = [q for q, _ in PLL_PAIRS]
    cands = [[c] for _, c in PLL_PAIRS]
    got_o, got_l = _flat(original.score(queries, cands)), _flat(l2r.score(queries, cands))
    ref_o = [_naive_pll(original, q, c, l2r=False) for q, c in PLL_PAIRS]
    ref_l = [_naive_pll(l2r, q, c, l2r=True) for q, c in PLL_PAIRS]
    np.testing.assert_allclose(got_o, ref_o, atol=1e-4, rtol=0)
    np.testing.assert_allclose(got_l, ref_l, atol=1e-4, rtol=0)
    assert abs(got_o[0] - got_l[0]) > 0.01 and abs(got_o[1] - got_l[1]) > 0.01  # multi-piece words (noise ~1e-5)
    assert got_o[2] == pytest.approx(got_l[2], abs=1e-5)  # one piece per word: the same copies


def test_pll_variants_match_minicons(peaky_bert):
    """minicons (Kauf & Ivanova's reference implementation lives there) scores the same pairs."""
    pytest.importorskip("minicons")
    from minicons import scorer as mc
    from transformers import AutoTokenizer

    from probegen.models import load_scorer

    tok = AutoTokenizer.from_pretrained(peaky_bert)
    # minicons 0.3.39 still calls batch_encode_plus, which transformers 5 removed; same call
    tok.batch_encode_plus = lambda texts, **kw: tok(texts, **kw)
    for pll, metric in (("original", "original"), ("word-l2r", "within_word_l2r")):
        ours = load_scorer(peaky_bert, cache=False, pll=pll)
        ref = mc.MaskedLMScorer(ours.model, device="cpu", tokenizer=tok)
        theirs = ref.conditional_score([q for q, _ in PLL_PAIRS], [c for _, c in PLL_PAIRS],
                                       reduction=lambda x: x.sum(0).item(), PLL_metric=metric)
        got = _flat(ours.score([q for q, _ in PLL_PAIRS], [[c] for _, c in PLL_PAIRS]))
        np.testing.assert_allclose(got, theirs, atol=1e-3, rtol=0)


def test_pll_option_is_rejected_for_other_kinds(tiny_llama):
    from probegen.errors import ProbegenError
    from probegen.models import load_scorer

    with pytest.raises(ProbegenError, match="applies to masked LMs only"):
        load_scorer(tiny_llama, pll="word-l2r")
    with pytest.raises(ProbegenError, match="pll must be one of"):
        load_scorer(tiny_llama, scorer="masked", pll="l2r")  # checked before any loading


def test_masked_span_logprob_masks_all_pieces_of_the_words(tiny_bert, tmp_path):
    import torch

    from probegen.models import load_scorer

    s = load_scorer(tiny_bert, cache=tmp_path / "c.sqlite")
    words = ["The", "unbelievably", "tall", "heron", "waded", "."]
    enc = s.tok(words, is_split_into_words=True)
    pieces = [p for p, w in enumerate(enc.word_ids()) if w is not None and 1 <= w < 2]
    assert len(pieces) > 1  # a multi-piece word: located by word ids, not by string search
    masked = list(enc.input_ids)
    for p in pieces:
        masked[p] = s.tok.mask_token_id
    with torch.no_grad():
        lp = torch.log_softmax(s.model(input_ids=torch.tensor([masked])).logits[0], -1)
    ref = float(np.mean([lp[p, enc.input_ids[p]].item() for p in pieces]))
    assert s.span_logprob(words, (1, 2)) == pytest.approx(ref, abs=1e-5)
    calls = s.counters["backend_calls"]
    assert s.span_logprobs([(words, (1, 2))])[0] == pytest.approx(ref, abs=1e-5)
    assert s.counters["backend_calls"] == calls  # served from the cache


# ---- embedding and static (real bundled models) -----------------------------------------------------------
def test_embedding_minilm_scores_and_embeds():
    from probegen.models import load_scorer

    s = load_scorer("minilm-l6", cache=False)
    assert s.kind == "embedding" and s.query_style == "plain"
    scores = s.score(["the dog barked at the postman"], [["a domesticated canine animal", "a financial institution"]])[0]
    assert scores[0] > scores[1] and np.all(np.abs(scores) <= 1.0 + 1e-6)
    e = s.embed(["a dog", "a bank", "a dog"])
    assert e.shape == (3, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(e[0], e[2])
    assert scores[0] == pytest.approx(float(s.embed(["the dog barked at the postman"])[0] @ s.embed(["a domesticated canine animal"])[0]), abs=1e-5)


def test_static_glove_scores_and_oov():
    from probegen.models import load_scorer

    s = load_scorer("glove-50d")
    assert s.kind == "static" and s.query_style == "plain"
    assert s.vocab["the"] == 0 and len(s.vocab) == 400000
    scores = s.score(["the dog barked at the postman"], [["a domesticated canine animal", "a financial institution", "zzqxv qqxzv"]])[0]
    assert scores[0] > scores[1]
    assert scores[2] == 0.0  # no known word: zero vector, score 0
    st = s.stats()
    assert st["tokens_oov"] == 2 and st["tokens_seen"] == 15
    assert s.oov_rate == pytest.approx(2 / 15)
    e = s.embed(["a dog", "zzqxv"])
    assert e.shape == (2, 50) and np.linalg.norm(e[0]) == pytest.approx(1.0, abs=1e-5) and not e[1].any()
    assert s.score(["hot_dog stand"], [["well-attended"]])[0][0] != 0.0  # underscores and hyphens


# ---- the real SmolLM2 ----------------------------------------------------------------------------------
@pytest.mark.real
def test_real_smollm2_prefix_reuse_equals_naive():
    from probegen.models import load_scorer

    s = load_scorer("smollm2-135m", cache=False)
    queries = [
        "The heron waded through the marsh and speared a fish. Definition of bkatuhla is",
        "She signed the bkatuhla with the landlord before moving in. Definition of bkatuhla is ",
    ]
    cands = ["a large wading bird with a long neck", "a written agreement", "a plant grown indoors"]
    fast = _flat(s.score(queries, [cands] * 2))
    naive = causal_naive_scores(s, [(q, c) for q in queries for c in cands])
    np.testing.assert_allclose(fast, naive, atol=1e-3, rtol=0)
    # the context matters: each definition is likelier after its own sentence
    assert fast[0] > fast[3] and fast[4] > fast[1]


def _open_and_put(path: str, q) -> None:
    try:
        ScoreCache(path).put_many([("k", 1.0)])
        q.put("ok")
    except Exception as e:  # noqa: BLE001 - the test reports whatever went wrong
        q.put(repr(e))


def test_two_processes_setting_up_one_new_cache_never_collide(tmp_path):
    """Two processes switching one new file to WAL at once got 'database is locked' in ~1 of 4 tries
    (the CI failure of two torchrun ranks); setup now retries."""
    ctx = mp.get_context("fork")
    results = []
    for i in range(20):
        q = ctx.Queue()
        procs = [ctx.Process(target=_open_and_put, args=(str(tmp_path / f"c{i}.sqlite"), q)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        results += [q.get(timeout=10), q.get(timeout=10)]
    assert results == ["ok"] * 40, sorted(set(results))
