"""A small, robust JSON client for OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, APIs).

Retries with exponential backoff and full jitter on 429, 5xx, timeouts and dropped connections
(honouring ``Retry-After``); one-line :class:`ApiError` for everything else. Nothing a server sends is
believed blindly: a body is decoded (gzip or deflate, by probegen itself) up to :data:`MAX_BODY`
bytes, no further, so a compressed bomb costs at most that; a body that is not JSON is an ApiError.
The API key comes from an environment variable, sent as ``Authorization: Bearer``, and never appears
in a message: :func:`redact` masks it (and any URL's ``user:password@``) in every error line and in
whatever probegen keeps of the server's answers; an ``--api-base`` holding credentials is refused.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit

import httpx

from ..errors import ProbegenError
from ..io import json_type

#: statuses worth another try: rate limits and server-side failures
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: the most bytes a response body may hold once decoded (a compressed body is inflated this far, no further)
MAX_BODY = 64 * 2**20
#: a key shorter than this is a placeholder (``EMPTY``), not a secret: masking it would garble answers
MIN_SECRET = 8
#: content codings probegen asks for and decodes itself
_CODINGS = ("gzip", "x-gzip", "deflate")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@]*@")


#: what a JSON value is, for an error line (the name the API clients import)
shape = json_type


class ApiError(ProbegenError):
    """A request the server refused or kept failing (one line, never holding the key)."""


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` (of MIN_SECRET characters or more) and every URL's
    ``user:password@`` replaced by ``***``.

    >>> redact("GET https://me:pw@host/v1 with sk-12345678 failed", "sk-12345678")
    'GET https://***@host/v1 with *** failed'
    >>> redact("EMPTY stays", "EMPTY")
    'EMPTY stays'
    """
    for s in secrets:
        if s and len(s) >= MIN_SECRET:
            text = text.replace(s, "***")
    return _USERINFO.sub(r"\1***@", text)


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach a server: base URL (``.../v1``), key variable, timeout, retries.

    >>> Endpoint("http://127.0.0.1:8000/v1/").base
    'http://127.0.0.1:8000/v1'
    >>> Endpoint("https://me:sk-secret-key@host/v1")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probegen.errors.ProbegenError: --api-base https://***@host/v1 holds credentials (user:password@): give the key in
    $OPENAI_API_KEY instead (--api-key-env names another variable); it is sent as a Bearer token and never written
    """

    base: str
    key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    max_retries: int = 6
    backoff: float = 0.5  # seconds before the first retry; doubles each time, capped at 30 s

    def __post_init__(self) -> None:
        base = self.base.strip().rstrip("/")
        shown = redact(base)
        try:
            parts = urlsplit(base)
            host = parts.hostname
        except ValueError:
            parts, host = None, None
        if parts is None or parts.scheme not in ("http", "https") or not host:
            raise ProbegenError(f"--api-base must be an http(s) URL such as http://127.0.0.1:8000/v1, not {shown!r}")
        if "@" in parts.netloc:
            raise ProbegenError(f"--api-base {shown} holds credentials (user:password@): give the key in "
                                f"${self.key_env} instead (--api-key-env names another variable); it is sent as a "
                                "Bearer token and never written")
        if parts.query or parts.fragment:
            raise ProbegenError(f"--api-base must be the server's plain /v1 URL, without '?...' or '#...' "
                                f"(such as {parts.scheme}://{parts.netloc}{parts.path})")
        object.__setattr__(self, "base", base)

    def key(self) -> str | None:
        """The API key from the environment (None: no Authorization header)."""
        return os.environ.get(self.key_env) or None

    def redact(self, text: str) -> str:
        """``text`` with the key's value and URL credentials masked (see :func:`redact`)."""
        return redact(text, self.key())


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


