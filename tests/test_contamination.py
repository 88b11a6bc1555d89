"""Issue 37 §3, ``probegen contamination``: the seen-vs-fresh gap test (simulated forms: its false-positive
rate and its power), the command end to end on real WordNetQA release items with a real model, and one-line
errors with nothing written."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from probegen.diagnostics.contamination import form_accuracy, fresh_null, gap_test

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_contamination_sim import flag_rate, sim_form  # noqa: E402  (the simulation the benchmark runs)

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample"
PROBES = ("definitions", "hypernymy", "hyponymy", "synonymy")
WIC = Path(__file__).parent / "data" / "wic_semcor_24.jsonl"


@pytest.mark.parametrize("fresh,tau", [(3, 0.1), (5, 0.3)])
def test_no_planted_gap_rejects_at_about_alpha(fresh, tau):
    # measured: 0.039 (3 fresh, tau 0.1) and 0.044 (5 fresh, tau 0.3) over 2,000 simulated checks each.
    # If the true rate were 0.05, a count above 0.075 x 2,000 has probability < 1e-4 (binomial tail),
    # so the bound fails by chance essentially never; a test that ignores form-to-form spread goes far above it
    rate = flag_rate(fresh, tau, 0.0, 2000, seed=11)
    assert 0.01 <= rate <= 0.075, rate


def test_ignoring_form_spread_would_fail_the_bound():
    """The same simulation with tau2 forced to 0 (sampling error only): the false-positive rate the
    form-to-form term prevents. Shows the bound above can fail."""
    rng = np.random.default_rng(11)
    flags = 0
    for _ in range(1000):
        forms = [form_accuracy(sim_form(rng, 0.0, 0.3))[:2] for _ in range(4)]
        from scipy.stats import norm

        gap = forms[0][0] - np.mean([a for a, _ in forms[1:]])
        se = np.sqrt(forms[0][1] + sum(v for _, v in forms[1:]) / 9)
        flags += norm.sf(gap / se) < 0.05
    assert flags / 1000 > 0.1


def test_planted_gap_is_detected():
    # an exposure worth +0.8 logits (about +15 points) on the seen form, 5 fresh forms of 60 units:
    # measured 0.76 over 500 checks (sd 0.02): the bound 0.6 is 8 sd away
    assert flag_rate(5, 0.1, 0.8, 500, seed=12) >= 0.6


def test_large_gap_near_ceiling_is_flagged():
    """The real fine-tune on a `make wordnetqa --forms 4` form (docs/contamination.md): the seen form near
    ceiling has a small sampling variance, and Welch-Satterthwaite alone gave df 0.74 and p 0.064 for a
    +0.51 gap; the F - 1 floor flags it. Simulated power at +1.5 logits (3 fresh forms): 0.71 -> 0.91."""
    r = gap_test((0.971, 0.012**2), [(0.543, 0.050**2), (0.423, 0.046**2), (0.431, 0.054**2)])
    assert r["df"] >= 2 and r["flagged"] and r["p"] < 0.02, r
    assert flag_rate(3, 0.1, 1.5, 400, seed=13) >= 0.8  # measured 0.91 (2,000 runs); without the floor 0.71


def test_gap_test_fields_and_two_fresh_minimum():
    seen, fresh = (0.8, 0.002), [(0.5, 0.002), (0.55, 0.002), (0.45, 0.002)]
    r = gap_test(seen, fresh)
    assert r["gap"] == pytest.approx(0.3) and r["flagged"] and r["ci"][0] < 0.3 < r["ci"][1]
    assert r["tau2"] == pytest.approx(np.var([0.5, 0.55, 0.45], ddof=1) - 0.002)
    two = gap_test(seen, fresh, alternative="two-sided")
    assert two["p"] == pytest.approx(2 * r["p"])
    assert not gap_test((0.2, 0.002), fresh)["flagged"]  # harder on the seen form: not exposure
    from probegen.errors import ProbegenError

    with pytest.raises(ProbegenError, match="at least 2 fresh forms"):
        gap_test(seen, fresh[:1])
    assert fresh_null(fresh[:2]) == [] and len(fresh_null(fresh)) == 3


def test_form_accuracy_is_the_cluster_robust_ratio_variance():
    # one unit of 10 items all right and nine of 1 item all wrong: accuracy 10/19; the variance treats
    # the big unit as one draw, so it is far above the 19 independent items' binomial variance
    units = {"big": (10.0, 10.0), **{f"s{i}": (0.0, 1.0) for i in range(9)}}
    acc, var, n = form_accuracy(units)
    assert acc == pytest.approx(10 / 19) and n == 10
    assert var > 3 * acc * (1 - acc) / 19


# ---- the command on real items with a real model ---------------------------------------------------
def _release_rows() -> list[dict]:
    rows = []
    for p in PROBES:
        rows += [json.loads(x) for x in (SAMPLES / f"{p}-train-sample.jsonl").read_text().splitlines() if x]
    return rows


def _synset(row: dict) -> str:
    return row["notes"]["gold_synset"]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _release_forms(tmp: Path, k: int, seed: int = 0) -> list[Path]:
    """k release files of the release sample's 160 items, concepts dealt round-robin (no shared
    synset): disjoint, but no manifest says they are forms of one build."""
    rows = _release_rows()
    concepts = sorted({_synset(r) for r in rows})
    random.Random(seed).shuffle(concepts)
    return [_write(tmp / f"form{i + 1}.jsonl", [r for r in rows if _synset(r) in set(concepts[i::k])])
            for i in range(k)]


def _as_form(src: Path, out: Path, form: int, k: int, family: str = "f00d") -> Path:
    """The release file ``src`` as a dataset folder whose manifest says it is form ``form`` of ``k`` of
    ``family`` (what `make wordnetqa --forms K` writes, without building from WordNet)."""
    from dataclasses import replace

    from probegen.run.run_bias import load_dataset

    _, data = load_dataset(src)
    block = {"family": family, "of": k, "form": form, "siblings": [f"form{i}" for i in range(1, k + 1)],
             "name": f"form{form}"}
    replace(data, manifest={**data.manifest, "forms": block}).write(out)
    return out


def _forms(tmp: Path, k: int, seed: int = 0) -> list[Path]:
    """k sibling forms (dataset folders ``form1`` ..) of the release sample's 160 items."""
    rel = tmp / "release"
    rel.mkdir(exist_ok=True)
    return [_as_form(f, tmp / f.stem, i, k) for i, f in enumerate(_release_forms(rel, k, seed), 1)]


