"""A kind is one folder for its probe-spec section and its study page (issue 38 part 2).

The test plugin kind (``tests/kind_plugin/synpick``, installed through an entry point; no probegen file
names it) registers a ``synonym_pick`` spec section and study views in its own package:

- ``probegen make spec`` builds a synonym-pick dataset from a spec of that shape, deterministically,
  with the spec in its manifest; a bad field of the section is one line naming the file and field;
  ``probegen eval`` reads the built set;
- ``probegen study make`` samples it and renders it with the ``mc`` page layout; the study server
  serves a page and stores an answer.
"""

from __future__ import annotations

import json

import kindplugin
import pytest

from probegen.study.views import MASK

SPEC = """\
name: synpick-artifacts
shape: synonym_pick
seed: 3
concepts: {pos: [noun], lexfiles: [noun.artifact]}
synonym_pick: {n: 30, distractors: 3}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(root, plugin, spec file, two datasets built from the same spec and seed)."""
    root = tmp_path_factory.mktemp("synpick-spec")
    plugin = kindplugin.install(root / "site")
    spec = root / "my.yaml"
    spec.write_text(SPEC)
    out = []
    for name in ("a", "b"):
        res = kindplugin.run(["make", "spec", spec, "--out", root / name], plugin, cwd=root)
        assert res.returncode == 0, res.stderr[-3000:]
        assert f"wrote {root / name} (synonym-pick; spec synpick-artifacts" in res.stdout
        out.append(root / name)
    return root, plugin, spec, out


def _rows(path):
    return [json.loads(line) for line in (path / "pairs.jsonl").read_text().splitlines()]


def test_a_synonym_pick_spec_builds_a_deterministic_dataset_with_its_manifest(built, graph):
    root, plugin, spec, (a, b) = built
    for name in ("manifest.json", "pairs.jsonl"):  # same spec and seed: byte-identical
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["kind"] == kindplugin.KIND and manifest["n"] == 30
    record = manifest["spec"]
    assert record["spec"]["synonym_pick"] == {"n": 30, "distractors": 3}
    assert record["spec"]["contexts"] == {"source": "wordnet", "max": 1, "scorer": "smollm2-135m"}  # its defaults
    check = kindplugin.run(["make", "spec", spec, "--check"], plugin, cwd=root)
    assert check.returncode == 0 and f"sha256 {record['sha256']}" in check.stderr
    assert json.loads(check.stdout) == record["spec"]
    rows = _rows(a)
    assert len(rows) == 30 and len({r["id"] for r in rows}) == 30
    for r in rows:  # real WordNet: the word and its gold are lemmas of the synset, no distractor is
        lemmas = set(graph.lemmas(r["id"]))
        assert r["word"] in lemmas and r["choices"][r["gold"]] in lemmas and r["word"] != r["choices"][r["gold"]]
        assert len(r["choices"]) == 4 and not lemmas & {c for i, c in enumerate(r["choices"]) if i != r["gold"]}
        assert r["lexfile"] == graph.g.nodes[r["id"]]["lexname"] == "noun.artifact"
        assert r["definition"] == graph.definition(r["id"])
    other = kindplugin.run(["make", "spec", spec, "--seed", 4, "--out", root / "c"], plugin, cwd=root)
    assert other.returncode == 0, other.stderr[-2000:]
    assert _rows(root / "c") != rows  # the seed samples


@pytest.mark.parametrize("body, field, words", [
    ("synonym_pick: {n: 0}", "synonym_pick.n", "out of bounds"),
    ("synonym_pick: {n: 3, distractors: 3}", "synonym_pick.n", "cannot give 3 distractors"),
    ("synonym_pick: {letters: 3}", "synonym_pick.letters", "unknown key; picks takes distractors, n"),
    ("alignment: {k_min: 3}", "alignment", "belongs to shape alignment, not synonym_pick"),
])
def test_a_bad_field_is_one_line_naming_file_and_field(built, body, field, words):
    root, plugin, _, _ = built
    bad = root / "bad.yaml"
    bad.write_text(f"name: bad\nshape: synonym_pick\n{body}\n")
    res = kindplugin.run(["make", "spec", bad, "--out", root / "bad"], plugin, cwd=root)
    assert res.returncode == 1, res.stderr[-2000:]
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert line.startswith(f"probegen: error: {bad}: {field}: ") and words in line, line
    assert not (root / "bad").exists()


