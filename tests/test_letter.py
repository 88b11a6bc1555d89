"""The letter method (``--method letter``) on the real SmolLM2-135M-Instruct, a BERT WordPiece
vocabulary, real data (tests/data, the WordNetQA release sample) and a real vLLM server.

Each probability is checked against a direct computation from the model's logits, so the tests
fail when a label is read from the wrong token (the space-prefixed variant alone, an off-by-one
position) or when the option orders are not mapped back before the matrix is formed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from probegen.core import PromptUnit, Unit
from probegen.generate.letter import LetterScorer, LocalLetters, continuation, label_variants
from probegen.generate.prompts import Question, letters, prompt_templates
from probegen.generate.scorer import option_orders

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"
CODA = ROOT / "tests" / "data" / "coda21_three_groups.json"

CHOICE = Unit.choice("fruit", "Which of these is a fruit?", ["a stone", "an apple", "a car", "a chair"], 1)
GROUP = Unit.group("bank", ["He sat on the [bank] of the river.", "She put her money in the [bank].",
                            "The plane had to [bank] left."],
                   ["tilt an aircraft in a turn", "sloping land beside water", "a financial institution"], [1, 2, 0], "alignment")
WIC = PromptUnit("wic", ("",), (("yes", "no"),), "argmax", (0,), ask="yes-no",
                 fields=(("word", "bank"), ("sentence1", "A river [bank]."), ("sentence2", "The [bank] of the lake.")))


@pytest.fixture(scope="module")
def chat():
    """SmolLM2 in process (float32, CPU, one torch thread: the machine is shared)."""
    import torch

    from probegen.generate.chat import load_chat

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    c = load_chat("smollm2-135m", device="cpu", dtype="float32", cache=False, batch_size=4)
    yield c
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def local(chat):
    return LocalLetters(chat, batch_size=4)


def direct_next(chat, messages) -> np.ndarray:
    """The next-token distribution after ``messages`` (assistant turn opened): one forward pass of the
    whole prompt, alone, the last position's logits."""
    import torch

    ids = chat.encode(messages)
    with torch.inference_mode():
        logits = chat.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    return torch.softmax(logits, -1).numpy().astype(np.float64)


def direct_labels(chat, messages, labels) -> np.ndarray:
    """P(label) = P(token 'L') + P(token ' L'), both single tokens in SmolLM2's vocabulary."""
    p = direct_next(chat, messages)
    tok = chat.tokenizer
    out = []
    for lab in labels:
        a, b = tok.convert_tokens_to_ids(lab), tok.convert_tokens_to_ids("\u0120" + lab)
        assert a != b and a != tok.unk_token_id and b != tok.unk_token_id
        out.append(p[a] + p[b])
    return np.array(out)


# ---- (1) the right token at the right position ------------------------------------------------------
def test_label_probability_is_the_models_next_token_probability(chat, local):
    t = prompt_templates()
    q = Question("choice", CHOICE.queries, CHOICE.candidates[0])
    msgs = t.messages(q)
    got = np.array(local.label_probs([msgs], [label_variants("choice", letters(4))])[0])
    want = direct_labels(chat, msgs, letters(4))
    assert np.allclose(got, want, atol=1e-6, rtol=2e-5), (got, want)  # float32: ~1e-5 apart along other kernels
    # what a wrong read gives is further off than the tolerance: the space-prefixed token alone,
    # the bare one alone (SmolLM2 puts ~5e-5 on ' A' here), or the position before the last
    import torch

    p = direct_next(chat, msgs)
    tok = chat.tokenizer
    only_bare = np.array([p[tok.convert_tokens_to_ids(lab)] for lab in letters(4)])
    only_space = np.array([p[tok.convert_tokens_to_ids("\u0120" + lab)] for lab in letters(4)])
    with torch.inference_mode():
        before = torch.softmax(chat.model(input_ids=torch.tensor([chat.encode(msgs)])).logits[0, -2].float(), -1).numpy()
    off_by_one = np.array([before[tok.convert_tokens_to_ids(lab)] + before[tok.convert_tokens_to_ids("\u0120" + lab)]
                           for lab in letters(4)])
    for wrong in (only_bare, only_space, off_by_one):
        assert np.abs(got - wrong).max() > 4e-5
    # and the scorer's renormalised row is exactly these, over their sum (label_mass)
    s = LetterScorer(local, t, permutations=1)
    unit = Unit.choice("fruit-fixed", *CHOICE.queries, CHOICE.candidates[0], 1)
    s.score_units([unit])
    d = s.detail(unit)
    perm = d["orders"][0]
    shown = Question("choice", unit.queries, tuple(unit.candidates[0][j] for j in perm))
    want = direct_labels(chat, t.messages(shown), letters(4))
    assert np.allclose(d["probs"][0][0], want / want.sum(), atol=1e-6, rtol=2e-5)
    assert d["label_mass"][0][0] == pytest.approx(want.sum(), rel=2e-5)


