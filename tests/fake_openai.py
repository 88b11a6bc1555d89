"""A small OpenAI-compatible server for tests: real HTTP on 127.0.0.1 (a free port), in a thread.

It answers correctly by default: ``GET /v1/models`` lists one model, ``POST /v1/completions``
(``echo`` + ``logprobs``) returns each prompt's tokens, character offsets and log-probs computed
by a real causal LM in process (:class:`SmolLM2Logprobs`: the bundled SmolLM2-135M in float32,
the weights the in-process scorer uses, so its scores are the in-process model's), and ``POST
/v1/chat/completions`` answers with a function of the conversation. With ``max_tokens`` >= 1 a
generated token follows the prompt's, as vLLM does; ``refuse_zero`` makes it refuse
``max_tokens: 0`` as some servers do. ``top`` (given the prompt, or the conversation) gives the
first generated token's top log-probs (token text -> log-prob): a completions request without
``echo`` then answers that token alone with them in ``top_logprobs`` (its ``tokens`` are the
generated one only, as a server's are), and a chat request with ``logprobs`` carries them in
``logprobs.content[0].top_logprobs``.

One misbehaviour at a time is set by ``server.fault``: a function ``(route, answer) -> answer``
given the route (``models``, ``completions``, ``chat/completions``) and the correct JSON answer,
returning what to send instead: other JSON, or a :class:`Raw` body (any bytes, an iterable of
chunks sent chunked, any headers). :data:`FAULTS` holds the named ones of the tests. Every
request is recorded in ``server.requests``; bytes written in ``server.sent``.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

Route = str
Fault = Callable[[Route, Any], Any]


@dataclass
class Raw:
    """A body sent as is: ``body`` bytes (with a Content-Length) or an iterable of chunks (sent
    with chunked transfer encoding), with ``headers`` and ``status``."""

    body: bytes | Iterable[bytes]
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200


def _bytes_to_unicode() -> dict[str, int]:
    """The byte-level BPE alphabet (GPT-2's): printable character -> byte."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class SmolLM2Logprobs:
    """Tokens and log-probs of a prompt under the bundled SmolLM2-135M (float32, CPU), as vLLM
    returns them: token texts that spell the prompt (a token holding part of a character is
    ``''``, the character going with the token that completes it), the first log-prob null.
    Memoized per prompt. It loads the bundled model by name, never through a server."""

    def __init__(self) -> None:
        import torch

        from probegen.models import load_hf, resolve_model

        self.torch = torch
        self.model, self.tok = load_hf(resolve_model("smollm2-135m"), "causal", "cpu", "float32", None)
        self._bytes = _bytes_to_unicode()
        self._lock = threading.Lock()
        self.calls = 0

    @functools.lru_cache(maxsize=None)  # noqa: B019 - one tokenizer per test server, alive for the whole run
    def __call__(self, prompt: str) -> tuple[tuple[str, ...], tuple[float | None, ...]]:
        ids = self.tok(prompt, add_special_tokens=False).input_ids
        raw = [bytes(self._bytes[c] for c in t) for t in self.tok.convert_ids_to_tokens(ids)]
        texts, done = [], ""
        for k in range(len(raw)):
            upto = b"".join(raw[: k + 1]).decode("utf-8", "ignore")  # an unfinished character waits
            texts.append(upto[len(done):])
            done = upto
        assert done == prompt, (done, prompt)
        with self._lock, self.torch.inference_mode():  # one forward at a time: 2 shared cores
            logits = self.model(self.torch.tensor([ids])).logits[0].float()
            lp = self.torch.log_softmax(logits, -1)
            self.calls += 1
        values = [None] + [float(lp[k - 1, ids[k]]) for k in range(1, len(ids))]
        return tuple(texts), tuple(values)


def word_answer(messages: list[dict[str, str]]) -> str:
    """A well-formed answer: the identity matching ``1: A``, ``2: B``, ... for a matching question
    (one line per numbered context), else ``A``."""
    import re

    user = messages[-1]["content"] if messages else ""
    rows = re.findall(r"(?m)^(\d+)\. ", user.split("Definitions:")[0])
    return "\n".join(f"{n}: {chr(64 + i)}" for i, n in enumerate(rows, 1)) if rows else "A"


class FakeOpenAI:
    """The server (see the module doc). ``key``: the Bearer token it requires (None: any);
    ``info``: extra fields of its model in ``/models``."""

    def __init__(self, logprobs: Callable[[str], tuple[Iterable[str], Iterable[float | None]]] | None = None,
                 chat: Callable[[list[dict[str, str]]], str] = word_answer, model: str = "smollm2",
                 key: str | None = None, info: dict[str, Any] | None = None, refuse_zero: bool = False,
                 top: Callable[[Any], dict[str, float]] | None = None) -> None:
        self.logprobs, self.chat, self.model, self.key, self.top = logprobs, chat, model, key, top
        self.info = {"owned_by": "probegen-tests", "root": model, "parent": None, "max_model_len": 2048, **(info or {})}
        self.refuse_zero = refuse_zero
        self.fault: Fault | None = None
        self.requests: list[tuple[Route, Any]] = []
        self.sent = 0
        self._lock = threading.Lock()
        self.errors: list[str] = []  # exceptions in the server's threads (a client that hung up), kept off stderr
        fake = self

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                import sys

                with fake._lock:
                    fake.errors.append(repr(sys.exc_info()[1]))

        self._server = Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.port = self._server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                         name="fake-openai", daemon=True)
        self._thread.start()

    def __enter__(self) -> "FakeOpenAI":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving (waiting at most ``timeout`` seconds) and close the socket."""
        stopper = threading.Thread(target=self._server.shutdown, daemon=True)
        stopper.start()
        stopper.join(timeout)
        self._thread.join(timeout)
        self._server.server_close()

    def routes(self, route: Route) -> int:
        """How many requests ``route`` got."""
        return sum(r == route for r, _ in self.requests)

    # ---- the correct answers ------------------------------------------------------------------------
    def answer(self, route: Route, payload: Any) -> tuple[int, Any]:
        if route == "models":
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, **self.info}]}
        if not isinstance(payload, dict) or payload.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{payload.get('model')}` does not exist.", "code": 404}}
        if route == "completions":
            return self._completions(payload)
        if route == "chat/completions":
            text = self.chat(payload["messages"])
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}
            if self.top is not None and payload.get("logprobs"):
                tops = [{"token": t, "logprob": v} for t, v in self.top(payload["messages"]).items()]
                choice["logprobs"] = {"content": [{"token": text[:1], "logprob": -0.1, "top_logprobs": tops}]}
            return 200, {"id": "chatcmpl-0", "object": "chat.completion", "created": 0, "model": self.model,
                         "choices": [choice]}
        return 404, {"error": {"message": f"no route {route}"}}

    def _completions(self, payload: dict[str, Any]) -> tuple[int, Any]:
        max_tokens = payload.get("max_tokens", 16)
        if self.refuse_zero and max_tokens < 1:
            return 400, {"error": {"message": "max_tokens must be at least 1, got 0.", "code": 400}}
        prompts = payload["prompt"] if isinstance(payload["prompt"], list) else [payload["prompt"]]
        choices = []
        if self.top is not None and not payload.get("echo") and max_tokens >= 1:  # the next token's top list
            for i, prompt in enumerate(prompts):
                choices.append({"index": i, "text": " the", "finish_reason": "length",
                                "logprobs": {"tokens": [" the"], "token_logprobs": [-1.5], "text_offset": [len(prompt)],
                                             "top_logprobs": [self.top(prompt)]}})
            return 200, {"id": "cmpl-0", "object": "text_completion", "created": 0, "model": self.model,
                         "choices": choices}
        for i, prompt in enumerate(prompts):
            tokens, values = map(list, self.logprobs(prompt))
            if max_tokens >= 1:  # one greedy-looking token after the prompt, as a server generates it
                tokens.append(" the")
                values.append(-1.5)
            offsets = [sum(map(len, tokens[:k])) for k in range(len(tokens))]
            choices.append({"index": i, "text": "".join(tokens), "finish_reason": "length",
                            "logprobs": {"tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                                         "top_logprobs": [None] * len(tokens)}})
        return 200, {"id": "cmpl-0", "object": "text_completion", "created": 0, "model": self.model, "choices": choices}

    # ---- HTTP ------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                route = self.path.split("?")[0].removeprefix("/v1/").strip("/")
                payload = json.loads(body) if body else None
                with fake._lock:
                    fake.requests.append((route, payload))
                if fake.key is not None and self.headers.get("authorization") != f"Bearer {fake.key}":
                    return self._send(401, {"error": {"message": "Unauthorized", "code": 401}})
                status, doc = fake.answer(route, payload)
                if status == 200 and fake.fault is not None:
                    doc = fake.fault(route, copy.deepcopy(doc))
                self._send(status, doc)

            def _send(self, status: int, doc: Any) -> None:
                raw = doc if isinstance(doc, Raw) else Raw(json.dumps(doc).encode(), status=status)
                self.send_response(raw.status)
                headers = {"content-type": "application/json", **raw.headers}
                chunked = not isinstance(raw.body, bytes)
                headers["transfer-encoding" if chunked else "content-length"] = "chunked" if chunked else str(len(raw.body))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    for chunk in ([raw.body] if not chunked else raw.body):
                        data = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk
                        if chunk or not chunked:
                            self.wfile.write(data)
                            with fake._lock:
                                fake.sent += len(chunk)
                    if chunked:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client stopped reading (broken pipe, reset): fine
                    self.close_connection = True

            do_GET = do_POST = _serve

        return Handler


# ---- misbehaviours ---------------------------------------------------------------------------------
def _each_logprobs(change: Callable[[dict[str, Any], str], None]) -> Fault:
    """A fault that changes every completions choice's ``logprobs`` (given the prompt's text)."""

    def fault(route: Route, doc: Any) -> Any:
        if route == "completions":
            for ch in doc["choices"]:
                change(ch["logprobs"], ch["text"])
        return doc

    return fault


def _truncate_left(lp: dict[str, Any], text: str, k: int = 3) -> None:
    """The answer of a prompt that lost its first ``k`` tokens (a server cutting a long prompt from the left)."""
    for f in ("tokens", "token_logprobs", "top_logprobs"):
        del lp[f][:k]
    lp["token_logprobs"][0] = None
    lp["text_offset"] = [sum(map(len, lp["tokens"][:i])) for i in range(len(lp["tokens"]))]


def _fewer_tokens(lp: dict[str, Any], text: str) -> None:
    """The last two tokens are missing."""
    for f in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
        del lp[f][-2:]


def _shift_offsets(lp: dict[str, Any], text: str) -> None:
    """Every offset after the first one character later."""
    lp["text_offset"] = [0] + [o + 1 for o in lp["text_offset"][1:]]


def _booleans(lp: dict[str, Any], text: str) -> None:
    """Log-probs sent as booleans (``true`` for a likely token)."""
    lp["token_logprobs"] = [None] + [v > -3 for v in lp["token_logprobs"][1:]]


def _strings(lp: dict[str, Any], text: str) -> None:
    lp["token_logprobs"] = [None] + [repr(v) for v in lp["token_logprobs"][1:]]


def _nan(lp: dict[str, Any], text: str) -> None:
    lp["token_logprobs"][-2] = float("nan")


def _replace(route_: Route, make: Callable[[Any], Any]) -> Fault:
    return lambda route, doc: make(doc) if route == route_ else doc


#: the misbehaviours of the tests, by name
FAULTS: dict[str, Fault] = {
    "truncate-left": _each_logprobs(_truncate_left),
    "fewer-tokens": _each_logprobs(_fewer_tokens),
    "shifted-offsets": _each_logprobs(_shift_offsets),
    "boolean-logprobs": _each_logprobs(_booleans),
    "string-logprobs": _each_logprobs(_strings),
    "nan-logprob": _each_logprobs(_nan),
    "list-body": _replace("completions", lambda doc: doc["choices"]),
    "string-choice": _replace("completions", lambda doc: {**doc, "choices": ["oops"] * len(doc["choices"])}),
    "chat-string-message": _replace("chat/completions",
                                    lambda doc: {**doc, "choices": [{**doc["choices"][0], "message": "1: A"}]}),
    "chat-list-body": _replace("chat/completions", lambda doc: doc["choices"]),
    "chat-list-content": _replace("chat/completions", lambda doc: {**doc, "choices": [
        {**doc["choices"][0], "message": {"role": "assistant", "content": [{"type": "text", "text": "1: A"}]}}]}),
    "models-string-entry": _replace("models", lambda doc: {**doc, "data": ["smollm2"]}),
    "models-list-owner": _replace("models", lambda doc: {**doc, "data": [{**doc["data"][0], "owned_by": ["x"]}]}),
}


def gzip_bomb(decoded: int, block: int = 2**20) -> Iterable[bytes]:
    """A gzip stream of ``decoded`` spaces, made lazily: each MiB compresses to ~1 KiB and the same
    compressed block is repeated (full flushes make blocks independent). Its trailer's CRC is not
    that of the data: a client must give up long before it gets there."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = comp.compress(b" " * block) + comp.flush(zlib.Z_FULL_FLUSH)
    again = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = again.compress(b" " * block) + again.flush(zlib.Z_FULL_FLUSH)
    yield head
    for _ in range(decoded // block - 1):
        yield piece
    yield again.flush() + b"\0" * 8
