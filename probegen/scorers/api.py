"""log P(candidate | query) from the completions endpoint of any OpenAI-compatible server.

probegen sends ``context + continuation`` as the prompt with ``echo: true, logprobs: 0, max_tokens: 0``
and sums the log-probs of the prompt tokens that belong to the continuation, found by the character
offsets the server returns (``text_offset``): no local tokenizer is needed. The boundary rule is the
causal scorer's (:func:`~.base.boundary_split`); a token straddling the boundary counts for the
continuation. Every answer is checked (:func:`prompt_tokens`, :func:`prompt_logprobs`) before any of
it is used or cached; anything wrong is one ApiError line naming the URL.

The cache key holds the base URL, the served model id and the model information the server reports
(:data:`INFO_FIELDS`), never the key. Requests carry ``batch_size`` prompts each, ``concurrency`` at once.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import ProbegenError
from . import SERVED
from .base import Pair, Scorer, boundary_split
from .http import ApiError, Client, Endpoint, shape

#: model information that identifies what a served id is (``created`` is a start-up time: left out)
INFO_FIELDS = ("id", "root", "parent", "max_model_len", "owned_by")

#: (server URL, key) -> the server's models: what a runner remembers (:attr:`probegen.models.ModelStore.served`)
ServedMemo = dict[tuple[str, str | None], dict[str, dict[str, Any]]]
# a lock, not state: threads sharing one runner's memo ask a server for its models once
_SERVED_LOCK = threading.Lock()


def served_models(endpoint: Endpoint, memo: ServedMemo | None = None) -> dict[str, dict[str, Any]]:
    """The server's models (``GET /models``, checked, the key masked): id -> :data:`INFO_FIELDS`, asked once per
    URL and key in ``memo`` (the runner's :attr:`probegen.models.ModelStore.served`; none: asked now)."""
    memo = {} if memo is None else memo
    key = (endpoint.base, endpoint.key())
    with _SERVED_LOCK:
        if key not in memo:
            client = Client(endpoint, connections=1)
            try:
                body = client.request("GET", "models")
            finally:
                client.close()
            memo[key] = _model_list(body, endpoint)
        return memo[key]


def _model_list(body: Any, endpoint: Endpoint) -> dict[str, dict[str, Any]]:
    """id -> information of a checked ``GET /models`` answer (key masked)."""
    url = f"{endpoint.base}/models"
    rows = body.get("data") if isinstance(body, dict) else None
    if not isinstance(rows, list):
        raise ApiError(f"{url} did not list models (no 'data' array): is this an OpenAI-compatible server?")
    out: dict[str, dict[str, Any]] = {}
    for m in rows:
        if not isinstance(m, dict) or not isinstance(m.get("id"), str):
            raise ApiError(endpoint.redact(f"{url} listed {shape(m)} where a model (an object with a string 'id') "
                                           "belongs"))
        info = {}
        for k in INFO_FIELDS:
            v = m.get(k)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ApiError(endpoint.redact(f"{url}: model {m['id']!r:.80} has {shape(v)} as its {k!r}, not a "
                                               "string or number"))
            info[k] = endpoint.redact(v) if isinstance(v, str) else v
        out[endpoint.redact(m["id"])] = info
    return out


#: a log-prob above this is not one (a little slack for a server's float rounding)
MAX_LOGPROB = 1e-4


def prompt_tokens(logprobs: Any, prompt: str) -> tuple[list[int], list[float | None]]:
    """(offsets in ``prompt``, log-probs) of the prompt's tokens in one choice's ``logprobs``, after
    checking that the server scored exactly ``prompt``; ValueError (why not, on one line) otherwise.

    ``tokens``, ``text_offset`` and ``token_logprobs`` are lists of one length; each offset is where the
    tokens before it end; the tokens spell ``prompt`` (see :func:`_differs`), then perhaps generated tokens
    (offsets >= ``len(prompt)``); a first token with no log-prob that is no text of the prompt (a start
    token such as ``<s>``) is dropped. Each log-prob is null or a finite number <= 0.

    >>> lp = {"tokens": ["The", " cat", " sat", " down"], "text_offset": [0, 3, 7, 11],
    ...       "token_logprobs": [None, -1.0, -2.0, -0.5]}
    >>> prompt_tokens(lp, "The cat sat")  # ' down' was generated (max_tokens=1)
    ([0, 3, 7], [None, -1.0, -2.0])
    >>> prompt_tokens({**lp, "tokens": ["<s>", "The", " cat", " sat"], "text_offset": [0, 3, 6, 10]}, "The cat sat")
    ([0, 3, 7], [-1.0, -2.0, -0.5])
    >>> prompt_tokens(lp, "A cat sat")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: its tokens spell 'The cat sat down', not the prompt sent (from character 0: 'The cat sat down'
    instead of 'A cat sat')
    >>> prompt_tokens({**lp, "token_logprobs": [None, True, -2.0, -0.5]}, "The cat sat")
    Traceback (most recent call last):
    ...
    ValueError: token 1 (' cat') has a boolean as its log-prob, not a number
    """
    if not isinstance(logprobs, dict):
        raise ValueError(f"its 'logprobs' is {shape(logprobs)}, not an object")
    fields: dict[str, Any] = {f: logprobs.get(f) for f in ("tokens", "text_offset", "token_logprobs")}
    for f, v in fields.items():
        if not isinstance(v, list) or not v:
            raise ValueError(f"its 'logprobs.{f}' is {shape(v) if v != [] else 'empty'}, not a list of the prompt's "
                             "tokens")
    tokens, offsets, values = fields.values()
    if not len(tokens) == len(offsets) == len(values):
        raise ValueError(f"it has {len(tokens)} tokens, {len(offsets)} offsets and {len(values)} log-probs")
    end = 0
    for k, (t, o) in enumerate(zip(tokens, offsets)):
        if not isinstance(t, str):
            raise ValueError(f"token {k} is {shape(t)}, not a string")
        if type(o) is not int or o != end:
            raise ValueError(f"token {k} ({t!r:.40}) is at text offset {o!r:.40}, but the tokens before it end at "
                             f"{end}")
        end += len(t)
        _check_logprob(k, t, values[k])
    text = "".join(tokens)
    start = 0  # characters before the prompt: a start token's
    if _differs(text, prompt) is not None and values[0] is None and _differs(text[len(tokens[0]):], prompt) is None:
        start = len(tokens[0])
    at = _differs(text[start:], prompt)
    if at is not None:
        raise ValueError(f"its tokens spell {_cut(text)}, not the prompt sent (from character {at}: "
                         f"{_cut(text[at:])} instead of {_cut(prompt[at:])})")
    first = 1 if start else 0
    n = sum(1 for o in offsets if o - start < len(prompt))
    return [o - start for o in offsets[first:n]], values[first:n]


def _differs(text: str, prompt: str) -> int | None:
    """Where ``text`` stops spelling ``prompt`` (None: it starts with it). A U+FFFD in ``text`` stands
    for any one character: vLLM decodes the first token alone, so a first token holding part of a
    character (the prompt '日本' as bytes) is echoed as '\ufffd', one character wide as the one it begins.

    >>> _differs("The cat sat down", "The cat sat"), _differs("\ufffd本 語", "日本 語"), _differs("The", "The cat")
    (None, None, 3)
    """
    for i, (a, b) in enumerate(zip(text, prompt)):
        if a != b and a != "\ufffd":
            return i
    return None if len(text) >= len(prompt) else len(text)


def _check_logprob(k: int, token: str, v: Any) -> None:
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"token {k} ({token!r:.40}) has {shape(v)} as its log-prob, not a number")
    if not math.isfinite(v) or v > MAX_LOGPROB:
        raise ValueError(f"token {k} ({token!r:.40}) has the log-prob {v!r}, not a finite number <= 0")


