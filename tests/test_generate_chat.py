"""Chat backends on the real bundled SmolLM2-135M-Instruct and a real vLLM server's chat endpoint.

No mocks: LocalChat is checked against transformers' own ``generate`` run one conversation at a
time; ApiChat against LocalChat (float32, the same converted weights behind the server). Faults
(429/500/503, a missing chat route, a model without a chat template, a failure halfway through a
run) are injected by a small threaded HTTP proxy in front of the real server.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
from fault_proxy import FaultProxy

from probegen.errors import ProbegenError
from probegen.generate.chat import LocalChat, ResponseCache, load_chat

pytestmark = pytest.mark.real

MAX_TOKENS = 12
PROMPTS = [
    [{"role": "user", "content": "What is the capital of France? Answer in one word."}],
    [{"role": "system", "content": "You answer with a single letter."},
     {"role": "user", "content": "Which is a fruit?\nA. car\nB. apple\nC. stone\nAnswer with the letter only."}],
    [{"role": "user", "content": "Is a dog an animal? Answer yes or no."}],
    [{"role": "user", "content": "Match each context to a definition.\n1: I sat on the bank of the river.\n"
                                 "2: She put her money in the bank.\nA. land beside water\nB. a financial institution\n"
                                 "Answer with one line per context, like 1: A"}],
]
# what vLLM answers for a model whose tokenizer has no chat template (transformers' ValueError)
NO_TEMPLATE = ("As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
               "template if the tokenizer does not define one.")


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert isinstance(e.value, ProbegenError) and msg and "\n" not in msg, msg
    return msg


@pytest.fixture(scope="module")
def local():
    """SmolLM2 in process, float32 on the CPU, batches of 4, no cache.

    One torch thread while this module runs: on a shared 2-core machine with another busy process,
    two OpenMP threads spin against each other and generation runs ~20x slower (0.7 s vs 14 s for
    12 tokens, measured); the answers are compared under the same setting.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    chat = load_chat("smollm2-135m", device="cpu", dtype="float32", cache=False, batch_size=4)
    yield chat
    chat.close()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def local_answers(local):
    """LocalChat's responses to PROMPTS (one batch) and the seconds it took."""
    t0 = time.monotonic()
    got = local.respond(PROMPTS, max_tokens=MAX_TOKENS, seed=0)
    return got, time.monotonic() - t0


@pytest.fixture
def keyed(vllm, monkeypatch):
    base, key, _ = vllm
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return base, key