def test_batched_equals_one_at_a_time(chat):
    t = prompt_templates()
    convs = [t.messages(Question("choice", CHOICE.queries, CHOICE.candidates[0][:k])) for k in (2, 3, 4)]
    variants = [label_variants("choice", letters(k)) for k in (2, 3, 4)]
    together = LocalLetters(chat, batch_size=3).label_probs(convs, variants)
    alone = [LocalLetters(chat, batch_size=1).label_probs([c], [v])[0] for c, v in zip(convs, variants)]
    for a, b in zip(together, alone):
        assert np.allclose(a, b, atol=1e-6, rtol=2e-5)


# ---- (2) permutations are undone before the matrix is formed ---------------------------------------------
def test_orders_are_mapped_back_to_the_units_options(chat, local):
    t = prompt_templates()
    s = LetterScorer(local, t, permutations=3, seed=0)
    [m] = s.score_units([CHOICE])
    d = s.detail(CHOICE)
    perms = [np.array(p) for p in d["orders"]]
    assert len({tuple(p) for p in perms}) == 3
    want = np.zeros(4)
    unmapped = np.zeros(4)
    for perm, probs in zip(perms, d["probs"]):
        shown = Question("choice", CHOICE.queries, tuple(CHOICE.candidates[0][j] for j in perm))
        q = direct_labels(chat, t.messages(shown), letters(4))
        q = q / q.sum()
        assert np.allclose(probs[0], q, atol=1e-6, rtol=2e-5)  # the record is over SHOWN positions
        back = np.zeros(4)
        back[perm] = q  # position p showed option perm[p]
        want += back / 3
        unmapped += q / 3
    assert np.allclose(m[0], want, atol=2e-5)
    assert np.abs(want - unmapped).max() > 1e-3  # the check has teeth: not undoing the orders differs


def test_rotations_show_every_option_at_every_position(local):
    orders = option_orders("choice", 0, "u", 4, "rotations")
    assert len(orders) == 4
    assert all(sorted(col) == [0, 1, 2, 3] for col in np.array(orders).T)
    s = LetterScorer(local, prompt_templates(), permutations="rotations")
    unit = Unit.choice("rot", *CHOICE.queries, CHOICE.candidates[0][:3], 1)
    [m] = s.score_units([unit])
    assert len(s.detail(unit)["orders"]) == 3
    assert m.sum() == pytest.approx(1.0)


def test_matching_is_a_kxk_matrix_aligned_one_to_one(local):
    s = LetterScorer(local, prompt_templates(), permutations=2)
    [m] = s.score_units([GROUP])
    d = s.detail(GROUP)
    assert m.shape == (3, 3) and np.allclose(m.sum(axis=1), 1.0)
    assert len(d["probs"]) == 2 and all(len(rows) == 3 for rows in d["probs"])
    assert all(sorted(a) == [0, 1, 2] for a in d["answers"])  # each order's decision is a matching
    assert d["method"] == "letter" and len(d["label_mass"][0]) == 3