def _cut(text: str, n: int = 60) -> str:
    return repr(text) if len(text) <= n else repr(text[:n]) + "..."


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
    ends = [*offsets[1:n], prompt_chars]
    # a byte-level token holding part of a character decodes to '' (zero width): it belongs to
    # the text that follows it, so one starting at the boundary is the continuation's
    return [values[k] for k in range(n) if ends[k] > context_chars or offsets[k] >= context_chars]


class ApiScorer(Scorer):
    """log P(candidate | query) from a served causal LM (``reduction``: ``sum`` or ``mean``); its ``kind``,
    ``served``, is one of :data:`probegen.scorers.CAUSAL_KINDS`, so every task treats it as a causal LM."""

    kind = SERVED
    #: prompts per request
    default_batch_size = 16
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
        for (_q, c), (ctx, cont) in zip(pairs, split):
            if not ctx:
                raise ProbegenError(f"{self.name}: the query is empty, so the server cannot score the first token of "
                                    f"{c!r}")
            if not cont:
                raise ValueError(f"candidate {c!r} has no tokens")
        batches = [split[i : i + self.batch_size] for i in range(0, len(split), self.batch_size)]
        # the first request alone finds max_tokens
        first = [self._request(batches[0])] if self.client.counters["requests"] == 0 and batches else []
        results = first + list(self._pool.map(self._request, batches[len(first) :]))
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
        out = []
        checked = prompt_logprobs(body, prompts, self.client, self.endpoint.base, self.name)
        for (ctx, cont), (offsets, values) in zip(batch, checked):
            vals = continuation_logprobs({"text_offset": offsets, "token_logprobs": values}, len(ctx),
                                         len(ctx) + len(cont))
            if not vals or any(v is None for v in vals):
                raise self.client.error(f"{self.endpoint.base} gave no log-prob for part of {cont!r} after "
                                        f"{ctx[-40:]!r}")
            total = float(sum(vals))
            out.append(total / len(vals) if self.reduction == "mean" else total)
        return out

    def close(self) -> None:
        """Close the connections, the worker threads and the score cache."""
        self._pool.shutdown(wait=False)
        self.client.close()
        super().close()


