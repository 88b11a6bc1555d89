"""A served model's answers are checked, not believed (issue 26 §2), against a fake server that
misbehaves in one way per case (tests/fake_openai.py: real HTTP on 127.0.0.1; correct answers are
the in-process SmolLM2's log-probs, so a correct server's run is compared with the in-process run).

Every fault is one ``probegen: error:`` line and exit 1, with nothing of the wrong answer cached;
a decoded body is bounded; the API key (and credentials in ``--api-base``) never reaches a file,
a cache or a message, whoever echoes it.
"""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from cli_checks import assert_one_line_error, linked_cache, run
from fake_openai import FAULTS, FakeOpenAI, Raw, SmolLM2Logprobs, gzip_bomb, word_answer

pytestmark = pytest.mark.real

CODA = Path(__file__).parent / "data" / "coda21_three_groups.json"  # 3 real groups: 75 (context, definition) pairs
KEY = "sk-fake-7f3a9c2e5b1d4086"


@pytest.fixture(scope="module")
def lm():
    """The in-process SmolLM2 that computes the fake server's log-probs (loaded once)."""
    return SmolLM2Logprobs()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    home = linked_cache(tmp_path / "cache")
    monkeypatch.setenv("PROBEGEN_CACHE", str(home))
    return home


@pytest.fixture
def server(lm, cache, monkeypatch):
    """A correct fake server that wants KEY (given in $OPENAI_API_KEY)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI(lm, key=KEY) as s:
        yield s


@pytest.fixture(scope="module")
def local(tmp_path_factory, lm):
    """``probegen eval`` of the three groups with SmolLM2 in process (float32, CPU)."""
    d = tmp_path_factory.mktemp("local")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROBEGEN_CACHE", str(linked_cache(d / "cache")))
        code, _, err = run("eval", "--model", "smollm2-135m", "--dtype", "float32", "--device", "cpu", "--dataset", CODA,
                           "--out", d / "out")
    assert code == 0, err
    return d / "out"


def _groups(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "groups.jsonl").read_text().splitlines()]


def _rows(db: Path, table: str = "scores") -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        except sqlite3.OperationalError:  # no such table
            return 0


def _eval(base: str, out: Path, *extra: str) -> tuple[int, str, str]:
    return run("eval", "--model", "smollm2", "--api-base", base, "--dataset", CODA, "--out", out, *extra)


def _no_secret(secret: str, *dirs: Path, texts: tuple[str, ...] = ()) -> None:
    """``secret`` is in no file under ``dirs`` (byte for byte; linked shared data left out) nor in ``texts``."""
    files = [p for d in dirs if d.exists() for p in d.rglob("*") if p.is_file() and not p.is_symlink()]
    leaks = [str(p) for p in files if secret.encode() in p.read_bytes()]
    assert not leaks, leaks
    assert not [t for t in texts if secret in t]


# ---- a correct server ---------------------------------------------------------------------------------
@pytest.mark.parametrize("refuse_zero", [False, True], ids=["max_tokens=0", "max_tokens=1"])
def test_correct_server_gives_the_in_process_results(server, local, cache, tmp_path, refuse_zero):
    """The fake server is right: its run is the in-process run (scores to 1e-3, same predictions and
    metrics), also when it refuses max_tokens 0 and echoes a generated token after each prompt."""
    server.refuse_zero = refuse_zero
    code, _, err = _eval(server.base, tmp_path / "api")
    assert code == 0, err
    a, b = _groups(local), _groups(tmp_path / "api")
    diffs = np.concatenate([np.abs(np.array(x["scores"]) - np.array(y["scores"])).ravel() for x, y in zip(a, b)])
    assert diffs.size == 75 and diffs.max() < 1e-3, diffs.max()
    assert [x["pred"] for x in a] == [y["pred"] for y in b]
    ra, rb = (json.loads((p / "results.json").read_text()) for p in (local, tmp_path / "api"))
    assert ra["metrics"] == rb["metrics"]
    assert _rows(cache / "scores.sqlite") == 75


# ---- log-probs of another text, or not numbers ----------------------------------------------------------
WRONG = {
    "truncate-left": "its tokens spell",
    "fewer-tokens": "its tokens spell",
    "shifted-offsets": "is at text offset",
    "boolean-logprobs": "has a boolean as its log-prob",
    "string-logprobs": "has a string as its log-prob",
    "nan-logprob": "not a finite number",
}


@pytest.mark.parametrize("fault", list(WRONG))
def test_wrong_logprobs_are_one_line_and_never_cached(server, cache, tmp_path, fault):
    server.fault = FAULTS[fault]
    code, _, err = _eval(server.base, tmp_path / "out")
    assert_one_line_error(code, err, f"{server.base}/completions", "answer to prompt", WRONG[fault], "nothing of its chunk")
    assert server.routes("completions") >= 1
    assert not (tmp_path / "out").exists()
    assert _rows(cache / "scores.sqlite") == 0


def test_a_bad_chunk_is_not_cached_and_the_good_ones_are_right(server, cache, tmp_path):
    """The fault starts after the first chunk: that chunk is cached (and right), the bad one is not;
    the rerun against a correct server reuses the good chunk and gives the correct scores."""
    from probegen.models import load_scorer
    from probegen.score_cache import ScoreCache
    from probegen.scorers.http import ApiError

    pairs = [(f"In sentence {i}, the word bank means", f" option {j}") for i in range(4) for j in range(4)]
    truth = load_scorer("smollm2", api_base=server.base, cache=False).score_pairs(pairs)
    db = tmp_path / "scores.sqlite"
    requests = server.routes("completions")
    server.fault = lambda route, doc: FAULTS["truncate-left"](route, doc) if server.routes("completions") > requests + 2 else doc
    s = load_scorer("smollm2", api_base=server.base, cache=ScoreCache(db), batch_size=4, concurrency=1)
    s.chunk_pairs = 8  # two requests a chunk
    with pytest.raises(ApiError, match="its tokens spell"):
        s.score_pairs(pairs)
    s.close()
    assert _rows(db) == 8
    server.fault = None
    again = load_scorer("smollm2", api_base=server.base, cache=ScoreCache(db), batch_size=4)
    got = again.score_pairs(pairs)
    assert again.stats()["pairs_cached"] == 8 and again.stats()["pairs_computed"] == 8
    assert max(abs(got[p] - truth[p]) for p in pairs) == 0.0
    again.close()


# ---- valid JSON of the wrong shape -------------------------------------------------------------------------
SHAPES = {
    "list-body": ("score", "/completions answered a list, not an object"),
    "string-choice": ("score", "/completions answered a string as a choice"),
    "string-logprobs": ("score", "has a string as its log-prob"),
    "chat-string-message": ("generate", "/chat/completions answered a string as its message"),
    "chat-list-body": ("generate", "/chat/completions answered a list, not an object"),
    "chat-list-content": ("generate", "answered a list as its message.content"),
    "models-string-entry": ("score", "/models listed a string where a model"),
    "models-list-owner": ("score", "has a list as its 'owned_by'"),
}


@pytest.mark.parametrize("fault", list(SHAPES))
def test_wrong_shapes_are_one_line(server, cache, tmp_path, fault):
    method, needle = SHAPES[fault]
    server.fault = FAULTS[fault]
    code, _, err = _eval(server.base, tmp_path / "out", "--method", method)
    assert_one_line_error(code, err, server.base, needle)
    assert not (tmp_path / "out").exists()
    assert _rows(cache / "scores.sqlite") == 0 and _rows(cache / "responses.sqlite", "responses") == 0


# ---- bodies without bound ------------------------------------------------------------------------------------
def test_a_gzip_bomb_is_cut_at_the_limit(server, cache, tmp_path):
    """16 MiB of gzip that would inflate to 16 GiB: the client inflates 64 MiB (MAX_BODY), stops
    reading and says so; Python's allocations peak far below the bomb."""
    from probegen.scorers import http

    size = 16 * 2**30
    server.fault = lambda route, doc: Raw(gzip_bomb(size), {"content-encoding": "gzip"}) if route == "completions" else doc
    tracemalloc.start()  # Python's allocations (bodies, buffers) at their peak during the run
    try:
        code, _, err = _eval(server.base, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_one_line_error(code, err, f"{server.base}/completions answered a body of more than 64.0 MiB once decoded")
    assert http.MAX_BODY == 64 * 2**20
    assert server.sent < size // 1024 // 2, server.sent  # the client hung up long before the end
    assert peak < 4 * http.MAX_BODY, peak
    assert _rows(cache / "scores.sqlite") == 0


@pytest.mark.parametrize("case", ["identity", "models-gzip", "gzip-gzip", "brotli", "bad-gzip"])
def test_other_bodies_are_bounded_or_refused(server, cache, tmp_path, monkeypatch, case):
    """A plain body over the limit (limit lowered to 1 MiB), a bomb in /models, encodings it did not ask for."""
    from probegen.scorers import http

    monkeypatch.setattr(http, "MAX_BODY", 2**20, raising=False)
    spaces = [b" " * 2**16] * 32  # 2 MiB
    route, raw, needle = {
        "identity": ("completions", Raw(spaces), "more than 1.0 MiB once decoded"),
        "models-gzip": ("models", Raw(gzip_bomb(2**30), {"content-encoding": "gzip"}), "more than 1.0 MiB once decoded"),
        "gzip-gzip": ("completions", Raw(b"x", {"content-encoding": "gzip, gzip"}), "Content-Encoding 'gzip, gzip'"),
        "brotli": ("completions", Raw(b"x", {"content-encoding": "br"}), "Content-Encoding 'br'"),
        "bad-gzip": ("completions", Raw(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff", {"content-encoding": "gzip"}), "does not decode"),
    }[case]
    server.fault = lambda r, doc: raw if r == route else doc
    code, _, err = _eval(server.base, tmp_path / "out")
    assert_one_line_error(code, err, f"{server.base}/{route}", needle)


# ---- the key, echoed ------------------------------------------------------------------------------------------
def test_key_in_model_information_is_never_written(lm, cache, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI(lm, key=KEY, info={"owned_by": f"team {KEY}", "root": f"/models/{KEY}/smollm2"}) as server:
        code, out, err = _eval(server.base, tmp_path / "out")
    assert code == 0, err
    served = json.loads((tmp_path / "out" / "results.json").read_text())["scorer"]["served"]
    assert served["owned_by"] == "team ***" and served["root"] == "/models/***/smollm2"
    _no_secret(KEY, tmp_path / "out", cache, texts=(out, err))


def test_key_in_chat_answers_is_never_written(lm, cache, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI(lm, key=KEY, chat=lambda m: f"{word_answer(m)}\nMy key is {KEY}.") as server:
        code, out, err = _eval(server.base, tmp_path / "out", "--method", "generate")
        assert server.routes("chat/completions") >= 3
    assert code == 0, err
    answers = [json.loads(line) for line in (tmp_path / "out" / "responses.jsonl").read_text().splitlines()]
    assert answers and all("My key is ***." in json.dumps(a) for a in answers)
    assert _rows(cache / "responses.sqlite", "responses") >= 3
    _no_secret(KEY, tmp_path / "out", cache, texts=(out, err))


def test_key_echoed_in_error_lines_is_masked(server, cache, tmp_path):
    """A refusal quoting the key, and tokens that spell it: the line shows ``***``."""
    server.fault = lambda route, doc: Raw(json.dumps({"error": {"message": f"bad request from {KEY}"}}).encode(), status=400)
    code, out, err = _eval(server.base, tmp_path / "out")
    assert_one_line_error(code, err, "HTTP 400: bad request from ***")
    _no_secret(KEY, tmp_path, cache, texts=(out, err))

    def spell_key(route, doc):
        if route == "completions":
            for ch in doc["choices"]:
                ch["logprobs"]["tokens"] = [KEY] + ch["logprobs"]["tokens"][1:]
                ch["logprobs"]["text_offset"] = [sum(map(len, ch["logprobs"]["tokens"][:k])) for k in range(len(ch["logprobs"]["tokens"]))]
        return doc

    server.fault = spell_key
    code, out, err = _eval(server.base, tmp_path / "out")
    assert_one_line_error(code, err, "its tokens spell '***")
    _no_secret(KEY, tmp_path, cache, texts=(out, err))


def test_credentials_in_api_base_are_refused_and_never_shown(server, cache, tmp_path):
    secret = "url-secret-91c0d2e4a7"
    base = server.base.replace("http://", f"http://user:{secret}@")
    code, out, err = _eval(base, tmp_path / "out")
    line = assert_one_line_error(code, err, "--api-base http://***@127.0.0.1", "holds credentials", "$OPENAI_API_KEY")
    assert secret not in line
    assert server.requests == []  # refused before any request
    _no_secret(secret, tmp_path, cache, texts=(out, err))
    code, out, err = _eval(f"{server.base}?api_key={secret}", tmp_path / "out")
    assert_one_line_error(code, err, "--api-base must be the server's plain /v1 URL")
    _no_secret(secret, tmp_path, cache, texts=(out, err))