def read_body(chunks: Iterable[bytes], coding: str, where: str, cap: int | None = None) -> bytes:
    """The decoded body of raw ``chunks`` sent with ``Content-Encoding: coding``, at most ``cap``
    bytes (default :data:`MAX_BODY`); an ApiError as soon as it would grow past that.

    >>> import gzip
    >>> read_body([gzip.compress(b'{"a": 1}')], "gzip", "u")
    b'{"a": 1}'
    >>> read_body([gzip.compress(b" " * 5000)], "gzip", "u", cap=4096)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probegen.scorers.http.ApiError: u answered a body of more than 4.0 KiB once decoded (the limit): not a plausible
    answer
    """
    cap = MAX_BODY if cap is None else cap
    codings = [c for c in (c.strip().lower() for c in coding.split(",")) if c not in ("", "identity")]
    if len(codings) > 1 or (codings and codings[0] not in _CODINGS):
        raise ApiError(f"{where} answered with Content-Encoding {coding!r}, which probegen does not decode "
                       "(it asks for gzip or deflate)")
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if codings else None  # | 32: a gzip or zlib header
    out = bytearray()
    too_big = f"{where} answered a body of more than {_size(cap)} once decoded (the limit): not a plausible answer"
    try:
        for data in chunks:
            while data and not (inflate is not None and inflate.eof):  # after the stream's end: nothing more is read
                if inflate is None:
                    piece, data = data, b""
                else:
                    piece = inflate.decompress(data, cap + 1 - len(out))
                    data = inflate.unconsumed_tail
                out += piece
                if len(out) > cap:
                    raise ApiError(too_big)
            if inflate is not None and inflate.eof:
                break
        if inflate is not None:
            out += inflate.flush()  # at most what zlib holds back: its window
            if not inflate.eof:
                raise ApiError(f"{where} answered a {codings[0]} body that ends before its compressed stream does")
    except zlib.error as e:
        raise ApiError(f"{where} answered a {codings[0]} body that does not decode ({e})") from None
    if len(out) > cap:
        raise ApiError(too_big)
    return bytes(out)


def _size(n: int) -> str:
    """``n`` bytes in KiB, MiB or GiB.

    >>> _size(64 * 2**20), _size(1536)
    ('64.0 MiB', '1.5 KiB')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


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
        head = {"Accept-Encoding": "gzip, deflate"}  # what read_body decodes
        return {**head, "Authorization": f"Bearer {key}"} if key else head

    def request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer of ``method path`` (``payload`` as the JSON body), retried on transient failures."""
        url = f"{self.endpoint.base}/{path.lstrip('/')}"
        last = ""
        for attempt in range(self.endpoint.max_retries + 1):
            with self._lock:
                self.counters["requests"] += 1
                self.counters["retries"] += int(attempt > 0)
            try:
                status, headers, body = self._send(method, url, payload)
            except httpx.TransportError as e:  # refused, dropped, timed out: the server may come back
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                retry_after = None
            else:
                if status < 400:
                    return self._json(status, body, url)
                if status not in RETRY_STATUSES:
                    raise self._refusal(status, body, url)
                last = f"HTTP {status} {_message(body)}"
                retry_after = headers.get("retry-after")
            if attempt < self.endpoint.max_retries:
                self._sleep(backoff_delay(attempt, self.endpoint.backoff, retry_after))
        raise self.error(f"{url} failed {self.endpoint.max_retries + 1} times; last: {last}")

    def _send(self, method: str, url: str, payload: dict[str, Any] | None) -> tuple[int, httpx.Headers, bytes]:
        """(status, headers, decoded body) of one request; the body is read no further than MAX_BODY."""
        with self._http.stream(method, url, json=payload, headers=self._headers()) as r:
            try:
                body = read_body(r.iter_raw(), r.headers.get("content-encoding", ""), url)
            except ApiError as e:
                raise self.error(str(e)) from None
            return r.status_code, r.headers, body

    def _json(self, status: int, body: bytes, url: str) -> Any:
        try:
            return json.loads(body)
        except ValueError:  # also a body that is not UTF-8
            raise self.error(f"{url} answered {status} with a body that is not JSON") from None
        except RecursionError:
            raise self.error(f"{url} answered {status} with JSON nested too deeply to read") from None

    def _refusal(self, status: int, body: bytes, url: str) -> ApiError:
        msg = _message(body)
        if status in (401, 403):
            how = f"${self.endpoint.key_env} is {'set' if self.endpoint.key() else 'not set'}"
            return self.error(f"{url} rejected the API key (HTTP {status}: {msg}); {how} (--api-key-env names the "
                              "variable)")
        if status == 404:
            return self.error(f"{url} not found (HTTP 404: {msg}); is --api-base the server's /v1 URL?")
        return self.error(f"{url} refused the request (HTTP {status}: {msg})")

    def error(self, text: str) -> ApiError:
        """An ApiError of ``text`` on one line, the key's value and URL credentials masked."""
        return ApiError(self.endpoint.redact(" ".join(text.split())))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()


def _message(body: bytes) -> str:
    """The server's error message on one line (OpenAI style ``{"error": {"message": ...}}`` or text).

    >>> _message(b'{"error": {"message": "no such model"}}'), _message(b"Bad Gateway")
    ('no such model', 'Bad Gateway')
    """
    try:
        doc: Any = json.loads(body)
    except (ValueError, RecursionError):
        doc = body[:2000].decode("utf-8", "replace")
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        doc = err.get("message", err) if isinstance(err, dict) else err
        if isinstance(doc, dict):
            doc = doc.get("detail", doc)
    text = " ".join(str(doc).split())
    return text[:300] + (" ..." if len(text) > 300 else "")
