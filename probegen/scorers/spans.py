"""Target-span features of a transformer: the public feature interface of the LM and embedding scorers.

A :class:`SpanEncoder` turns ``(text, (start, end))`` rows into the last hidden layer averaged over the
tokens overlapping the character span (``None``: the whole text), located by the tokenizer's offsets.
Distinct rows are encoded once, in length-sorted batches shared across ``torchrun`` ranks
(:func:`probegen.distributed.shard_map`), so the vectors equal a single-process run.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np

from ..errors import ProbegenError

Row = tuple[str, "tuple[int, int] | None"]


class SpanEncoder:
    """A transformer's tokenizer and network, giving target-span and mean-pooled vectors.

    ``net`` is called with ``output_hidden_states=True``; its last hidden layer is used. ``mask``
    is the tokenizer's mask token (``[MASK]`` for BERT-style models), else probegen's nonce.
    """

    def __init__(self, tokenizer: Any, net: Any, name: str = "", max_length: int = 256, batch_size: int = 32) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise ProbegenError(f"{name}: target-span features need a fast tokenizer (character offsets of the target)")
        from ..templating import default_nonce

        self.tok, self.net, self.name = tokenizer, net.eval(), name
        self.max_length, self.batch_size = max_length, batch_size
        self.mask = tokenizer.mask_token or default_nonce()
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._memo: dict[Row, np.ndarray] = {}

    @property
    def dim(self) -> int:
        """Width of a vector (the network's hidden size)."""
        return int(self.net.config.hidden_size)

    def trainable_copy(self, device: Any = None) -> "SpanEncoder":
        """A fresh copy of the network (on ``device``) to fine-tune; this encoder stays untouched."""
        net = copy.deepcopy(self.net)
        return SpanEncoder(self.tok, net.to(device) if device is not None else net, self.name, self.max_length,
                           self.batch_size)

    def _crop(self, text: str, span: tuple[int, int] | None) -> Row:
        """Keep a character window around the target so it survives truncation (about 4 chars a token)."""
        room = 2 * self.max_length
        if span is None or len(text) <= 4 * self.max_length:
            return text, span
        a0, b0 = max(0, span[0] - room), min(len(text), span[1] + room)
        return text[a0:b0], (span[0] - a0, span[1] - a0)

    def batch(self, rows: Sequence[Row], grad: bool = False) -> Any:
        """Hidden-state vectors (a torch tensor, rows x hidden) of (text, span) rows; span None = mean over the text."""
        import torch

        rows = [self._crop(t, s) for t, s in rows]
        enc = self.tok([t for t, _ in rows], return_offsets_mapping=True, truncation=True, max_length=self.max_length)
        width = max(len(ids) for ids in enc["input_ids"])
        device = next(self.net.parameters()).device
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        att = torch.zeros((len(rows), width), dtype=torch.long)
        sel = torch.zeros((len(rows), width))
        for r, ((text, span), tok_ids, offs) in enumerate(zip(rows, enc["input_ids"], enc["offset_mapping"])):
            ids[r, : len(tok_ids)] = torch.tensor(tok_ids)
            att[r, : len(tok_ids)] = 1
            if span is None:
                sel[r, : len(tok_ids)] = 1.0
                continue
            a, b = span
            hit = [k for k, (s, e) in enumerate(offs) if e > s and s < b and e > a]
            if not hit:
                raise ProbegenError(f"{self.name}: the target {text[a:b]!r} lies beyond the {self.max_length}-token "
                                    f"window of {text[:60]!r}...")
            sel[r, hit] = 1.0
        ctx = torch.enable_grad() if grad else torch.no_grad()
        with ctx:
            out = self.net(input_ids=ids.to(device), attention_mask=att.to(device), output_hidden_states=True)
            h = out.hidden_states[-1].float()
            sel = sel.to(device)
            return (h * sel[..., None]).sum(1) / sel.sum(1, keepdim=True)

    def vectors(self, rows: Sequence[Row], progress: bool = False) -> np.ndarray:
        """Frozen vectors of (text, span) rows, each distinct row encoded once (batched by length)."""
        from .. import distributed as dist
        from ..progress import progress_bar

        todo = [r for r in dict.fromkeys(rows) if r not in self._memo]
        todo.sort(key=lambda r: len(r[0]))
        batches = [todo[i : i + self.batch_size] for i in range(0, len(todo), self.batch_size)]
        bar = progress_bar(total=len(batches), desc="encoding", unit="batch",
                           disable=not progress or not batches or not dist.is_main())

        def encode(chunk: list[Row]) -> np.ndarray:
            vecs: np.ndarray = self.batch(chunk).cpu().numpy().astype(np.float32)
            bar.update(1)
            return vecs

        try:
            for chunk, vecs in zip(batches, dist.shard_map(batches, encode)):
                self._memo.update(zip(chunk, vecs))
        finally:
            bar.close()
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[r] for r in rows])


class SpanFeatures:
    """Mixin of the transformer scorers: :meth:`span_encoder`, over what :meth:`_feature_parts` names."""

    def _feature_parts(self, max_length: int) -> tuple[Any, Any, int]:
        """(tokenizer, network returning hidden states, usable max length)."""
        raise NotImplementedError

    def span_encoder(self, max_length: int = 256, batch_size: int = 32) -> SpanEncoder:
        """The shared :class:`SpanEncoder` of this model (one per ``max_length``/``batch_size``, with its memo)."""
        encoders: dict[tuple[int, int], SpanEncoder] = self.__dict__.setdefault("_span_encoders", {})
        key = (max_length, batch_size)
        if key not in encoders:
            tok, net, length = self._feature_parts(max_length)
            encoders[key] = SpanEncoder(tok, net, getattr(self, "name", ""), length, batch_size)
        return encoders[key]
