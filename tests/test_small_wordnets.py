"""Small and non-English wordnets (issue 18, part 6): question templates per language, probes that
cannot be built say why in one line, WN-LMF files missing a required attribute are named, and
``max_concepts`` counts concepts that give questions. Real data: the bundled Spanish mini-wordnet
(tests/data/lmf/es-mini.xml) and WordNet 3.0."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml
from cli_checks import assert_one_line_error, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probegen.errors import ProbegenError
from probegen.lexicon.lmf import REQUIRED_ATTRS, check_xml

HERE = Path(__file__).parent
ES_MINI = HERE / "data" / "lmf" / "es-mini.xml"
ES_TEMPLATES = HERE.parent / "templates" / "questions" / "es.yaml"
PROBES = ("definitions", "hypernymy", "hyponymy", "synonymy")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Private wn databases per test (a mutated file must never meet a cached good one)."""
    monkeypatch.setenv("PROBEGEN_CACHE", str(tmp_path / "cache"))


def _items(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _variant(tmp_path: Path, name: str, edit) -> Path:
    """es-mini.xml with ``edit(text)`` applied, as a new file."""
    p = tmp_path / name
    p.write_text(edit(ES_MINI.read_text(encoding="utf-8")), encoding="utf-8")
    return p


# ---- every default probe on the Spanish mini-wordnet, in Spanish ------------------------------------
@pytest.fixture(scope="module")
def es_all(tmp_path_factory):
    out = tmp_path_factory.mktemp("es") / "all"
    code, stdout, err = run("make", "wordnetqa", "--wordnet-source", str(ES_MINI), "--out", str(out),
                            env={"PROBEGEN_CACHE": str(out.parent / "cache")})
    assert code == 0, err[-2000:]
    return out, stdout


def test_default_probes_build_on_the_spanish_mini_wordnet(es_all):
    """`make wordnetqa` with its defaults (all probes, random/sister/isa) works on 31 nouns: questions
    whose random distractors cannot be 4 unrelated synsets are dropped and counted, not fatal."""
    out, _ = es_all
    items, m = _items(out), _manifest(out)
    for probe in PROBES:
        its = [it for it in items if it["probe"] == probe]
        assert its and m["counts"][probe]["items"] == len(its), probe
        for it in its:  # 5-way, every distractor distinct from the gold
            assert len(it["choices"]) == 5 and len(set(it["choices"])) == 5
    # objeto (depth 1) relates to 29 of 31 nouns: its hyponymy questions cannot have 4 unrelated choices
    assert m["counts"]["hyponymy"]["skipped"]["too_few_distractors"] > 0


def test_spanish_wordnet_gets_spanish_questions(es_all):
    out, _ = es_all
    items, m = _items(out), _manifest(out)
    assert {it["template"].split("-")[0] for it in items} == {"es"}
    assert all(re.search(r"oración|contexto|palabra|¿", it["question"]) for it in items)
    hyper = next(it for it in items if it["probe"] == "hypernymy")
    assert ", que se define como " in hyper["choices"][hyper["answer"]]
    qt = m["question_templates"]
    assert qt["file"] == "templates/questions/es.yaml" and qt["language"] == "es"
    assert qt["sha256"] == hashlib.sha256(ES_TEMPLATES.read_bytes()).hexdigest()


def test_eval_renders_a_spanish_item_with_its_own_templates(es_all):
    """The scorer's queries (bias ablations included) come from the set that made the item."""
    from probegen.wordnetqa import dataset

    out, _ = es_all
    ds = dataset.load(out)  # its manifest, nothing a build in this process left behind, decides
    hypo = next(it for it in ds.items if it.probe == "hyponymy")
    query = ds.templates.query
    assert query(hypo, "pattern", "full", "bkatuhla").startswith("Pregunta: ")
    assert query(hypo, "pattern", "word", "bkatuhla") == (
        f'Pregunta: ¿Cuál de las siguientes opciones es un tipo específico de "{hypo.surface}"?\nRespuesta:')
    assert query(hypo, "pattern", "choice", "bkatuhla") == "Respuesta:"
    ctx = query(hypo, "pattern", "context", "bkatuhla")
    assert "bkatuhla" in ctx and ctx.startswith("Pregunta: ")


def test_english_wordnet_keeps_the_english_templates():
    from probegen.templating import question_templates
    from probegen.wordnetqa import render

    en = question_templates("en")
    assert en.file == "templates/questions/en.yaml"
    assert render.Templates(en).probe_spec("hypernymy")["choice"] == "{lemma}, defined as {gloss}"
    assert render.Templates.of_manifest({}).questions == en  # a dataset that records none: English


# ---- --templates FILE ----------------------------------------------------------------------------------
def test_templates_file_overrides_and_travels_with_the_dataset(tmp_path):
    data = yaml.safe_load(ES_TEMPLATES.read_text(encoding="utf-8"))
    for block in data["probes"].values():
        for t in block["templates"]:
            t["id"] = "mine-" + t["id"]
    data["probes"]["synonymy"]["templates"] = [{"id": "mine-syn", "stem": 'Sinónimos de "{definition}":'}]
    f = tmp_path / "mine.yaml"
    f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "syn"
    code, _, err = run("make", "wordnetqa", "--wordnet-source", str(ES_MINI), "--probe", "synonymy",
                       "--templates", str(f), "--out", str(out))
    assert code == 0, err[-2000:]
    items, qt = _items(out), _manifest(out)["question_templates"]
    assert {it["template"] for it in items} == {"mine-syn"} and items[0]["question"].startswith("Sinónimos de ")
    assert qt["file"] == str(f) and qt["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert qt["content"]["probes"]["synonymy"]["templates"][0]["id"] == "mine-syn"


def _english_file(tmp_path: Path) -> Path:
    """The bundled English templates as a file of the user's own (ids of its own: 'mine-...')."""
    data = yaml.safe_load((ES_TEMPLATES.parent / "en.yaml").read_text(encoding="utf-8"))
    for block in data["probes"].values():
        for t in block["templates"]:
            t["id"] = "mine-" + t["id"]
    f = tmp_path / "mine-en.yaml"
    f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return f


@pytest.mark.parametrize("order", [("es", "mine"), ("mine", "es")])
def test_two_datasets_in_one_process_each_render_their_own_items(tmp_path, order):
    """Templates travel with the dataset, not in a process-wide 'active' set: whichever of two builds
    (the Spanish wordnet's own templates, and English ones from a --templates file) runs last, each
    dataset's items, its choices and every query mode, and what it loads back as, are its own."""
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.config import WordNetQAConfig

    mine = _english_file(tmp_path)
    cfgs = {"es": WordNetQAConfig(probes=("hypernymy", "synonymy")),
            "mine": WordNetQAConfig(probes=("hypernymy", "synonymy"), templates=str(mine))}
    built = {k: D.build(cfgs[k], wordnet=str(ES_MINI), progress=False, log=lambda m: None) for k in order}
    es, en = built["es"], built["mine"]
    assert {it.template.split("-")[0] for it in es.items} == {"es"}
    assert {it.template.split("-")[0] for it in en.items} == {"mine"}
    hyper = lambda ds: next(it for it in ds.items if it.probe == "hypernymy")  # noqa: E731
    assert ", que se define como " in hyper(es).choices[hyper(es).answer]
    assert ", defined as " in hyper(en).choices[hyper(en).answer]
    modes = ("full", "context", "word", "choice")
    lang = {"es": ("Pregunta: ", "Respuesta:", "La palabra o concepto"), "mine": ("Question: ", "Answer:", "The word")}
    for k, ds in built.items():
        question, answer, hyper_word = lang[k]
        back = D.load(D.write(ds, tmp_path / k))
        assert [it.id for it in back.items] == [it.id for it in ds.items]
        for it, again in zip(ds.items, back.items):
            full, ctx, word, choice = (ds.templates.query(it, "pattern", m, "bkatuhla") for m in modes)
            assert [full, ctx, word, choice] == [back.templates.query(again, "pattern", m, "bkatuhla") for m in modes]
            assert choice == answer and it.question in full and ("bkatuhla" in ctx or it.context is None)
            assert word.startswith(hyper_word if it.probe == "hypernymy" else question), (k, word)
            # what new items of this dataset are made with is its own set, whichever build ran last
            assert ds.templates.pick_template(it.probe, it.question_id, 0) == ds.templates.template_by_id(it.template)
    # the same bytes whichever build ran first (the other order is the other parametrisation)
    first = {k: D.build(cfgs[k], wordnet=str(ES_MINI), progress=False, log=lambda m: None) for k in reversed(order)}
    assert {k: ds.fingerprint for k, ds in first.items()} == {k: ds.fingerprint for k, ds in built.items()}


@pytest.mark.parametrize("edit, needles", [
    (lambda d: d["probes"]["definitions"]["templates"][0].update(stem='En "{frase}":'),
     ("probes.definitions.templates[0].stem", "{frase}")),
    (lambda d: d["probes"]["hyponymy"].pop("word_stem"), ("probes.hyponymy", "word_stem")),
    (lambda d: d.pop("choice_query"), ("choice_query",)),
])
def test_a_bad_templates_file_is_one_line_before_any_work(tmp_path, edit, needles):
    data = yaml.safe_load(ES_TEMPLATES.read_text(encoding="utf-8"))
    edit(data)
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, _, err = run("make", "wordnetqa", "--wordnet-source", str(ES_MINI), "--templates", str(f), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, str(f), *needles)
    assert "Mini WordNet" not in err  # refused before the wordnet was read
    assert not (tmp_path / "o").exists()


def test_a_language_without_templates_asks_for_templates_file(tmp_path):
    xx = _variant(tmp_path, "xx.xml", lambda t: t.replace('language="es"', 'language="xx"'))
    code, _, err = run("make", "wordnetqa", "--wordnet-source", str(xx), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "language 'xx'", "--templates FILE")
    assert not (tmp_path / "o").exists()


# ---- a probe with no item ----------------------------------------------------------------------------
def _flat(text: str) -> str:
    """The mini-wordnet with no synset relation at all: no ISA answer exists."""
    return re.sub(r"<SynsetRelation [^>]*/>", "", text)


def test_a_probe_with_no_question_is_one_line_naming_it(tmp_path):
    flat = _variant(tmp_path, "flat.xml", _flat)
    code, _, err = run("make", "wordnetqa", "--wordnet-source", str(flat), "--probe", "hypernymy", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "hypernymy", "concepts without question")
    assert "KeyError" not in err and not (tmp_path / "o").exists()


def test_all_probes_build_those_that_can_and_say_why_the_others_cannot(tmp_path):
    flat = _variant(tmp_path, "flat.xml", _flat)
    out = tmp_path / "all"
    code, stdout, err = run("make", "wordnetqa", "--wordnet-source", str(flat), "--out", str(out))
    assert code == 0, err[-2000:]
    c = _manifest(out)["counts"]
    assert c["definitions"]["items"] > 0 and c["synonymy"]["items"] > 0
    for probe in ("hypernymy", "hyponymy"):
        line = f"{probe}: no item from 30 concepts: 30 without a {probe} answer within 4 hops"
        assert c[probe]["why_empty"] == line and "items" not in c[probe]
        assert sum(line in ln for ln in err.splitlines()) == 1, err


# ---- WN-LMF files missing a required attribute -------------------------------------------------------
def _element_sites(text: str) -> list[tuple[int, str, str, int]]:
    """(offset of the attribute, element, attribute, line of the element's tag) for every required
    attribute in the file."""
    out = []
    for m in re.finditer(r"<(\w+)\b([^>]*)>", text):
        for need in REQUIRED_ATTRS.get(m.group(1), ()):
            for a in need.split("|"):
                am = re.search(rf'\s{a}="[^"]*"', m.group(2))
                if am:
                    out.append((m.start(2) + am.start(), m.group(1), a, text.count("\n", 0, m.start()) + 1))
    return out


SITES = _element_sites(ES_MINI.read_text(encoding="utf-8"))


def test_every_kind_of_required_attribute_occurs_in_the_fixture():
    assert {e for _, e, _, _ in SITES} >= {"Lexicon", "LexicalEntry", "Lemma", "Form", "Sense", "SenseRelation", "Synset",
                                        "SynsetRelation"}


@settings(max_examples=60, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SITES))
def test_fuzz_a_missing_attribute_is_named_with_its_line(tmp_path_factory, site):
    """Delete any one required attribute of any element: the reader names element, attribute, line."""
    at, elem, attr, line = site
    text = ES_MINI.read_text(encoding="utf-8")
    m = re.match(rf'\s{attr}="[^"]*"', text[at:])
    bad = text[:at] + text[at + m.end():]
    p = tmp_path_factory.mktemp("lmf") / "lexicon.xml"
    p.write_text(bad, encoding="utf-8")
    with pytest.raises(ProbegenError) as e:
        check_xml(p)
    msg = str(e.value)
    assert "\n" not in msg and f"<{elem}>" in msg and f"'{attr}'" in msg and msg.startswith(f"{p}:{line}:"), msg


def test_missing_attribute_through_the_cli_names_it(tmp_path):
    bad = _variant(tmp_path, "nopos.xml", lambda t: t.replace('<Lemma writtenForm="gato" partOfSpeech="n"/>',
                                                               '<Lemma writtenForm="gato"/>'))
    code, _, err = run("make", "wordnetqa", "--wordnet-source", str(bad), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, f"{bad}:20:", "<Lemma>", "'partOfSpeech'")
    assert "AssertionError" not in err
    nolemma = _variant(tmp_path, "nolemma.xml", lambda t: t.replace('<Lemma writtenForm="gato" partOfSpeech="n"/>', ""))
    code, _, err = run("make", "wordnetqa", "--wordnet-source", str(nolemma), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, f"{nolemma}:20:", "esmini-gato-n", "no <Lemma>")


# ---- max_concepts counts concepts that give questions --------------------------------------------
def test_max_concepts_counts_concepts_with_a_question(tmp_path):
    """WordNet 3.0, hyponymy: most nouns are leaves; a sample of 25 is 25 nouns with hyponyms."""
    out = tmp_path / "hypo"
    code, _, err = run("make", "wordnetqa", "--probe", "hyponymy", "--distractors", "random", "--limit", "25", "--out", str(out))
    assert code == 0, err[-2000:]
    c = _manifest(out)["counts"]["hyponymy"]
    assert c["skipped"]["concepts_without_question"] == 0 and c["synsets"] == 25
