"""log P(candidate | query) from the completions endpoint of any OpenAI-compatible server.

The model is served elsewhere (vLLM, SGLang, TGI, llama.cpp's server, a hosted API): probegen
sends ``context + continuation`` as the prompt with ``echo: true, logprobs: 0, max_tokens: 0``
and sums the log-probs the server returns for the prompt tokens that belong to the continuation.
Those tokens are found by the character offsets the server returns (``text_offset``), so no local
tokenizer is needed. The boundary rule is the causal scorer's (lm-evaluation-harness):
trailing whitespace of the query moves to the candidate (:func:`~.base.boundary_split`); a token
that straddles the boundary counts for the continuation.

Scores go through the persistent score cache like every scorer's; the cache key holds the base
URL, the served model id and the model information the server reports (``root``, ``parent``,
``max_model_len``, ``owned_by``; not ``created``, which changes at every server start), never the
key. Requests carry ``batch_size`` prompts each and up to ``concurrency`` run at once.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import ProbegenError
from .base import Pair, Scorer, boundary_split
from .http import ApiError, Client, Endpoint

#: model information that identifies what a served id is (``created`` is a start-up time: left out)
INFO_FIELDS = ("id", "root", "parent", "max_model_len", "owned_by")

_SERVED: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = {}
_SERVED_LOCK = threading.Lock()


def served_models(endpoint: Endpoint) -> dict[str, dict[str, Any]]:
    """The server's models (``GET /models``): id -> identifying information, asked once per URL and key."""
    memo = (endpoint.base, endpoint.key())
    with _SERVED_LOCK:
        if memo not in _SERVED:
            client = Client(endpoint, connections=1)
            try:
                body = client.request("GET", "models")
            finally:
                client.close()
            rows = body.get("data") if isinstance(body, dict) else None
            if not isinstance(rows, list):
                raise ApiError(f"{endpoint.base}/models did not list models (no 'data' array): is this an OpenAI-compatible server?")
            _SERVED[memo] = {
                str(m["id"]): {k: m[k] for k in INFO_FIELDS if m.get(k) is not None}
                for m in rows if isinstance(m, dict) and "id" in m
            }
        return _SERVED[memo]


def continuation_logprobs(logprobs: dict[str, Any], context_chars: int, prompt_chars: int) -> list[float]:
    """Log-probs of the prompt tokens that end after ``context_chars`` (the continuation's tokens).

    ``logprobs`` is one choice's ``logprobs`` object (``text_offset``, ``token_logprobs``); a
    token generated after the prompt (offset >= ``prompt_chars``) is not part of it.

    >>> lp = {"text_offset": [0, 3, 7, 12], "token_logprobs": [None, -1.0, -2.0, -0.5]}
    >>> continuation_logprobs(lp, 7, 12)
    [-2.0]
    >>> continuation_logprobs(lp, 5, 12)  # a token straddling the boundary counts for the continuation
    [-1.0, -2.0]
    >>> lp = {"text_offset": [0, 1, 1, 3], "token_logprobs": [None, -21.3, -4.7, -9.2]}  # 'x', '', ' 😀', ' em'
    >>> continuation_logprobs(lp, 1, 6)
    [-21.3, -4.7, -9.2]
    """
    offsets, values = logprobs.get("text_offset"), logprobs.get("token_logprobs")
    if not offsets or values is None or len(offsets) != len(values):
        raise ApiError("the server returned no prompt token offsets/log-probs")
    n = sum(1 for o in offsets if o < prompt_chars)
    out = []
    for k in range(n):
        end = offsets[k + 1] if k + 1 < n else prompt_chars
        # a byte-level token holding part of a character decodes to '' (zero width): it belongs to
        # the text that follows it, so one starting at the boundary is the continuation's
        if end > context_chars or offsets[k] >= context_chars:
            out.append(values[k])
    return out


