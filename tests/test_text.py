"""Target masking works by token span: multiword targets, and targets that are substrings."""

from probegen.coda21.items import Context
from probegen.coda21.render import query
from probegen.text import detokenize, remove_span, replace_span, split_at_span

PAT = {"n": "Definition of {m} is", "v": "Definition of {m} is to"}


def test_substring_target_only_its_span_is_replaced():
    toks = ["The", "mice", "slid", "on", "the", "ice", "."]
    assert replace_span(toks, (5, 6), "bkatuhla") == "The mice slid on the bkatuhla."
    # str.replace would also have hit "mice"
    assert "mice" in replace_span(toks, (5, 6), "X")


def test_multiword_target_is_replaced_by_one_nonce():
    toks = ["He", "visited", "New", "York", "City", "twice", "."]
    assert replace_span(toks, (2, 5), "bkatuhla") == "He visited bkatuhla twice."
    assert remove_span(toks, (2, 5)) == "He visited twice."
    left, target, right = split_at_span(toks, (2, 5))
    assert (left, target, right) == ("He visited", " New York City", " twice.")


def test_punctuation_and_quotes_detokenize():
    text, spans = detokenize(["He", "said", ",", "``", "go", "''", "."])
    assert text == 'He said, "go".'
    assert [text[a:b] for a, b in spans] == ["He", "said", ",", '"', "go", '"', "."]


def test_context_from_text_finds_whole_words_only():
    c = Context.from_text("The mice saw ice on the lake.", "ice")
    assert c.word == "ice" and c.char_span == (13, 16)


def test_render_modes_hide_or_show_the_target():
    c = Context.from_tokens(("The", "mice", "saw", "ice", "."), (3, 4))
    assert query(c, "n", "pattern", "context", "bkatuhla", PAT) == "The mice saw bkatuhla. Definition of bkatuhla is"
    assert query(c, "n", "pattern", "full", "bkatuhla", PAT) == "The mice saw ice. Definition of ice is"
    assert query(c, "v", "pattern", "word", "bkatuhla", PAT) == "Definition of ice is to"
    assert query(c, "n", "pattern", "definition", "bkatuhla", PAT) == "Definition of bkatuhla is"
    assert query(c, "n", "plain", "context", "bkatuhla", PAT) == "The mice saw."
