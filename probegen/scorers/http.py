"""A small, robust JSON client for OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, APIs).

Retries with exponential backoff and full jitter on 429, 5xx, timeouts and dropped connections
(honouring ``Retry-After``); one-line :class:`ApiError` for everything else (401/403: the key,
404: the route or model, other 4xx: the server's own message). The API key is read from an
environment variable when a request is sent and is never part of a message: any echo of it in a
server's reply is masked before it reaches an error line.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import httpx

from ..errors import ProbegenError

#: statuses worth another try: rate limits and server-side failures
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ApiError(ProbegenError):
    """A request the server refused or kept failing (one line, never holding the key)."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach a server: base URL (``.../v1``), key variable, timeout, retries.

    >>> Endpoint("http://127.0.0.1:8000/v1/").base
    'http://127.0.0.1:8000/v1'
    """

    base: str
    key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    max_retries: int = 6
    backoff: float = 0.5  # seconds before the first retry; doubles each time, capped at 30 s

    def __post_init__(self) -> None:
        base = self.base.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ProbegenError(f"--api-base must be an http(s) URL such as http://127.0.0.1:8000/v1, not {self.base!r}")
        object.__setattr__(self, "base", base)

    def key(self) -> str | None:
        """The API key from the environment (None: no Authorization header)."""
        return os.environ.get(self.key_env) or None


def backoff_delay(attempt: int, base: float, retry_after: str | None = None, cap: float = 30.0) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): ``Retry-After`` if the server set one,
    else full jitter over ``base * 2**attempt`` (capped), so many clients do not retry in step.

    >>> backoff_delay(3, 0.5, retry_after="2")
    2.0
    >>> 0 <= backoff_delay(10, 0.5) <= 30.0
    True
    """
    if retry_after:
        try:
            return min(cap, max(0.0, float(retry_after)))
        except ValueError:
            pass
    return random.uniform(0, min(cap, base * 2**attempt))


class Client:
    """Thread-safe JSON requests to one :class:`Endpoint`, retried as described in the module doc."""

    def __init__(self, endpoint: Endpoint, connections: int = 8, sleep: Callable[[float], None] = time.sleep) -> None:
        self.endpoint = endpoint
        self._sleep = sleep
        limits = httpx.Limits(max_connections=max(1, connections), max_keepalive_connections=max(1, connections))
        self._http = httpx.Client(timeout=httpx.Timeout(endpoint.timeout, connect=10.0), limits=limits)
        self._lock = threading.Lock()
        self.counters = {"requests": 0, "retries": 0}

    def _headers(self) -> dict[str, str]:
        key = self.endpoint.key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer of ``method path`` (``payload`` as the JSON body), retried on transient failures."""
        url = f"{self.endpoint.base}/{path.lstrip('/')}"
        last = ""
        for attempt in range(self.endpoint.max_retries + 1):
            if attempt:
                with self._lock:
                    self.counters["retries"] += 1
            with self._lock:
                self.counters["requests"] += 1
            try:
                r = self._http.request(method, url, json=payload, headers=self._headers())
            except httpx.TransportError as e:  # refused, dropped, timed out: the server may come back
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                retry_after = None
            else:
                if r.status_code < 400:
                    return self._json(r, url)
                if r.status_code not in RETRY_STATUSES:
                    raise self._refusal(r, url)
                last = f"HTTP {r.status_code} {_message(r)}"
                retry_after = r.headers.get("retry-after")
            if attempt < self.endpoint.max_retries:
                self._sleep(backoff_delay(attempt, self.endpoint.backoff, retry_after))
        raise ApiError(self._mask(f"{url} failed {self.endpoint.max_retries + 1} times; last: {last}"))

    def _json(self, r: httpx.Response, url: str) -> Any:
        try:
            return r.json()
        except ValueError:
            raise ApiError(f"{url} answered {r.status_code} with a body that is not JSON") from None

    def _refusal(self, r: httpx.Response, url: str) -> ApiError:
        msg = _message(r)
        if r.status_code in (401, 403):
            how = f"${self.endpoint.key_env} is {'set' if self.endpoint.key() else 'not set'}"
            return ApiError(self._mask(f"{url} rejected the API key (HTTP {r.status_code}: {msg}); {how} (--api-key-env names the variable)"))
        if r.status_code == 404:
            return ApiError(self._mask(f"{url} not found (HTTP 404: {msg}); is --api-base the server's /v1 URL?"))
        return ApiError(self._mask(f"{url} refused the request (HTTP {r.status_code}: {msg})"))

    def _mask(self, text: str) -> str:
        key = self.endpoint.key()
        return text.replace(key, "***") if key else text

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()


def _message(r: httpx.Response) -> str:
    """The server's error message on one line (OpenAI style ``{"error": {"message": ...}}`` or text)."""
    try:
        body = r.json()
    except ValueError:
        body = r.text
    if isinstance(body, dict):
        err = body.get("error", body)
        body = err.get("message", err) if isinstance(err, dict) else err
        if isinstance(body, dict):
            body = body.get("detail", body)
    text = " ".join(str(body).split())
    return text[:300] + (" ..." if len(text) > 300 else "")
