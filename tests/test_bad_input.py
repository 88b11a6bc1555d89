"""Malformed imports (issue 16, items 8, 12, 13): every bad value, byte or size in a file a user
brings gives one ``probegen: error:`` line naming the file (and line or group), never a traceback;
a full disk while writing is one line too, and leaves no output or temp file behind."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run

DATA = Path(__file__).parent / "data"
CODA_JSON = DATA / "coda21_three_groups.json"
WNQA_JSONL = DATA / "wordnetqa_release_four_probes.jsonl"
WIC_ROW = {"id": "p1", "lemma": "bank", "pos": "n", "context": "They sat on the bank of the river.", "span": [16, 20],
           "context2": "The bank raised its rates.", "span2": [4, 8], "label": False, "split": "train"}


def coda21() -> dict:
    return json.loads(CODA_JSON.read_text(encoding="utf-8"))


def write_coda21(path: Path, raw: dict | str) -> Path:
    path.write_text(raw if isinstance(raw, str) else json.dumps(raw), encoding="utf-8")
    return path


# ---- item 8: empty targets and zero-length spans ------------------------------------------------
@pytest.mark.parametrize("spans", [None, [[5, 5]]], ids=["located", "recorded-span"])
def test_coda21_empty_target_word_is_an_error(tmp_path, spans):
    raw = coda21()
    cand = raw["n"][1]["candidates"][2]
    cand["words_in_contexts"] = [""]
    if spans is None:
        cand.pop("target_char_spans", None)
    else:
        cand["target_char_spans"] = spans
    f = write_coda21(tmp_path / "c.json", raw)
    gid = raw["n"][1].get("id", "n[1]")
    assert_one_line_error(*run("stats", f)[::2], str(f), gid, "empty")


def test_coda21_zero_length_recorded_span_is_an_error(tmp_path):
    """A recorded span that is empty is an error, not silently replaced by a string search."""
    raw = coda21()
    cand = raw["n"][0]["candidates"][0]
    cand["target_char_spans"] = [[3, 3]]
    f = write_coda21(tmp_path / "c.json", raw)
    assert_one_line_error(*run("stats", f)[::2], str(f), raw["n"][0]["id"], "[3, 3]")


def test_empty_span_in_a_probegen_group_names_the_file_and_group(tmp_path):
    from probegen.coda21.dataset import load

    ds = load(CODA_JSON)
    d = tmp_path / "ds"
    d.mkdir()
    rows = [g.to_json() for g in ds.groups]
    rows[1]["items"][0]["context"]["char_span"] = [4, 4]
    (d / "groups.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert_one_line_error(*run("stats", d)[::2], "groups.jsonl:2", rows[1]["id"], "[4, 4]")


# ---- item 12: ill-typed and non-finite values, deep nesting, bad bytes, a full disk ---------------
class Raw(str):
    """JSON text put in place of a value as is (NaN, Infinity, 1e400: not writable by json.dumps)."""


N0, V0 = ("n", 0, "candidates"), ("n", 2, "candidates")
CODA_BAD = {
    "definition-number": ((*N0, 1, "definition"), 12345, "definition"),
    "definition-nan": ((*N0, 1, "definition"), Raw("NaN"), "NaN"),
    "n-number": (("n",), 5, "'n'"),
    "n-null": (("n",), None, "'n'"),
    "span-nan": ((*N0, 0, "target_char_spans"), Raw("[[NaN, 5]]"), "NaN"),
    "span-strings": ((*N0, 0, "target_char_spans"), [["a", "b"]], "target_char_spans"),
    "span-infinity": ((*N0, 0, "target_char_spans"), Raw("[[Infinity, 5]]"), "Infinity"),
    "span-huge": ((*N0, 0, "target_char_spans"), Raw("[[1e400, 5]]"), "1e400"),
    "synset-number": ((*V0, 0, "synset_name"), 7, "synset_name"),
    "context-null": ((*V0, 0, "contexts"), [None], "contexts"),
}


@pytest.mark.parametrize("case", sorted(CODA_BAD))
def test_coda21_json_bad_values_are_one_line(tmp_path, case):
    path, value, needle = CODA_BAD[case]
    raw = coda21()
    node = raw
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = "@@RAW@@" if isinstance(value, Raw) else value
    text = json.dumps(raw, indent=1)
    if isinstance(value, Raw):
        text = text.replace('"@@RAW@@"', value)
    f = write_coda21(tmp_path / "c.json", text)
    assert_one_line_error(*run("stats", f)[::2], str(f), needle)


def test_coda21_json_nested_100000_deep_is_one_line(tmp_path):
    f = write_coda21(tmp_path / "deep.json", '{"n": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert_one_line_error(*run("stats", f)[::2], str(f), "nested too deeply")


def _wnqa_rows() -> list[dict]:
    return [json.loads(line) for line in WNQA_JSONL.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_wordnetqa_hops_infinity_names_file_and_line(tmp_path):
    rows = _wnqa_rows()
    text = [json.dumps(r) for r in rows]
    text[2] = text[2].replace('"hops": 1', '"hops": Infinity').replace('"hops": 0', '"hops": Infinity')
    assert "Infinity" in text[2]
    f = tmp_path / "definitions.jsonl"
    f.write_text("\n".join(text) + "\n")
    assert_one_line_error(*run("stats", f)[::2], f"{f}:3:", "Infinity")


def test_wordnetqa_non_utf8_byte_names_file_and_line(tmp_path):
    lines = WNQA_JSONL.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b"the word", b"the w\xffrd", 1)
    f = tmp_path / "definitions.jsonl"
    f.write_bytes(b"".join(lines))
    assert_one_line_error(*run("stats", f)[::2], f"{f}:4:", "not UTF-8")


@pytest.mark.parametrize("line", [1, 2])
def test_word_in_context_jsonl_with_a_bad_byte_is_not_taken_for_wordnetqa(tmp_path, line):
    rows = [json.dumps({**WIC_ROW, "id": f"p{i}"}).encode() for i in range(3)]
    rows[line - 1] = rows[line - 1].replace(b"river", b"riv\xe9r")
    f = tmp_path / "wic.jsonl"
    f.write_bytes(b"\n".join(rows) + b"\n")
    msg = assert_one_line_error(*run("stats", f)[::2], f"{f}:{line}:", "not UTF-8")
    assert "WordNetQA" not in msg and "question" not in msg


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """ENOSPC carries no file name: the writer names the output it was writing."""
    import probegen.io as pio

    real_open = open

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def __getattr__(self, name):
            return getattr(self.fh, name)

    monkeypatch.setattr(pio, "open", lambda *a, **k: Full(real_open(*a, **k)), raising=False)
    out = tmp_path / "out" / "c.json"
    assert_one_line_error(*run("export", CODA_JSON, "--out", out)[::2], "No space left on device", str(out))
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_a_full_disk_in_a_directory_writer_is_one_line(tmp_path):
    from probegen.errors import ProbegenError
    from probegen.io import atomic_dir

    out = tmp_path / "ds"
    with pytest.raises(ProbegenError, match=rf"No space left on device.*{out}"):
        with atomic_dir(out) as tmp:
            (tmp / "a").write_text("x")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_an_os_error_without_a_file_name_is_one_line(monkeypatch):
    """What no writer names (e.g. EIO from a library) still ends as one line, not a traceback."""
    import probegen.models as models

    def boom(*a, **k):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(models, "list_models", boom)
    assert_one_line_error(*run("models")[::2], "Input/output error")


# ---- item 13: messages point at the place; sizes are capped ---------------------------------------
def test_coda21_word_missing_from_its_context_names_file_and_group(tmp_path):
    raw = coda21()
    cand = raw["n"][2]["candidates"][1]
    cand["words_in_contexts"] = ["zebra"]
    cand.pop("target_char_spans", None)
    f = write_coda21(tmp_path / "c.json", raw)
    assert_one_line_error(*run("stats", f)[::2], str(f), raw["n"][2].get("id", "n[2]"), "'zebra'")


def test_csv_bad_byte_on_line_3_says_line_3(tmp_path):
    from probegen.study.design import StudyConfig, build_study, write_study

    s = tmp_path / "s"
    write_study(build_study(CODA_JSON, StudyConfig(conditions=("full",), n=3, annotators=2, overlap=1)), s)
    code, _, err = run("study", "export", s, "--out", tmp_path / "a.csv")
    assert code == 0, err
    lines = (tmp_path / "a.csv").read_bytes().split(b"\n")
    starts = [i for i, ln in enumerate(lines) if ln.startswith(b"full-")]
    assert len(starts) >= 2
    bad_line = starts[1] + 1  # the second data row's first line (1-based)
    lines[starts[1]] = lines[starts[1]].replace(b"full-", b"full\xff-", 1)
    (tmp_path / "a.csv").write_bytes(b"\n".join(lines))
    assert_one_line_error(*run("study", "import", s, tmp_path / "a.csv")[::2], f"a.csv:{bad_line}:", "not UTF-8")


def test_a_huge_spec_file_is_refused_before_parsing(tmp_path, monkeypatch):
    import yaml

    big = tmp_path / "big.yaml"
    big.write_text("name: x\nshape: alignment\ndescription: " + "x" * 3_000_000 + "\n")
    monkeypatch.setattr(yaml, "safe_load", lambda *a, **k: pytest.fail("parsed a 3 MB spec"))
    assert_one_line_error(*run("make", "spec", big, "--check")[::2], str(big), "too large")


def test_a_huge_study_csv_is_refused_before_parsing(tmp_path, monkeypatch):
    from probegen.study import csvio
    from probegen.study.design import StudyConfig, build_study, write_study

    s = tmp_path / "s"
    write_study(build_study(CODA_JSON, StudyConfig(conditions=("full",), n=3, annotators=2, overlap=1)), s)
    monkeypatch.setattr(csvio, "MAX_CSV_BYTES", 1000)
    f = tmp_path / "a.csv"
    f.write_text("annotator,item,answer\n" + "full-1,q1,\n" * 200)
    assert_one_line_error(*run("study", "import", s, f)[::2], str(f), "too large")


def test_wic_tsv_bad_byte_names_its_line(tmp_path):
    data = ["carry\tV\t2-1\tYou must carry your gear .\tSound carries well .",
            "bank\tN\t4-1\tThey sat on the bank of the river .\tThe bank raised its rates ."]
    f = tmp_path / "train.data.txt"
    f.write_bytes(("\n".join(data) + "\n").encode().replace(b"river", b"riv\xe9r"))
    (tmp_path / "train.gold.txt").write_text("F\nF\n")
    assert_one_line_error(*run("stats", f)[::2], f"{f}:2:", "not UTF-8")


# ---- a dataset directory's manifest: read by one reader, never a silent change of kind ----------
@pytest.mark.parametrize("damage", [b"\xff", b"[]", b'{"kind": "coda21", "seed": NaN}'], ids=["bad-byte", "not-object", "nan"])
@pytest.mark.parametrize("command", ["stats", "eval"])
def test_a_damaged_manifest_is_one_line_naming_it(tmp_path, damage, command):
    from probegen.coda21 import dataset as D

    ds = D.write(D.load(CODA_JSON), tmp_path / "ds")
    (ds / "manifest.json").write_bytes(damage + b"\n")
    args = ["stats", ds] if command == "stats" else ["eval", "--model", "glove-50d", "--dataset", ds, "--out", tmp_path / "o"]
    assert_one_line_error(*run(*args)[::2], "manifest.json")
    assert not (tmp_path / "o").exists()


# ---- issue 26: errors that --on-invalid skip gets past say so; advice that fits the file --------
RELEASE_SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample"


def repeated_id_file(tmp_path: Path) -> Path:
    """The original definitions training file's flaw: an id repeated with different content."""
    rows = (RELEASE_SAMPLE / "definitions-train-sample.jsonl").read_text(encoding="utf-8").splitlines()
    again = {**json.loads(rows[5]), "id": json.loads(rows[2])["id"]}
    path = tmp_path / "definitions-train.jsonl"
    path.write_text("\n".join([*rows, json.dumps(again)]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["eval", "bias"])
def test_a_row_skip_would_pass_says_on_invalid_skip_exists(tmp_path, command):
    f = repeated_id_file(tmp_path)
    code, _, err = run(command, "--model", "glove-50d", "--dataset", f, "--out", tmp_path / "out")
    line = assert_one_line_error(code, err, f"{f}:41: item id", "repeats line 3")
    assert line.endswith("; --on-invalid skip skips such rows")
    code, _, err = run(command, "--model", "glove-50d", "--dataset", f, "--on-invalid", "skip", "--bootstrap", 20,
                       "--out", tmp_path / "out") if command == "bias" else \
        run(command, "--model", "glove-50d", "--dataset", f, "--on-invalid", "skip", "--out", tmp_path / "out")
    assert code == 0, err  # the hint is true: skip gets past it


def test_the_skip_hint_only_where_the_option_exists(tmp_path):
    f = repeated_id_file(tmp_path)
    code, _, err = run("study", "make", f, "--out", tmp_path / "s")  # study make has no --on-invalid
    line = assert_one_line_error(code, err, "repeats line 3")
    assert "--on-invalid" not in line
    bad = tmp_path / "synonymy-train.jsonl"  # not a row skip would leave out: the file has no row at all
    bad.write_text("\n")
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", bad, "--out", tmp_path / "o")
    assert "--on-invalid" not in assert_one_line_error(code, err)


def test_study_make_advice_on_a_release_file_is_one_that_works(tmp_path):
    """Release rows have no question template, so only the full condition can show them: the
    advice was "use --n 0 or fewer"; now it names settings the file works with, and they do."""
    f = RELEASE_SAMPLE / "definitions-train-sample.jsonl"
    code, _, err = run("study", "make", f, "--out", tmp_path / "s")
    line = assert_one_line_error(code, err, "full condition", "use --conditions full, --n 40 or fewer and --overlap 40 or less")
    assert "--n 0" not in line
    code, _, err = run("study", "make", f, "--conditions", "full", "--n", 40, "--overlap", 40, "--out", tmp_path / "s")
    assert code == 0, err
    code, _, err = run("study", "make", f, "--conditions", "full", "--n", 50, "--overlap", 10, "--out", tmp_path / "t")
    assert_one_line_error(code, err, "only 40 usable concept clusters for --n 50: use --n 40 or fewer")
