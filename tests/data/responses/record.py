"""Record real chat responses of SmolLM2-135M-Instruct for the parser tests (tests/test_generate_parse.py).

What it does: renders real prompts with the bundled prompt templates (templates/prompts/en.yaml)
from real probegen data, asks the real bundled SmolLM2-135M-Instruct in process (transformers,
float32, its chat template, greedy) and through a real vLLM server's chat endpoint (temperature 0),
and writes next to this file:

- ``prompts.jsonl``: one line per prompt: ``id``, ``ask``, ``k`` (rows), ``n`` (options),
  ``texts`` (the option texts, choice prompts only), ``max_tokens``, ``messages`` (as sent);
- ``smollm2-local.jsonl`` and ``smollm2-vllm.jsonl``: one line per response: ``id``, ``backend``,
  ``response``, ``finish_reason``, ``parse`` (``answer``, ``error``: what the parser gave when
  recorded; the tests check it still gives that). Every answer that did not parse is asked once
  more, as the generative scorer does: the row ``<id>+retry`` (``retry_of``: the prompt id) holds
  the ``retry_message`` (the user message that shows the parse error) and the second answer; the
  conversation was the prompt's messages, the first answer (row ``<id>``), then that message.

The prompts (30 per ask):

- matching: CoDA21 groups (``probegen make coda21 --context-scorer first --pos noun --out DIR``;
  pass DIR with ``--coda``), the first k items of a group for k = 3..8, definitions in a seeded
  order, the target replaced by the made-up word "bkatuhla" at its char span; plus groups with
  empty contexts (the definition-only condition) and with the real word left visible;
- choice: rows of the WordNetQA release sample (/work/shared/data/wordnetqa-release-sample, or
  ``--wordnetqa DIR``), the stem and its choices; plus a few with an empty question (choices only);
- yes-no: WiC-style pairs from SemCor (probegen's SemCor index): the same lemma in two sentences,
  the same synset or two different ones; plus a few with one sentence empty.

Run from the repository root (a few minutes on 2 CPU cores)::

    .venv/bin/probegen make coda21 --context-scorer first --pos noun --out /tmp/coda
    .venv/bin/python tests/data/responses/record.py --coda /tmp/coda \\
        --vllm http://127.0.0.1:8765/v1 --vllm-model smollm2 --vllm-key-file /tmp/vsrv/key

The API key is read from ``--vllm-key-file`` (or ``$PROBEGEN_VLLM_KEY``) at run time and written
nowhere. ``--backends local`` skips the server; ``--reparse`` asks no model and only re-parses the recorded
responses with the current parser (after a deliberate parser change: review what it prints).
The hand-checked expectations in the tests are keyed by prompt id and check how each response
starts: after re-recording, read the answers that changed and update them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from probegen.generate.parse import parse  # noqa: E402
from probegen.generate.prompts import Question, prompt_templates  # noqa: E402

NONCE = "bkatuhla"
MAX_TOKENS = {"matching": 96, "choice": 16, "yes-no": 16}
PER_ASK = 30


# ---- prompts from real data -----------------------------------------------------------------------
def _hide(context: dict[str, Any], nonce: str | None) -> str:
    """The context's text with the target (its char span) replaced by ``nonce`` (None: left as is)."""
    text = context["text"]
    if nonce is None:
        return text
    a, b = context["char_span"]
    return text[:a] + nonce + text[b:]


