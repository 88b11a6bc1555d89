"""Tiny random models built from configs (no network), shared by the scorer tests.

Each builder saves a model and its tokenizer as a local directory and returns the path, so the
models load through :func:`probegen.models.load_scorer` like any user model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPUS = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Definition of bkatuhla is a small animal that lives in the forest.",
    "A formal written agreement between two parties, signed by both of them.",
    "She kept the little plant on the windowsill and watered it every morning.",
] * 4


def bpe_tokenizer(bos: bool):
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


def _tiny_gqa(config: Any, model: Any, path: Path, seed: int) -> str:
    """A random 2-layer decoder with grouped-query attention (``config``/``model``: a transformers pair)
    and the BPE tokenizer without BOS."""
    import torch

    torch.manual_seed(seed)
    tok = bpe_tokenizer(bos=False)
    cfg = config(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, bos_token_id=1, eos_token_id=0, pad_token_id=0,
    )
    return _save(model(cfg), tok, path)


def tiny_llama(path: Path, seed: int = 0) -> str:
    """A random 2-layer Llama (RoPE, GQA) without BOS."""
    from transformers import LlamaConfig, LlamaForCausalLM

    return _tiny_gqa(LlamaConfig, LlamaForCausalLM, path, seed)


def tiny_gpt2(path: Path, seed: int = 1) -> str:
    """A random 2-layer GPT-2 (absolute positions) whose tokenizer prepends BOS."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    tok = bpe_tokenizer(bos=True)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=256, bos_token_id=1, eos_token_id=0)
    return _save(GPT2LMHeadModel(cfg), tok, path)


def bert_tokenizer():
    """The real bert-base-uncased WordPiece vocabulary (taken from the bundled MiniLM)."""
    from transformers import BertTokenizerFast

    from probegen.models import resolve_model

    vocab = Path(resolve_model("minilm-l6").path_or_id) / "vocab.txt"
    # transformers 5 silently ignores vocab_file= here (5-token vocab); vocab= takes the path
    tok = BertTokenizerFast(vocab=str(vocab))
    assert tok.vocab_size == 30522
    return tok


def tiny_bert(path: Path, seed: int = 2, initializer_range: float = 0.02) -> str:
    """A random 2-layer BertForMaskedLM with the real bert-base-uncased vocabulary.

    A large ``initializer_range`` makes predictions depend strongly on the input, so scoring
    variants that mask different tokens give clearly different scores.
    """
    import torch
    from transformers import BertConfig, BertForMaskedLM

    tok = bert_tokenizer()
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        initializer_range=initializer_range,
    )
    return _save(BertForMaskedLM(cfg), tok, path)


def tiny_qwen2(path: Path, seed: int = 3) -> str:
    """A random 2-layer Qwen2 (RoPE, GQA, biased q/k/v projections) without BOS."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return _tiny_gqa(Qwen2Config, Qwen2ForCausalLM, path, seed)


def tiny_roberta(path: Path, seed: int = 4) -> str:
    """A random 2-layer RobertaForMaskedLM (positions counted from padding_idx + 1) with the
    bert-base-uncased vocabulary (the tokenizer's [PAD] id 0 is the padding index)."""
    import torch
    from transformers import RobertaConfig, RobertaForMaskedLM

    tok = bert_tokenizer()
    torch.manual_seed(seed)
    cfg = RobertaConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=514, pad_token_id=tok.pad_token_id, initializer_range=0.5,
    )
    return _save(RobertaForMaskedLM(cfg), tok, path)
