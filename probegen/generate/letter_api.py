"""The letter method's served backend: option-label probabilities from an OpenAI-compatible server.

With the served model's chat template loadable here, **completions** (exact): the first token's top
log-probs (vLLM's ``logprob_token_ids``, ``return_tokens_as_token_ids``; a refused field is not asked
again), every other variant echo-scored. Else **chat/completions** (a bound): a variant counts when a top
token's text is exactly it. Every number is checked (:func:`check_distribution`). Nothing is cached.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence, TypeGuard

from ..errors import ProbegenError

#: top log-probs asked for (vLLM's default limit)
TOP = 20
#: prompts per request
BATCH = 8
#: most token ids vLLM takes in ``logprob_token_ids``
MAX_TOKEN_IDS = 128
#: how far past 1 one prompt's label probabilities (or a top list's entry) may go, each and summed:
#: float32 log-probs rounded when written and summed over variants give about 1e-6 over; a placeholder
#: answer (0.0 for every label) gives 2 or more
MASS_TOLERANCE = 1e-3


def _number(v: Any) -> TypeGuard[float]:
    """A JSON number (not a boolean); whether it is a log-prob at all is :func:`check_distribution`'s to say."""
    return not isinstance(v, bool) and isinstance(v, (int, float))


def _exp(logprob: float) -> float:
    """exp, with inf for a log-prob too large for a float (the check says what is wrong with it)."""
    return math.inf if logprob > 709 else math.exp(logprob)


def check_distribution(probs: Mapping[str, float], server: str, prompt: str, what: str = "option labels",
                       summed: bool = True) -> None:
    """One line naming ``server``, ``prompt`` and the offending entries unless ``probs`` (name -> probability)
    can be one distribution's: each finite and <= 1, together (if ``summed``) at most 1, within tolerance.

    >>> check_distribution({"'A'": 0.6, "'B'": 0.3}, "http://h:8000/v1", "unit u1")
    >>> check_distribution({"'A'": 1.0, "'B'": 1.0}, "http://h:8000/v1", "unit u1")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probegen.errors.ProbegenError: http://h:8000/v1 answered probabilities of the option labels ...
    for unit u1: 'A' 1, 'B' 1 (sum 2; each must be a finite number <= 1 and all together at most 1, within 0.001): ...
    """
    bad = {k: v for k, v in probs.items() if not (math.isfinite(v) and 0 <= v <= 1 + MASS_TOLERANCE)}
    total = math.fsum(probs.values()) if summed and not bad else 0.0
    if not bad and total <= 1 + MASS_TOLERANCE:
        return
    listed = ", ".join(f"{k} {v:.6g}" for k, v in (bad or probs).items())
    sums = "" if bad else f"sum {total:.6g}; "
    rule = "each must be a finite number <= 1" + (" and all together at most 1" if summed else "")
    raise ProbegenError(f"{server} answered probabilities of the {what} that are no distribution for {prompt}: "
                        f"{listed:.400} ({sums}{rule}, within {MASS_TOLERANCE:g}): its log-probs cannot be read as the "
                        "model's (a placeholder 0.0, NaN, a log-prob > 0); nothing was kept")