class ApiScorer(Scorer):
    """log P(candidate | query) from a served causal LM (``reduction``: ``sum`` or ``mean``).

    Its ``kind`` is ``causal``: every task treats it as a causal LM; ``settings()["backend"]`` is
    ``api``.
    """

    kind = "causal"
    query_style = "pattern"
    version = 1
    #: prompts per request
    default_batch_size = 16
    chunk_pairs = 256
    #: requests in flight at once
    default_concurrency = 4

    def __init__(
        self,
        name: str,
        endpoint: Endpoint,
        info: dict[str, Any],
        reduction: str = "sum",
        batch_size: int | None = None,
        concurrency: int | None = None,
        cache: Any = None,
    ) -> None:
        if reduction not in ("sum", "mean"):
            raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
        served = {"backend": "api", "api_base": endpoint.base, "served": dict(info)}
        super().__init__(name, model_id=name, batch_size=batch_size, cache=cache, extra_settings=served,
                         device="api", dtype="server")
        self.endpoint = endpoint
        self.reduction = reduction
        self.concurrency = max(1, int(concurrency or self.default_concurrency))
        # a chunk (committed to the cache at once) keeps every connection busy
        self.chunk_pairs = max(type(self).chunk_pairs, 2 * self.batch_size * self.concurrency)
        self.client = Client(endpoint, connections=self.concurrency)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="probegen-api")
        self._max_tokens = 0  # 1 for servers that refuse 0 (found on the first request)

    def _extra_settings(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "boundary": "lm-eval"}

    def stats(self) -> dict[str, Any]:
        """Counters: pairs computed and cached, HTTP requests and retries, concurrency."""
        return {**super().stats(), **self.client.counters, "concurrency": self.concurrency}

    def _score_uncached(self, pairs: list[Pair]) -> np.ndarray:
        split = [boundary_split(q, c) for q, c in pairs]
        for (q, c), (ctx, cont) in zip(pairs, split):
            if not ctx:
                raise ProbegenError(f"{self.name}: the query is empty, so the server cannot score the first token of {c!r}")
            if not cont:
                raise ValueError(f"candidate {c!r} has no tokens")
        batches = [split[i : i + self.batch_size] for i in range(0, len(split), self.batch_size)]
        if self.client.counters["requests"] == 0 and batches:  # the first request alone finds max_tokens
            first = [self._request(batches[0])]
            rest = list(self._pool.map(self._request, batches[1:]))
            results = first + rest
        else:
            results = list(self._pool.map(self._request, batches))
        return np.array([v for r in results for v in r], dtype=np.float64)

    def _payload(self, prompts: list[str]) -> dict[str, Any]:
        return {"model": self.name, "prompt": prompts, "max_tokens": self._max_tokens, "echo": True,
                "logprobs": 0, "temperature": 0.0}

    def _request(self, batch: list[tuple[str, str]]) -> list[float]:
        """Scores of one request's (context, continuation) pairs."""
        prompts = [ctx + cont for ctx, cont in batch]
        try:
            body = self.client.request("POST", "completions", self._payload(prompts))
        except ApiError as e:
            if self._max_tokens == 0 and "max_tokens" in str(e):  # e.g. 'max_tokens must be at least 1'
                self._max_tokens = 1
                body = self.client.request("POST", "completions", self._payload(prompts))
            else:
                raise
        choices = sorted(body.get("choices") or [], key=lambda ch: ch.get("index", 0))
        if len(choices) != len(prompts):
            raise ApiError(f"{self.endpoint.base}/completions answered {len(choices)} choices for {len(prompts)} prompts")
        out = []
        for (ctx, cont), ch in zip(batch, choices):
            lp = ch.get("logprobs")
            if not lp or not lp.get("token_logprobs"):
                raise ApiError(
                    f"{self.endpoint.base} returned no prompt log-probs for {self.name} (echo + logprobs): a chat-only "
                    "API cannot be scored this way; use a server with a completions endpoint, or the generative method")
            vals = continuation_logprobs(lp, len(ctx), len(ctx) + len(cont))
            if not vals or any(v is None for v in vals):
                raise ApiError(f"{self.endpoint.base} gave no log-prob for part of {cont!r} after {ctx[-40:]!r}")
            total = float(sum(vals))
            out.append(total / len(vals) if self.reduction == "mean" else total)
        return out

    def close(self) -> None:
        """Close the connections, the worker threads and the score cache."""
        self._pool.shutdown(wait=False)
        self.client.close()
        super().close()
