"""The letter method's served backend: option-label probabilities from an OpenAI-compatible server.

:class:`ApiLetters` reads, for each prompt, P(label) for every option label (see
:mod:`probegen.generate.letter`) from whichever the server gives:

- **completions** (exact; vLLM, SGLang, llama.cpp, TGI): when the served model's tokenizer (its
  chat template) can be loaded here (the ``root`` the server reports, e.g. vLLM's model path, or the
  served name itself), the prompt text is the chat template's rendering with the assistant's turn
  opened, as in process. One request per batch of prompts asks for the first generated token's
  log-probs (``max_tokens: 1, logprobs: 20``; with vLLM's ``return_tokens_as_token_ids`` the
  tokens come as ids, else as text), naming the labels' one-token variants in vLLM's
  ``logprob_token_ids`` so that the list holds exactly them wherever they rank (a server that
  refuses the field is asked for its plain top 20 from then on); a label variant that is one token
  and in that list is read from it. Every other variant (not in the list, several tokens, or one
  that merges with the prompt's last token) is scored exactly by echoing ``prompt + variant``
  (``echo: true, logprobs: 0``: one more prefill each) and summing the log-probs of the tokens
  after the prompt, the served-model scorer's rule
  (:func:`probegen.scorers.api.continuation_logprobs`). So every label's probability is the
  model's own, as in process (agreement within 1e-3 is tested on vLLM).
- **chat/completions** (a bound, for chat-only APIs): ``max_tokens: 1, logprobs: true,
  top_logprobs: 20``; a variant counts when a top token's text is exactly it; a label none of
  whose variants is in the list gets 0 (``label_mass`` shows how much the labels got), and
  labels of several tokens cannot be read this way (0).

A server that gives neither is one line. Every number is checked before it is used (a finite
number <= 0, not a boolean or a string: :func:`probegen.scorers.api.prompt_tokens` for echoed
prompts), and nothing is cached: label probabilities are read afresh each run, so a malformed
answer is never kept.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence, TypeGuard, cast

from ..errors import ProbegenError

#: top log-probs asked for (vLLM's default limit)
TOP = 20
#: prompts per request
BATCH = 8
#: most token ids vLLM takes in ``logprob_token_ids``
MAX_TOKEN_IDS = 128


def _number(v: Any) -> TypeGuard[float]:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v <= 1e-4


class ApiLetters:
    """Option-label probabilities of a served model (see the module doc); ``chat``: its
    :class:`~probegen.generate.chat.ApiChat` (endpoint, client, model information)."""

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

        from ..models import _offline, _quiet_transformers

        for where in (self.chat.info.get("root"), self.name):
            if not isinstance(where, str) or not where:
                continue
            try:
                with _quiet_transformers(), _offline(True):
                    tok = AutoTokenizer.from_pretrained(where, local_files_only=True)
            except Exception:  # noqa: BLE001 - not a local model: try the next, else chat mode
                continue
            if getattr(tok, "chat_template", None):
                return tok
        return None

    # ---- what the scorer calls ------------------------------------------------------------------------
    def label_probs(self, conversations: Sequence[Sequence[dict[str, str]]],
                    variants: Sequence[Sequence[tuple[str, ...]]], progress: bool = False) -> list[list[float]]:
        """Per conversation, P(label) for each label (not renormalised)."""
        self.counters["prompts"] += len(conversations)
        if self.mode == "completions":
            return self._completions(conversations, variants)
        return self._chat(conversations, variants)

    # ---- completions: top log-probs, the rest echo-scored ---------------------------------------------
    def _completions(self, conversations, variants) -> list[list[float]]:
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
        tops = self._map(self._top, list(zip(texts, wanted)))
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
        out = []
        for i, (text, per_label) in enumerate(zip(texts, seqs)):
            out.append([sum(math.exp(values[(i, *seq)] if (i, *seq) in values else echoed[(text, v)])
                            for seq, v in s.items())
                        for s in per_label])
        return out

    def render(self, messages: Sequence[dict[str, str]]) -> str:
        """The prompt text, rendered here by the served model's chat template (as in process)."""
        from .labels import render_prompt

        return render_prompt(self.tokenizer, self.name, messages)

    def _map(self, fn, items: list[Any]) -> list[Any]:
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

    def _top(self, batch: list[tuple[str, list[int]]]) -> list[dict[int, float]]:
        """Per (prompt, label token ids), token id -> log-prob of the first generated token's list."""
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

    def _top_lists(self, body: Any, texts: list[str]) -> list[dict[int, float]]:
        """The checked first-token log-prob lists of a completions answer."""
        url = f"{self.endpoint.base}/completions"
        out = []
        for i, ch in enumerate(self._choices(body, len(texts))):
            lp = ch.get("logprobs")
            tops = lp.get("top_logprobs") if isinstance(lp, dict) else None
            if not isinstance(tops, list) or not tops or not isinstance(tops[0], dict):
                raise self.client.error(f"{url} gave no top log-probs of the next token for prompt {i} (logprobs: "
                                        f"{TOP})")
            out.append(self._ids(tops[0], url, i))
        return out

    def _ids(self, top: dict[str, Any], url: str, i: int) -> dict[int, float]:
        """Token id -> log-prob of one top list (keys ``token_id:N``, else token texts mapped through the tokenizer)."""
        out: dict[int, float] = {}
        for key, v in top.items():
            if not _number(v):
                raise self.client.error(f"{url}: prompt {i}'s top log-prob of {key!r:.40} is {v!r:.40}, not a finite "
                                        "number <= 0")
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
        results = self._map(self._echo_batch, pairs)
        return dict(zip(pairs, results))

    def _echo_batch(self, pairs: list[tuple[str, str]]) -> list[float]:
        from ..scorers.api import ApiScorer, continuation_logprobs

        prompts = [p + v for p, v in pairs]
        body = self._post({"model": self.name, "prompt": prompts, "max_tokens": 1, "temperature": 0.0, "echo": True,
                           "logprobs": 0})
        out = []
        # checked as the scorer checks
        for (p, v), (offsets, vals) in zip(pairs, ApiScorer._logprobs(cast(ApiScorer, self), body, prompts)):
            got = continuation_logprobs({"text_offset": offsets, "token_logprobs": vals}, len(p), len(p) + len(v))
            if not got or any(x is None for x in got):
                raise self.client.error(f"{self.endpoint.base} gave no log-prob for {v!r} after the prompt")
            out.append(float(sum(got)))
        return out

    # ---- chat/completions: the top list only --------------------------------------------------------
    def _chat(self, conversations, variants) -> list[list[float]]:
        tops = self._map(lambda batch: [self._chat_top(c) for c in batch], list(conversations))
        out = []
        for top, vs in zip(tops, variants):
            row = []
            for label in vs:
                found = [top[v] for v in dict.fromkeys(label) if v in top]
                self.counters["from_top"] += len(found)
                self.counters["missing"] += not found
                row.append(sum(math.exp(x) for x in found))
            out.append(row)
        return out

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
            out[tok] = max(out.get(tok, -math.inf), float(v))
        return out

    def close(self) -> None:
        """Close the worker threads and the chat backend (connections)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.chat.close()