def test_yes_no_reads_both_cases_and_spaces(chat, local):
    t = prompt_templates()
    s = LetterScorer(local, t)
    s.score_units([WIC])
    d = s.detail(WIC)
    p = direct_next(chat, t.messages(Question("yes-no", WIC.queries, ("yes", "no"), dict(WIC.fields))))
    tok = chat.tokenizer
    raw = [sum(p[i] for i in {tuple(tok(v, add_special_tokens=False)["input_ids"])[0] for v in vs}) for vs in label_variants("yes-no", ["yes", "no"])]
    assert np.allclose(d["probs"][0][0], np.array(raw) / sum(raw), atol=1e-6, rtol=2e-5)
    assert d["orders"] == [[0, 1]]


# ---- (3) label tokenisation on real vocabularies -------------------------------------------------------------
def test_smollm2_label_tokens(chat, local):
    tok = chat.tokenizer
    text = local.render([{"role": "user", "content": "Pick one."}])
    pa, a = continuation(tok, text, "A")
    ps, sa = continuation(tok, text, " A")
    assert pa == ps == tuple(tok(text, add_special_tokens=False)["input_ids"])
    assert len(a) == len(sa) == 1 and a != sa  # a space makes another token in a byte-level BPE
    # a label of several tokens: the product of the conditional probabilities, token by token
    label = "Qzxv"
    prefix, cont = continuation(tok, text, label)
    assert len(cont) > 1
    [[got]] = local.label_probs([[{"role": "user", "content": "Pick one."}]], [[(label,)]])
    import torch

    with torch.inference_mode():
        logp = torch.log_softmax(chat.model(input_ids=torch.tensor([list(prefix + cont)])).logits[0].float(), -1)
    want = float(np.exp(sum(float(logp[len(prefix) - 1 + j, t]) for j, t in enumerate(cont))))
    assert got == pytest.approx(want, rel=1e-4)


def test_wordpiece_label_tokens(tmp_path):
    """A BERT-style (uncased WordPiece) vocabulary: 'A' and ' A' are one and the same token, counted
    once; a label of several word pieces is scored piece by piece."""
    import torch
    from tiny_models import bert_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    from probegen.generate.chat import LocalChat

    tok = bert_tokenizer()
    tok.chat_template = ("{% for m in messages %}[unused1] {{ m['role'] }} : {{ m['content'] }} [unused2] {% endfor %}"
                         "{% if add_generation_prompt %}[unused1] assistant : {% endif %}")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=512, pad_token_id=0, initializer_range=0.5)
    model = LlamaForCausalLM(cfg).eval()
    chat = LocalChat("tiny-wordpiece", model, tok, cache=False)
    back = LocalLetters(chat, batch_size=2)
    msgs = [{"role": "user", "content": "Which? A. x B. y"}]
    text = back.render(msgs)
    (p1, a), (p2, sa) = continuation(tok, text, "A"), continuation(tok, text, " A")
    assert p1 == p2 and a == sa == (tok.convert_tokens_to_ids("a"),)  # uncased, no space marker
    with torch.inference_mode():
        p = torch.softmax(model(input_ids=torch.tensor([list(p1)])).logits[0, -1].float(), -1)
    [[got_a, got_b]] = back.label_probs([msgs], [label_variants("choice", ["A", "B"])])
    assert got_a == pytest.approx(float(p[a[0]]), rel=1e-5)  # once, not twice
    assert got_b == pytest.approx(float(p[tok.convert_tokens_to_ids("b")]), rel=1e-5)
    prefix, cont = continuation(tok, text, "zyzzyva")
    assert len(cont) > 1 and all(tok.convert_ids_to_tokens(t).startswith("##") for t in cont[1:])
    [[got]] = back.label_probs([msgs], [[("zyzzyva",)]])
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=torch.tensor([list(prefix + cont)])).logits[0].float(), -1)
    want = float(np.exp(sum(float(logp[len(prefix) - 1 + j, t]) for j, t in enumerate(cont))))
    assert got == pytest.approx(want, rel=1e-4)