def _invoke(args: list[str]):
    from probegen.commands.cli import cli

    return CliRunner().invoke(cli, ["contamination", *args])


needs_sample = pytest.mark.skipif(not (SAMPLES / "definitions-train-sample.jsonl").is_file(),
                                  reason="the WordNetQA release sample is not here")


@needs_sample
def test_cli_flags_a_planted_exposure_and_not_a_clean_form(tmp_path):
    """glove-50d on the release items. Clean: form 1 of 4 as the seen form. Exposed: a seen form made of
    the items glove-50d gets right (what a model tuned to that form shows) beside the same fresh forms."""
    forms = _forms(tmp_path, 4)
    clean = tmp_path / "clean"
    r = _invoke(["--model", "glove-50d", "--seen", str(forms[0]), "--fresh", *map(str, forms[1:]), "--out", str(clean)])
    assert r.exit_code == 0, r.output
    s = json.loads((clean / "summary.json").read_text())
    (m,) = s["models"]
    assert s["kind"] == "wordnetqa" and [f["form"] for f in m["forms"]] == ["form1", "form2", "form3", "form4"]
    assert not m["test"]["flagged"] and "within what forms nobody saw differ by" in m["sentence"]
    assert len(m["fresh_null"]) == 3
    assert sorted(p.name for p in clean.iterdir() if not p.name.startswith(".")) == [
        "contamination.png", "forms.csv", "report.md", "summary.json"]
    assert m["sentence"] in (clean / "report.md").read_text() and m["sentence"] in r.output

    # the seen form: a fifth "form" of the items glove-50d got right on form 1's concepts' neighbours:
    # score all items, keep right ones whose concept is in no fresh form
    from probegen.run.compare import correctness
    from probegen.run.run_bias import load_dataset
    from probegen.runner import Runner

    form1 = tmp_path / "release" / "form1.jsonl"
    pool = _write(tmp_path / "pool.jsonl", [r for r in _release_rows()
                                             if _synset(r) in {_synset(x) for x in map(json.loads, form1.read_text().splitlines())}])
    kind, data = load_dataset(pool)
    _, decisions = correctness(kind, data, Runner(log=lambda m: None).load_scorer("glove-50d"), 0, progress=False)
    right = {item for _, item, ok in decisions if ok == 1.0}
    assert right, "glove-50d gets none of form 1 right"
    seen = _as_form(_write(tmp_path / "tuned.jsonl", [r for r in map(json.loads, pool.read_text().splitlines())
                                                      if r["id"] in right]), tmp_path / "tuned", 1, 4)
    exposed = tmp_path / "exposed"
    r = _invoke(["--model", "glove-50d", "--seen", str(seen), "--fresh", *map(str, forms[1:]), "--out", str(exposed)])
    assert r.exit_code == 0, r.output
    (m,) = json.loads((exposed / "summary.json").read_text())["models"]
    assert m["forms"][0]["accuracy"] == 1.0 and m["test"]["flagged"], m["test"]
    assert "consistent with exposure" in m["sentence"] and "EXPOSED?" in r.output

    # deterministic: the same inputs give byte-identical summary, table and report
    again = tmp_path / "again"
    r = _invoke(["--model", "glove-50d", "--seen", str(seen), "--fresh", str(forms[1]), "--fresh", str(forms[2]),
                 str(forms[3]), "--out", str(again)])
    assert r.exit_code == 0, r.output
    for name in ("summary.json", "forms.csv", "report.md"):
        assert (again / name).read_bytes() == (exposed / name).read_bytes()