# ---- in process -------------------------------------------------------------------------------------
def test_local_is_exactly_transformers_generate(local, local_answers):
    import torch

    got, seconds = local_answers
    model, tok = local.model, local.tokenizer
    want, ended = [], []
    for conv in PROMPTS:  # transformers' own way, one conversation at a time (no padding at all)
        enc = tok.apply_chat_template(conv, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.inference_mode():
            out = model.generate(**enc, max_new_tokens=MAX_TOKENS, do_sample=False)
        new = out[0, enc["input_ids"].shape[1]:].tolist()
        want.append(tok.decode(new, skip_special_tokens=True))
        ended.append(tok.eos_token_id in new)
    print(f"\nlocal: {len(PROMPTS)} answers in one batch, {seconds:.1f} s ({len(PROMPTS) / seconds:.2f} answers/s); "
          f"answers: {[r.text for r in got]}")
    assert [r.text for r in got] == want  # left padding in a batch changed no greedy token
    assert [r.finish_reason for r in got] == ["stop" if e else "length" for e in ended]
    assert "Paris" in got[0].text and got[0].finish_reason == "stop"
    assert local.stats()["requests"] == 1 and local.identity()["dtype"] == "float32"


def test_local_cache_replays_without_generating(local, tmp_path):
    path = tmp_path / "responses.sqlite"
    convs = PROMPTS[:2]
    first = LocalChat("smollm2-135m", local.model, local.tokenizer, cache=path, batch_size=2)
    a = first.chat(convs, max_tokens=3, seed=0)
    assert first.stats()["requests"] == 1 and first.stats()["responses"] == 2
    first.close()
    again = LocalChat("smollm2-135m", local.model, local.tokenizer, cache=path, batch_size=2)
    b = again.respond(convs + convs, max_tokens=3, seed=0)
    assert [r.text for r in b] == a + a and all(r.cached for r in b)
    assert again.stats()["requests"] == 0 and again.stats()["responses"] == 0 and again.stats()["cached"] == 4
    again.close()


# ---- served: the real vLLM chat endpoint ---------------------------------------------------------------
def test_api_agrees_with_local_float32(keyed, local_answers):
    base, _ = keyed
    chat = load_chat("smollm2", api_base=base, cache=False, concurrency=4)
    t0 = time.monotonic()
    got = chat.respond(PROMPTS * 2, max_tokens=MAX_TOKENS, seed=0)
    seconds = time.monotonic() - t0
    chat.close()
    local = [r.text for r in local_answers[0]]
    api = [r.text for r in got[: len(PROMPTS)]]
    same = sum(a == b for a, b in zip(api, local))
    print(f"\napi: {len(got)} answers, concurrency 4, {seconds:.1f} s ({len(got) / seconds:.2f} answers/s); "
          f"agreement with LocalChat float32: {same}/{len(PROMPTS)} exactly")
    assert [r.text for r in got[len(PROMPTS):]] == api  # the same conversation twice: the same greedy answer
    # tiny numeric differences may flip a late token; the first answer tokens agree
    assert same >= len(PROMPTS) - 1 and all(a[:8] == b[:8] for a, b in zip(api, local))
    assert all(a.finish_reason == b.finish_reason for a, b in zip(got, local_answers[0]) if a.text == b.text)


def test_api_cache_replays_resumes_and_never_holds_the_key(keyed, tmp_path):
    base, key = keyed
    path = tmp_path / "responses.sqlite"
    first = load_chat("smollm2", api_base=base, cache=path, concurrency=2)
    a = first.chat(PROMPTS[:2], max_tokens=4, seed=0)
    assert first.stats()["requests"] == 2
    first.close()
    again = load_chat("smollm2", api_base=base, cache=path, concurrency=2)
    b = again.respond(PROMPTS[:3], max_tokens=4, seed=0)  # two replayed, one asked
    assert [r.text for r in b[:2]] == a and [r.cached for r in b] == [True, True, False]
    assert again.stats()["requests"] == 1
    c = again.chat(PROMPTS[:3], max_tokens=4, seed=0)
    assert c == [r.text for r in b] and again.stats()["requests"] == 1  # the third run asked nothing
    assert key not in json.dumps(again.identity())
    again.close()
    files = list(tmp_path.glob("responses.sqlite*"))
    assert files and not [f for f in files if key.encode() in f.read_bytes()]
    assert len(ResponseCache(path)) == 3


def test_damaged_cache_is_set_aside(keyed, tmp_path, caplog):
    base, _ = keyed
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"this is not a database " * 200)
    chat = load_chat("smollm2", api_base=base, cache=path)
    with caplog.at_level("WARNING", logger="probegen.cache"):
        got = chat.chat(PROMPTS[:1], max_tokens=4, seed=0)
    chat.close()
    assert got[0] and "response cache" in caplog.text and "is corrupt" in caplog.text
    assert len(list(tmp_path.glob("responses.sqlite.corrupt-*"))) == 1 and len(ResponseCache(path)) == 1


@pytest.fixture
def proxy(keyed):
    p = FaultProxy(keyed[0], route="/chat/completions")
    yield p
    p.stop()


def test_429_and_5xx_are_retried(keyed, proxy):
    base, _ = keyed
    proxy.inject = [(429, "slow down"), (500, "boom"), (503, "busy")]
    chat = load_chat("smollm2", api_base=proxy.base, cache=False, concurrency=2, max_retries=6)
    got = chat.chat(PROMPTS[:3], max_tokens=MAX_TOKENS, seed=0)
    direct = load_chat("smollm2", api_base=base, cache=False).chat(PROMPTS[:3], max_tokens=MAX_TOKENS, seed=0)
    assert got == direct and not proxy.inject
    assert chat.stats()["retries"] == 3 and chat.stats()["requests"] == 6
    chat.close()
    proxy.inject = [(500, "boom")] * 3
    chat = load_chat("smollm2", api_base=proxy.base, cache=False, max_retries=2)
    with pytest.raises(ProbegenError) as e:
        chat.chat([[{"role": "user", "content": "Hi"}]], max_tokens=2, seed=0)
    assert "failed 3 times; last: HTTP 500 boom" in one_line(e)
    chat.close()