# ---- the commands on real data ------------------------------------------------------------------------------
def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_eval_letter_on_coda21_and_a_release_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    code, out, err = _cli("eval", "--model", "smollm2-135m", "--method", "letter", "--device", "cpu", "--dtype", "float32",
                          "--dataset", str(CODA), "--limit", "1", "--out", str(tmp_path / "c"))
    assert code == 0, err
    res = json.loads((tmp_path / "c" / "results.json").read_text())
    assert res["scorer"]["method"] == "letter" and res["scorer"]["kind"] == "letter"
    [g] = [json.loads(x) for x in (tmp_path / "c" / "groups.jsonl").read_text().splitlines()]
    gen = g["generation"]
    assert gen["method"] == "letter" and len(gen["probs"][0]) == g["k"] and len(gen["orders"][0]) == g["k"]
    assert sorted(g["pred"]) == list(range(g["k"]))  # aligned one-to-one
    code, out, err = _cli("eval", "--model", "smollm2-135m", "--method", "letter", "--device", "cpu", "--dtype", "float32",
                          "--dataset", str(RELEASE / "hypernymy-train-sample.jsonl"), "--limit", "1", "--permutations", "rotations",
                          "--out", str(tmp_path / "h"))
    assert code == 0, err
    items = [json.loads(x) for x in (tmp_path / "h" / "items.jsonl").read_text().splitlines()]
    assert len(items) == 1 and all(len(it["generation"]["orders"]) == len(it["generation"]["orders"][0]) for it in items)
    # read, not parsed: the summary reports the label mass, never a generative "valid 100%"
    assert "letter answers: 5 asks" in out and "mean probability mass on the option labels" in out
    assert "generated answers" not in out and "valid" not in out
    code, out, err = _cli("eval", "--model", "smollm2-135m", "--method", "letter", "--reduction", "mean",
                          "--dataset", str(CODA), "--out", str(tmp_path / "x"))
    from cli_checks import assert_one_line_error

    assert_one_line_error(code, err, "--reduction does not apply to --method letter")


def test_bias_letter_beside_a_scored_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    data = str(RELEASE / "synonymy-train-sample.jsonl")
    code, _, err = _cli("bias", "--model", "glove-50d", "--dataset", data, "--limit", "2", "--bootstrap", "20",
                        "--no-controls", "--out", str(tmp_path / "glove"))
    assert code == 0, err
    code, out, err = _cli("bias", "--model", "smollm2-135m", "--method", "letter", "--device", "cpu", "--dtype", "float32",
                          "--dataset", data, "--limit", "2", "--bootstrap", "20", "--no-controls",
                          "--beside", str(tmp_path / "glove"), "--out", str(tmp_path / "letter"))
    assert code == 0, err
    res = json.loads((tmp_path / "letter" / "results.json").read_text())
    assert res["scorer"]["method"] == "letter" and res["beside"]
    rows = [json.loads(x) for x in (tmp_path / "letter" / res["datasets"][0]["name"] / "full.jsonl").read_text().splitlines()]
    assert all(r["generation"]["method"] == "letter" for r in rows)
    report = (tmp_path / "letter" / "report.md").read_text()
    assert "#### Letter answers" in report and "Generated answers" not in report and "| valid |" not in report


