"""Served option-label probabilities must be a distribution (issue 35): a server whose next-token
log-probs are a placeholder (0.0 for every label), NaN, or a single log-prob > 0 is one
``probegen: error:`` line naming the server, the prompt and the labels, exit 1, with no results
folder and nothing in the cache; a proper distribution still runs.

Both ways ``--method letter`` reads a served model (:mod:`probegen.generate.letter_api`) are
driven through the CLI against the fake OpenAI-compatible server (tests/fake_openai.py): the
completions endpoint's top log-probs (the model's chat template is here: a tiny byte-level
tokenizer with a ChatML template, built in the test, is what the server reports as its ``root``)
and chat/completions' ``top_logprobs`` (no template here).
"""

from __future__ import annotations

import json
import math
import string
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run
from fake_openai import FakeOpenAI

from probegen.errors import ProbegenError
from probegen.generate.letter_api import MASS_TOLERANCE, check_distribution

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample"
DATA = RELEASE / "definitions-train-sample.jsonl"
LETTERS = string.ascii_uppercase[:8]  # more than any unit of the sample has
KEY = "sk-fake-35d1c0ffee4b2a97"
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def template_dir(tmp_path_factory) -> Path:
    """A byte-level BPE tokenizer (every byte, plus ' A'..' H' as one token each) with a ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = [("\u0120", c) for c in LETTERS]
    vocab.update({a + b: len(vocab) + k for k, (a, b) in enumerate(merges)})
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    d = tmp_path_factory.mktemp("served-template")
    PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=CHATML).save_pretrained(d)
    return d


def _chars(prompt: str) -> tuple[list[str], list[float | None]]:
    """Echoed prompts (a label variant missing from the top list): one token per character, each unlikely."""
    return list(prompt), [None] + [-20.0] * (len(prompt) - 1)


def _top(values: dict[str, float]):
    """A server's first-token top list: ``values`` (token -> log-prob), every other label variant
    ('C', ' C', ...) at log-prob -20."""
    def top(_prompt_or_messages) -> dict[str, float]:
        return {**{v: -20.0 for c in LETTERS for v in (c, " " + c)}, **values}
    return top


def _both(**values: float) -> dict[str, float]:
    """``values`` for each label's two variants ('A' and ' A')."""
    return {v: x for c, x in values.items() for v in (c, " " + c)}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "cache"
    home.mkdir()
    monkeypatch.setenv("PROBEGEN_CACHE", str(home))
    return home


def _entries(home: Path) -> list[str]:
    """What the cache holds (score and response caches: any sqlite file with a row)."""
    import sqlite3

    found = []
    for db in sorted(home.rglob("*.sqlite")):
        with sqlite3.connect(db) as conn:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
                if conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]:
                    found.append(f"{db.name}:{table}")
    return found


def _eval(server: FakeOpenAI, out: Path) -> tuple[int, str, str]:
    return run("eval", "--model", "smollm2", "--api-base", server.base, "--method", "letter", "--dataset", DATA,
               "--limit", "3", "--out", out)


def _refused(server: FakeOpenAI, tmp_path: Path, cache: Path, *needles: str) -> str:
    out = tmp_path / "run"
    code, _, err = _eval(server, out)
    line = assert_one_line_error(code, err, server.base, "no distribution", "unit ", *needles)
    assert not out.exists(), sorted(p.name for p in out.iterdir())
    assert _entries(cache) == []
    assert not [p.name for p in cache.rglob("*") if p.name.startswith(("scores", "responses"))]
    return line