@needs_sample
@pytest.mark.parametrize("case,needle", [
    ("one_fresh", "at least 2 fresh forms"),
    ("kinds", "different kinds"),
    ("shared", "share"),
    ("twice", "given twice"),
    ("missing", "no such dataset"),
    ("model", "unknown model"),
])
def test_errors_are_one_line_and_write_nothing(tmp_path, case, needle):
    forms = _forms(tmp_path, 3)
    fresh = [str(f) for f in forms[1:]]
    model = "glove-50d"
    if case == "one_fresh":
        fresh = fresh[:1]
    elif case == "kinds":
        fresh = [*fresh, str(WIC)]
    elif case == "shared":
        fresh = [*fresh, str(_write(tmp_path / "overlap.jsonl", json_lines(tmp_path / "release" / "form1.jsonl")[:3]))]
    elif case == "twice":
        fresh = [*fresh, str(forms[1])]
    elif case == "missing":
        fresh = [*fresh, str(tmp_path / "nope.jsonl")]
    elif case == "model":
        model = "no-such-model-xyz"
    out = tmp_path / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    r = _invoke(["--model", model, "--seen", str(forms[0]), "--fresh", *fresh, "--out", str(out)])
    assert r.exit_code == 1, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("probegen: error:")]
    assert len(lines) == 1 and needle in lines[0], r.output
    assert "Traceback" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, not even a temp folder


def json_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x]


