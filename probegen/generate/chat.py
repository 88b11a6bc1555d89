"""Chat backends of the generative protocol: :class:`LocalChat` (transformers, greedy, left-padded
batches sorted by length) and :class:`ApiChat` (``{api_base}/chat/completions``, ``concurrency`` in
flight, each answer checked and the key masked), answering through one :class:`ResponseCache` (SQLite,
keyed by the sha256 of ``[identity, messages, max_tokens, seed, temperature]``, never the key nor the
device; committed as answers arrive, so a killed run resumes and a second run asks nothing).
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, cast

from ..errors import ProbegenError
from ..paths import cache_dir
from ..progress import progress_bar
from ..score_cache import SqliteStore

#: bump when the way answers are made changes, so older cached answers are not reused
CHAT_VERSION = 1
#: answers are committed to the cache at least this often (seconds), and every ``commit_every`` answers
COMMIT_S = 5.0

Message = Mapping[str, str]
Conversation = Sequence[Message]


@dataclass(frozen=True)
class Response:
    """One answer: its text, why generation stopped (``stop``, ``length``, None), whether it was cached."""

    text: str
    finish_reason: str | None = None
    cached: bool = False


# ---- the response cache ---------------------------------------------------------------------------
def response_key(identity: Mapping[str, Any], messages: Conversation, max_tokens: int, seed: int,
                 temperature: float) -> str:
    """The cache key of one answer: sha256 of ``[identity, messages, max_tokens, seed, temperature]``.

    >>> k = response_key({"model": "m"}, [{"role": "user", "content": "Hi"}], 8, 0, 0.0)
    >>> len(k), k == response_key({"model": "m"}, [{"content": "Hi", "role": "user"}], 8, 0, 0.0)
    (64, True)
    >>> k == response_key({"model": "m"}, [{"role": "user", "content": "Hi"}], 8, 1, 0.0)
    False
    """
    blob = json.dumps([dict(identity), [dict(m) for m in messages], int(max_tokens), int(seed), float(temperature)],
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache(SqliteStore):
    """key -> (text, finish_reason) in the score cache's SQLite store (another table)."""

    table, columns_sql, columns = "responses", "text TEXT NOT NULL, finish_reason TEXT", ("text", "finish_reason")
    what, then = "response cache", "starting a fresh one (its questions are asked again)"

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path if path is not None else cache_dir() / "responses.sqlite")

    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        """The cached answers of those ``keys`` that are present (``cached=True``)."""
        return {k: Response(t, f, cached=True) for k, (t, f) in self.get_rows(keys).items()}

    def put_many(self, items: Iterable[tuple[str, Response]] | Mapping[str, Response]) -> None:
        """Store ``(key, response)`` pairs and commit them (one transaction)."""
        self.put_rows([(k, r.text, r.finish_reason)
                       for k, r in (items.items() if isinstance(items, Mapping) else items)])


CacheArg = bool | str | Path | ResponseCache | None


def plain_conversation(conv: Conversation) -> list[dict[str, str]]:
    """``conv`` as plain ``{"role", "content"}`` dicts (what is hashed and sent)."""
    if isinstance(conv, (str, bytes)) or not conv:
        raise ValueError(f"a conversation is a non-empty list of messages, not {conv!r:.80}")
    out = []
    for m in conv:
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"a message is a dict with string 'role' and 'content', not {m!r:.80}")
        out.append({"role": m["role"], "content": m["content"]})
    return out


def render_prompt(tokenizer: Any, name: str, messages: Conversation) -> str:
    """``messages`` through ``tokenizer``'s chat template, the assistant's turn opened (``name``: the model)."""
    try:
        return cast(str, tokenizer.apply_chat_template(plain_conversation(messages), tokenize=False,
                                                      add_generation_prompt=True))
    except Exception as e:  # noqa: BLE001 - jinja's TemplateError, or the template's own raise_exception
        raise ProbegenError(f"{name}: its chat template refused the conversation ({type(e).__name__}: "
                            f"{' '.join(str(e).split())[:200]})") from None


