"""Reading the original WordNetQA / DictionaryQA release files as they are (issue 18, parts 1 and 2).

Real rows: the four sample files in ``shared/data/wordnetqa-release-sample`` (read in place, never
edited) and the rows copied unchanged into ``tests/data/release`` (the release's hyponymy test file
with ``hypernymy_N`` ids; DictionaryQA rows with integer keys and labels). ``definitions-variants.jsonl``
covers what those lack: double and typographic quotes, labels A-E, 1-5 and integers, a plural
multiword surface form.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_readers import json_paths

from probegen.errors import DatasetError
from probegen.wordnetqa import dataset as D
from probegen.wordnetqa import release as R
from probegen.wordnetqa import render

HERE = Path(__file__).parent
FIX = HERE / "data" / "release"
SAMPLE = HERE.parent.parent / "shared" / "data" / "wordnetqa-release-sample"
SAMPLES = {p: SAMPLE / f"{p}-train-sample.jsonl" for p in ("definitions", "hypernymy", "hyponymy", "synonymy")}
NONCE = "bkatuhla"
QUOTES = "'\"\u2018\u2019\u201c\u201d"


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def visible(word: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE) is not None


def assert_located(it, row: dict) -> None:
    """The sentence is a quoted passage of the stem, the target a span of it that is a form of the
    row's surface form, and the Context queries hide every span recorded (the word's own quotes too)."""
    stem, ctx = it.question, it.context
    at = stem.find(ctx.text)
    assert at > 0 and stem[at - 1] in QUOTES and stem[at + len(ctx.text)] in QUOTES, (stem, ctx.text)
    assert ctx.text[slice(*ctx.char_span)] == ctx.surface
    word = row["notes"].get("surface_form") or row["notes"].get("word")
    assert R.locate_word(ctx.surface, [word], it.pos), (ctx.surface, word)
    assert len(it.stem_spans) >= 2  # the target in the sentence and in its own quotes
    assert render.default_templates().query(it, "pattern", "context", NONCE).count(NONCE) == len(it.stem_spans)
    assert not visible(ctx.surface, render.default_templates().query(it, "plain", "context", NONCE))


# ---- the real sample, as it is ------------------------------------------------------------------------
@pytest.mark.parametrize("probe", sorted(SAMPLES))
def test_every_sample_row_is_read_with_its_sentence_and_word(probe):
    path = SAMPLES[probe]
    rows = lines(path)
    ds = D.load(path, ablations=True)
    assert [it.id for it in ds.items] == [r["id"] for r in rows]  # every row, none skipped
    assert {it.probe for it in ds.items} == {probe}  # from the file name (synonymy ids contain "def")
    for it, r in zip(ds.items, rows):
        assert it.choices[it.answer] == next(c["text"] for c in r["question"]["choices"] if c["label"] == r["answerKey"])
        assert it.synset == r["notes"]["gold_synset"] and it.split == "train"
        if probe == "synonymy":
            assert it.context is None and f"'{it.definition}'" in it.question
            assert render.default_templates().query(it, "plain", "full", NONCE) == it.definition
        else:
            assert_located(it, r)
            assert render.default_templates().query(it, "plain", "full", NONCE) == it.context.text  # the sentence, not the stem


def test_inflected_surface_form_is_located_through_morphology():
    """``home-school`` (notes.surface_form, the lemma) is ``home-schooling`` in the sentence."""
    (it,) = [it for it in D.load(SAMPLES["hypernymy"]).items if it.id == "2533-hypernym-0"]
    assert it.context.surface == "home-schooling"
    assert render.default_templates().query(it, "pattern", "context", NONCE).startswith(f"In 'The parents are {NONCE} their daughter', the word/concept '{NONCE}'")


def test_apostrophes_inside_the_sentence_do_not_cut_it():
    items = {it.id: it for it in D.load(SAMPLES["definitions"]).items}
    assert items["1811-def-0-1-26"].context.text == "he disliked his neighbors' snootiness"
    assert items["12764-def-0"].context.text == "seduce the unwary reader into easy acquiescence\"- O.J.Campbell"


def test_probe_comes_from_the_file_name_never_the_id(tmp_path):
    """A copy of the hyponymy sample renamed ``hyponymy-test.jsonl`` whose ids read ``hypernymy_N``
    (as in the release's hyponymy test file) is read as hyponymy; the same rows named for no probe
    are read from their notes (``<=`` chains), and an explicit probe outranks the name."""
    rows = lines(SAMPLES["hyponymy"])
    for i, r in enumerate(rows):
        r["id"] = f"hypernymy_{i}"
    text = "".join(json.dumps(r) + "\n" for r in rows)
    for name in ("hyponymy-test.jsonl", "test.jsonl"):
        (tmp_path / name).write_text(text)
        ds = D.load(tmp_path / name, ablations=True)
        assert {it.probe for it in ds.items} == {"hyponymy"} and len(ds.items) == 40
    assert {it.probe for it in D.load(tmp_path / "test.jsonl", probe="hypernymy").items} == {"hypernymy"}
    real = D.load(FIX / "hyponymy-test.jsonl", ablations=True)  # the release's own rows
    assert [(it.id, it.probe, it.split) for it in real.items] == [(f"hypernymy_{i}", "hyponymy", "test") for i in (0, 1, 3)]


def test_probe_from_the_notes_when_the_name_says_nothing(tmp_path):
    for probe, path in SAMPLES.items():
        shutil.copy(path, tmp_path / f"{probe[:3]}.jsonl")  # "def", "hyp", "syn": no probe word
        assert {it.probe for it in D.load(tmp_path / f"{probe[:3]}.jsonl").items} == {probe}


# ---- labels and keys --------------------------------------------------------------------------------
@pytest.mark.parametrize("labels", ["ABCDE", "12345", "ints0", "ints1"])
def test_any_label_set_and_key_type_gives_the_same_gold(tmp_path, labels):
    rows = lines(SAMPLES["definitions"])
    golds = [int(r["answerKey"]) for r in rows]
    for r in rows:
        for i, c in enumerate(r["question"]["choices"]):
            c["label"] = {"ABCDE": "ABCDE"[i], "12345": str(i + 1), "ints0": i, "ints1": i + 1}[labels]
        g = int(r["answerKey"])
        r["answerKey"] = {"ABCDE": "ABCDE"[g], "12345": g + 1, "ints0": g, "ints1": str(g + 1)}[labels]  # keys of the other type
    path = tmp_path / "definitions-dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [it.answer for it in D.load(path, ablations=True).items] == golds


def test_variants_double_typographic_quotes_and_plural_multiwords():
    ds = D.load(FIX / "definitions-variants.jsonl", ablations=True)
    got = {it.id: it for it in ds.items}
    assert [it.answer for it in ds.items] == [0, 3, 2, 2, 0]
    assert got["v-double-AE"].context.surface == "floppy disks"  # surface "floppy disk", plural head in the sentence
    assert got["v-plural-surface"].context.surface == "floppy disks"
    assert got["v-typographic-int"].context.text == "he disliked his neighbors\u2019 snootiness"
    assert got["v-curly-double-1to5"].context.text == "the dog\u2019s bone was buried"
    assert got["7"].context.text == "the dogs' bones were buried"
    for it, r in zip(ds.items, lines(FIX / "definitions-variants.jsonl")):
        assert_located(it, r)
    assert render.default_templates().query(got["v-double-AE"], "pattern", "context", NONCE) == (
        f'In the sentence "he copied the files onto two {NONCE}", the word "{NONCE}" is best defined as:')


def test_plural_multiword_locate_word():
    assert R.locate_word("Back up your work on floppy disks", ["floppy_disk"], "n") == [(21, 33)]
    assert R.locate_word("Back up your work on floppy disks", ["floppy disks"], "") == [(21, 33)]


# ---- DictionaryQA ---------------------------------------------------------------------------------------
def test_dictionary_qa_rows_read_as_multiple_choice_with_their_ablations():
    rows = lines(FIX / "dictionary_qa" / "test.jsonl")
    ds = D.load(FIX / "dictionary_qa" / "test.jsonl", ablations=True)
    assert [it.probe for it in ds.items] == ["dictionary"] * 4  # from the folder's name
    assert [it.answer for it in ds.items] == [r["answerKey"] for r in rows]  # integer keys and labels
    assert [it.id for it in ds.items] == ["0", "1", "2898", "940"]
    laps = ds.items[3]
    assert [laps.question[a:b] for a, b in laps.stem_spans] == ["laps", "lap", "lap", "laps"]  # every form hidden
    for it in ds.items:
        full = render.default_templates().query(it, "pattern", "full", NONCE)
        assert full == it.question and not visible(it.context.surface, render.default_templates().query(it, "pattern", "context", NONCE))
        assert render.default_templates().query(it, "plain", "word", NONCE) == it.context.surface


def test_dictionary_qa_row_without_a_sentence_has_no_context_ablation(tmp_path):
    r = lines(FIX / "dictionary_qa" / "test.jsonl")[0]
    r["question"]["stem"] = "Which of the following best defines the word neglect"
    path = tmp_path / "dictionary_qa-dev.jsonl"
    path.write_text(json.dumps(r) + "\n")
    (it,) = D.load(path).items  # eval: the question as it is
    assert it.context is None and render.default_templates().query(it, "plain", "full", NONCE) == it.question
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:1: the stem has no quoted sentence: .*no Context or Word ablation"):
        D.load(path, ablations=True)


# ---- rows that cannot be read -----------------------------------------------------------------------------
def _broken_copy(tmp_path: Path) -> tuple[Path, list[dict]]:
    rows = lines(SAMPLES["hypernymy"])
    rows[3]["question"]["stem"] = "Which of the following is a kind of portrait?"  # no quoted sentence
    rows[7]["notes"]["surface_form"] = "zebra"  # nowhere in the sentence
    rows[7]["notes"]["gold_synset"] = rows[7]["notes"]["chain"] = "zebra.n.01"
    rows[9]["answerKey"] = "9"
    path = tmp_path / "hypernymy-dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    return path, rows


def test_an_unrenderable_row_is_one_error_naming_file_and_line(tmp_path):
    path, _ = _broken_copy(tmp_path)
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:4: the stem has no quoted sentence$"):
        D.load(path)
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}:4: "):
        D.load(path, ablations=True)


def test_on_invalid_skip_records_counts_and_ids(tmp_path):
    path, rows = _broken_copy(tmp_path)
    ds = D.load(path, ablations=True, on_invalid="skip")
    assert len(ds.items) == 37
    assert ds.manifest["invalid"] == {
        "policy": "skip", "rows": 41, "kept": 37,
        "skipped": {"no quoted sentence": {"count": 1, "ids": [rows[3]["id"]]},
                    "word not in the quoted sentence": {"count": 1, "ids": [rows[7]["id"]]},
                    "answerKey not a choice label": {"count": 1, "ids": [rows[9]["id"]]},
                    "not valid JSON": {"count": 1, "ids": ["line 41"]}},
    }
    whole = D.load(SAMPLES["hypernymy"], on_invalid="skip").manifest["invalid"]
    assert whole == {"policy": "skip", "rows": 40, "kept": 40, "skipped": {}}
    assert "invalid" not in D.load(SAMPLES["hypernymy"]).manifest


def test_skip_keeps_at_most_twenty_ids_per_reason(tmp_path):
    rows = lines(SAMPLES["hyponymy"])
    for r in rows[:25]:
        r["answerKey"] = "7"
    path = tmp_path / "hyponymy-x.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = D.load(path, on_invalid="skip").manifest["invalid"]["skipped"]["answerKey not a choice label"]
    assert got["count"] == 25 and got["ids"] == [r["id"] for r in rows[:20]]


def test_task_load_takes_on_invalid():
    from probegen import tasks

    data = tasks.get("wordnetqa").load(SAMPLES["synonymy"], ablations=True, on_invalid="skip")
    assert data.manifest["invalid"]["kept"] == 40
    with pytest.raises(DatasetError, match="on_invalid"):
        tasks.get("wordnetqa").load(SAMPLES["synonymy"], on_invalid="ignore")


def test_no_silent_fallback_to_the_whole_stem():
    it = D.load(SAMPLES["definitions"]).items[0]
    import dataclasses

    unknown = dataclasses.replace(it, template="", context=None)
    with pytest.raises(DatasetError, match="cannot be rendered as its probe's query"):
        render.default_templates().query(unknown, "plain", "full", NONCE)


# ---- fuzz: any JSON line is an item or a DatasetError ---------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.sampled_from(
        ["id", "question", "stem", "choices", "text", "label", "answerKey", "notes", "surface_form", "word", "gold_synset",
         "chain", "hops", "pos", "probe", "split", "x"]), kids, max_size=6),
    max_leaves=25)
SEED_ROWS = [r for p in SAMPLES.values() for r in lines(p)[:3]] + lines(FIX / "dictionary_qa" / "test.jsonl")[:2]
PATHS = ["", "hypernymy-test.jsonl", "data/dictionary_qa/dev.jsonl", "x.jsonl"]


def _poke(row, path: tuple, value):
    node = row
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return row


@settings(max_examples=300, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), JSON, st.sampled_from(PATHS), st.booleans(), st.booleans())
def test_fuzz_any_json_row_is_an_item_or_a_dataset_error(pick, value, path, ablations, whole):
    """A real row with one value replaced (or an arbitrary JSON value as the whole row)."""
    row = json.loads(json.dumps(SEED_ROWS[pick % len(SEED_ROWS)]))
    if whole:
        row = value
    else:
        paths = [p for p in json_paths(row) if p]
        row = _poke(row, paths[(pick // len(SEED_ROWS)) % len(paths)], value)
    try:
        it = R.read_row(row, path, None, ablations)
    except DatasetError:
        return
    for mode in render.MODES:  # an item that was read renders in every mode
        for style in ("pattern", "plain"):
            render.default_templates().query(it, style, mode, NONCE)


# ---- --probe on the command line (eval and bias) --------------------------------------------------------
def test_cli_probe_sets_the_probe_of_a_release_file_and_is_refused_elsewhere(tmp_path):
    from cli_checks import assert_one_line_error, run

    rows = tmp_path / "rows.jsonl"  # a name that names no probe: the notes would say hyponymy
    shutil.copy(SAMPLES["hyponymy"], rows)
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", rows, "--probe", "hypernymy", "--out", tmp_path / "e")
    assert code == 0, err
    assert list(json.loads((tmp_path / "e" / "results.json").read_text())["metrics"]["by_probe"]) == ["hypernymy"]
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", rows, "--probe", "no-such-probe", "--out", tmp_path / "b")
    assert_one_line_error(code, err, "unknown probe 'no-such-probe'")
    assert not (tmp_path / "b").exists()
    coda = HERE / "data" / "coda21_three_groups.json"
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", coda, "--probe", "hyponymy", "--out", tmp_path / "c")
    assert_one_line_error(code, err, "--probe applies to multiple-choice")
    items = tmp_path / "items.jsonl"  # probegen's own items name their probe
    items.write_text("".join(json.dumps(it.to_json()) + "\n" for it in D.load(rows).items))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", items, "--probe", "hyponymy", "--out", tmp_path / "i")
    assert_one_line_error(code, err, "--probe applies to WordNetQA release files")