# ---- issue 46: strict JSON, degenerate tests, sibling forms, --run --------------------------------
def _strict(text: str) -> object:
    """``json.loads`` that refuses NaN and +/-Infinity (what a strict reader does)."""
    def refuse(token: str) -> object:
        raise ValueError(f"not strict JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def test_zero_between_form_variance_writes_strict_json(tmp_path):
    """tau2 = 0 gives Welch-Satterthwaite df = infinity: summary.json says null with the reason (it wrote
    ``"df": Infinity``, which a strict reader rejects); every JSON written parses strictly."""
    forms = _forms(tmp_path, 4)  # the release forms of seed 0: glove-50d's fresh accuracies spread less than their SEs
    out = tmp_path / "out"
    r = _invoke(["--model", "glove-50d", "--seen", str(forms[0]), "--fresh", *map(str, forms[1:]), "--out", str(out)])
    assert r.exit_code == 0, r.output
    (m,) = _strict((out / "summary.json").read_text())["models"]
    assert m["test"]["tau2"] == 0, m["test"]
    assert m["test"]["df"] is None and "tau2 = 0" in m["test"]["df_note"]
    for f in out.rglob("*.json"):
        _strict(f.read_text())


def test_zero_se_gap_test_says_it_is_degenerate():
    """Every form answered all right or all wrong (no spread): the gap's SE is 0 and the t statistic
    +/-inf; that is no evidence, so the test is not flagged and says it is degenerate."""
    r = gap_test((1.0, 0.0), [(0.5, 0.0), (0.5, 0.0), (0.5, 0.0)])
    assert r["degenerate"] and not r["flagged"] and not np.isfinite(r["p"])
    from probegen.diagnostics.contamination import sentence
    from probegen.io import json_text

    assert "degenerate" in sentence("m", r)
    assert _strict(json_text(r))["p"] is None and _strict(json_text(r))["p_note"] == "degenerate test"


@needs_sample
def test_forms_that_are_not_siblings_are_refused_and_force_warns(tmp_path):
    """The issue's case on the real release files: a hyponymy set as seen against sibling forms of the
    definitions items ran and said "consistent with exposure"; forms of another family, or files no
    manifest calls forms, are refused the same way; --force runs with the warning in the report."""
    defs = [json.loads(x) for x in (SAMPLES / "definitions-train-sample.jsonl").read_text().splitlines() if x]
    concepts = sorted({_synset(r) for r in defs})
    rel = tmp_path / "release"
    rel.mkdir()
    fresh = [_as_form(_write(rel / f"def{i}.jsonl", [r for r in defs if _synset(r) in set(concepts[i::3])]),
                      tmp_path / f"def-form{i + 1}", i + 1, 3, family="defs") for i in range(3)]
    hypo = _write(rel / "hyponymy.jsonl", [r for r in map(json.loads, (SAMPLES / "hyponymy-train-sample.jsonl")
                                                          .read_text().splitlines()) if _synset(r) not in concepts])
    other = _as_form(hypo, tmp_path / "hypo-form1", 1, 3, family="hypo")
    for seen, needle in ((hypo, "no 'forms' block"), (other, "family hypo")):
        out = tmp_path / "out"
        r = _invoke(["--model", "glove-50d", "--seen", str(seen), "--fresh", *map(str, fresh[1:]), "--out", str(out)])
        assert r.exit_code == 1 and "Traceback" not in r.output, r.output
        (line,) = [x for x in r.output.splitlines() if x.startswith("probegen: error:")]
        assert "not sibling forms" in line and needle in line and "--force" in line, line
        assert not out.exists()
    out = tmp_path / "forced"
    r = _invoke(["--model", "glove-50d", "--seen", str(hypo), "--fresh", *map(str, fresh[1:]), "--force",
                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    summary = _strict((out / "summary.json").read_text())
    assert summary["warning"].startswith("--force: the seen and fresh forms are not sibling forms")
    assert summary["warning"] in (out / "report.md").read_text()


@needs_sample
def test_run_checks_a_model_known_only_by_its_results(tmp_path):
    """--run: glove-50d's answers on each form given as a probegen run, an inspect-ai log and an
    Every Eval Ever export (a model reachable only through its results) give the test --model gives."""
    from cli_checks import run

    forms = _forms(tmp_path, 4)
    answers = []
    for i, form in enumerate(forms):
        r = tmp_path / f"run{i + 1}"
        assert run("eval", "--model", "glove-50d", "--dataset", form, "--out", r)[0] == 0
        if i == 1:
            log = tmp_path / "logs" / "glove-2.eval"
            assert run("export", r, "--format", "inspect-log", "--out", log)[0] == 0
            r = log
        elif i == 2:
            assert run("export", r, "--format", "eee", "--out", tmp_path / "eee3")[0] == 0
            r = tmp_path / "eee3"
        answers.append(r)
    by_model, by_run = tmp_path / "by-model", tmp_path / "by-run"
    args = ["--seen", str(forms[0]), "--fresh", *map(str, forms[1:])]
    r = _invoke(["--model", "glove-50d", *args, "--out", str(by_model)])
    assert r.exit_code == 0, r.output
    r = _invoke([*args, *[x for a in answers for x in ("--run", str(a))], "--out", str(by_run)])
    assert r.exit_code == 0, r.output
    (want,), got = (_strict((d / "summary.json").read_text())["models"] for d in (by_model, by_run))
    (got,) = got
    assert got["model"] == "glove-50d" and got["forms"] == want["forms"] and got["test"] == want["test"]
    assert "answers from" in (by_run / "report.md").read_text()
    # a respondent without a run on every form, and nothing to check at all: one line each
    r = _invoke([*args, "--run", str(answers[0]), "--run", str(answers[1]), "--out", str(tmp_path / "x")])
    assert r.exit_code == 1 and "has no run on" in r.output and not (tmp_path / "x").exists(), r.output
    r = _invoke([*args, "--out", str(tmp_path / "x")])
    assert r.exit_code == 1 and "give --model" in r.output and not (tmp_path / "x").exists(), r.output


def test_alpha_that_is_not_finite_is_refused(tmp_path):
    for bad in ("nan", "inf", "-inf"):
        r = _invoke(["--model", "glove-50d", "--seen", "a", "--fresh", "b", "c", "--alpha", bad,
                     "--out", str(tmp_path / "o")])
        assert r.exit_code == 2 and "must be a finite number" in r.output, r.output


@needs_sample
@pytest.mark.real
def test_run_checks_a_model_known_only_by_its_lm_eval_samples(tmp_path):
    """--run with real lm-eval --log_samples (smollm2-135m, the first 6 docs of each form's lm-eval
    export): the samples are placed on their forms by the exports' manifests and tested like a model."""
    from exchange_runs import run_lm_eval

    from probegen.exporters import export

    forms = _forms(tmp_path, 3)
    folders = [tmp_path / f"lm-{f.name}" for f in forms]
    for f, d in zip(forms, folders):
        export(f, "lm-eval", d)
    run_lm_eval(folders, tmp_path / "lm-out", tmp_path, limit=6)
    samples = [next((tmp_path / "lm-out").rglob(f"samples_*form{i}_*.jsonl")) for i in (1, 2, 3)]
    out = tmp_path / "out"
    r = _invoke(["--seen", str(forms[0]), "--fresh", *map(str, forms[1:]), *[x for s in samples for x in ("--run", str(s))],
                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    (m,) = _strict((out / "summary.json").read_text())["models"]
    assert "lm-eval" in m["model"] or "smollm2" in m["model"], m["model"]
    for f, path in zip(m["forms"], samples):
        acc = [json.loads(x)["acc"] for x in path.read_text().splitlines()]
        assert f["accuracy"] == pytest.approx(sum(acc) / len(acc))
    # --lm-eval-metric both: the file's acc_norm is a second respondent, as in items and forms
    out2 = tmp_path / "out-both"
    r = _invoke(["--seen", str(forms[0]), "--fresh", *map(str, forms[1:]), *[x for s in samples for x in ("--run", str(s))],
                 "--lm-eval-metric", "both", "--out", str(out2)])
    assert r.exit_code == 0, r.output
    both = _strict((out2 / "summary.json").read_text())["models"]
    assert len(both) == 2 and any("acc_norm" in b["model"] for b in both), [b["model"] for b in both]
