"""Causal LM scorer: log P(candidate | query), with each query prefix encoded once.

Boundary handling follows lm-evaluation-harness: trailing whitespace of the query moves to the
start of the continuation (and one space is inserted when neither side has whitespace at the
boundary); the model input is ``enc(context) + enc(context + continuation)[len(enc(context)):]``.

Speed: no query prefix is ever computed more than once per chunk of work. Two strategies:

- ``packed`` (default): each query and all its candidates form ONE sequence, ``prefix + trie of
  candidate tokens``, with a tree attention mask (a candidate token sees the prefix and its own
  earlier tokens) and positions continuing from the prefix. Candidates sharing leading tokens
  share them, there is no per-candidate padding, and rows of many queries are batched.
- ``kv``: the unique prefixes run once (several at a time, right-padded) with a KV cache; each
  candidate then runs only its own tokens against its prefix's cached keys/values (rows of many
  prefixes batched together, sorted by length).

Both apply the LM head only at positions whose next token is scored, and both equal the naive
full-sequence score up to float rounding: this is tested, and checked once per loaded model at
run time (falling back to full sequences if a model ignores custom masks or caches).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Sequence

import numpy as np
import torch

from ._batch import pad, row_batches
from .base import Pair, Scorer, boundary_split

log = logging.getLogger(__name__)

#: ``packed``: each query and all its candidates in one sequence with a tree attention mask
#: (candidates sharing leading tokens share them); ``kv``: the query once with a KV cache, then
#: candidate batches against the expanded cache; ``full``: every pair as a full sequence.
STRATEGIES = ("packed", "kv", "full")

# model -> {strategy: whether it matched full-sequence scores} (checked once per loaded model)
_CHECKED: "weakref.WeakKeyDictionary[Any, dict[str, bool]]" = weakref.WeakKeyDictionary()


class CausalScorer(Scorer):
    """log P(candidate | query) under a causal LM; ``reduction`` is ``sum`` (default) or ``mean``."""

    kind = "causal"
    query_style = "pattern"
    version = 1
    default_batch_size = 32
    #: prefixes run together in one forward pass
    prefix_batch = 16
    #: token budget of one continuation batch (rows x padded length)
    max_batch_tokens = 1024
    #: longest packed row (prefix + candidate tokens); more candidates go to further rows
    max_row_tokens = 768

    def __init__(
        self,
        name: str,
        model: Any,
        tokenizer: Any,
        model_id: str | None = None,
        reduction: str = "sum",
        dtype: str = "float32",
        batch_size: int | None = None,
        cache: Any = None,
        prefix_reuse: bool = True,
        strategy: str = "packed",
        extra_settings: dict[str, Any] | None = None,
    ) -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        super().__init__(name, model_id=model_id, batch_size=batch_size, cache=cache, extra_settings=extra_settings)
        self.model = model.eval()
        self.tok = tokenizer
        self.reduction = reduction
        self.dtype = dtype
        # how pairs are computed; all give the same scores (up to float rounding), so it is not a setting
        self.strategy = strategy if prefix_reuse else "full"
        self._head = model.get_output_embeddings()
        self._base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
        self._softcap = getattr(model.config, "final_logit_softcapping", None)
        self._bos = self._detect_bos()
        self._dummy = next(
            t for t in (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id, 0) if t is not None
        )
        self._max_len = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        self._enc_cache: dict[str, list[int]] = {}
        self._checked = self.strategy == "full"
        known = _CHECKED.get(model, {})
        if self.strategy in known:
            self._checked = True
            if not known[self.strategy]:
                self.strategy = "full"

    @property
    def prefix_reuse(self) -> bool:
        """Whether query prefixes are computed once per query (False: full sequences)."""
        return self.strategy != "full"

    def _extra_settings(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "dtype": self.dtype, "boundary": "lm-eval"}

    # ---- tokenisation -------------------------------------------------------------------------
    def _detect_bos(self) -> int | None:
        """The BOS id if the tokenizer prepends one by default (Llama-2 style), else None."""
        bos = self.tok.bos_token_id
        if bos is None:
            return None
        ids = self.tok("hello").input_ids
        return bos if ids and ids[0] == bos else None

    def _enc(self, text: str) -> list[int]:
        ids = self._enc_cache.get(text)
        if ids is None:
            ids = self.tok(text, add_special_tokens=False).input_ids
            if len(self._enc_cache) > 100_000:
                self._enc_cache.clear()
            self._enc_cache[text] = ids
        return ids

    def encode_pair(self, query: str, candidate: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(context token ids, continuation token ids) exactly as they are scored."""
        ctx, cont = boundary_split(query, candidate)
        ctx_ids = self._enc(ctx)
        whole = self._enc(ctx + cont)
        cont_ids = whole[len(ctx_ids) :]
        if not cont_ids:
            raise ValueError(f"candidate {candidate!r} has no tokens")
        prefix = ([self._bos] if self._bos is not None else []) + ctx_ids
        if not prefix:  # nothing to condition the first token on (lm-eval uses EOT here)
            prefix = [self._dummy]
        room = self._max_len - len(cont_ids)
        if len(prefix) > room:  # left-truncate the context, as lm-eval does
            prefix = prefix[len(prefix) - max(room, 1) :]
        return tuple(prefix), tuple(cont_ids)

    # ---- scoring --------------------------------------------------------------------------------
    def _reduce(self, total: float, n: int) -> float:
        return total / n if self.reduction == "mean" else total

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """LM-head logits (float32) of hidden states (N, H), with the model's final soft-capping if any."""
        logits = self._head(hidden).float()
        if self._softcap:
            logits = torch.tanh(logits / self._softcap) * self._softcap
        return logits

    def _logprobs_at(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log P(target) from hidden states (N, H): LM head only where needed, no full log_softmax copy."""
        logits = self._logits(hidden)
        return logits.gather(1, targets[:, None]).squeeze(1) - torch.logsumexp(logits, dim=-1)

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        encoded = [self.encode_pair(q, c) for q, c in pairs]
        if not self._checked:
            self._self_check(encoded[:4])
        totals = self._run(self.strategy, encoded)
        return np.array([self._reduce(t, len(c)) for t, (_, c) in zip(totals, encoded)], dtype=np.float64)

    def _run(self, strategy: str, encoded: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[float]:
        fn = {"packed": self._packed_scores, "kv": self._prefix_scores, "full": self._full_scores}[strategy]
        return fn(encoded)

    def _self_check(self, encoded: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> None:
        """Prefix sharing relies on the model honouring custom masks / its KV-cache API: compare it
        once per model with full-sequence scores, and fall back to full sequences if it disagrees."""
        self._checked = True
        ok = True
        try:
            fast = self._run(self.strategy, encoded)
        except Exception as e:  # an architecture without 4D masks or an expandable cache
            log.warning("%s scoring unavailable for %s (%s); scoring full sequences", self.strategy, self.name, e)
            ok = False
        else:
            slow = self._full_scores(encoded)
            if not np.allclose(fast, slow, atol=1e-3, rtol=1e-4):
                log.warning("%s scoring disagrees with full sequences for %s; scoring full sequences", self.strategy, self.name)
                ok = False
        _CHECKED.setdefault(self.model, {})[self.strategy] = ok
        if not ok:
            self.strategy = "full"

    @torch.inference_mode()
    def _packed_scores(self, encoded: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[float]:
        """Summed continuation log-probs; each query and its candidates packed into one sequence.

        A row is ``prefix + trie of the candidates' input tokens``: a candidate token attends to
        the whole prefix and to its own earlier tokens only (tree attention mask), with positions
        continuing from the prefix, so every score equals the full-sequence one. The prefix runs
        once, candidates sharing leading tokens share them, there is no per-candidate padding,
        and the LM head runs once per distinct position.
        """
        device = self._head.weight.device
        rows_of: dict[tuple[int, ...], list[int]] = {}
        for i, (p, _) in enumerate(encoded):
            rows_of.setdefault(p, []).append(i)
        rows = []
        for prefix, items in rows_of.items():
            rows.extend(_pack_rows(prefix, items, encoded, self.max_row_tokens))
        rows.sort(key=lambda r: r.length)
        totals = [0.0] * len(encoded)
        for batch in row_batches(rows, lambda r: r.length, self.batch_size, self.max_batch_tokens * 2):
            L = max(r.length for r in batch)
            ids = torch.full((len(batch), L), self._dummy, dtype=torch.long)
            pos = torch.zeros((len(batch), L), dtype=torch.long)
            allowed = torch.zeros((len(batch), L, L), dtype=torch.bool)
            allowed[:, torch.arange(L), torch.arange(L)] = True  # padding attends to itself: no NaN rows
            for b, r in enumerate(batch):
                ids[b, : r.length] = torch.tensor(r.tokens)
                pos[b, : r.length] = torch.tensor(r.positions)
                allowed[b, : r.length, : r.length] = torch.from_numpy(r.mask)
            dtype = self._head.weight.dtype
            mask4d = torch.zeros((len(batch), 1, L, L), dtype=dtype)
            mask4d.masked_fill_(~allowed[:, None], torch.finfo(dtype).min)
            h = self._base(
                input_ids=ids.to(device), attention_mask=mask4d.to(device), position_ids=pos.to(device), use_cache=False
            ).last_hidden_state
            # every (row, position) that predicts something, once; then each candidate's targets
            at = sorted({(b, p) for b, r in enumerate(batch) for p, _, _ in r.targets})
            index = {bp: k for k, bp in enumerate(at)}
            hb = h[torch.tensor([b for b, _ in at]), torch.tensor([p for _, p in at])]
            logits = self._logits(hb)
            lse = torch.logsumexp(logits, dim=-1)
            flat = [(index[(b, p)], tok, item) for b, r in enumerate(batch) for p, tok, item in r.targets]
            k = torch.tensor([f[0] for f in flat])
            t = torch.tensor([f[1] for f in flat])
            lp = (logits[k, t] - lse[k]).tolist()
            for (_, _, item), v in zip(flat, lp):
                totals[item] += v
        return totals

    @torch.inference_mode()
    def _prefix_scores(self, encoded: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[float]:
        """Summed continuation log-probs, each unique prefix run once through the model."""
        from transformers import DynamicCache

        device = self._head.weight.device
        rows_of: dict[tuple[int, ...], list[int]] = {}
        for i, (p, _) in enumerate(encoded):
            rows_of.setdefault(p, []).append(i)
        prefixes = sorted(rows_of, key=len)  # similar lengths together: less padding
        totals = [0.0] * len(encoded)
        for g in _groups(prefixes, self.prefix_batch, self.max_batch_tokens * 2):
            lens = torch.tensor([len(p) for p in g], device=device)
            ids, mask = pad([list(p) for p in g], self._dummy, device)
            out = self._base(input_ids=ids, attention_mask=mask, use_cache=True)
            kv = _cache_tensors(out.past_key_values)
            # first continuation token: predicted at the last real prefix position (head once per prefix)
            last = out.last_hidden_state[torch.arange(len(g), device=device), lens - 1]
            logits = self._logits(last)
            lse = torch.logsumexp(logits, dim=-1)
            rows = [(gi, i) for gi, p in enumerate(g) for i in rows_of[p]]
            gis = torch.tensor([gi for gi, _ in rows], device=device)
            first_t = torch.tensor([encoded[i][1][0] for _, i in rows], device=device)
            for (gi, i), v in zip(rows, (logits[gis, first_t] - lse[gis]).tolist()):
                totals[i] += v
            # the remaining tokens, rows sorted by length, against their prefix's cached keys/values
            rows = [r for r in rows if len(encoded[r[1]][1]) > 1]
            rows.sort(key=lambda r: len(encoded[r[1]][1]))
            for batch in row_batches(rows, lambda r: len(encoded[r[1]][1]) - 1, self.batch_size, self.max_batch_tokens):
                pidx = torch.tensor([gi for gi, _ in batch], device=device)
                conts = [list(encoded[i][1]) for _, i in batch]
                inp, cmask = pad([c[:-1] for c in conts], self._dummy, device)
                cache = DynamicCache(config=self.model.config)
                for layer, (k, v) in enumerate(kv):
                    cache.update(k.index_select(0, pidx), v.index_select(0, pidx), layer)
                pos = lens[pidx][:, None] + torch.arange(inp.shape[1], device=device)[None, :]
                full_mask = torch.cat([mask.index_select(0, pidx), cmask], dim=1)
                h = self._base(
                    input_ids=inp, attention_mask=full_mask, position_ids=pos, past_key_values=cache, use_cache=True
                ).last_hidden_state
                valid = cmask.bool()
                tgt, _ = pad([c[1:] for c in conts], 0, device)
                lp = self._logprobs_at(h[valid], tgt[valid])
                row_of_tok = torch.arange(len(batch), device=device)[:, None].expand_as(valid)[valid]
                sums = torch.zeros(len(batch), dtype=lp.dtype, device=device).index_add_(0, row_of_tok, lp)
                for (_, i), v in zip(batch, sums.tolist()):
                    totals[i] += v
        return totals

    @torch.inference_mode()
    def _full_scores(self, encoded: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[float]:
        """Summed continuation log-probs from full sequences (no prefix reuse): the fallback path."""
        device = self._head.weight.device
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]) + len(encoded[i][1]))
        totals = [0.0] * len(encoded)
        seq_len = lambda i: len(encoded[i][0]) + len(encoded[i][1]) - 1  # noqa: E731
        for batch in row_batches(order, seq_len, self.batch_size, self.max_batch_tokens * 2):
            seqs = [list(encoded[i][0]) + list(encoded[i][1]) for i in batch]
            ids, mask = pad([s[:-1] for s in seqs], self._dummy, device)
            h = self._base(input_ids=ids, attention_mask=mask).last_hidden_state
            # positions predicting continuation tokens: [len(prefix)-1, len(seq)-2]
            sel = torch.zeros_like(mask, dtype=torch.bool)
            for r, i in enumerate(batch):
                p, c = encoded[i]
                sel[r, len(p) - 1 : len(p) - 1 + len(c)] = True
            tgt, _ = pad([s[1:] for s in seqs], 0, device)
            lp = self._logprobs_at(h[sel], tgt[sel])
            row_of_tok = torch.arange(len(batch), device=device)[:, None].expand_as(sel)[sel]
            sums = torch.zeros(len(batch), dtype=lp.dtype, device=device).index_add_(0, row_of_tok, lp)
            for i, v in zip(batch, sums.tolist()):
                totals[i] = v
        return totals

    def score_naive(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Reference scores: one full forward pass per pair, full log-softmax (slow; for tests)."""
        out = []
        with torch.inference_mode():
            for q, c in pairs:
                p, cont = self.encode_pair(q, c)
                ids = torch.tensor([list(p) + list(cont)])
                logits = self.model(input_ids=ids).logits[0].float()
                lp = torch.log_softmax(logits, dim=-1)
                pos = torch.arange(len(p) - 1, len(p) - 1 + len(cont))
                total = lp[pos, torch.tensor(cont)].sum().item()
                out.append(self._reduce(total, len(cont)))
        return np.array(out, dtype=np.float64)

    @torch.inference_mode()
    def sequence_logprob(self, texts: Sequence[str]) -> np.ndarray:
        """Total log-prob of each whole text (first token conditioned on BOS if used, else unscored)."""
        device = self._head.weight.device
        seqs = [([self._bos] if self._bos is not None else []) + self._enc(t) for t in texts]
        out = np.zeros(len(seqs), dtype=np.float64)
        order = [i for i in sorted(range(len(seqs)), key=lambda i: len(seqs[i])) if len(seqs[i]) > 1]
        for batch in row_batches(order, lambda i: len(seqs[i]) - 1, self.batch_size, self.max_batch_tokens * 2):
            ids, mask = pad([seqs[i][:-1] for i in batch], self._dummy, device)
            h = self._base(input_ids=ids, attention_mask=mask).last_hidden_state
            tgt, _ = pad([seqs[i][1:] for i in batch], 0, device)
            valid = mask.bool()
            lp = self._logprobs_at(h[valid], tgt[valid])
            row_of_tok = torch.arange(len(batch), device=device)[:, None].expand_as(valid)[valid]
            sums = torch.zeros(len(batch), dtype=lp.dtype, device=device).index_add_(0, row_of_tok, lp)
            out[batch] = sums.double().cpu().numpy()
        return out


# ---- helpers ------------------------------------------------------------------------------------
class _Row:
    """One packed sequence: a prefix followed by a trie of candidate input tokens."""

    __slots__ = ("tokens", "positions", "parents", "targets", "mask")

    def __init__(self, prefix: tuple[int, ...]) -> None:
        self.tokens = list(prefix)
        self.positions = list(range(len(prefix)))
        self.parents: list[int] = []  # per trie node: index of its parent row position
        self.targets: list[tuple[int, int, int]] = []  # (position predicting, target token, item)
        self.mask = np.zeros((0, 0), dtype=bool)

    @property
    def length(self) -> int:
        return len(self.tokens)


def _pack_rows(prefix: tuple[int, ...], items: list[int], encoded, max_tokens: int) -> list[_Row]:
    """Pack the candidates (``items``) of one prefix into rows of at most ``max_tokens`` tokens."""
    n_prefix = len(prefix)
    rows: list[_Row] = []
    row: _Row | None = None
    children: dict[tuple[int, int], int] = {}
    for item in items:
        cont = encoded[item][1]
        if row is None or (row.length + len(cont) - 1 > max_tokens and row.targets):
            row = _Row(prefix)
            rows.append(row)
            children = {}
        parent = n_prefix - 1  # the last prefix position predicts the first candidate token
        row.targets.append((parent, cont[0], item))
        for t in range(len(cont) - 1):
            key = (parent, cont[t])
            node = children.get(key)
            if node is None:
                node = row.length
                children[key] = node
                row.tokens.append(cont[t])
                row.positions.append(row.positions[parent] + 1)
                row.parents.append(parent)
            row.targets.append((node, cont[t + 1], item))
            parent = node
    for row in rows:
        L = row.length
        m = np.tril(np.ones((L, L), dtype=bool))
        m[n_prefix:, n_prefix:] = False
        for k, parent in enumerate(row.parents):  # a node sees the prefix, its ancestors and itself
            node = n_prefix + k
            if parent >= n_prefix:
                m[node, n_prefix:node] = m[parent, n_prefix:node]
            m[node, node] = True
        row.mask = m
    return rows


def _groups(prefixes: list[tuple[int, ...]], max_n: int, max_tokens: int) -> list[list[tuple[int, ...]]]:
    """Length-sorted prefixes cut into groups of at most ``max_n`` and about ``max_tokens`` padded tokens."""
    out: list[list[tuple[int, ...]]] = []
    cur: list[tuple[int, ...]] = []
    for p in prefixes:
        if cur and (len(cur) >= max_n or (len(cur) + 1) * len(p) > max_tokens):
            out.append(cur)
            cur = []
        cur.append(p)
    if cur:
        out.append(cur)
    return out


def _cache_tensors(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per-layer (keys, values) of a transformers cache (v5 ``.layers``, v4 ``key_cache``, or legacy tuples)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v, *_ in cache]