def test_an_unknown_shape_lists_the_registered_ones_plugin_included(built):
    root, plugin, _, _ = built
    bad = root / "shape.yaml"
    bad.write_text("name: x\nshape: tree\n")
    res = kindplugin.run(["make", "spec", bad, "--check"], plugin, cwd=root)
    assert res.returncode == 1
    assert res.stderr.strip().endswith("shape: unknown item shape 'tree'; use alignment, multiple_choice, synonym_pick "
                                       "or wic_pair"), res.stderr


def test_eval_reads_the_built_set(built):
    root, plugin, _, (a, _) = built
    res = kindplugin.run(["eval", "--model", "glove-50d", "--dataset", a, "--out", root / "ev"], plugin, cwd=root)
    assert res.returncode == 0, res.stderr[-3000:]
    results = json.loads((root / "ev" / "results.json").read_text())
    assert kindplugin.KIND in json.dumps(results) and "30" in res.stdout


def test_study_make_renders_the_plugin_with_the_choice_layout_and_serves_it(built):
    root, plugin, _, (a, _) = built
    study = root / "S"
    res = kindplugin.run(["study", "make", a, "--n", 5, "--annotators", 1, "--overlap", 0, "--out", study], plugin,
                         cwd=root)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = {r["id"]: r for r in _rows(a)}
    items = [json.loads(line) for line in (study / "items.jsonl").read_text().splitlines()]
    gold = {g["uid"]: g for g in map(json.loads, (study / "gold.jsonl").read_text().splitlines())}
    assert {it["condition"] for it in items} == {"full", "context", "word"} and len(gold) == 5
    for it in items:
        v, g, cond = it["view"], gold[it["uid"]], it["condition"]
        row = rows[g["dataset_id"]]
        assert v["kind"] == "mc" and v["choices"] == row["choices"] and g["gold"] == row["gold"]
        assert (row["definition"] in v["prompt"]) == (cond != "word")
        assert "gold" not in v and row["id"] not in json.dumps(v)
        if cond == "context":  # the word hidden by the blank: nothing to highlight
            assert v["marks"] == [] and MASK in v["prompt"] and f" {row['word']} " not in v["prompt"]
        else:
            (a0, b0), = v["marks"]
            assert v["prompt"][a0:b0] == row["word"]  # the word highlighted by its span
    # the server (the study page's API) serves the plugin's items and stores an answer
    tokens = json.loads((study / "tokens.json").read_text())
    script = f"""
import json, sys
from probegen.study.server import create_app
c = create_app({str(study)!r}).test_client()
tok = {tokens["full-1"]!r}
page = c.get("/a/" + tok)
state = c.get("/api/" + tok + "/state").get_json()
first = state["items"][0]
ok = c.post("/api/" + tok + "/answer", json={{"item": first["item"], "answer": "B"}})
bad = c.post("/api/" + tok + "/answer", json={{"item": first["item"], "answer": 7}})
print(json.dumps({{"page": page.status_code, "items": state["items"], "ok": ok.get_json(), "bad": bad.status_code}}))
"""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(kindplugin.ROOT)])}
    out = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["page"] == 200 and got["bad"] == 400
    assert got["ok"]["stored"] and got["ok"]["answered"] == 1
    shown = got["items"][0]
    assert shown["kind"] == "mc" and len(shown["choices"]) == 4 and shown["guide"] == "full/mc"
    answers = [json.loads(line) for line in (study / "answers" / "full-1.jsonl").read_text().splitlines()]
    assert [(r["item"], r["answer"]) for r in answers] == [(shown["item"], 1)]
