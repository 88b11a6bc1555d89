"""The letter method (``--method letter``): the generative prompts, read as each option label's
probability as the answer's next token(s) under the same option orders (a CoDA21 group one context at a
time). A label's variants (``A``, `` A``; ``yes``, ``Yes``, ...) are summed over distinct tokenisations,
then renormalised, the mass they had recorded (``label_mass``). Backends: :class:`LocalLetters` and
:class:`probegen.generate.letter_api.ApiLetters`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence, cast

import numpy as np

from ..core import prompt_fields
from ..errors import ProbegenError
from .chat import render_prompt
from .labels import continuation, label_variants
from .scorer import AskingScorer, option_orders, unit_key

__all__ = ["LetterScorer", "LocalLetters", "continuation", "label_variants", "load_letter", "matching_messages"]

#: bump when the way label probabilities are read changes
LETTER_VERSION = 1
#: the prompt block that asks one CoDA21 context (optional in a user's prompt file)
MATCHING_BLOCK = "letter-matching"
_MATCHING_FIELDS = {
    "option": ("letter", "text"),
    "nonce_note": ("nonce",),
    "user": ("text", "number", "k", "options", "nonce_note", "n_options", "last_letter", "nonce", "word"),
}


@dataclass
class _Ask:
    """One (unit, order, row) question."""

    unit: int
    order: int
    row: int
    perm: np.ndarray
    labels: list[str]
    messages: list[dict[str, str]]
    probs: list[float] | None = None  # renormalised, per shown position
    mass: float = 0.0


def matching_messages(prompts: Any, text: str, number: int, k: int, options: Sequence[str],
                      fields: dict[str, str]) -> list[dict[str, str]]:
    """The messages asking which lettered option fits one CoDA21 context (the ``letter-matching`` block)."""
    from .prompts import check_prompt_fields, letters, one_line, tidy

    block = prompts.data.get(MATCHING_BLOCK)
    if not isinstance(block, dict):
        raise ProbegenError(f"{prompts.file}: no {MATCHING_BLOCK!r} block: --method letter asks each CoDA21 context "
                            "with it (see templates/prompts/en.yaml)")
    for key, allowed in _MATCHING_FIELDS.items():
        if not isinstance(block.get(key), str):
            raise ProbegenError(f"{prompts.file}: {MATCHING_BLOCK}.{key}: missing or not a string")
        check_prompt_fields(block[key], allowed, f"{prompts.file}: {MATCHING_BLOCK}.{key}")
    show: Callable[[str], str] = lambda t: one_line(t) or prompts.data["empty"]  # noqa: E731
    labs = letters(len(options))
    nonce = one_line(fields.get("nonce", ""))
    values = {"text": show(text), "number": number, "k": k, "n_options": len(options),
              "last_letter": labs[-1] if labs else "A",
              "options": "\n".join(block["option"].format(letter=lab, text=show(t)) for lab, t in zip(labs, options)),
              "nonce_note": block["nonce_note"].format(nonce=nonce) if nonce else "",
              "nonce": show(fields.get("nonce", "")), "word": show(fields.get("word", ""))}
    out = [{"role": "system", "content": prompts.data["system"]}] if prompts.data["system"] else []
    return out + [{"role": "user", "content": tidy(block["user"].format(**values))}]


class LetterScorer(AskingScorer):
    """Answers units by reading the option labels' probabilities (``backend``: :class:`LocalLetters` or
    :class:`~probegen.generate.letter_api.ApiLetters`; ``seed``: the orders and the decisions' ties)."""

    kind = "letter"

    def __init__(self, backend: Any, prompts: Any, permutations: int | str = 1, seed: int = 0) -> None:
        super().__init__(backend, prompts, permutations, seed)
        self.counts = {"asks": 0, "units": 0}

    def settings(self) -> dict[str, Any]:
        """results.json ``scorer``: method, backend identity, prompts, orders, how labels are read."""
        return {"method": "letter", "backend": self.backend.identity(), "prompts": self.prompts.record(),
                "permutations": self.permutations, "seed": self.seed, "version": LETTER_VERSION,
                "labels": "A.. (and ' A'..), yes/no (Yes, ' yes', ' Yes'); summed over distinct tokenisations, "
                          "renormalised"}

    def stats(self) -> dict[str, Any]:
        """Asks (one per order and row), units, and the backend's counters."""
        return self._stats("backend")

    # ---- asking -------------------------------------------------------------------------------------
    def asks_of(self, units: Sequence[Any]) -> list[_Ask]:
        """Every (unit, order, row) question of ``units``, in order."""
        from .prompts import Question, letters

        asks: list[_Ask] = []
        for i, u in enumerate(units):
            ask = u.asks()
            if any(c != u.candidates[0] for c in u.candidates):
                raise ProbegenError(f"unit {u.id}: the letter method asks every row against the same options")
            options = u.candidates[0]
            fields = prompt_fields(u)
            for p, perm in enumerate(option_orders(ask, self.seed, u.id, len(options), self.permutations)):
                shown = tuple(options[j] for j in perm)
                labels = ["yes", "no"] if ask == "yes-no" else letters(len(shown))
                if ask == "yes-no" and len(options) != 2:
                    raise ProbegenError(f"unit {u.id}: a yes-no question has two options, not {len(options)}")
                if ask == "matching":
                    for r, text in enumerate(u.queries):
                        msgs = matching_messages(self.prompts, text, r + 1, len(u.queries), shown, fields)
                        asks.append(_Ask(i, p, r, perm, labels, msgs))
                else:
                    q = Question(ask=ask, rows=tuple(u.queries[:1]), options=shown, fields=fields)
                    asks.append(_Ask(i, p, 0, perm, labels, self.prompts.messages(q)))
        return asks

    def score_units(self, units: Sequence[Any], progress: bool = False) -> list[np.ndarray]:
        """Per unit, rows x options: the label probabilities mapped back to the unit's options, mean over orders."""
        asks = self.asks_of(units)
        variants = [label_variants(units[a.unit].asks(), a.labels) for a in asks]
        names = [f"unit {str(units[a.unit].id)[:60]!r} (option order {a.order}, row {a.row})" for a in asks]
        raw = self.backend.label_probs([a.messages for a in asks], variants, progress=progress, names=names)
        for a, values in zip(asks, raw):
            v = np.asarray(values, dtype=np.float64)
            if v.shape != (len(a.labels),) or not np.all(np.isfinite(v)) or np.any(v < 0):
                raise ProbegenError(f"{self.name}: label probabilities {values!r:.120} are not {len(a.labels)} finite "
                                    "numbers >= 0")
            a.mass = float(v.sum())
            if a.mass <= 0:
                raise ProbegenError(f"{self.name}: every option label has probability 0 for unit {units[a.unit].id}")
            a.probs = (v / a.mass).tolist()
        return self._collect(units, asks)

    def _collect(self, units: Sequence[Any], asks: list[_Ask]) -> list[np.ndarray]:
        from ..core import decide_scores

        per_unit: dict[int, list[_Ask]] = {}
        for a in asks:
            per_unit.setdefault(a.unit, []).append(a)
            u = units[a.unit]
            self._exchanges.append({"unit": u.id, "ask": u.asks(), "order": a.order, "row": a.row,
                                    "option_order": a.perm.tolist(),
                                    "messages": a.messages, "labels": a.labels, "probs": a.probs, "label_mass": a.mass})
        mats = []
        for i, u in enumerate(units):
            mine = per_unit.get(i, [])
            n_rows = len(u.queries) if u.asks() == "matching" else 1
            n_opt = len(u.candidates[0])
            orders = sorted({a.order for a in mine})
            probs = [[[0.0] * n_opt for _ in range(n_rows)] for _ in orders]
            mass = [[0.0] * n_rows for _ in orders]
            perms: dict[int, list[int]] = {}
            for a in mine:
                probs[a.order][a.row] = list(cast("list[float]", a.probs))  # every answer here was read
                mass[a.order][a.row] = a.mass
                perms[a.order] = a.perm.tolist()
            m = np.zeros((n_rows, n_opt))
            answers = []
            for o in orders:
                back = np.zeros((n_rows, n_opt))
                back[:, perms[o]] = np.asarray(probs[o])  # position p holds option perm[p]
                m += back / len(orders)
                rng = np.random.default_rng([self.seed, zlib.crc32(f"{u.id}/order/{o}/letter".encode())])
                answers.append([int(x) for x in decide_scores(back, u.decision, rng)])
            self._details[unit_key(u)] = {"method": "letter", "orders": [perms[o] for o in orders], "probs": probs,
                                      "label_mass": mass,
                                      "answers": answers, "status": ["valid"] * len(orders),
                                      "random_rows": [[] for _ in orders]}
            self.counts["asks"] += len(mine)
            self.counts["units"] += 1
            mats.append(np.round(m, 12))
        return mats