def matching_questions(coda: Path) -> Iterator[tuple[str, Question]]:
    """CoDA21 matching prompts: k = 3..8 (4 each), 3 with empty contexts, 3 with the word visible."""
    groups = [json.loads(line) for line in (coda / "groups.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    used: set[str] = set()
    plan = [(k, "full") for k in range(3, 9) for _ in range(4)] + [(5, "definition")] * 3 + [(4, "visible")] * 3
    for i, (k, cond) in enumerate(plan):
        group = next(x for x in groups if x["id"] not in used and len(x["items"]) >= k)  # each group once
        used.add(group["id"])
        items = group["items"][:k]
        order = list(range(k))
        random.Random(i).shuffle(order)  # the definitions in a seeded order, as the evaluator shows them
        rows = tuple("" if cond == "definition" else _hide(it["context"], None if cond == "visible" else NONCE) for it in items)
        options = tuple(items[j]["definition"] for j in order)
        fields = {"nonce": NONCE} if cond == "full" else {}
        yield f"matching-{cond}-k{k}-{i:02d}", Question("matching", rows, options, fields)


def choice_questions(folder: Path) -> Iterator[tuple[str, Question]]:
    """WordNetQA release rows: 6 from each probe file, then 6 with the question left empty."""
    from probegen.wordnetqa.release import choices_and_gold

    files = sorted(folder.glob("*-train-sample.jsonl"))
    rows = []
    for f in files:
        lines = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        rows += [(f.name.split("-")[0], r) for r in lines[:6]]
    for i, (probe, r) in enumerate(rows):
        texts, _gold = choices_and_gold(r)
        yield f"choice-{probe}-{i:02d}", Question("choice", (r["question"]["stem"],), texts)
    for i, (probe, r) in enumerate(rows[: PER_ASK - len(rows)]):
        texts, _gold = choices_and_gold(r)
        yield f"choice-empty-{probe}-{i:02d}", Question("choice", ("",), texts)


def yes_no_questions() -> Iterator[tuple[str, Question]]:
    """WiC-style pairs from SemCor: 13 same-synset, 13 different-synset, 4 with one sentence empty."""
    from probegen.semcor import context_index

    index = context_index()
    by_lemma: dict[str, list[str]] = {}
    for synset in sorted(index):
        if synset.split(".")[1] == "n" and len(index[synset]) >= 3:
            by_lemma.setdefault(synset.split(".")[0], []).append(synset)
    lemmas = [lem for lem in sorted(by_lemma) if len(by_lemma[lem]) >= 2]
    random.Random(0).shuffle(lemmas)
    out = []
    for i, lemma in enumerate(lemmas[:26]):
        a, b = sorted(by_lemma[lemma])[:2]
        same = i % 2 == 0
        c1, c2 = index[a][0], (index[a][1] if same else index[b][0])
        out.append((f"yes-no-{'same' if same else 'diff'}-{lemma}", c1.text, c2.text, c1.surface))
    for i, (qid, s1, s2, word) in enumerate(out[:4]):
        out.append((f"yes-no-empty-{qid[len('yes-no-'):]}", s1 if i % 2 else "", "" if i % 2 else s2, word))
    for qid, s1, s2, word in out:
        yield qid, Question("yes-no", (), ("yes", "no"), {"word": word, "sentence1": s1, "sentence2": s2})


# ---- the two backends -----------------------------------------------------------------------------
def ask_local(convs: list[list[dict[str, str]]], max_tokens: list[int]) -> list[tuple[str, str]]:
    """Greedy answers of the bundled SmolLM2-135M-Instruct in float32 (transformers, its chat template)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from probegen.models import BUNDLED, _bundled_files, _smollm2_dir

    path = _smollm2_dir(_bundled_files(BUNDLED["smollm2-135m"]))
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()
    out = []
    for i, (messages, mt) in enumerate(zip(convs, max_tokens)):
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            gen = model.generate(**ids, do_sample=False, max_new_tokens=mt, pad_token_id=tok.eos_token_id)
        new = gen[0, ids["input_ids"].shape[1]:]
        finish = "stop" if len(new) and int(new[-1]) == tok.eos_token_id else "length"
        out.append((tok.decode(new, skip_special_tokens=True), finish))
        print(f"local {i + 1}/{len(convs)}", file=sys.stderr, end="\r")
    return out


def ask_vllm(convs: list[list[dict[str, str]]], max_tokens: list[int], base: str, model: str, key: str) -> list[tuple[str, str]]:
    """Answers of a vLLM server's chat endpoint at temperature 0 (seed 0)."""
    import httpx

    out = []
    with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {key}"} if key else {}) as client:
        for i, (messages, mt) in enumerate(zip(convs, max_tokens)):
            body = {"model": model, "messages": messages, "temperature": 0, "max_tokens": mt, "seed": 0}
            r = client.post(base.rstrip("/") + "/chat/completions", json=body)
            r.raise_for_status()
            choice = r.json()["choices"][0]
            out.append((choice["message"]["content"] or "", choice.get("finish_reason") or ""))
            print(f"vllm {i + 1}/{len(convs)}", file=sys.stderr, end="\r")
    return out


# ---- main -----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Render the prompts, ask each backend, write prompts.jsonl and one responses file per backend."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coda", type=Path, help="a CoDA21 dataset folder (probegen make coda21 ... --out DIR)")
    ap.add_argument("--wordnetqa", type=Path, default=Path("/work/shared/data/wordnetqa-release-sample"))
    ap.add_argument("--backends", default="local,vllm")
    ap.add_argument("--vllm", default="http://127.0.0.1:8765/v1", help="the server's base URL")
    ap.add_argument("--vllm-model", default="smollm2")
    ap.add_argument("--vllm-key-file", type=Path, default=Path("/tmp/vsrv/key"))
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--reparse", action="store_true",
                    help="ask no model: re-parse the recorded responses with the current parser (review what changed)")
    args = ap.parse_args(argv)
    if args.reparse:
        return reparse(args.out)
    if args.coda is None:
        ap.error("--coda DIR is needed to record (a folder written by probegen make coda21)")

    templates = prompt_templates()
    questions = [*matching_questions(args.coda), *choice_questions(args.wordnetqa), *yes_no_questions()]
    prompts = []
    for qid, q in questions:
        row = {"id": qid, "ask": q.ask, "k": len(q.rows) if q.ask == "matching" else 1, "n": len(q.options)}
        if q.ask == "choice":
            row["texts"] = list(q.options)
        row.update(max_tokens=MAX_TOKENS[q.ask], messages=templates.messages(q))
        prompts.append(row)
    _write(args.out / "prompts.jsonl", prompts)

    asked = {qid: q for qid, q in questions}
    for backend in args.backends.split(","):
        ask = _backend(backend, args)
        rows = _round(prompts, ask([p["messages"] for p in prompts], [p["max_tokens"] for p in prompts]), backend)
        # the retry turn of every invalid answer: the answer, then the parse error shown to the model
        failed = [(p, r) for p, r in zip(prompts, rows) if r["parse"]["error"] is not None]
        turns = [[{"role": "assistant", "content": r["response"]},
                  {"role": "user", "content": templates.retry(asked[p["id"]], r["parse"]["error"])}] for p, r in failed]
        second = ask([p["messages"] + t for (p, _), t in zip(failed, turns)], [p["max_tokens"] for p, _ in failed])
        retries = _round([p for p, _ in failed], second, backend)
        for r, t in zip(retries, turns):
            r["retry_of"], r["retry_message"] = r["id"], t[1]["content"]
            r["id"] += "+retry"
        _write(args.out / f"smollm2-{backend}.jsonl", rows + retries)
        for name, rs in (("first answers", rows), ("retries", retries)):
            print(f"{backend}: {len(rs)} {name}, {sum(r['parse']['error'] is None for r in rs)} valid", file=sys.stderr)


def _backend(backend: str, args: argparse.Namespace):
    """A function (conversations, max_tokens) -> [(text, finish_reason)] for ``local`` or ``vllm``."""
    if backend == "local":
        return ask_local
    key = os.environ.get("PROBEGEN_VLLM_KEY") or (args.vllm_key_file.read_text().strip() if args.vllm_key_file.exists() else "")
    return lambda convs, mts: ask_vllm(convs, mts, args.vllm, args.vllm_model, key)


def _round(prompts: list[dict[str, Any]], answers: list[tuple[str, str]], backend: str) -> list[dict[str, Any]]:
    """One response row per prompt, with what the parser makes of it."""
    rows = []
    for p, (text, finish) in zip(prompts, answers):
        got = parse(p["ask"], text, p["k"], p["n"], p.get("texts"))
        rows.append({"id": p["id"], "backend": backend, "response": text, "finish_reason": finish,
                     "parse": {"answer": list(got.answer), "error": got.error}})
    return rows


def reparse(folder: Path) -> None:
    """Rewrite the ``parse`` of every recorded response with the current parser; print what changed."""
    prompts = {p["id"]: p for p in _read(folder / "prompts.jsonl")}
    for path in sorted(folder.glob("smollm2-*.jsonl")):
        rows = _read(path)
        for r in rows:
            p = prompts[r.get("retry_of", r["id"])]
            got = parse(p["ask"], r["response"], p["k"], p["n"], p.get("texts"))
            new = {"answer": list(got.answer), "error": got.error}
            if new != r["parse"]:
                print(f"{path.name} {r['id']}: {r['parse']} -> {new}", file=sys.stderr)
            r["parse"] = new
        _write(path, rows)


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    # compact: the folder stays under 200 KB
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
