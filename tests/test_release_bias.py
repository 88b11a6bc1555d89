"""`probegen bias` on the original WordNetQA release JSONL (and on probegen's own export of it).

The fixture ``tests/data/wordnetqa_release_four_probes.jsonl`` is written from the WordNetQA
paper's description of its release (``question.stem`` / ``question.choices[{text, label}]`` /
``answerKey`` / ``notes`` with ``surface_form``, ``gold_synset``, ``chain``, ``hops``,
``distractor_type``, ``pos``; no ``notes.probe``, and the id never names the probe: the notes tell
it, see ``probegen.wordnetqa.release``), three items of each probe type with the paper's stem shapes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from probegen.commands.cli import cli
from probegen.errors import DatasetError
from probegen.wordnetqa import dataset as D
from probegen.wordnetqa import render

FIXTURE = Path(__file__).parent / "data" / "wordnetqa_release_four_probes.jsonl"
NONCE = "bkatuhla"


def _cli():
    from probegen.commands.bias import bias as bias_cmd

    if "bias" not in cli.commands:
        cli.add_command(bias_cmd)
    return cli


def run(*args: str):
    r = CliRunner().invoke(_cli(), list(args))
    return r.exit_code, r.stdout, r.stderr


def rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def whole(word: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE) is not None


# ---- reading the release, cutting the ablations ------------------------------------------------------
def test_release_fixture_items_carry_their_sentence_and_target_span():
    ds = D.load(FIXTURE, ablations=True)
    assert [it.probe for it in ds.items] == ["definitions"] * 3 + ["hypernymy"] * 3 + ["hyponymy"] * 3 + ["synonymy"] * 3
    by_id = {r["id"]: r for r in rows()}
    for it in ds.items:
        r = by_id[it.id]
        assert it.synset == r["notes"]["gold_synset"]  # the bootstrap's concept
        assert it.choices[it.answer] == r["question"]["choices"]["ABCDE".index(r["answerKey"])]["text"]
        if it.probe == "synonymy":
            assert it.context is None and f'"{it.definition}"' in it.question
        else:
            assert it.context.surface == r["notes"]["surface_form"]
            assert f'"{it.context.text}"' in it.question


@pytest.mark.parametrize("style", ["pattern", "plain"])
def test_release_ablations_hide_the_target_by_span(style):
    ds = D.load(FIXTURE, ablations=True)
    for it in ds.items:
        full, ctx, word, choice = (render.default_templates().query(it, style, m, NONCE) for m in render.MODES)
        surface = it.surface
        assert choice == render.default_templates().query(ds.items[0], style, "choice", NONCE) and it.question not in choice
        assert whole(surface, word) and (it.context is None or it.context.text not in word)
        if it.probe == "synonymy":  # no sentence: Context is Full (its Bias_C is left out)
            assert ctx == full
            continue
        assert whole(surface, full) and not whole(surface, ctx), (full, ctx)
        if style == "pattern":
            # the sentence with the target replaced in place, and the word's own quotes too
            assert render.mask_spans(it.context.text, [it.context.char_span], NONCE) in ctx
            assert f'"{NONCE}"' in ctx
        else:
            assert ctx == it.context.replaced(None)


def test_context_masks_the_whole_word_not_a_substring(tmp_path):
    r = rows()[0]
    r["question"]["stem"] = 'In the sentence "the mice saw ice on the lake", the word "ice" is best defined as:'
    r["notes"]["surface_form"] = "ice"
    (tmp_path / "wn_definitions.jsonl").write_text(json.dumps(r) + "\n")
    (it,) = D.load(tmp_path / "wn_definitions.jsonl", ablations=True).items
    assert it.context.char_span == (13, 16)
    assert render.default_templates().query(it, "pattern", "context", NONCE) == (
        f'In the sentence "the mice saw {NONCE} on the lake", the word "{NONCE}" is best defined as:'
    )


# ---- probegen bias on the fixture -------------------------------------------------------------------
def test_bias_on_the_release_fixture_writes_every_ablation(tmp_path):
    out = tmp_path / "bias"
    code, stdout, err = run("bias", "--model", "glove-50d", "--dataset", str(FIXTURE), "--out", str(out), "--bootstrap", "200")
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    (d,) = res["datasets"]
    assert d["kind"] == "wordnetqa" and d["unit"] == "concept" and d["n_items"] == 12
    assert res["bootstrap"]["unit"]["wordnetqa"].startswith("concept")
    # 9 distinct gold synsets: the resampling unit
    assert d["all"]["n_units"] == len({r["notes"]["gold_synset"] for r in rows()}) == 9
    assert set(d["all"]["ablations"]) == {"full", "context", "word", "choice", "label"}
    for a in d["all"]["ablations"].values():
        assert 0 <= a["accuracy"] <= 1 and len(a["ci"]) == 2
    assert set(d["all"]["ratios"]) == {"bias_c", "bias_w", "bias_choice"}
    for name in ("bias_c", "bias_w"):
        assert d["all"]["ratios"][name]["over"] == ["definitions", "hypernymy", "hyponymy"]
        assert set(d["all"]["ratios"][name]["excluded"]) == {"synonymy"}
    assert set(d["subsets"]) == {"definitions", "hypernymy", "hyponymy", "synonymy"}
    assert {c["applies_to"] for c in d["controls"] if c["control"] == "choice-only"} == set(d["subsets"])
    for mode in ("full", "context", "word", "choice"):
        recs = [json.loads(x) for x in (out / d["name"] / f"{mode}.jsonl").read_text().splitlines()]
        assert len(recs) == 12
    assert "Bias_C" in (out / "report.md").read_text()


# ---- a real generated set, exported to the release schema -------------------------------------------
def test_bias_on_exported_real_set_equals_bias_on_the_set(tmp_path):
    """Real WordNet: `make wordnetqa` -> `export --format wordnetqa-json` -> `bias`; the exported
    file gives the same records and figures as the probegen directory it came from."""
    src, exported = tmp_path / "wn", tmp_path / "wn_release.jsonl"
    assert run("make", "wordnetqa", "--limit", "40", "--out", str(src))[0] == 0
    assert run("export", str(src), "--format", "wordnetqa-json", "--out", str(exported))[0] == 0
    assert all("surface_form" in json.loads(x)["notes"] for x in exported.read_text().splitlines())
    got = {}
    for name, path in (("dir", src), ("release", exported)):
        out = tmp_path / f"bias-{name}"
        code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(path), "--out", str(out), "--bootstrap", "200")
        assert code == 0, err
        (d,) = json.loads((out / "results.json").read_text())["datasets"]
        got[name] = d
        got[name + "-records"] = {m: [json.loads(x)["correct"] for x in (out / d["name"] / f"{m}.jsonl").read_text().splitlines()]
                                  for m in ("full", "context", "word", "choice")}
    assert got["dir-records"] == got["release-records"]
    for key in ("all", "subsets", "controls"):
        assert got["dir"][key] == got["release"][key]
    assert got["release"]["all"]["ratios"]["bias_c"]["value"] is not None


# ---- bad lines: one error naming file and line, nothing written --------------------------------------
def _set(r, path, value):
    *head, last = path
    for k in head:
        r = r[k]
    if value is KeyError:
        del r[last]
    else:
        r[last] = value


BAD = {
    "not-json": (None, "not valid JSON"),
    "no-stem": ((("question", "stem"), KeyError), "question.stem"),
    "no-surface": ((("notes", "surface_form"), KeyError), "notes.surface_form"),
    "no-gold-synset": ((("notes", "gold_synset"), KeyError), "notes.gold_synset"),
    "choice-without-text": ((("question", "choices"), [{"label": "A"}, {"text": "b", "label": "B"}]), "question.choices[0].text"),
    "answer-key": ((("answerKey",), "F"), "answerKey 'F'"),
    # neither the surface form nor a lemma of the concept (car.n.01: car, auto, ...) is in the sentence
    "word-not-in-sentence": ((("question", "stem"), 'Given the context "they parked the van in the garage", which is a type of "truck"?'),
                             "is not found in the quoted sentence"),
    "no-quoted-sentence": ((("question", "stem"), "Which is a type of car?"), "no quoted sentence"),
    # the id never names the probe; a chain between unrelated synsets (no => or <=) tells nothing
    "unknown-probe": ((("notes", "chain"), ["car.n.01", "dog.n.01"]), "cannot tell the probe type"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_release_line_is_one_error_with_its_line_and_nothing_is_written(tmp_path, case):
    edit, message = BAD[case]
    lines = FIXTURE.read_text().splitlines()
    if edit is None:
        lines[6] = lines[6][:-1]  # line 7 cut short
    else:
        r = json.loads(lines[6])
        _set(r, *edit)
        lines[6] = json.dumps(r)
    bad = tmp_path / "release.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(bad), "--out", str(out))
    errs = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert code == 1 and len(errs) == 1 and "Traceback" not in err, err
    assert errs[0].startswith(f"probegen: error: {bad}:7: ") and message in errs[0], errs[0]
    assert not out.exists()


def test_duplicate_id_names_both_lines(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    bad = tmp_path / "release.jsonl"
    bad.write_text("\n".join(lines + [lines[1]]) + "\n")
    with pytest.raises(DatasetError, match=r"release.jsonl:13: item id 'wn_definitions_0002' repeats line 2"):
        D.load(bad, ablations=True)
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(bad), "--out", str(tmp_path / "o"))
    assert code == 1 and f"{bad}:13:" in err and not (tmp_path / "o").exists()


def test_eval_refuses_a_row_it_cannot_render_or_skips_it_when_asked(tmp_path):
    """No silent fallback to the whole stem: a row whose sentence holds no form of its word is an
    error for eval too (``FILE:LINE``), or with ``on_invalid="skip"`` left out and recorded."""
    lines = FIXTURE.read_text().splitlines()
    r = json.loads(lines[6])
    r["question"]["stem"] = 'Given the context "they parked the van in the garage", which is a type of "truck"?'
    lines[6] = json.dumps(r)
    bad = tmp_path / "release.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=f"{bad}:7: the word 'car' is not found in the quoted sentence"):
        D.load(bad)
    ds = D.load(bad, on_invalid="skip")
    assert len(ds.items) == 11 and r["id"] not in {it.id for it in ds.items}
    assert ds.manifest["invalid"] == {"policy": "skip", "rows": 12, "kept": 11,
                                      "skipped": {"word not in the quoted sentence": {"count": 1, "ids": [r["id"]]}}}


# ---- leftovers: stats on word-in-context sets, the make group's help ----------------------------------
@pytest.mark.parametrize("kind", ["wic", "wsd"])
def test_stats_reads_a_real_wic_or_wsd_directory_as_its_own_kind(tmp_path, kind):
    """Real SemCor: a `make wic` / `make wsd` directory has items.jsonl too, and was misread as WordNetQA."""
    from probegen.wordincontext.dataset import split_counts, write

    if kind == "wic":
        from probegen.wordincontext.wic import WicConfig as Config
        from probegen.wordincontext.wic import build
    else:
        from probegen.wordincontext.wsd import WsdConfig as Config
        from probegen.wordincontext.wsd import build
    ds = build(Config(**({"max_pairs": 40} if kind == "wic" else {"max_items": 40}), seed=1), log=lambda m: None)
    path = write(ds, tmp_path / kind)
    code, stdout, err = run("stats", str(path))
    assert code == 0, err
    head, table, *splits, leak = stdout.strip().splitlines()
    assert f"(kind: {kind}; {len(ds.items)} " in head and ("pairs" in head) == (kind == "wic")
    assert table.split()[:4] == ["split", "items", "lemmas", "units"]
    counts = split_counts(ds.items)
    assert [s.split()[0] for s in splits] == list(counts)
    for line, (_split, c) in zip(splits, counts.items()):
        assert line.split()[1] == str(c["items"])
        assert (f"T {c['true']} / F {c['false']}" if kind == "wic" else f"mean choices {c['mean_choices']}") in line
    assert leak.startswith("visible target forms outside the hidden span: ") and "/" in leak


def test_make_help_lists_every_probe_family():
    r = CliRunner().invoke(cli, ["make", "--help"])
    assert r.exit_code == 0
    first = r.stdout.split("Examples")[0]
    for family in ("coda21", "wordnetqa", "wic", "wsd"):
        assert family in first, first