def prompt_logprobs(body: Any, prompts: list[str], client: Any, base: str,
                    name: str) -> list[tuple[list[int], list[float | None]]]:
    """The checked (offsets, log-probs) of each prompt's tokens in a completions answer of the server at ``base``
    for model ``name`` (see the module doc); a wrong answer is ``client.error``."""
    url = f"{base}/completions"
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(choices, list):
        what = (f"{shape(body)}, not an object" if not isinstance(body, dict)
                else f"{shape(choices)} as its 'choices'")
        raise client.error(f"{url} answered {what} (a list of choices, one per prompt, was expected)")
    if len(choices) != len(prompts):
        raise client.error(f"{url} answered {len(choices)} choices for {len(prompts)} prompts")
    bad = next((c for c in choices if not isinstance(c, dict)), None)
    if bad is not None:
        raise client.error(f"{url} answered {shape(bad)} as a choice, not an object")
    index = [c.get("index") for c in choices]
    if any(i is not None for i in index):
        if not all(type(i) is int for i in index) or sorted(index) != list(range(len(prompts))):
            raise client.error(f"{url} numbered its {len(choices)} choices {index!r:.80}, not 0 to "
                                    f"{len(prompts) - 1}")
        choices = sorted(choices, key=lambda c: c["index"])
    out = []
    for i, (prompt, ch) in enumerate(zip(prompts, choices)):
        lp = ch.get("logprobs")
        if not lp or (isinstance(lp, dict) and not lp.get("token_logprobs")):
            raise client.error(
                f"{base} returned no prompt log-probs for {name} (echo + logprobs): a chat-only "
                "API cannot be scored this way; use a server with a completions endpoint, or the generative method")
        try:
            out.append(prompt_tokens(lp, prompt))
        except ValueError as e:
            raise client.error(f"{url}: the answer to prompt {i} of the request is wrong: {e}; nothing of its "
                                    "chunk was cached") from None
    return out