# ---- what both backends share: cache, chunked commits, progress, counters ---------------------------
class ChatModel:
    """What the generative scorer asks (:meth:`chat`): cache look-ups, commits as answers arrive, progress
    and counters; a backend implements :meth:`_stream` and :meth:`identity`."""

    #: answers committed to the cache at once (at least every COMMIT_S seconds)
    commit_every = 16

    def __init__(self, name: str, cache: CacheArg = True, temperature: float = 0.0) -> None:
        if temperature < 0:
            raise ProbegenError(f"temperature must be >= 0, not {temperature}")
        self.name = name
        self.temperature = float(temperature)
        self._cache = None if cache is None or cache is False else cache if isinstance(cache, ResponseCache) else \
            ResponseCache(None if cache is True else cache)
        self.counters = {"responses": 0, "cached": 0, "truncated": 0, "seconds": 0.0}

    def identity(self) -> dict[str, Any]:
        """What identifies model and backend (see the module doc)."""
        raise NotImplementedError

    def _stream(self, conversations: list[list[dict[str, str]]], max_tokens: int,
                seed: int) -> Iterator[tuple[int, Response]]:
        """(index, answer) for each conversation, in any order, as they are ready."""
        raise NotImplementedError

    def chat(self, conversations: Sequence[Conversation], *, max_tokens: int, seed: int,
             progress: bool = False) -> list[str]:
        """The answer text to each conversation, in order (see :meth:`respond`)."""
        return [r.text for r in self.respond(conversations, max_tokens=max_tokens, seed=seed, progress=progress)]

    def respond(self, conversations: Sequence[Conversation], *, max_tokens: int, seed: int,
                progress: bool = False) -> list[Response]:
        """The :class:`Response` to each conversation, in order: cached, or asked (each distinct one once)."""
        if int(max_tokens) < 1:
            raise ProbegenError(f"max_tokens must be at least 1, not {max_tokens}")
        convs = [plain_conversation(c) for c in conversations]
        ident = self.identity()
        keys = [response_key(ident, c, max_tokens, seed, self.temperature) for c in convs]
        found = self._cache.get_many(keys) if self._cache is not None else {}
        todo = {k: c for k, c in zip(keys, convs) if k not in found}
        new = self._ask(todo, int(max_tokens), int(seed), progress)
        out = [found[k] if k in found else new[k] for k in keys]
        self.counters["cached"] += sum(k in found for k in keys)
        self.counters["truncated"] += sum(r.finish_reason == "length" for r in out)
        return out

    def _ask(self, todo: dict[str, list[dict[str, str]]], max_tokens: int, seed: int,
             progress: bool) -> dict[str, Response]:
        """Answers of the ``todo`` conversations (by key), committed to the cache as they arrive."""
        order = list(todo)
        got: dict[str, Response] = {}
        pending: list[tuple[str, Response]] = []
        bar = progress_bar(total=len(order), desc=f"asking {self.name}", unit="answer",
                           disable=not (progress and order))
        t0 = last = time.monotonic()
        try:
            for i, resp in self._stream([todo[k] for k in order], max_tokens, seed):
                got[order[i]] = resp
                pending.append((order[i], resp))
                self.counters["responses"] += 1
                bar.update(1)
                if len(pending) >= self.commit_every or time.monotonic() - last >= COMMIT_S:
                    self._commit(pending)
                    last = time.monotonic()
        finally:
            self._commit(pending)  # what was answered before a failure or an interrupt is kept
            bar.close()
            self.counters["seconds"] += time.monotonic() - t0
        return got

    def _commit(self, pending: list[tuple[str, Response]]) -> None:
        if self._cache is not None and pending:
            self._cache.put_many(pending)
        pending.clear()

    def stats(self) -> dict[str, Any]:
        """Answers computed and cached, answers cut at ``max_tokens`` (``truncated``), seconds generating."""
        return {**self.counters, "seconds": round(self.counters["seconds"], 3)}

    def close(self) -> None:
        """Close the response cache."""
        if self._cache is not None:
            self._cache.close()