# ---- in process: a transformers causal LM's logits ------------------------------------------------------
class LocalLetters:
    """Label probabilities from a :class:`~probegen.generate.chat.LocalChat`'s model, in left-padded batches
    of ``batch_size`` sequences, only the positions read computed (``logits_to_keep``)."""

    default_batch_size = 8

    def __init__(self, chat: Any, batch_size: int | None = None) -> None:
        self.chat = chat
        self.name = chat.name
        self.model, self.tokenizer = chat.model, chat.tokenizer
        self.batch_size = max(1, int(batch_size or self.default_batch_size))
        self.counters = {"prompts": 0, "forward_calls": 0, "sequences": 0}

    def identity(self) -> dict[str, Any]:
        """The chat backend's identity (model, source, dtype, chat template hash)."""
        return cast("dict[str, Any]", self.chat.identity())

    def stats(self) -> dict[str, Any]:
        """Prompts read, forward calls, distinct token sequences run."""
        return dict(self.counters)

    def render(self, messages: Sequence[dict[str, str]]) -> str:
        """The prompt text: ``messages`` through the chat template with the assistant's turn opened."""
        return render_prompt(self.tokenizer, self.name, messages)

    def sequences(self, prompt: str,
                  variants: Sequence[tuple[str, ...]]) -> list[set[tuple[tuple[int, ...], tuple[int, ...]]]]:
        """Per label, its distinct (prompt ids, continuation ids) tokenisations."""
        out = []
        for vs in variants:
            seqs = {continuation(self.tokenizer, prompt, v) for v in vs}
            if any(not cont for _, cont in seqs):
                raise ProbegenError(f"{self.name}: a label ({vs[0]!r}) has no tokens after the prompt")
            out.append(seqs)
        return out

    def label_probs(self, conversations: Sequence[Sequence[dict[str, str]]],
                    variants: Sequence[Sequence[tuple[str, ...]]], progress: bool = False,
                    names: Sequence[str] | None = None) -> list[list[float]]:
        """Per conversation, P(label) per label, summed over its tokenisations (``names``: unused here)."""
        seqs = [self.sequences(self.render(c), v) for c, v in zip(conversations, variants)]
        need: dict[tuple[int, ...], int] = {}  # input ids -> how many last rows are read
        for per_label in seqs:
            for s in per_label:
                for prefix, cont in s:
                    x = prefix + cont[:-1]
                    need[x] = max(need.get(x, 0), len(cont))
        logp = self._read(need, {(prefix + cont[:-1], len(cont) - 1 - j, t) for per_label in seqs for s in per_label
                                 for prefix, cont in s for j, t in enumerate(cont)}, progress)
        self.counters["prompts"] += len(seqs)
        return [[sum((float(np.exp(sum(logp[(prefix + cont[:-1], len(cont) - 1 - j, t)] for j, t in enumerate(cont))))
                      for prefix, cont in s), 0.0) for s in per_label] for per_label in seqs]

    def _read(self, need: dict[tuple[int, ...], int], wanted: set[tuple[tuple[int, ...], int, int]],
              progress: bool) -> dict[tuple[tuple[int, ...], int, int], float]:
        """log P(token | x[:len(x) - from_end]) for every (x, from_end, token) in ``wanted``."""
        import torch

        from ..models import quiet_transformers
        from ..progress import progress_bar

        by_input: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for x, back, t in wanted:
            by_input.setdefault(x, []).append((back, t))
        order = sorted(need, key=lambda x: (-len(x), x))
        pad = self.chat._pad
        dev = self.model.device
        out: dict[tuple[tuple[int, ...], int, int], float] = {}
        bar = progress_bar(total=len(order), desc=f"reading {self.name}", unit="prompt",
                           disable=not (progress and order))
        try:
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                width = max(len(x) for x in batch)
                keep = max(need[x] for x in batch)
                ids = torch.tensor([[pad] * (width - len(x)) + list(x) for x in batch], device=dev)
                mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch], device=dev)
                pos = (mask.cumsum(-1) - 1).clamp(min=0)
                with torch.inference_mode(), quiet_transformers():
                    logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False,
                                        logits_to_keep=keep).logits
                lp = torch.log_softmax(logits[:, -keep:, :].float(), dim=-1)
                for b, x in enumerate(batch):
                    for back, t in by_input[x]:
                        out[(x, back, t)] = float(lp[b, keep - 1 - back, t])
                self.counters["forward_calls"] += 1
                self.counters["sequences"] += len(batch)
                bar.update(len(batch))
        finally:
            bar.close()
        return out

    def close(self) -> None:
        """Nothing to release (the model goes with the process)."""


# ---- loading ------------------------------------------------------------------------------------------
def load_letter(model: str, permutations: int | str = 1, prompts: str | None = None, seed: int = 0,
                **settings: Any) -> LetterScorer:
    """A :class:`LetterScorer` for ``model``: served when ``api_base`` serves it
    (:class:`~probegen.generate.letter_api.ApiLetters`), else a local causal LM with a chat template
    (:class:`LocalLetters`). ``settings``: :data:`probegen.generate.CHAT_SETTINGS`."""
    from . import chat_settings
    from .chat import ApiChat, load_chat
    from .prompts import prompt_templates

    given = chat_settings(settings, "--method letter")
    templates = prompt_templates(prompts)
    given["cache"] = False  # nothing is generated: the label probabilities are read afresh
    chat = load_chat(model, **given)
    if isinstance(chat, ApiChat):
        from .letter_api import ApiLetters

        backend: Any = ApiLetters(chat)
    else:
        backend = LocalLetters(chat, batch_size=given.get("batch_size"))
    return LetterScorer(backend, templates, permutations=permutations, seed=seed)
