"""The shared no-leak rule (probegen.leaks) on WordNet's real morphology, in WordNetQA contexts
and in `probegen stats`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from probegen.data import load_wordnet
from probegen.leaks import Morphology, leak_rates, leaks, surface_lemma, visible_target_forms

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def morph():
    return Morphology(load_wordnet())


def _hide(marked: str) -> tuple[str, tuple[int, int]]:
    """ "the [dog] barked" -> ("the dog barked", span of dog)."""
    a, b = marked.index("["), marked.index("]") - 1
    return marked.replace("[", "").replace("]", ""), (a, b)


@pytest.mark.parametrize(
    "marked, lemma, visible",
    [
        ("The [jury] said the Jury's juries met.", "jury", ["Jury", "juries"]),  # case, plural
        ("the geese saw one [goose]", "goose", ["geese"]),  # irregular plural
        ("he took it and will [take] more", "take", ["took"]),  # irregular verb
        ("after the [walk] they walked home", "walk", ["walked"]),  # a verb form of a noun target
        ("they gave up, then gave in and will [give up]", "give_up", ["gave up"]),  # multiword, inflected
        ("the mice saw an iceberg and some ice-cream; [ice] melts", "ice", []),  # whole words only
        ("history buffs and a jazz [buff]", "buff", ["buffs"]),
        ("bees are busy; the [bee] is", "bee", ["bees"]),  # "are" has the base "be", not "bee"
    ],
)
def test_visible_target_forms_on_wordnet_morphology(morph, marked, lemma, visible):
    text, span = _hide(marked)
    assert visible_target_forms(text, span, lemma, morph) == visible
    assert leaks(text, span, lemma, morph) == bool(visible)


def test_the_hidden_word_itself_counts_even_with_another_lemma(morph):
    # a lemma that does not match the surface (an imported file's guess) still catches the word
    text = "history buffs meet other buffs"
    assert visible_target_forms(text, (8, 13), "fan", morph) == ["buffs"]
    assert surface_lemma("buffs", ["fan", "buff", "devotee", "lover"], morph) == "buff"
    assert surface_lemma("Fulton County Jail", ["group", "grouping"], morph) is None


def test_leak_rates_count_each_context_once(morph):
    rows = [("n", "a dog bit a dog", (2, 5), "dog")] * 3 + [("v", "it rains", (3, 8), "rain")]
    assert leak_rates(rows, morph) == {"n": {"contexts": 1, "leaky": 1, "rate": 1.0},
                                       "v": {"contexts": 1, "leaky": 0, "rate": 0.0}}


# ---- WordNetQA: the same rule for its contexts ---------------------------------------------------
def test_wordnetqa_drops_leaky_examples(graph):
    from probegen.wordnetqa.contexts import ContextStats, collect_contexts, wordnet_contexts

    wn = load_wordnet()
    m = Morphology(wn)
    # "the industrial revolution was also a cultural revolution": hiding one leaves the other
    assert graph.examples("revolution.n.01") == ("the industrial revolution was also a cultural revolution",)
    stats = ContextStats()
    assert wordnet_contexts(graph, "revolution.n.01", m, 5, stats) == [] and stats.examples_leaky == 1

    nouns = [s for s in graph.synsets("n") if graph.examples(s)]
    found, st = collect_contexts(graph, nouns, wn, limit=3)
    assert st.examples_leaky >= 20  # measured 29 noun examples
    for s, ctxs in found.items():
        for lemma, c in ctxs:
            assert not visible_target_forms(c.text, c.char_span, lemma, m), (s, c.text)


def test_wordnetqa_semcor_contexts_use_semcor_lemmas_and_skip_leaks(graph):
    from probegen.semcor import context_index
    from probegen.wordnetqa.contexts import ContextStats, semcor_contexts

    m = Morphology(load_wordnet())
    index = context_index()
    got = semcor_contexts(graph, "fan.n.03", index["fan.n.03"], m, 50)
    assert ("buff", "buffs") in {(lemma, c.surface) for lemma, c in got}  # SemCor's lemma, not "fan"
    stats = ContextStats()
    occs = index["person.n.01"]  # 170 once pn=person names are gone
    got = semcor_contexts(graph, "person.n.01", occs, m, len(occs), stats)
    assert stats.semcor_leaky > 0 and len(got) + stats.semcor_leaky == len(occs)
    assert not any(leaks(c.text, c.char_span, lemma, m) for lemma, c in got)


# ---- probegen stats ------------------------------------------------------------------------------
def _leaky_group():
    from probegen.coda21.items import Context, Group, Item

    items = tuple(
        Item(f"x{i}.n.01", "dog", f"definition {i}", Context(text=text, char_span=(2, 5)))
        for i, text in enumerate(["a dog bit a dog", "a dog barked", "a dog ran", "a dog sat", "a dog dogs"])
    )
    return Group("leaky-n-0001", "n", "canine.n.02", "parent", items)


def test_stats_reports_leak_rates_per_pos(clean_hard_nouns, tmp_path):
    from probegen.coda21 import dataset as D
    from probegen.commands.cli import cli

    clean = D.write(D.Coda21Dataset(clean_hard_nouns.groups[:5], clean_hard_nouns.manifest), tmp_path / "clean")
    r = CliRunner().invoke(cli, ["stats", str(clean)])
    n = sum(g.k for g in clean_hard_nouns.groups[:5])
    assert r.exit_code == 0, r.output
    assert f"visible target forms outside the hidden span: n 0/{n} (0.0%)" in r.stdout

    leaky = D.write(D.Coda21Dataset(clean_hard_nouns.groups[:5] + [_leaky_group()], clean_hard_nouns.manifest),
                    tmp_path / "leaky")
    r = CliRunner().invoke(cli, ["stats", str(leaky)])
    assert r.exit_code == 0, r.output
    assert f"n 2/{n + 5} (" in r.stdout  # "a dog bit a dog" and "a dog dogs"

    # the original release's schema (no lemma recorded): the same figure
    exported = tmp_path / "leaky.json"
    exported.write_text(json.dumps(D.export_coda21_json(D.load(leaky))))
    r = CliRunner().invoke(cli, ["stats", str(exported)])
    assert r.exit_code == 0, r.output
    assert f"n 2/{n + 5} (" in r.stdout


def test_stats_uses_the_datasets_own_wordnet_morphology():
    """A dataset made from another wordnet is leak-checked with that wordnet's forms, not 3.0's."""
    from pathlib import Path

    from probegen.leaks import morphology_for

    fixture = str(Path(__file__).parent / "data" / "lmf" / "es-mini.xml")
    spanish = morphology_for({"data": {"wordnet": {"source": fixture}}})
    english = morphology_for({})
    assert "animal" in spanish.all_bases("animales")  # a <Form> of the Spanish lexicon
    assert "animal" not in english.all_bases("animales")
    warned = []
    fallback = morphology_for({"data": {"wordnet": {"source": "/no/such/wordnet.xml"}}}, warned.append)
    assert fallback is english and "not available" in warned[0]