# ---- in-process: transformers ---------------------------------------------------------------------
class LocalChat(ChatModel):
    """A transformers causal LM with a chat template, answering greedily in left-padded batches of
    ``batch_size`` conversations sorted by length; with ``temperature`` > 0 each is sampled alone after
    ``torch.manual_seed(seed)``, so its answer does not depend on its batch."""

    default_batch_size = 8

    def __init__(self, name: str, model: Any, tokenizer: Any, *, model_id: str | None = None,
                 source: Mapping[str, Any] | None = None, device: str = "cpu", dtype: str = "float32",
                 batch_size: int | None = None, cache: CacheArg = True, temperature: float = 0.0) -> None:
        template = getattr(tokenizer, "chat_template", None)
        if not template:
            raise _no_template(name)
        super().__init__(name, cache=cache, temperature=temperature)
        self.model, self.tokenizer = model, tokenizer
        self.device, self.dtype = device, dtype
        self.batch_size = max(1, int(batch_size or self.default_batch_size))
        tmpl = template if isinstance(template, str) else json.dumps(template, sort_keys=True)
        self._identity = {"backend": "transformers", "version": CHAT_VERSION, "model": model_id or name,
                          **dict(source or {}), "dtype": dtype,
                          "chat_template": hashlib.sha256(tmpl.encode("utf-8")).hexdigest()[:16]}
        eos = getattr(model.generation_config, "eos_token_id", None)
        eos = tokenizer.eos_token_id if eos is None else eos
        self._eos = set(eos if isinstance(eos, (list, tuple)) else [eos]) - {None}
        pad = getattr(tokenizer, "pad_token_id", None)
        self._pad = pad if pad is not None else min(self._eos, default=0)
        self.counters["generate_calls"] = 0

    def identity(self) -> dict[str, Any]:
        """Backend, model id and source (package version or file fingerprint), dtype, chat template hash."""
        return dict(self._identity)

    def stats(self) -> dict[str, Any]:
        """The shared counters, ``requests`` (``generate`` calls), and where the model runs."""
        return {**super().stats(), "requests": self.counters["generate_calls"], "device": self.device,
                "dtype": self.dtype}

    def encode(self, conversation: Conversation) -> list[int]:
        """Token ids of ``conversation`` rendered by the chat template, ending in the assistant's turn."""
        text = render_prompt(self.tokenizer, self.name, conversation)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _stream(self, conversations: list[list[dict[str, str]]], max_tokens: int,
                seed: int) -> Iterator[tuple[int, Response]]:
        ids = [self.encode(c) for c in conversations]
        order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))  # longest first: memory trouble shows at once
        size = 1 if self.temperature > 0 else self.batch_size
        for start in range(0, len(order), size):
            batch = order[start : start + size]
            yield from zip(batch, self._generate([ids[i] for i in batch], max_tokens, seed))

    def _generate(self, batch: list[list[int]], max_tokens: int, seed: int) -> list[Response]:
        """One ``generate`` call on left-padded ``batch``."""
        import torch

        from ..models import quiet_transformers

        width = max(len(x) for x in batch)
        dev = self.model.device
        input_ids = torch.tensor([[self._pad] * (width - len(x)) + x for x in batch], device=dev)
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch], device=dev)
        if self.temperature > 0:
            torch.manual_seed(seed)
            how: dict[str, Any] = {"do_sample": True, "temperature": self.temperature, "top_k": 0, "top_p": 1.0}
        else:
            how = {"do_sample": False}
        with torch.inference_mode(), quiet_transformers():
            out = self.model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=max_tokens,
                                      pad_token_id=self._pad, **how)
        self.counters["generate_calls"] += 1
        return [self._decode(row) for row in out[:, width:].tolist()]

    def _decode(self, new: list[int]) -> Response:
        """The answer in generated ids ``new``: up to the first end-of-turn token (then padding)."""
        stop = next((j for j, t in enumerate(new) if t in self._eos), None)
        text = self.tokenizer.decode(new if stop is None else new[:stop], skip_special_tokens=True)
        return Response(text, "length" if stop is None else "stop")