@pytest.mark.parametrize("mode", ["completions", "chat"])
def test_placeholder_logprobs_are_one_line(mode, template_dir, tmp_path, cache, monkeypatch):
    """log-prob 0.0 for every label (a common placeholder): no run with a label mass of 10, one line
    (naming the server's URL, never its key)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    info = {"root": str(template_dir)} if mode == "completions" else None
    with FakeOpenAI(_chars, info=info, key=KEY, top=_top(_both(**{c: 0.0 for c in LETTERS}))) as srv:
        line = _refused(srv, tmp_path, cache, "option labels", "'A' 2, 'B' 2, 'C' 2")
        asked = srv.routes("completions" if mode == "completions" else "chat/completions")
        assert asked and not srv.routes("chat/completions" if mode == "completions" else "completions")
    assert KEY not in line


@pytest.mark.parametrize("mode", ["completions", "chat"])
@pytest.mark.parametrize("value, shown", [(math.nan, "'B' nan"), (0.5, "'B' 1.64"), (math.inf, "'B' inf")])
def test_nan_or_a_logprob_above_zero_is_one_line(mode, value, shown, template_dir, tmp_path, cache):
    """A single token's log-prob ('B') NaN, +inf, or > 0 (a probability > 1), the others' proper."""
    info = {"root": str(template_dir)} if mode == "completions" else None
    with FakeOpenAI(_chars, info=info, top=_top({**_both(A=math.log(0.3)), "B": value})) as srv:
        _refused(srv, tmp_path, cache, shown)


@pytest.mark.parametrize("mode", ["completions", "chat"])
def test_a_top_list_entry_beyond_one_is_one_line(mode, template_dir, tmp_path, cache):
    """The labels' probabilities are proper but another token of the top list has log-prob NaN or > 0."""
    info = {"root": str(template_dir)} if mode == "completions" else None
    for other, shown in ((math.nan, "'x' nan"), (0.5, "'x' 1.64")):
        with FakeOpenAI(_chars, info=info, top=_top({**_both(A=math.log(0.3)), "x": other})) as srv:
            _refused(srv, tmp_path, cache, "top log-probs", shown)


@pytest.mark.parametrize("mode", ["completions", "chat"])
def test_a_distribution_runs(mode, template_dir, tmp_path, cache):
    """Log-probs of 0.6 / 0.3 (the rest tiny): the run passes, its label probabilities are those."""
    info = {"root": str(template_dir)} if mode == "completions" else None
    with FakeOpenAI(_chars, info=info, top=_top(_both(A=math.log(0.3), B=math.log(0.15)))) as srv:
        code, _, err = _eval(srv, tmp_path / "run")
    assert code == 0, err
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["scorer"]["backend"]["letter_mode"] == mode
    rows = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 3
    for r in rows:
        [[mass]] = r["generation"]["label_mass"]
        n = len(r["generation"]["probs"][0][0])
        assert mass == pytest.approx(2 * (0.3 + 0.15) + 2 * (n - 2) * math.exp(-20))  # 'A' and ' A' each 0.3, ...


def test_check_distribution_bounds():
    """The one check: each finite and <= 1, the sum <= 1, within MASS_TOLERANCE (and no further)."""
    check_distribution({"'A'": 0.6, "'B'": 0.4 + MASS_TOLERANCE / 2}, "http://h/v1", "p")
    check_distribution({"'A'": 0.0, "'B'": 1.0}, "http://h/v1", "p")
    for probs, shown in [({"'A'": 0.6, "'B'": 0.4 + 2 * MASS_TOLERANCE}, "sum 1.002"),
                         ({"'A'": math.nan, "'B'": 0.1}, "'A' nan"), ({"'A'": -0.1}, "'A' -0.1"),
                         ({"'A'": 1 + 2 * MASS_TOLERANCE}, "'A' 1.002")]:
        with pytest.raises(ProbegenError, match="no distribution") as e:
            check_distribution(probs, "http://h/v1", "unit 'x'")
        assert "http://h/v1" in str(e.value) and "unit 'x'" in str(e.value) and shown in str(e.value)
    check_distribution({"'x'": 0.7, "'y'": 0.7}, "http://h/v1", "p", summed=False)  # a top list: entry by entry
    with pytest.raises(ProbegenError, match="'y' nan"):
        check_distribution({"'x'": 0.7, "'y'": math.nan}, "http://h/v1", "p", summed=False)
