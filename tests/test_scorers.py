"""The scorer protocol: prefix reuse equals naive scoring, reductions, the score cache, resume,
and every backend (tiny random causal/masked LMs built from configs; the real bundled models)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from probegen.score_cache import ScoreCache
from probegen.scorers.base import Scorer, boundary_split

CORPUS = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Definition of bkatuhla is a small animal that lives in the forest.",
    "A formal written agreement between two parties, signed by both of them.",
    "She kept the little plant on the windowsill and watered it every morning.",
] * 4

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
def _bpe_tokenizer(bos: bool):
    """A byte-level BPE tokenizer trained in milliseconds on CORPUS (GPT-2 style whitespace)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>", "<s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tk.train_from_iterator(CORPUS, trainer)
    if bos:  # Llama-2 style: the tokenizer prepends BOS
        tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tk.token_to_id("<s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="<|endoftext|>")


def _save(model, tok, path: Path) -> str:
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return str(path)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> str:
    """A random 2-layer Llama (RoPE, GQA) without BOS, saved as a local model directory."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tok = _bpe_tokenizer(bos=False)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, bos_token_id=1, eos_token_id=0, pad_token_id=0,
    )
    return _save(LlamaForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory) -> str:
    """A random 2-layer GPT-2 (absolute positions) whose tokenizer prepends BOS."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    tok = _bpe_tokenizer(bos=True)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=256, bos_token_id=1, eos_token_id=0)
    return _save(GPT2LMHeadModel(cfg), tok, tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    """A random 2-layer BertForMaskedLM with the real bert-base-uncased vocabulary (from MiniLM)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from probegen.models import resolve_model

    vocab = Path(resolve_model("minilm-l6").path_or_id) / "vocab.txt"
    # transformers 5 silently ignores vocab_file= here (5-token vocab); vocab= takes the path
    tok = BertTokenizerFast(vocab=str(vocab))
    assert tok.vocab_size == 30522
    torch.manual_seed(2)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    return _save(BertForMaskedLM(cfg), tok, tmp_path_factory.mktemp("tiny-bert"))


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
@pytest.mark.parametrize("strategy", ["packed", "kv"])
@pytest.mark.parametrize("fixture", ["tiny_llama", "tiny_gpt2"])
def test_causal_prefix_reuse_equals_naive(fixture, strategy, request):
    from probegen.models import load_scorer

    path = request.getfixturevalue(fixture)
    s = load_scorer(path, cache=False, batch_size=3, strategy=strategy)  # small batches: several of each
    s.prefix_batch, s.max_row_tokens = 2, 24  # several prefix groups; packed rows split
    assert s.kind == "causal" and s.query_style == "pattern"
    fast = _flat(s.score(QUERIES, CANDS))
    assert s.strategy == strategy, "the self-check must accept prefix reuse on a standard decoder"
    naive = s.score_naive(_pairs())
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
    ScoreCache(path)  # create the table first
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
    naive = s.score_naive([(q, c) for q in queries for c in cands])
    np.testing.assert_allclose(fast, naive, atol=1e-3, rtol=0)
    # the context matters: each definition is likelier after its own sentence
    assert fast[0] > fast[3] and fast[4] > fast[1]
