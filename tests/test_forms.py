"""Parallel forms on real data: `make ... --forms K` writes K forms that share no synset and no target
lemma, match on the difficulty strata within the stated tolerance (probegen.forms.split.TOLERANCE,
docs/forms.md), name their siblings and strata, and are byte-identical for one seed; `probegen forms`
reports on real runs of bundled models; bad inputs are one line, exit 1, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_checks import assert_one_line_error, run

from probegen.coda21.dataset import load as load_coda21
from probegen.forms.split import TOLERANCE, balance_violations, make_forms, strata_table
from probegen.wordnetqa.dataset import load as load_wordnetqa

K = 3


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def _shared(sets: list[set[str]]) -> set[str]:
    return {x for i, a in enumerate(sets) for b in sets[i + 1:] for x in a & b}


def _lemma(w: str) -> str:
    return " ".join(w.replace("_", " ").split()).casefold()


def _check_balanced(forms_manifest: dict) -> None:
    """The strata per form in the manifest, checked against the tolerance from the numbers themselves."""
    table = forms_manifest["strata"]["per_form"]
    assert balance_violations(table, forms_manifest["strata"]["sd"], TOLERANCE) == []
    assert forms_manifest["within_tolerance"] is True
    for key in ("pos", "depth_band", "log_freq_band", "gloss_len"):
        assert any(key in t["levels"] or key in t["means"] for t in table), key


@pytest.fixture(scope="module")
def coda_forms(clean_hard_nouns, tmp_path_factory):
    """Three forms of the real clean-hard noun set, written twice with one seed."""
    tmp = tmp_path_factory.mktemp("coda-forms")
    names = [f"coda-form{i}" for i in range(1, K + 1)]
    out = []
    for copy in ("a", "b"):
        (tmp / copy).mkdir()
        for ds, name in zip(make_forms(clean_hard_nouns, "coda21", K, 0, names, log=lambda m: None), names):
            ds.write(tmp / copy / name)
        out.append([tmp / copy / n for n in names])
    return out


def test_coda21_forms_disjoint_balanced_deterministic(coda_forms, clean_hard_nouns):
    first, second = coda_forms
    for a, b in zip(first, second):
        assert _files(a) == _files(b)  # one seed: byte-identical
    forms = [load_coda21(p) for p in first]
    synsets = [{it.synset for g in ds.groups for it in g.items} for ds in forms]
    lemmas = [{_lemma(it.lemma) for g in ds.groups for it in g.items} for ds in forms]
    assert _shared(synsets) == set() and _shared(lemmas) == set()
    block = forms[0].manifest["forms"]
    assert block["siblings"] == [p.name for p in first] and block["form"] == 1 and block["of"] == K
    assert [ds.manifest["forms"]["family"] for ds in forms] == [block["family"]] * K
    _check_balanced(block)
    # the table the manifest states is the forms' own
    sizes = [len(ds.groups) for ds in forms]
    assert [t["units"] for t in block["strata"]["per_form"]] == sizes
    assert sum(sizes) + block["pool"]["left_out"] == len(clean_hard_nouns.groups)
    assert min(sizes) >= 0.25 * len(clean_hard_nouns.groups)  # few groups are lost to the disjointness


def test_wordnetqa_forms_by_cli(tmp_path):
    """`make wordnetqa --forms 3` end to end, twice: byte-identical, disjoint concepts and words, balanced."""
    outs = []
    for copy in ("a", "b"):
        code, out, err = run("make", "wordnetqa", "--probe", "hypernymy", "--limit", "240", "--forms", K,
                             "--out", tmp_path / copy / "hyp")
        assert code == 0, err
        outs.append([tmp_path / copy / f"hyp-form{i}" for i in range(1, K + 1)])
        assert not (tmp_path / copy / "hyp").exists()  # the forms, not the pool
    for a, b in zip(*outs):
        assert _files(a) == _files(b)
    forms = [load_wordnetqa(p) for p in outs[0]]
    assert _shared([{it.synset for it in ds.items} for ds in forms]) == set()
    assert _shared([{_lemma(it.word) for it in ds.items} for ds in forms]) == set()
    block = forms[1].manifest["forms"]
    assert block["form"] == 2 and block["siblings"] == ["hyp-form1", "hyp-form2", "hyp-form3"]
    _check_balanced(block)
    assert "hops" in block["strata"]["continuous"] and "profile" in block["strata"]["categorical"]
    hops = [np.mean([it.hops for it in ds.items]) for ds in forms]
    assert max(hops) - min(hops) < 0.3


def test_balance_check_catches_an_unbalanced_split(clean_hard_nouns):
    """The tolerance check is not vacuous: forms cut by group id order (no stratification) of the same
    pool break it on some stratum."""
    from probegen.forms.split import _bands, semcor_counts
    from probegen.tasks import get
    from probegen.wordnet_graph import load_graph

    units = get("coda21").form_units(clean_hard_nouns, load_graph(), semcor_counts(None, None))
    _bands(units)
    units.sort(key=lambda u: u.num["depth"])  # a depth-sorted cut: the forms differ in depth
    cut = [units[len(units) * j // K: len(units) * (j + 1) // K] for j in range(K)]
    sds = {key: float(np.std([u.num[key] for u in units])) for key in units[0].num}
    assert any("depth" in v for v in balance_violations(strata_table(cut), sds))


@pytest.fixture(scope="module")
def form_runs(coda_forms, tmp_path_factory):
    """Real runs of glove-50d (two matchings: two respondents) and minilm-l6 on the three CoDA21 forms."""
    tmp = tmp_path_factory.mktemp("form-runs")
    runs = []
    for form in coda_forms[0]:
        for model, extra in (("glove-50d", []), ("glove-50d", ["--matching", "simple"]), ("minilm-l6", [])):
            out = tmp / f"{model}-{'-'.join(extra) or 'align'}-{form.name}"
            code, _, err = run("eval", "--model", model, "--dataset", form, *extra, "--out", out)
            assert code == 0, err
            runs.append(out)
    return runs


def test_forms_report_on_real_runs(form_runs, tmp_path):
    out = tmp_path / "eq"
    code, stdout, err = run("forms", *form_runs, "--bootstrap", 300, "--out", out)
    assert code == 0, err
    assert "3 respondents x 3 forms" in stdout
    assert {p.name for p in out.iterdir()} >= {"report.md", "forms.csv", "equivalence.csv", "difficulty.csv",
                                               "summary.json", "forms.png"}
    s = json.loads((out / "summary.json").read_text())
    assert s["pairs"] == 9 and len(s["respondents"]) == 3 and s["margin"] == 0.03
    eq = (out / "equivalence.csv").read_text().splitlines()
    assert len(eq) == 1 + 9 + 3  # respondent x pair, and the mean of respondents per pair
    forms_csv = (out / "forms.csv").read_text().splitlines()[1:]
    for line in forms_csv:  # every CI holds its accuracy
        acc, lo, hi = (float(x) for x in line.split(",")[-4:-3] + line.split(",")[-2:])
        assert lo <= acc <= hi
    assert {d["measure"] for d in [dict(zip(["measure"], r.split(",")[:1]))
                                   for r in (out / "difficulty.csv").read_text().splitlines()[1:]]} == {"p", "irt_b"}
    assert len(s["ranks"]) == 3 and all("kendall_tau" in r for r in s["ranks"])
    # byte-identical for one seed
    again = tmp_path / "eq2"
    assert run("forms", *form_runs, "--bootstrap", 300, "--out", again)[0] == 0
    assert _files(out) == _files(again)


def test_forms_report_bad_inputs(form_runs, coda_forms, tmp_path, clean_hard_nouns):
    out = tmp_path / "eq"
    one_form = [r for r in form_runs if r.name.endswith("form1")]
    code, _, err = run("forms", *one_form, "--out", out)
    assert_one_line_error(code, err, "one form")
    # a run on a dataset that is no form
    plain = tmp_path / "plain"
    clean_hard_nouns.write(plain)
    plain_run = tmp_path / "plain-run"
    assert run("eval", "--model", "glove-50d", "--dataset", plain, "--limit", 3, "--out", plain_run)[0] == 0
    code, _, err = run("forms", form_runs[0], plain_run, "--out", out)
    assert_one_line_error(code, err, "not a parallel form")
    # forms of another family (another seed)
    other = tmp_path / "other"
    other.mkdir()
    names = [f"o{i}" for i in range(1, K + 1)]
    make_forms(clean_hard_nouns, "coda21", K, 1, names, log=lambda m: None)[0].write(other / "o1")
    other_run = tmp_path / "other-run"
    assert run("eval", "--model", "glove-50d", "--dataset", other / "o1", "--limit", 3, "--out", other_run)[0] == 0
    code, _, err = run("forms", form_runs[0], other_run, "--out", out)
    assert_one_line_error(code, err, "family")
    # one run given twice (issue 46: it would count as two respondents), and one respondent twice on a
    # form through two runs
    code, _, err = run("forms", form_runs[0], form_runs[0], form_runs[3], "--out", out)
    assert_one_line_error(code, err, "is the same run as", "given twice")
    again = tmp_path / "again-run"
    form1 = coda_forms[0][int(form_runs[0].name[-1]) - 1]
    assert run("eval", "--model", "glove-50d", "--dataset", form1, "--limit", 3, "--out", again)[0] == 0
    code, _, err = run("forms", form_runs[0], again, form_runs[3], "--out", out)
    assert_one_line_error(code, err, "one run per respondent and form")
    assert not out.exists()


def test_make_forms_bad_options(tmp_path):
    code, _, err = run("make", "wordnetqa", "--probe", "hypernymy", "--forms", 3, "--adversarial", "--out", tmp_path / "x")
    assert_one_line_error(code, err, "--forms", "--adversarial")
    code, _, err = run("make", "spec", "wic-semcor", "--forms", 3, "--out", tmp_path / "w")
    assert_one_line_error(code, err, "--forms", "wic_pair")
    code, _, err = run("make", "wordnetqa", "--probe", "hypernymy", "--limit", 4, "--forms", 3, "--out", tmp_path / "s")
    assert_one_line_error(code, err, "too few")
    code, _, err = run("make", "wordnetqa", "--forms", 1, "--out", tmp_path / "s")
    assert code == 2 and "--forms" in err
    assert not any(tmp_path.iterdir())


def test_spec_forms(tmp_path):
    """`make spec ... --forms K` writes the forms of the spec's dataset, its spec block kept."""
    code, _, err = run("make", "spec", "wordnetqa-hypernymy", "--set", "multiple_choice.max_concepts=90", "--forms", 2,
                       "--out", tmp_path / "s")
    assert code == 0, err
    forms = [load_wordnetqa(tmp_path / f"s-form{i}") for i in (1, 2)]
    assert all(ds.manifest["spec"]["name"] == "wordnetqa-hypernymy" for ds in forms)
    assert _shared([{it.synset for it in ds.items} for ds in forms]) == set()
    assert forms[0].manifest["forms"]["siblings"] == ["s-form1", "s-form2"]
