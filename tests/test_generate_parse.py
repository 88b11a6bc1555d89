"""The generative protocol's prompts and parsers (probegen.generate.prompts, probegen.generate.parse).

- Recorded real responses (tests/data/responses/, written by its record.py: the bundled
  SmolLM2-135M-Instruct in process and through a real vLLM server's chat endpoint, on prompts
  rendered from real CoDA21, WordNetQA and SemCor data) re-parse to what the parser gave when they
  were recorded, and a hand-checked subset to what a reader makes of them.
- The strictness rules of the module doc, one by one, on hand-written answers (malformed ones:
  duplicates, out of range, missing lines, prose, empty, Unicode).
- Fuzz (hypothesis, derandomized): any text parses without raising to an answer of the right
  length with valid indices; a matching written out in any accepted style reads back exactly.
- Prompt files: the bundled one loads and renders every ask (empty texts included); a user file
  with an unknown placeholder or a missing key is a one-line error naming the file and the key.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from probegen.errors import ProbegenError
from probegen.generate.parse import Parsed, parse, parse_choice, parse_matching, parse_yes_no
from probegen.generate.prompts import ASKS, Question, letters, prompt_templates

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "responses"
BUNDLED = ROOT / "templates" / "prompts" / "en.yaml"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


PROMPTS = {p["id"]: p for p in _jsonl(DATA / "prompts.jsonl")}
RESPONSES = {(r["backend"], r["id"]): r for f in sorted(DATA.glob("smollm2-*.jsonl")) for r in _jsonl(f)}


def _reparse(r: dict) -> Parsed:
    p = PROMPTS[r.get("retry_of", r["id"])]
    return parse(p["ask"], r["response"], p["k"], p["n"], p.get("texts"))


# ---- recorded real responses ----------------------------------------------------------------------
def test_the_recording_covers_every_ask_on_both_backends():
    assert len(PROMPTS) >= 60 and sum(f.stat().st_size for f in DATA.iterdir()) < 200_000
    for backend in ("local", "vllm"):
        firsts = [r for (b, _), r in RESPONSES.items() if b == backend and "retry_of" not in r]
        assert {r["id"] for r in firsts} == set(PROMPTS), backend
        for ask in ASKS:
            if ask == "sense":  # WSD's answer is a letter read by choice's parser; tests/test_generate.py asks it end to end
                continue
            mine = [r for r in firsts if PROMPTS[r["id"]]["ask"] == ask]
            assert 20 <= len(mine) <= 40, (backend, ask)
        # the recording holds malformed answers as well as valid ones, and retries of the former
        assert any(r["parse"]["error"] for r in firsts) and any(r["parse"]["error"] is None for r in firsts)
        assert any("retry_of" in r for (b, _), r in RESPONSES.items() if b == backend)
    for r in RESPONSES.values():  # a retry showed the model the parse error of its first answer
        if "retry_of" in r:
            assert RESPONSES[(r["backend"], r["retry_of"])]["parse"]["error"] in r["retry_message"]
    ks = {p["k"] for p in PROMPTS.values() if p["ask"] == "matching"}
    assert set(range(3, 9)) <= ks


@pytest.mark.parametrize("key", sorted(RESPONSES), ids=lambda key: f"{key[0]}-{key[1]}")
def test_a_recorded_response_parses_as_recorded(key):
    r = RESPONSES[key]
    got = _reparse(r)
    assert {"answer": list(got.answer), "error": got.error} == r["parse"]
    assert got.error is None or "\n" not in got.error


# (prompt id, how the response starts, answer a reader takes from it, valid?) read by hand from the
# recorded SmolLM2 responses; both backends gave these texts
HAND = [
    ("matching-full-k3-01", "1: A\n2: B\n3: C", (0, 1, 2), True),
    ("matching-full-k3-00", "1: A\n2: B\n3: C\n1: A\n2: B", (0, 1, 2), True),  # the same matching, repeated to the token limit
    ("matching-full-k5-10", "1: A\n2: B\n3: C\n...\n4: D\n5: E", (0, 1, 2, 3, 4), True),  # copies the example's "..."
    ("matching-full-k6-15", "1: A\n2: B\n3: C\n...\n4: D\n5: E\n6: F\n\nThe answer is:\n1: A", (0, 1, 2, 3, 4, 5), True),
    ("matching-definition-k5-25", "1. A\n2. B\n3. C\n4. D\n5. E", (0, 1, 2, 3, 4), True),
    ("matching-full-k6-12", "1: A\n2: B\n3: C\n...", (0, 1, 2, None, None, None), False),  # stops after the example
    ("matching-visible-k4-28", "1: A\n2: B\n3: C\n...", (0, 1, 2, None), False),
    ("matching-full-k4-04", "1. The family of the Kahler family", (None,) * 4, False),  # writes sentences, no letters
    ("matching-full-k4-07", "1. The person who requests or seeks", (None,) * 4, False),  # echoes definitions
    ("matching-full-k5-09", "1: The entire structure of an organism", (None,) * 5, False),  # the same text for every number
    ("matching-full-k5-11", '1. The made-up word "bkatuhla" stands in', (None,) * 5, False),  # echoes the instructions
    ("matching-full-k8-20", "1. An enthusiastic audience confirmed", (None,) * 8, False),  # echoes the contexts
    ("choice-definitions-00", "A. move around freely", (0,), True),  # letter A with option A's text
    ("choice-definitions-01", "A. decide on and make a declaration about\n\nThe correct answer is A", (0,), True),
    ("choice-synonymy-20", "E. Hyphantria, genus Hyphantria", (4,), True),
    ("choice-definitions-02", "A. remove with or as if with a ladle\nB. remove the", (None,), False),  # lists options
    ("choice-empty-definitions-00", "A. move around freely\nB. run off or leave the rails\nC", (None,), False),
    ("choice-hyponymy-14", "A. bounce event, defined as 'come back after being refused'", (None,), False),  # A with C's text
    ("choice-hyponymy-13", "A. bake (or broil) event, defined as 'be very hot", (None,), False),  # A with E's text, cut off
    ("matching-full-k6-12+retry", "1: A\n2: B\n3: C\n...", (0, 1, 2, None, None, None), False),  # retried: the same again
    ("choice-hyponymy-16+retry", "A. squint event, defined as 'partly close one's eyes,", (None,), False),  # A with B's text
    ("yes-no-same-bag", "No.", (1,), True),
    ("yes-no-empty-diff-rise", "No.", (1,), True),
]


@pytest.mark.parametrize("backend", ["local", "vllm"])
@pytest.mark.parametrize(("rid", "start", "answer", "valid"), HAND, ids=[h[0] for h in HAND])
def test_a_hand_checked_response(backend, rid, start, answer, valid):
    r = RESPONSES[(backend, rid)]
    assert r["response"].startswith(start), "re-recorded with a different answer: read it again and update HAND"
    got = _reparse(r)
    assert (got.answer, got.valid) == (answer, valid)


# ---- strictness rules, one by one -----------------------------------------------------------------
MATCHING = [
    # accepted forms
    ("1: C\n2: A\n3: B", 3, None, (2, 0, 1), None),
    ("1 - C\n2 - A\n3 - B", 3, None, (2, 0, 1), None),
    ("1) C\n2) A\n3) B", 3, None, (2, 0, 1), None),
    ("1. C\n2. A\n3. B", 3, None, (2, 0, 1), None),
    ("1 -> C\n2 → A\n3 => B", 3, None, (2, 0, 1), None),
    ("**1: C**\n**2: A**\n**3: B**", 3, None, (2, 0, 1), None),
    ("- 1: **C**\n- 2: **A**\n- 3: **B**", 3, None, (2, 0, 1), None),
    ("1: C. a device that holds\n2: A (a river side)\n3: B - money", 3, None, (2, 0, 1), None),
    ("Context 1: Definition C\nContext 2: Definition A\nContext 3: Definition B", 3, None, (2, 0, 1), None),
    ("1: C, 2: A, 3: B", 3, None, (2, 0, 1), None),
    ("1: c\n2: a\n3: b", 3, None, (2, 0, 1), None),  # lower case when the letter is all the line says
    ("Sure! Here is the matching:\n\n1: C\n2: A\n3: B\n\nI hope this helps.", 3, None, (2, 0, 1), None),  # prose around
    ("1: C\n2: A\n3: B\n1: C", 3, None, (2, 0, 1), None),  # the same pair twice counts once
    ("１：Ｃ\n２：Ａ\n３：Ｂ", 3, None, (2, 0, 1), None),  # full-width forms (NFKC)
    ("1:\u200bC\n2: A\u200e\n3: B", 3, None, (2, 0, 1), None),  # zero-width and direction marks
    ("1: AA\n2: A", 2, 27, (26, 0), None),  # two-letter labels past Z
    # partial: missing numbers
    ("1: C\n3: B", 3, None, (2, None, 1), "no letter for 2"),
    ("1: C", 3, None, (2, None, None), "no letter for 2 and 3"),
    # invalid
    ("1: C\n2: A\n3: B\n4: D", 3, None, (2, 0, 1), "number 4 is out of range (1 to 3)"),
    ("1: C\n2: A\n3: D", 3, None, (2, 0, None), "letter D is not an option (A to C)"),
    ("1: C\n2: A\n2: B\n3: B", 3, None, (2, None, 1), "number 2 has several letters (A and B)"),
    ("1: C\n2: C\n3: B", 3, None, (None, None, 1), "letter C is given to both 1 and 2"),
    ("1: C or A\n2: A\n3: B", 3, None, (None, 0, 1), "is not in the form 'number: letter'"),
    ("1: A man sat there\n2: A\n3: B", 3, None, (None, 0, 1), "is not in the form 'number: letter'"),  # 'A' is an article
    ("1. He sat on the bank\n1: C\n2: A\n3: B", 3, None, (2, 0, 1), "'1. He sat on the bank' is not in the form"),
    ("1: А\n2: B", 2, None, (None, 1), "is not in the form"),  # a Cyrillic А is no letter
    ("The first context is about money, the second about a river.", 2, None, (None, None), "no line of the form 'number: letter' found"),
    ("", 2, None, (None, None), "the answer is empty"),
    (" \n\t\n", 2, None, (None, None), "the answer is empty"),
    ("🙂🙂", 2, None, (None, None), "no line of the form"),
]


@pytest.mark.parametrize(("text", "k", "n", "answer", "error"), MATCHING)
def test_matching_rule(text, k, n, answer, error):
    got = parse_matching(text, k, n)
    assert got.answer == answer
    if error is None:
        assert got.valid, got.error
    else:
        assert not got.valid and error in got.error and "\n" not in got.error


CHOICE = [
    ("B", None, (1,), None),
    ("B.", None, (1,), None),
    ("(B)", None, (1,), None),
    ("B)", None, (1,), None),
    ("b", None, (1,), None),
    ("Answer: B", None, (1,), None),
    ("**B**", None, (1,), None),
    ("The correct answer is (B).", None, (1,), None),
    ("I think the answer is B because it fits.", None, (1,), None),
    ("B. an apple", ("a stone", "an apple", "a pear"), (1,), None),  # the letter and its own text
    ("B. because it grows on trees", ("a stone", "an apple", "a pear"), (1,), None),  # text of no option
    ("an apple", ("a stone", "an apple", "a pear"), (1,), None),  # no letter: one option's exact text
    ("It is an apple, I think.", ("a stone", "an apple", "a pear"), (1,), None),
    # invalid
    ("A or B", None, (None,), "the answer names two letters (A and B)"),
    ("Answer: A. No wait, the answer is C.", None, (None,), "two letters (A and C)"),
    ("A. a stone\nB. an apple\nC. a pear", ("a stone", "an apple", "a pear"), (None,), "several letters (A, B and C)"),
    ("A. a pear", ("a stone", "an apple", "a pear"), (None,), "letter A with the text of option C"),
    ("F", None, (None,), "letter F is not an option (A to C)"),
    ("The answer is a good question.", None, (None,), "no option letter (A to C) found"),  # an article, not the letter a
    ("I do not know.", None, (None,), "no option letter"),
    ("a stone or a pear", ("a stone", "an apple", "a pear"), (None,), "the text of several options (A and C)"),
    ("", None, (None,), "the answer is empty"),
]


@pytest.mark.parametrize(("text", "texts", "answer", "error"), CHOICE)
def test_choice_rule(text, texts, answer, error):
    got = parse_choice(text, 3, texts)
    assert got.answer == answer
    assert (got.error is None) if error is None else (error in got.error and "\n" not in got.error), got.error


YES_NO = [
    ("yes", (0,), None), ("No.", (1,), None), ("**Yes**", (0,), None), ("YES!", (0,), None),
    ("No, the meanings differ.", (1,), None), ("Answer: no", (1,), None),
    ("Yes, there is no difference.", (0,), None),  # the answer is the first word
    ("I think the answer is yes.", (0,), None),
    ("Yes or no", (None,), "both yes and no"), ("Yes.\nNo.", (None,), "both yes and no"),
    ("Maybe.", (None,), "no yes or no"), ("Nobody knows", (None,), "no yes or no"), ("", (None,), "empty"),
]


@pytest.mark.parametrize(("text", "answer", "error"), YES_NO)
def test_yes_no_rule(text, answer, error):
    got = parse_yes_no(text)
    assert got.answer == answer
    assert (got.error is None) if error is None else (error in got.error), got.error


def test_parse_dispatches_and_an_unknown_ask_is_one_line():
    assert parse("matching", "1: B\n2: A", 2, 2) == parse_matching("1: B\n2: A", 2, 2)
    assert parse("choice", "an apple", 1, 2, ["a stone", "an apple"]).answer == (1,)
    assert parse("yes-no", "no", 1, 2).answer == (1,)
    with pytest.raises(ProbegenError, match=r"^unknown question kind 'rank': use one of matching, choice, sense, yes-no$"):
        parse("rank", "1", 1, 1)


# ---- fuzz -------------------------------------------------------------------------------------------
FUZZ = settings(max_examples=300, derandomize=True, deadline=None, database=None)
# text that looks like answers: digits, letters, separators, markup, newlines, odd Unicode
ANSWERISH = st.lists(st.sampled_from([*"0123456789ABCDEabcz:.-)>(*_ \n,;", "yes", "no", "Answer", "→", "\u200b", "Ａ", "١"]),
                     max_size=60).map("".join)


def _well_formed(got: Parsed, rows: int, options: int) -> None:
    assert isinstance(got, Parsed) and len(got.answer) == rows
    assert all(a is None or 0 <= a < options for a in got.answer)
    assert got.error is None or (got.error and "\n" not in got.error)
    if got.valid:
        assert None not in got.answer
    picked = [a for a in got.answer if a is not None]
    assert len(picked) == len(set(picked)) or rows == 1  # one-to-one, even for a partial answer


@FUZZ
@given(text=st.one_of(st.text(max_size=200), ANSWERISH), k=st.integers(0, 9), extra=st.integers(0, 3))
def test_fuzz_parsers_never_raise(text, k, extra):
    _well_formed(parse_matching(text, k, k + extra), k, k + extra)
    _well_formed(parse_choice(text, k + extra, [f"option {i}" for i in range(k + extra)]), 1, k + extra)
    _well_formed(parse_yes_no(text), 1, 2)


@FUZZ
@given(data=st.data(), k=st.integers(1, 12))
def test_fuzz_a_written_out_matching_reads_back(data, k):
    perm = data.draw(st.permutations(range(k)))
    sep = data.draw(st.sampled_from([": ", " - ", ") ", ". ", " -> ", ":", " = "]))
    wrap = data.draw(st.sampled_from(["{}", "**{}**", "- {}", "{}."]))
    labels = letters(k)
    lines = [wrap.format(f"{i + 1}{sep}{labels[j]}") for i, j in enumerate(perm)]
    lines = data.draw(st.permutations(lines))  # any order of lines
    prose = data.draw(st.sampled_from(["", "Here is my answer:\n", "Sure.\n\n"]))
    assert parse_matching(prose + "\n".join(lines), k) == Parsed(tuple(perm), None)
    # dropping a line leaves that row open and says so
    if k == 1:
        return
    drop = data.draw(st.integers(0, k - 1))
    got = parse_matching("\n".join(line for i, line in enumerate(lines) if i != drop), k)
    assert not got.valid and got.answer.count(None) == 1 and "no letter for" in got.error


# ---- prompt templates ---------------------------------------------------------------------------------
def test_the_bundled_prompts_load_and_are_recorded_by_hash():
    t = prompt_templates()
    assert t.file == "templates/prompts/en.yaml"
    assert t.record() == {"file": t.file, "sha256": hashlib.sha256(BUNDLED.read_bytes()).hexdigest()}
    assert prompt_templates(str(BUNDLED)).data == t.data


def _user(q: Question) -> str:
    msgs = prompt_templates().messages(q)
    assert [m["role"] for m in msgs] == ["system", "user"] and all(m["content"] for m in msgs)
    assert "{" not in msgs[1]["content"] and "}" not in msgs[1]["content"]  # every placeholder filled
    return msgs[1]["content"]


def test_matching_messages_number_contexts_letter_definitions_and_name_the_nonce():
    q = Question("matching", ("He sat on the bkatuhla.", "The bkatuhla\nraised rates."), ("a financial institution", "sloping land"),
                 {"nonce": "bkatuhla"})
    text = _user(q)
    assert "1. He sat on the bkatuhla.\n2. The bkatuhla raised rates." in text  # one line per text
    assert "A. a financial institution\nB. sloping land" in text
    assert 'the made-up word "bkatuhla"' in text and "exactly 2 lines" in text and "1: A\n2: B" in text
    assert "made-up word" not in _user(Question("matching", q.rows, q.options))  # no nonce, no note


def test_messages_read_sensibly_with_empty_texts():
    text = _user(Question("matching", ("", ""), ("", "sloping land")))
    assert "1. (no text)\n2. (no text)" in text and "A. (no text)\nB. sloping land" in text
    text = _user(Question("choice", ("",), ("a stone", "an apple")))
    assert text.startswith("Which of these options is most likely the correct answer?") and "B. an apple" in text
    text = _user(Question("choice", (), ("a stone",)))
    assert "Which of these options" in text and "(A to A)" in text
    text = _user(Question("yes-no", (), ("yes", "no"), {"word": "bank", "sentence1": "", "sentence2": "A river bank."}))
    assert "Sentence 1: (no text)\nSentence 2: A river bank." in text and text.endswith("Answer yes or no.")
    assert "(no text)" in _user(Question("yes-no", (), ("yes", "no")))  # no fields at all


def test_choice_messages_letter_past_z():
    text = _user(Question("choice", ("Pick one.",), tuple(f"o{i}" for i in range(28))))
    assert "Z. o25\nAA. o26\nAB. o27" in text and "(A to AB)" in text


def test_retry_shows_the_error_and_asks_again():
    t = prompt_templates()
    q = Question("matching", ("a", "b", "c"), ("x", "y", "z"))
    msg = t.retry(q, "no letter for 2 and 3")
    assert msg.startswith("Your answer could not be read: no letter for 2 and 3.") and "exactly 3 lines" in msg
    assert "A to C" in t.retry(Question("choice", ("q",), ("x", "y", "z")), "e")
    assert "yes or no" in t.retry(Question("yes-no", (), ("yes", "no")), "e")
    with pytest.raises(ProbegenError, match="unknown question kind 'rank'"):
        t.messages(Question("rank", (), ()))


def _user_file(tmp_path: Path, edit) -> str:
    data = yaml.safe_load(BUNDLED.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return str(path)


def test_a_user_prompt_file_is_used_and_recorded(tmp_path):
    def edit(d):
        d["system"] = ""
        d["choice"]["user"] = "Q: {question}\n{options}\nLetter?"

    path = _user_file(tmp_path, edit)
    t = prompt_templates(path)
    assert t.messages(Question("choice", ("Which?",), ("x", "y"))) == [{"role": "user", "content": "Q: Which?\nA. x\nB. y\nLetter?"}]
    assert t.record() == {"file": path, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}


def _delete(block: str, key: str):
    return lambda d: d[block].pop(key) if block else d.pop(key)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["matching"].update(user=d["matching"]["user"] + " {colour}"),
     r"matching\.user: unknown placeholder \{colour\}; use \{rows\}"),
    (lambda d: d["yes-no"].update(retry="{error} {k}"), r"yes-no\.retry: unknown placeholder \{k\}"),
    (lambda d: d["choice"].update(option="{letter!r}. {text}"), r"choice\.option: unknown placeholder \{letter!r\}"),
    (lambda d: d.update(system="Hi {name}"), r"system: unknown placeholder \{name\}; use no placeholder"),
    (lambda d: d["choice"].update(user="{question"), r"choice\.user: malformed"),
    (_delete("choice", "retry"), r"missing choice\.retry$"),
    (_delete("", "empty"), r"missing 'empty'"),
    (_delete("", "yes-no"), r"missing 'yes-no'"),
    (lambda d: d["matching"].update(row=3), r"matching\.row: must be a string"),
    (lambda d: d.update(matching="text"), r"matching: must be a mapping"),
])
def test_a_malformed_user_file_is_one_line_naming_file_and_key(tmp_path, edit, message):
    path = _user_file(tmp_path, edit)
    with pytest.raises(ProbegenError) as e:
        prompt_templates(path)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{path}: ")
    assert re.search(message, str(e.value)), str(e.value)


@pytest.mark.parametrize(("content", "message"), [
    (b"- a list\n", "needs a mapping with system, empty, matching, choice, sense, yes-no"),
    (b"system: [unclosed\n", ":2: not a YAML/JSON file"),
    (b"\xff\xfe bad", "not UTF-8 text"),
])
def test_a_file_that_is_no_prompt_mapping_is_one_line(tmp_path, content, message):
    path = tmp_path / "p.yaml"
    path.write_bytes(content)
    with pytest.raises(ProbegenError) as e:
        prompt_templates(str(path))
    assert message in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ProbegenError, match="cannot read it"):
        prompt_templates(str(tmp_path / "missing.yaml"))


def test_letters():
    assert letters(0) == [] and letters(-1) == [] and letters(1) == ["A"]
    got = letters(53)
    assert got[:3] == ["A", "B", "C"] and got[25:28] == ["Z", "AA", "AB"] and got[51:] == ["AZ", "BA"]
    assert letters(703)[-2:] == ["ZZ", "AAA"] and len(set(letters(703))) == 703
    assert all(set(lab) <= set(string.ascii_uppercase) for lab in got)