def test_answers_before_a_failure_are_kept(keyed, proxy, tmp_path):
    path = tmp_path / "responses.sqlite"
    proxy.inject = [None, None, (400, "injected refusal")]
    chat = load_chat("smollm2", api_base=proxy.base, cache=path, concurrency=1)
    with pytest.raises(ProbegenError) as e:
        chat.chat(PROMPTS, max_tokens=4, seed=0)
    assert "injected refusal" in one_line(e)
    chat.close()
    assert len(ResponseCache(path)) == 2
    chat = load_chat("smollm2", api_base=proxy.base, cache=path, concurrency=1)
    got = chat.respond(PROMPTS, max_tokens=4, seed=0)  # resumes: only the two unanswered are asked
    assert [r.cached for r in got] == [True, True, False, False] and chat.stats()["requests"] == 2
    chat.close()


def test_api_errors_are_one_line(keyed, proxy, monkeypatch):
    base, key = keyed
    with pytest.raises(ProbegenError) as e:
        load_chat("nosuch", api_base=base)
    assert "serves no model 'nosuch'" in one_line(e) and "smollm2" in str(e.value)
    with pytest.raises(ProbegenError) as e:
        load_chat("smollm2", api_base=base, dtype="bfloat16")
    assert "dtype do(es) not apply" in one_line(e)
    proxy.inject = [(404, "Not Found")]
    chat = load_chat("smollm2", api_base=proxy.base, cache=False)
    with pytest.raises(ProbegenError) as e:
        chat.chat(PROMPTS[:1], max_tokens=2, seed=0)
    assert "HTTP 404" in one_line(e) and "no chat endpoint" in str(e.value)
    proxy.inject = [(400, NO_TEMPLATE)]
    with pytest.raises(ProbegenError) as e:
        chat.chat(PROMPTS[:1], max_tokens=2, seed=0)
    assert "has no chat template" in one_line(e) and "instruction-tuned" in str(e.value)
    chat.close()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-" + key[-6:])
    with pytest.raises(ProbegenError) as e:
        load_chat("smollm2", api_base=base)
    assert "rejected the API key (HTTP 401" in one_line(e) and key[-6:] not in str(e.value)


# ---- load_chat errors ---------------------------------------------------------------------------------
def test_load_chat_errors(tmp_path, monkeypatch):
    from probegen.models import BUNDLED, _bundled_files, _smollm2_dir

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an unknown name fails at once, without the hub
    with pytest.raises(ProbegenError) as e:
        load_chat("smollm2-136m")
    assert "unknown model 'smollm2-136m'" in one_line(e) and "smollm2-135m" in str(e.value)
    with pytest.raises(ProbegenError) as e:
        load_chat("smollm2-135m", beam_size=4)
    assert "unknown chat setting(s) beam_size" in one_line(e)
    with pytest.raises(ProbegenError) as e:
        load_chat("minilm-l6")
    assert "is not a causal LM (kind: embedding)" in one_line(e)
    src = _smollm2_dir(_bundled_files(BUNDLED["smollm2-135m"]))
    bare = tmp_path / "no-template"
    bare.mkdir()
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, bare / name)
    cfg = json.loads((bare / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(cfg))
    assert not (bare / "chat_template.jinja").exists()
    with pytest.raises(ProbegenError) as e:
        load_chat(str(bare))
    assert "has no chat template: --method generate needs an instruction-tuned model" in one_line(e)


def test_default_cache_path():
    from probegen.paths import cache_dir

    assert ResponseCache().path == cache_dir() / "responses.sqlite"  # opened on first use: nothing created here