class ApiLetters:
    """Option-label probabilities of a served model; ``chat``: its :class:`~probegen.generate.chat.ApiChat`."""

    def __init__(self, chat: Any, tokenizer: Any = None) -> None:
        self.chat = chat
        self.name = chat.name
        self.endpoint, self.client = chat.endpoint, chat.client
        self.tokenizer = tokenizer if tokenizer is not None else self._tokenizer()
        self.mode = "completions" if self.tokenizer is not None else "chat"
        self._as_ids = True  # ask vLLM for token ids; dropped if the server refuses the field
        self._by_ids = True  # name the labels' tokens (vLLM's logprob_token_ids); dropped if refused
        self._pool = ThreadPoolExecutor(chat.concurrency, thread_name_prefix="probegen-letter")
        self.counters = {"prompts": 0, "from_top": 0, "echo_scored": 0, "missing": 0}

    def identity(self) -> dict[str, Any]:
        """The served model's identity and how labels are read."""
        return {**self.chat.identity(), "letter_mode": self.mode}

    def stats(self) -> dict[str, Any]:
        """Prompts, variants read from the top list, echo-scored, or missing (chat mode), HTTP counters."""
        return {**self.counters, **self.client.counters}

    def _tokenizer(self) -> Any:
        """The served model's tokenizer with a chat template, if one can be loaded here (else None: chat mode)."""
        from transformers import AutoTokenizer

        from ..models import offline_hub, quiet_transformers

        for where in (self.chat.info.get("root"), self.name):
            if not isinstance(where, str) or not where:
                continue
            try:
                with quiet_transformers(), offline_hub(True):
                    tok = AutoTokenizer.from_pretrained(where, local_files_only=True)
            except Exception:  # noqa: BLE001 - not a local model: try the next, else chat mode
                continue
            if getattr(tok, "chat_template", None):
                return tok
        return None

    # ---- what the scorer calls ------------------------------------------------------------------------
    def label_probs(self, conversations: Sequence[Sequence[dict[str, str]]],
                    variants: Sequence[Sequence[tuple[str, ...]]], progress: bool = False,
                    names: Sequence[str] | None = None) -> list[list[float]]:
        """Per conversation, P(label) per label, every prompt checked (:func:`check_distribution`) first;
        ``names``: what an error calls each prompt (default: the start of its last message)."""
        self.counters["prompts"] += len(conversations)
        if self.mode == "completions":
            rows, tops = self._completions(conversations, variants)
        else:
            rows, tops = self._chat(conversations, variants)
        for i, (row, top, vs) in enumerate(zip(rows, tops, variants)):
            name = names[i] if names is not None else _prompt_name(conversations[i])
            self._check({repr(v[0]): p for v, p in zip(vs, row)}, name, "option labels")
            self._check({repr(k): _exp(v) for k, v in top.items()}, name, "first answer token's top log-probs",
                        summed=False)
        return rows

    def _check(self, probs: dict[str, float], prompt: str, what: str, summed: bool = True) -> None:
        """:func:`check_distribution` naming this server, its error's text masked as the client masks (the key)."""
        try:
            check_distribution(probs, self.endpoint.base, prompt, what, summed)
        except ProbegenError as e:
            raise self.client.error(str(e)) from None

    # ---- completions: top log-probs, the rest echo-scored ---------------------------------------------
    def _completions(self, conversations: Sequence[Sequence[dict[str, str]]],
                     variants: Sequence[Sequence[tuple[str, ...]]]) -> tuple[list[list[float]], list[dict[str, float]]]:
        from .labels import continuation

        texts = [self.render(c) for c in conversations]
        # per prompt, per label: distinct tokenisation -> the first variant text that gives it
        seqs = [[{continuation(self.tokenizer, t, v): v for v in reversed(vs)} for vs in v_all]
                for t, v_all in zip(texts, variants)]
        plains = [tuple(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        for per_label, v_all in zip(seqs, variants):
            for s, vs in zip(per_label, v_all):
                if any(not cont for _, cont in s):
                    raise ProbegenError(f"{self.name}: a label ({vs[0]!r}) has no tokens after the prompt")
        # the token ids that can be read from the next-token list: one-token variants that do not merge
        wanted = [sorted({cont[0] for s in per_label for prefix, cont in s if len(cont) == 1 and prefix == plain})
                  for per_label, plain in zip(seqs, plains)]
        lists = self._map(self._top, list(zip(texts, wanted)))
        tops = [self._ids(t) for t in lists]
        todo: dict[tuple[str, str], None] = {}
        values: dict[tuple[int, tuple[int, ...], tuple[int, ...]], float] = {}
        for i, (text, per_label, top, plain) in enumerate(zip(texts, seqs, tops, plains)):
            for s in per_label:
                for (prefix, cont), v in s.items():
                    got = top.get(cont[0]) if len(cont) == 1 and prefix == plain else None
                    if got is not None:
                        values[(i, prefix, cont)] = got
                        self.counters["from_top"] += 1
                    else:
                        todo[(text, v)] = None
        echoed = self._echo(list(todo))
        out = [[sum(_exp(values[(i, *seq)] if (i, *seq) in values else echoed[(text, v)]) for seq, v in s.items())
                for s in per_label] for i, (text, per_label) in enumerate(zip(texts, seqs))]
        return out, lists

    def render(self, messages: Sequence[dict[str, str]]) -> str:
        """The prompt text, rendered here by the served model's chat template (as in process)."""
        from .chat import render_prompt

        return render_prompt(self.tokenizer, self.name, messages)

    def _map(self, fn: Callable[[list[Any]], list[Any]], items: list[Any]) -> list[Any]:
        """``fn`` over batches of ``items`` (BATCH at a time, up to the concurrency in flight), flattened."""
        batches = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]
        return [x for part in self._pool.map(fn, batches) for x in part]

    def _post(self, payload: dict[str, Any]) -> Any:
        from ..scorers.http import ApiError

        try:
            return self.client.request("POST", "completions", payload)
        except ApiError as e:
            msg = str(e)
            if "HTTP 404" in msg:
                raise ApiError(f"{msg} (--method letter reads the next token's log-probs from a completions endpoint "
                               "when the model's chat template is available here, else from "
                               "chat/completions)") from None
            raise

    def _choices(self, body: Any, n: int) -> list[dict[str, Any]]:
        """The checked choices of a completions answer (one object per prompt, in index order)."""
        from ..scorers.http import shape

        url = f"{self.endpoint.base}/completions"
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or len(choices) != n or not all(isinstance(c, dict) for c in choices):
            raise self.client.error(f"{url} answered {shape(body) if not isinstance(body, dict) else shape(choices)} "
                                    f"where {n} choice objects were expected")
        index = [c.get("index") for c in choices]
        if any(i is not None for i in index):
            if not all(type(i) is int for i in index) or sorted(index) != list(range(n)):
                raise self.client.error(f"{url} numbered its {n} choices {index!r:.80}, not 0 to {n - 1}")
            choices = sorted(choices, key=lambda c: c["index"])
        return choices

    def _top(self, batch: list[tuple[str, list[int]]]) -> list[dict[str, float]]:
        """Per (prompt, label token ids), the first generated token's top list (as the server keys it -> log-prob)."""
        texts = [t for t, _ in batch]
        payload: dict[str, Any] = {"model": self.name, "prompt": texts, "max_tokens": 1, "temperature": 0.0,
                                   "logprobs": TOP}
        ids = sorted({i for _, w in batch for i in w})
        if self._by_ids and 0 < len(ids) <= MAX_TOKEN_IDS:
            body = self._post_or_none({**payload, "logprob_token_ids": ids})
            if body is not None:
                return self._top_lists(body, texts)
            self._by_ids = False  # the server refuses the field: its plain top list from now on
        if self._as_ids:
            body = self._post_or_none(payload)
            if body is not None:
                return self._top_lists(body, texts)
            self._as_ids = False  # token texts from now on, mapped through the tokenizer
        return self._top_lists(self._post(payload), texts)

    def _post_or_none(self, payload: dict[str, Any]) -> Any:
        """POST asking for token ids (vLLM's ``return_tokens_as_token_ids``); None if the server answers HTTP 400."""
        from ..scorers.http import ApiError

        try:
            return self._post({**payload, "return_tokens_as_token_ids": True})
        except ApiError as e:
            if "HTTP 400" not in str(e):
                raise
        return None

    def _top_lists(self, body: Any, texts: list[str]) -> list[dict[str, float]]:
        """The first-token log-prob lists of a completions answer, each log-prob checked to be a number."""
        url = f"{self.endpoint.base}/completions"
        out = []
        for i, ch in enumerate(self._choices(body, len(texts))):
            lp = ch.get("logprobs")
            tops = lp.get("top_logprobs") if isinstance(lp, dict) else None
            if not isinstance(tops, list) or not tops or not isinstance(tops[0], dict):
                raise self.client.error(f"{url} gave no top log-probs of the next token for prompt {i} (logprobs: "
                                        f"{TOP})")
            bad = next(((k, v) for k, v in tops[0].items() if not _number(v)), None)
            if bad is not None:
                raise self.client.error(f"{url}: prompt {i}'s top log-prob of {bad[0]!r:.40} is {bad[1]!r:.40}, not a "
                                        "finite number <= 0")
            out.append({k: float(v) for k, v in tops[0].items()})
        return out

    def _ids(self, top: dict[str, float]) -> dict[int, float]:
        """Token id -> log-prob of one top list (keys ``token_id:N``, else token texts mapped through the tokenizer)."""
        out: dict[int, float] = {}
        for key, v in top.items():
            if key.startswith("token_id:") and key[9:].isdigit():
                ids = [int(key[9:])]
            else:
                ids = self.tokenizer(key, add_special_tokens=False)["input_ids"]
                if len(ids) != 1 or self.tokenizer.decode(ids) != key:
                    continue  # not one token of this tokenizer's (it cannot be a label variant's)
            out[ids[0]] = float(v)
        return out

    def _echo(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """log P(variant | prompt) of each (prompt, variant), echo-scored."""
        if not pairs:
            return {}
        self.counters["echo_scored"] += len(pairs)
        return dict(zip(pairs, self._map(self._echo_batch, pairs)))

    def _echo_batch(self, pairs: list[tuple[str, str]]) -> list[float]:
        from ..scorers.api import continuation_logprobs, prompt_logprobs

        prompts = [p + v for p, v in pairs]
        body = self._post({"model": self.name, "prompt": prompts, "max_tokens": 1, "temperature": 0.0, "echo": True,
                           "logprobs": 0})
        out = []
        # checked as the scorer checks
        checked = prompt_logprobs(body, prompts, self.client, self.endpoint.base, self.name)
        for (p, v), (offsets, vals) in zip(pairs, checked):
            got = continuation_logprobs({"text_offset": offsets, "token_logprobs": vals}, len(p), len(p) + len(v))
            if not got or any(x is None for x in got):
                raise self.client.error(f"{self.endpoint.base} gave no log-prob for {v!r} after the prompt")
            out.append(float(sum(got)))
        return out

    # ---- chat/completions: the top list only --------------------------------------------------------
    def _chat(self, conversations: Sequence[Sequence[dict[str, str]]],
              variants: Sequence[Sequence[tuple[str, ...]]]) -> tuple[list[list[float]], list[dict[str, float]]]:
        tops = self._map(lambda batch: [self._chat_top(c) for c in batch], list(conversations))
        out = []
        for top, vs in zip(tops, variants):
            row = []
            for label in vs:
                found = [top[v] for v in dict.fromkeys(label) if v in top]
                self.counters["from_top"] += len(found)
                self.counters["missing"] += not found
                row.append(sum(_exp(x) for x in found))
            out.append(row)
        return out, tops

    def _chat_top(self, messages: Sequence[dict[str, str]]) -> dict[str, float]:
        """Token text -> log-prob of the first answer token's top list (chat/completions)."""
        from ..scorers.http import ApiError, shape

        url = f"{self.endpoint.base}/chat/completions"
        payload = {"model": self.name, "messages": list(messages), "max_tokens": 1, "temperature": 0.0,
                   "logprobs": True, "top_logprobs": TOP}
        try:
            body = self.client.request("POST", "chat/completions", payload)
        except ApiError as e:
            raise ApiError(f"{e} (--method letter needs the next token's log-probs: {self.endpoint.base} gives neither "
                           f"a completions endpoint for {self.name} with its chat template here nor chat/completions "
                           "with top_logprobs; ask it with --method generate)") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        ch = choices[0] if isinstance(choices, list) and choices else None
        lp = ch.get("logprobs") if isinstance(ch, dict) else None
        content = lp.get("content") if isinstance(lp, dict) else None
        first = content[0] if isinstance(content, list) and content else None
        tops = first.get("top_logprobs") if isinstance(first, dict) else None
        if not isinstance(tops, list):
            raise self.client.error(f"{url} answered without top_logprobs for {self.name} ({shape(tops)}): --method "
                                    "letter needs the next token's log-probs; ask it with --method generate")
        out: dict[str, float] = {}
        for t in tops:
            tok, v = (t.get("token"), t.get("logprob")) if isinstance(t, dict) else (None, None)
            if not isinstance(tok, str) or not _number(v):
                raise self.client.error(f"{url}: a top log-prob entry {t!r:.60} is not a token string with a finite "
                                        "number <= 0")
            v = float(v)
            out[tok] = v if tok not in out or math.isnan(v) else max(out[tok], v)  # a NaN is kept for the check
        return out

    def close(self) -> None:
        """Close the worker threads and the chat backend (connections)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.chat.close()


def _prompt_name(messages: Sequence[dict[str, str]]) -> str:
    """A prompt shown in one line: the start of its last message."""
    text = " ".join(str(messages[-1].get("content", "")).split()) if messages else ""
    return f"the prompt {text[:60]!r}" + ("..." if len(text) > 60 else "")