# ---- served: an OpenAI-compatible chat endpoint -----------------------------------------------------
class ApiChat(ChatModel):
    """A model served by an OpenAI-compatible server (``POST {base}/chat/completions``; ``info``: its model data)."""

    default_concurrency = 4

    def __init__(self, name: str, endpoint: Any, info: Mapping[str, Any], *, concurrency: int | None = None,
                 cache: CacheArg = True, temperature: float = 0.0) -> None:
        from ..scorers.http import Client

        super().__init__(name, cache=cache, temperature=temperature)
        self.endpoint = endpoint
        self.info = dict(info)
        self.concurrency = max(1, int(concurrency or self.default_concurrency))
        self.commit_every = max(type(self).commit_every, 2 * self.concurrency)
        self.client = Client(endpoint, connections=self.concurrency)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="probegen-chat")

    def identity(self) -> dict[str, Any]:
        """Backend, base URL and the served model's information (never the key)."""
        return {"backend": "api", "version": CHAT_VERSION, "api_base": self.endpoint.base, "served": dict(self.info)}

    def stats(self) -> dict[str, Any]:
        """The shared counters, HTTP ``requests`` and ``retries``, and the concurrency."""
        return {**super().stats(), **self.client.counters, "concurrency": self.concurrency}

    def _stream(self, conversations: list[list[dict[str, str]]], max_tokens: int,
                seed: int) -> Iterator[tuple[int, Response]]:
        futures = {self._pool.submit(self._request, c, max_tokens, seed): i for i, c in enumerate(conversations)}
        try:
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:  # after a failure, nothing more is sent
            for fut in futures:
                fut.cancel()

    def _request(self, messages: list[dict[str, str]], max_tokens: int, seed: int) -> Response:
        """One conversation's answer."""
        from ..scorers.http import ApiError

        payload = {"model": self.name, "messages": messages, "max_tokens": max_tokens,
                   "temperature": self.temperature, "seed": seed}
        try:
            body = self.client.request("POST", "chat/completions", payload)
        except ApiError as e:
            raise self._explain(e) from None
        return self._answer(body)

    def _answer(self, body: Any) -> Response:
        """The checked answer in a chat completions ``body`` (the key's value masked); else one ApiError line."""
        from ..scorers.http import shape

        url = f"{self.endpoint.base}/chat/completions"
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(body, dict):
            raise self.client.error(f"{url} answered {shape(body)}, not an object")
        if not isinstance(choices, list) or not choices:
            raise self.client.error(f"{url} answered without choices for {self.name}")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            what = (f"{shape(choice)} as its choice" if not isinstance(choice, dict)
                    else f"{shape(message)} as its message")
            raise self.client.error(f"{url} answered {what} for {self.name}, not an object")
        content, finish = message.get("content"), choice.get("finish_reason")
        for field, v in (("message.content", content), ("finish_reason", finish)):
            if v is not None and not isinstance(v, str):
                raise self.client.error(f"{url} answered {shape(v)} as its {field} for {self.name}, not a string")
        return Response(self.endpoint.redact(content or ""), None if finish is None else self.endpoint.redact(finish))

    def _explain(self, e: Exception) -> Exception:
        """A refusal with what it means for generation: no chat route, or a model without a chat template."""
        from ..scorers.http import ApiError

        msg = str(e)
        if "HTTP 404" in msg:
            return ApiError(f"{msg} (the server has no chat endpoint: generation needs an OpenAI-compatible "
                            "/chat/completions route)")
        if "HTTP 400" in msg and "chat template" in msg.lower():
            return ApiError(f"{self.name} served by {self.endpoint.base} has no chat template ({msg}): --method "
                            "generate needs an instruction-tuned model, or a server started with --chat-template")
        return e

    def close(self) -> None:
        """Close the connections, the worker threads and the response cache."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()
        super().close()


# ---- loading ------------------------------------------------------------------------------------------
#: settings :func:`load_chat` takes; the API ones are dropped for a local model (as load_scorer does)
LOCAL_SETTINGS = ("device", "dtype", "device_map", "batch_size")
SHARED_SETTINGS = ("cache", "temperature")


def _no_template(name: str) -> ProbegenError:
    return ProbegenError(f"{name} has no chat template: --method generate needs an instruction-tuned model "
                         "(one whose tokenizer defines a chat template)")


def load_chat(name: str, api_base: str | None = None, **settings: Any) -> ChatModel:
    """The chat backend of model ``name``: an :class:`ApiChat` when ``api_base`` (which must serve it) is
    given, else a :class:`LocalChat` (bundled short name, local folder or Hugging Face id). ``settings``:
    ``cache`` (bool, path or ResponseCache), ``temperature``, :data:`LOCAL_SETTINGS` and the API ones."""
    from ..models import API_SETTINGS, api_endpoint, resolve_model
    from ..scorers.api import served_models

    known = (*LOCAL_SETTINGS, *SHARED_SETTINGS, *(k for k in API_SETTINGS if k != "api_base"))
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ProbegenError(f"unknown chat setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    given = {k: v for k, v in settings.items() if v is not None}
    api = {k: v for k, v in given.items() if k in API_SETTINGS}
    shared = {k: v for k, v in given.items() if k in SHARED_SETTINGS}
    if api_base:
        ep = api_endpoint({"api_base": api_base, **api})
        served = served_models(ep)
        if name not in served:
            raise ProbegenError(f"{ep.base} serves no model {name!r} (it serves: "
                                f"{', '.join(sorted(served)) or 'none'})")
        return _api_chat(name, ep, served[name], given, shared)
    res = resolve_model(name)
    if res.kind != "causal":
        raise ProbegenError(f"{name} is not a causal LM (kind: {res.kind}): --method generate needs a chat model")
    return _local_chat(res, {k: v for k, v in given.items() if k in LOCAL_SETTINGS}, shared)


def _api_chat(name: str, ep: Any, info: Mapping[str, Any], given: dict[str, Any], shared: dict[str, Any]) -> ApiChat:
    """An ApiChat; device and precision other than ``auto`` are errors (the server decides them)."""
    wrong = sorted(k for k in ("device", "dtype", "device_map") if given.get(k) not in (None, "auto"))
    if wrong:
        raise ProbegenError(f"{', '.join(wrong)} do(es) not apply to {name}, served by {ep.base} (the server decides)")
    return ApiChat(name, ep, info, concurrency=given.get("concurrency"), **shared)


def _local_chat(res: Any, local: dict[str, Any], shared: dict[str, Any]) -> LocalChat:
    """A LocalChat of a resolved causal model; a tokenizer without a chat template fails before the weights load."""
    from ..models import load_hf, model_identity, resolve_placement

    device, dtype, device_map = resolve_placement(local)
    if res.source != "bundled" and not res.path_or_id.endswith(".gguf"):
        _check_template(res)
    model, tok = load_hf(res, "causal", device, dtype, device_map)
    model_id, source = model_identity(res)
    return LocalChat(res.name, model, tok, model_id=model_id, source=source, device=device_map or device, dtype=dtype,
                     batch_size=local.get("batch_size"), **shared)


def _check_template(res: Any) -> None:
    """Raise the no-chat-template error if the tokenizer of ``res`` defines none (loads the tokenizer only)."""
    from transformers import AutoTokenizer

    from ..models import offline_hub, quiet_transformers

    local = res.source != "hub"
    try:
        with quiet_transformers(), offline_hub(local):
            tok = AutoTokenizer.from_pretrained(res.path_or_id, local_files_only=local)
    except (OSError, ValueError, KeyError, ImportError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ProbegenError(f"cannot load the tokenizer of {res.name}: {why}") from None
    if not getattr(tok, "chat_template", None):
        raise _no_template(res.name)