def _chat_logprobs(tops):
    """A fault for the fake server: its chat answer carries ``tops`` as the first token's top log-probs."""
    def fault(route, doc):
        if route != "chat/completions":
            return doc
        choice = {**doc["choices"][0], "logprobs": {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": tops}]}}
        return {**doc, "choices": [choice]}
    return fault


def test_served_without_next_token_logprobs_is_one_line(tmp_path):
    """A server whose model's chat template is not here and whose chat answers hold no log-probs:
    one line; a top log-prob that is a boolean: one line; well-formed top log-probs are read."""
    from cli_checks import assert_one_line_error
    from fake_openai import FakeOpenAI

    data = ["--method", "letter", "--dataset", str(RELEASE / "definitions-train-sample.jsonl"), "--limit", "1"]
    with FakeOpenAI() as srv:
        code, _, err = _cli("eval", "--model", "smollm2", "--api-base", srv.base, *data, "--out", str(tmp_path / "a"))
        assert_one_line_error(code, err, "needs the next token's log-probs")
        srv.fault = _chat_logprobs([{"token": "A", "logprob": True}])
        code, _, err = _cli("eval", "--model", "smollm2", "--api-base", srv.base, *data, "--out", str(tmp_path / "b"))
        assert_one_line_error(code, err, "not a token string with a finite number")
        srv.fault = _chat_logprobs([{"token": "A", "logprob": -0.5}, {"token": " B", "logprob": -1.0}, {"token": "x", "logprob": -2.0}])
        code, _, err = _cli("eval", "--model", "smollm2", "--api-base", srv.base, *data, "--out", str(tmp_path / "c"))
        assert code == 0, err
    [row] = [json.loads(x) for x in (tmp_path / "c" / "items.jsonl").read_text().splitlines()]
    probs = row["generation"]["probs"][0][0]
    e = np.exp([-0.5, -1.0])
    assert np.allclose(probs[:2], e / e.sum()) and probs[2:] == [0.0] * (len(probs) - 2)
    assert row["generation"]["label_mass"][0][0] == pytest.approx(e.sum())


# ---- (4) served by vLLM: the same probabilities ----------------------------------------------------------------
def test_served_letter_probabilities_equal_in_process(vllm, monkeypatch, local):
    from probegen.generate.letter import load_letter
    from probegen.tasks import detect

    base, key, _ = vllm
    monkeypatch.setenv("OPENAI_API_KEY", key)
    units = [CHOICE, GROUP, WIC]
    for name in ("definitions", "hyponymy"):
        path = RELEASE / f"{name}-train-sample.jsonl"
        task = detect(path)
        data = task.load(path)
        from probegen.tasks import Settings

        units += task.prompt_units(data, "full", Settings())[:2]
    mine = LetterScorer(local, prompt_templates(), permutations=2)
    b = mine.score_units(units)
    # vLLM's logprob_token_ids names the labels' tokens (read wherever they rank); a server that refuses
    # the field gets the plain top 20 and the labels outside it echo-scored: both the model's own numbers
    for by_ids in (True, False):
        served = load_letter("smollm2", permutations=2, api_base=base)
        assert served.backend.mode == "completions"
        served.backend._by_ids = by_ids
        a = served.score_units(units)
        worst = 0.0
        for u, x, y in zip(units, a, b):
            dx, dy = served.detail(u), mine.detail(u)
            assert dx["orders"] == dy["orders"]
            worst = max(worst, float(np.abs(np.array(dx["probs"]) - np.array(dy["probs"])).max()),
                        float(np.abs(np.array(dx["label_mass"]) - np.array(dy["label_mass"])).max()))
            assert np.abs(x - y).max() < 1e-3
        assert worst < 1e-3, worst
        counters = served.backend.counters
        assert counters["from_top"] > 0
        # every SmolLM2 label spelling here is one token: named, none needs an echo; from the top 20, many do
        assert (counters["echo_scored"] == 0) if by_ids else (counters["echo_scored"] > 0), counters
        served.close()


def test_rotations_of_groups_of_different_sizes_are_summarised_honestly():
    """Under rotations a 2-option unit has 2 orders and a 3-option unit 3: per-order accuracy covers the
    orders every unit has, and the summary says so instead of printing the smaller count alone."""
    from probegen.generate.metrics import summarize, summary_lines

    two = {"gold": [0, 1], "correct": 1.0, "generation": {"method": "letter", "answers": [[0, 1], [1, 0]],
                                                           "status": ["valid"] * 2, "random_rows": [[], []]}}
    three = {"gold": [0, 1, 2], "correct": 1.0, "generation": {"method": "letter", "answers": [[0, 1, 2]] * 3,
                                                                "status": ["valid"] * 3, "random_rows": [[]] * 3}}
    block = summarize([two, three])
    assert (block["orders"], block["orders_max"], block["per_order"]) == (2, 3, [1.0, 0.5])
    assert "option orders: 2-3 (accuracy per order over the first 2" in summary_lines(block)[1]
    assert "orders_max" not in summarize([two])
