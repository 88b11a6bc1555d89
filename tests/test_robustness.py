"""Malformed inputs, half-written outputs, option mixing and unknown models: each fails with one
line and exit 1 before any work, and an interrupted write never leaves a mixed directory."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, never, run

from probegen.coda21 import dataset as D
from probegen.errors import DatasetError
from probegen.wordnetqa import dataset as W

OFFLINE = {"HF_HUB_OFFLINE": "1"}


def group_row(gid: str, k: int = 3, **item_overrides) -> dict:
    items = [
        {"synset": f"s{i}.n.01", "lemma": f"s{i}", "definition": f"thing number {i}",
         "context": {"text": f"a w{i} b", "char_span": [2, 2 + len(f"w{i}")]}}
        for i in range(k)
    ]
    for key, value in item_overrides.items():
        items[1][key] = value
    return {"id": gid, "pos": "n", "ancestor": "a.n.01", "relation": "parent", "items": items}


def coda21_dir(path: Path, rows: list[dict]) -> Path:
    path.mkdir()
    (path / D.GROUPS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def mc_dir(path: Path, n: int = 3) -> Path:
    """A minimal WordNetQA directory (hand-written items, no manifest: a manifest must list its files' hashes)."""
    path.mkdir()
    rows = [{"id": f"q{i}", "probe": "definitions", "synset": f"a{i}.n.01", "question": f"q {i}",
             "choices": ["a", "b", "c", "d", "e"], "answer": i % 5} for i in range(n)]
    (path / W.ITEMS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---- defect 4: malformed inputs --------------------------------------------------------------------
def test_duplicate_group_ids_are_rejected(tmp_path):
    d = coda21_dir(tmp_path / "d", [group_row("g1"), group_row("g2"), group_row("g1")])
    code, _, err = run("stats", str(d))
    assert_one_line_error(code, err, "'g1'", "more than once")


@pytest.mark.parametrize("field,value,needle", [("synset", "s0.n.01", "synset s0.n.01"),
                                                ("definition", "Thing  number 0", "definition")])
def test_group_repeating_a_synset_or_definition_is_rejected(tmp_path, field, value, needle):
    d = coda21_dir(tmp_path / "d", [group_row("g1", **{field: value})])
    code, _, err = run("stats", str(d))
    assert_one_line_error(code, err, "group g1 repeats the", needle, "items 1 and 2")


@pytest.mark.real
def test_real_groups_pass_the_checks_and_a_copied_group_fails(clean_hard_nouns, tmp_path):
    """Real clean-hard nouns pass check(); the same set with one group id repeated does not."""
    D.check(clean_hard_nouns)
    g0, g1 = clean_hard_nouns.groups[:2]
    bad = dataclasses.replace(clean_hard_nouns, groups=[g0, dataclasses.replace(g1, id=g0.id)])
    with pytest.raises(DatasetError, match="occurs more than once"):
        D.check(bad)
    # a group whose two items share one definition (SemCor's synsets, a real gloss)
    twin_def = dataclasses.replace(g0.items[1], definition=g0.items[0].definition)
    bad = dataclasses.replace(clean_hard_nouns, groups=[dataclasses.replace(g0, items=(g0.items[0], twin_def, *g0.items[2:]))])
    with pytest.raises(DatasetError, match="repeats the definition"):
        D.check(bad)


@pytest.mark.real
def test_imported_group_without_ancestor_name_is_one_line(clean_hard_nouns, tmp_path):
    raw = D.export_coda21_json(dataclasses.replace(clean_hard_nouns, groups=clean_hard_nouns.groups[:3]))
    del raw["n"][1]["common_ancestor_info"]["ancestor_name"]
    path = tmp_path / "coda21.json"
    path.write_text(json.dumps(raw))
    code, _, err = run("stats", str(path))
    assert_one_line_error(code, err, "group n[1]", "ancestor_name")


@pytest.mark.parametrize("pattern,needle", [("{m} is a {kind}", "unknown placeholder {kind}"),
                                            ("{m} is {", "malformed"), ("{0} {m}", "unknown placeholder {0}")])
def test_pattern_with_unknown_placeholder_is_one_line(tmp_path, monkeypatch, pattern, needle):
    d = coda21_dir(tmp_path / "d", [group_row("g1", k=3)])
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(d), "--pattern", pattern, "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, needle)
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(d), "--pattern", pattern, "--out", str(tmp_path / "b"))
    assert_one_line_error(code, err, needle)


@pytest.mark.parametrize("content,needle", [
    ("{oops\n", "not valid JSON"),
    ('{"id": "g1", "scores": [[0, 1]], "pred": [0], "gold": [0], "rows": ["a"], "columns": ["a"], "correct": 1}\n', "k x k"),
    ('{"id": "g1", "pred": [0]}\n', "missing scores"),
    ('["g1"]\n', "needs an object with an id"),
    ('{"id": "g1", "scores": [[0, 1], [1, 0]], "pred": [0, 5], "gold": [0, 1], "rows": ["a", "b"], "columns": ["a", "b"], "correct": 1}\n', "pred must be"),
])
def test_malformed_run_given_to_plot_group_is_one_line(tmp_path, content, needle):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "groups.jsonl").write_text(content)
    code, _, err = run("plot-group", str(tmp_path / "run"))
    assert_one_line_error(code, err, needle)
    assert not list((tmp_path / "run").glob("*.png"))


def test_duplicate_wordnetqa_item_ids_are_named(tmp_path):
    d = mc_dir(tmp_path / "d", 4)
    rows = (d / W.ITEMS_FILE).read_text().splitlines()
    (d / W.ITEMS_FILE).write_text("\n".join(rows + [rows[2]]) + "\n")
    code, _, err = run("stats", str(d))
    assert_one_line_error(code, err, "item id 'q2' occurs 2 times")


# ---- defect 5: half-written datasets and runs --------------------------------------------------------
@pytest.mark.real
def test_interrupted_coda21_write_keeps_the_old_dataset_whole(clean_hard_nouns, tmp_path, monkeypatch):
    out = D.write(clean_hard_nouns, tmp_path / "ds")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    smaller = dataclasses.replace(clean_hard_nouns, groups=clean_hard_nouns.groups[:5])

    def interrupt(*a, **k):  # Ctrl-C after groups.jsonl, before manifest.json
        raise KeyboardInterrupt

    monkeypatch.setattr("probegen.io.write_json", interrupt)
    with pytest.raises(KeyboardInterrupt):
        D.write(smaller, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["ds"], "a temporary directory was left behind"
    assert len(D.load(out).groups) == len(clean_hard_nouns.groups)
    monkeypatch.undo()
    D.write(smaller, out)  # replacing works once not interrupted, and leaves nothing beside it
    assert len(D.load(out).groups) == 5 and [p.name for p in tmp_path.iterdir()] == ["ds"]


@pytest.mark.real
def test_interrupted_wordnetqa_write_keeps_the_old_dataset_whole(tmp_path, monkeypatch):
    out = tmp_path / "wnqa"
    code, _, err = run("make", "wordnetqa", "--probe", "hyponymy", "--limit", "40", "--release", "--out", str(out))
    assert code == 0, err
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    ds = W.load(out)
    calls = []

    def interrupt_second(path, rows):  # Ctrl-C after items.jsonl and the first release file
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(path, rows)

    real = W.write_jsonl
    monkeypatch.setattr(W, "write_jsonl", interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        W.write(dataclasses.replace(ds, items=ds.items[:10]), out, release=True)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["wnqa"]


def test_ctrl_c_message_is_true_for_the_command(tmp_path, monkeypatch):
    d = coda21_dir(tmp_path / "d", [group_row("g1")])

    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(D, "export_coda21_json", interrupt)
    code, _, err = run("export", str(d), "--out", str(tmp_path / "x.json"))
    assert code == 130 and "cached" not in err and "interrupted" in err
    monkeypatch.setattr("probegen.coda21.evaluate.evaluate", interrupt)
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(d), "--out", str(tmp_path / "run"))
    assert code == 130 and "cached" in err and "half-written" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.real
def test_tampered_dataset_file_is_named_on_load(clean_hard_nouns, tmp_path):
    out = D.write(clean_hard_nouns, tmp_path / "ds")
    man = json.loads((out / D.MANIFEST_FILE).read_text())
    assert set(man["files"]) == {D.GROUPS_FILE}
    text = (out / D.GROUPS_FILE).read_text()
    (out / D.GROUPS_FILE).write_text(text.replace('"relation": "parent"', '"relation": "parent" ', 1))
    with pytest.raises(DatasetError, match="groups.jsonl was changed"):
        D.load(out)
    code, _, err = run("stats", str(out))
    assert_one_line_error(code, err, "groups.jsonl", "changed")
    # a manifest without its files block cannot be checked: an error, not a silent pass (issue 16, item 10)
    del man["files"]
    (out / D.MANIFEST_FILE).write_text(json.dumps(man))
    with pytest.raises(DatasetError, match="no 'files' block"):
        D.load(out)


@pytest.mark.real
def test_tampered_or_missing_wordnetqa_file_is_named(tmp_path):
    out = tmp_path / "wnqa"
    assert run("make", "wordnetqa", "--probe", "hyponymy", "--limit", "40", "--release", "--out", str(out))[0] == 0
    W.load(out)
    (out / "release" / "dev.jsonl").unlink()
    code, _, err = run("stats", str(out))
    assert_one_line_error(code, err, "release/dev.jsonl", "missing")
    rows = (out / W.ITEMS_FILE).read_text().splitlines()
    (out / W.ITEMS_FILE).write_text("\n".join(rows[1:]) + "\n")
    with pytest.raises(DatasetError, match="items.jsonl was changed"):
        W.load(out)


def test_output_over_a_foreign_directory_is_refused_before_work(tmp_path, monkeypatch):
    d = coda21_dir(tmp_path / "d", [group_row("g1")])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(d), "--out", str(mine))
    assert_one_line_error(code, err, "notes.txt", "probegen did not write it")
    assert (mine / "notes.txt").read_text() == "keep me"


def test_output_that_holds_the_current_directory_is_refused(tmp_path, monkeypatch):
    d = coda21_dir(tmp_path / "d", [group_row("g1")])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text("{}")
    monkeypatch.chdir(run_dir)
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(d), "--out", ".")
    assert_one_line_error(code, err, "current directory")
    assert run_dir.is_dir() and (run_dir / "results.json").read_text() == "{}"


def test_written_files_get_the_usual_permissions(tmp_path):
    import os

    from probegen.io import atomic_dir, write_json

    umask = os.umask(0o022)
    os.umask(umask)
    with atomic_dir(tmp_path / "ds") as tmp:
        write_json(tmp / "manifest.json", {})
    assert (tmp_path / "ds" / "manifest.json").stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "ds").stat().st_mode & 0o777 == 0o777 & ~umask


def test_adversarial_twin_path_is_checked_before_any_work(tmp_path, monkeypatch):
    (tmp_path / "adv-twin").write_text("a file where the twin would go")
    monkeypatch.setattr("probegen.coda21.adversarial.build_adversarial", never("adversarial generation"))
    monkeypatch.setattr("probegen.wordnetqa.adversarial.build_adversarial", never("adversarial generation"))
    for probe in ("coda21", "wordnetqa"):
        code, _, err = run("make", probe, "--adversarial", "--out", str(tmp_path / "adv"))
        assert_one_line_error(code, err, "adv-twin", "not a directory")
    assert not (tmp_path / "adv").exists()


# ---- defect 6: options that do not apply -------------------------------------------------------------
@pytest.mark.parametrize("kind,args,needle", [
    ("coda21", ["--length-norm", "chars"], "--length-norm applies to multiple-choice"),
    ("coda21", ["--split", "test"], "--split applies to multiple-choice"),
    ("wordnetqa", ["--pattern", "is"], "--pattern applies to CoDA21"),
    ("wordnetqa", ["--matching", "simple"], "--matching applies to CoDA21"),
    ("wordnetqa", ["--reduction", "mean", "--length-norm", "chars"], "divide a per-token mean by characters"),
    ("wordnetqa", ["--reduction", "sum", "--length-norm", "tokens"], "--length-norm tokens is the per-token mean"),
    ("wordnetqa", ["--reduction", "mean"], "--reduction applies to language models only"),
    ("coda21", ["--reduction", "mean"], "--reduction applies to language models only"),
    ("coda21", ["--pattern", "is"], "--pattern applies to language models only; glove-50d is a static model"),
    ("coda21", ["--nonce", "dax"], "--nonce applies to language models only"),
    ("wordnetqa", ["--nonce", "dax"], "--nonce applies to CoDA21"),
])
def test_eval_rejects_options_that_do_not_apply(tmp_path, monkeypatch, kind, args, needle):
    d = coda21_dir(tmp_path / "d", [group_row("g1")]) if kind == "coda21" else mc_dir(tmp_path / "d")
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(d), *args, "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "o").exists()


def test_eval_defaults_and_consistent_options_still_run(tmp_path):
    d = coda21_dir(tmp_path / "d", [group_row("g1", k=4)])
    code, out, err = run("eval", "--model", "glove-50d", "--dataset", str(d), "--length-norm", "none", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert json.loads((tmp_path / "o" / "results.json").read_text())["eval"]["matching"] == "alignment"


def test_bias_rejects_options_that_apply_to_none_of_its_datasets(tmp_path, monkeypatch):
    monkeypatch.setattr("probegen.run.run_bias.run_bias", never("the bias run"))
    mc = mc_dir(tmp_path / "mc")
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(mc), "--pattern", "is", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "--pattern applies to CoDA21")
    c = coda21_dir(tmp_path / "c", [group_row("g1")])
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(c), "--split", "test", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "--split applies to multiple-choice")
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(c), "--reduction", "mean", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "--reduction applies to language models only")
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", str(c), "--pattern", "is", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "--pattern applies to language models only")


# ---- defect 10: unknown models fail before any generation ---------------------------------------------
def test_bias_with_unknown_model_fails_before_generating_default_datasets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no default datasets here: the old code generated them first
    monkeypatch.setattr(D, "build", never("CoDA21 generation"))
    monkeypatch.setattr(W, "build", never("WordNetQA generation"))
    t0 = time.perf_counter()
    code, _, err = run("bias", "--model", "no-such-model-xyz", env=OFFLINE)
    assert_one_line_error(code, err, "no-such-model-xyz")
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "probegen_out").exists()


@pytest.mark.parametrize("flag", ["--embedder", "--context-scorer", "--against"])
def test_make_coda21_resolves_every_model_first(tmp_path, monkeypatch, flag):
    monkeypatch.setattr(D, "build", never("CoDA21 generation"))
    monkeypatch.setattr(D, "plan", never("CoDA21 generation"))
    monkeypatch.setattr("probegen.coda21.adversarial.build_adversarial", never("adversarial generation"))
    code, _, err = run("make", "coda21", "--adversarial", flag, "no-such-model-xyz", "--out", str(tmp_path / "d"), env=OFFLINE)
    assert_one_line_error(code, err, "no-such-model-xyz")
    assert not (tmp_path / "d").exists()


def test_make_coda21_rejects_a_context_scorer_that_is_not_an_lm(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "build", never("CoDA21 generation"))
    code, _, err = run("make", "coda21", "--context-scorer", "glove-50d", "--out", str(tmp_path / "d"))
    assert_one_line_error(code, err, "--context-scorer must be a causal or masked LM")


def test_eval_compare_filter_resolve_models_first(tmp_path, monkeypatch):
    d = coda21_dir(tmp_path / "d", [group_row("g1")])
    monkeypatch.setattr(D, "load", never("dataset loading"))
    code, _, err = run("eval", "--model", "no-such-model-xyz", "--dataset", str(d), "--out", str(tmp_path / "o"), env=OFFLINE)
    assert_one_line_error(code, err, "no-such-model-xyz")
    monkeypatch.setattr("probegen.run.compare.correctness", never("scoring"))
    code, _, err = run("compare", str(d), str(d), "--model", "glove-50d", "--model", "no-such-model-xyz",
                       "--out", str(tmp_path / "c"), env=OFFLINE)
    assert_one_line_error(code, err, "no-such-model-xyz")
    monkeypatch.setattr("probegen.run.filtering.filter_dataset", never("filtering"))
    code, _, err = run("filter", str(d), "--artefacts", "--budget", "1", "--model", "no-such-model-xyz",
                       "--out", str(tmp_path / "f"), env=OFFLINE)
    assert_one_line_error(code, err, "no-such-model-xyz")
    assert not any((tmp_path / n).exists() for n in ("o", "c", "f"))


# ---- issue 26, item 4: one line, never a traceback ----------------------------------------------------
def _seed_commands() -> list[tuple[str, ...]]:
    """The path of every command that takes --seed (walked, so a new one is covered too)."""
    import click

    from probegen.commands.cli import cli

    found = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))
        elif any(p.name == "seed" for p in cmd.params):
            found.append(path)

    walk(cli, ())
    return found


def test_every_seed_option_refuses_a_negative_or_too_large_seed_as_a_usage_error():
    paths = _seed_commands()
    assert ("eval",) in paths and ("bias",) in paths and ("study", "make") in paths and len(paths) >= 10
    for path in paths:
        for bad in ("-1", str(2**32)):
            code, _, err = run(*path, "--seed", bad)
            assert code == 2 and "Invalid value for '--seed'" in err and "Traceback" not in err, (path, bad, err)


def test_eval_with_seed_minus_one_is_a_usage_error_before_any_work(tmp_path, monkeypatch):
    ds = coda21_dir(tmp_path / "tiny", [group_row("g")])
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", ds, "--seed", "-1", "--out", tmp_path / "r")
    assert code == 2 and "Invalid value for '--seed': seed (--seed) must be an integer from 0 to" in err, err
    assert not (tmp_path / "r").exists()


def _my_templates(tmp_path: Path, stem: str = 'In "{sentence}", the word "{word}" means:', extra: str = "") -> Path:
    """The bundled English question templates under ids of their own, the first stem replaced."""
    text = (Path(__file__).resolve().parents[1] / "templates" / "questions" / "en.yaml").read_text(encoding="utf-8")
    text = text.replace("{id: ", "{id: my-").replace(
        """stem: 'In the sentence "{sentence}", the word "{word}" is best defined as:'""", "stem: " + json.dumps(stem), 1)
    path = tmp_path / "mine.yaml"
    path.write_text(text + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize("placeholder", ["{word:d}", "{word!r}", "{word:>{x}}", "{0}", "{word.upper}", "{word[0]}"])
def test_a_template_placeholder_with_a_format_spec_or_conversion_is_one_line(tmp_path, placeholder):
    f = _my_templates(tmp_path, 'In "{sentence}", the word "' + placeholder + '" means:')
    code, _, err = run("make", "wordnetqa", "--probe", "definitions", "--templates", f, "--out", tmp_path / "o")
    assert_one_line_error(code, err, f"{f}: probes.definitions.templates[0].stem", placeholder)
    assert not (tmp_path / "o").exists()


def test_a_spec_stem_with_a_format_spec_is_one_line(tmp_path):
    spec = Path(__file__).resolve().parents[1] / "templates" / "specs" / "verb-entailment-mc.yaml"
    f = tmp_path / "spec.yaml"
    f.write_text(spec.read_text(encoding="utf-8").replace('"{word}" entails\'', '"{word:d}" entails\'', 1), encoding="utf-8")
    code, _, err = run("make", "spec", f, "--check")
    assert_one_line_error(code, err, "templates.stems[0]", "{word:d}")


BOMB = "\n".join(['lol0: &a0 ["lol"]'] + [f"lol{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 5)]) + "\n"


def test_yaml_aliases_are_refused_in_every_yaml_probegen_reads(tmp_path):
    """A "billion laughs" (nested aliases) in a key nobody checks was copied, expanded, into the
    manifest: MemoryError at 5.5 GB. No probegen file needs aliases: each reader refuses them,
    naming the file and line. (Only 9**4 leaves here, so the old reader did not blow up: it accepted.)"""
    from probegen.errors import ProbegenError
    from probegen.generate.prompts import prompt_templates
    from probegen.spec.schema import apply_overrides, read_raw

    f = _my_templates(tmp_path, extra="notes:\n" + "".join("  " + line + "\n" for line in BOMB.splitlines()))
    code, _, err = run("make", "wordnetqa", "--probe", "definitions", "--templates", f, "--out", tmp_path / "o")
    assert_one_line_error(code, err, str(f), "alias *a0", "does not accept")
    assert not (tmp_path / "o").exists()
    spec = tmp_path / "spec.yaml"
    text = (Path(__file__).resolve().parents[1] / "templates" / "specs" / "verb-entailment-mc.yaml").read_text(encoding="utf-8")
    spec.write_text(text + BOMB, encoding="utf-8")
    code, _, err = run("make", "spec", spec, "--check")
    assert_one_line_error(code, err, str(spec), "alias *a0", f"at line {len(text.splitlines()) + 2}")
    with pytest.raises(ProbegenError, match="alias"):
        read_raw(spec)
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text((Path(__file__).resolve().parents[1] / "templates" / "prompts" / "en.yaml").read_text(encoding="utf-8")
                       + BOMB, encoding="utf-8")
    with pytest.raises(ProbegenError, match=r"prompts.yaml:\d+: .*alias \*a0"):
        prompt_templates(str(prompts))
    with pytest.raises(ProbegenError, match="not valid YAML"):
        apply_overrides({}, ["a=[&x [1], *x]"])


# ---- issue 26, item 5: logs -----------------------------------------------------------------------------
def test_progress_in_a_log_is_one_line_per_30_s_whatever_redraws_the_bar(monkeypatch):
    """On a fake clock: updates every 0.5 s for 300 s, and a redraw every 10 s as tqdm's monitor
    thread makes (which gave a line every 11-22 s): lines at least 30 s apart, the last one always."""
    import contextlib
    import io

    import tqdm.std

    from probegen import progress

    now = [1000.0]
    monkeypatch.setattr(progress, "_clock", lambda: now[0], raising=False)
    monkeypatch.setattr(progress, "_last_line", [None], raising=False)
    monkeypatch.setattr(tqdm.std, "time", lambda: now[0])
    monkeypatch.setattr(tqdm.std.tqdm, "monitor_interval", 0)  # the test plays the monitor, on its clock
    written: list[tuple[float, str]] = []

    class Log(io.StringIO):
        def write(self, s):
            written.append((now[0], s))
            return super().write(s)

    log = Log()
    with contextlib.redirect_stderr(log):
        bar = progress.progress_bar(total=600, desc="demo", unit="item")
        for i in range(600):
            now[0] += 0.5
            bar.update(1)
            if i % 20 == 19:
                bar.refresh()  # what TMonitor does to a bar not redrawn for maxinterval (10 s)
        now[0] += 0.5
        bar.close()
    text = log.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and len(lines) == len(written), written
    assert lines[0].startswith("demo:   0%") and lines[-1].startswith("demo: 100%") and "600/600" in lines[-1]
    times = [t for t, _ in written]
    assert all(b - a >= progress.LOG_INTERVAL for a, b in zip(times[:-2], times[1:-1])), times  # the last is exempt
    assert 10 <= len(lines) <= 300 / progress.LOG_INTERVAL + 2, lines


def test_embedding_progress_in_a_log_has_no_carriage_returns(tmp_path):
    """sentence-transformers' own "Batches" bar wrote its \\r redraws into one line of a log (206 in
    a run); probegen's bar replaces it: plain lines, the last at 100%."""
    import subprocess
    import sys

    script = ("from probegen.models import load_scorer\n"
              "s = load_scorer('minilm-l6', batch_size=16)\n"
              "v = s.embed([f'the thing number {i} that is ' + 'long ' * (i % 5) for i in range(200)], progress=True)\n"
              "print(v.shape)\n")
    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        r = subprocess.run([sys.executable, "-c", script], stderr=fh, stdout=subprocess.PIPE, text=True, timeout=300,
                           cwd=Path(__file__).resolve().parents[1], env={**__import__("os").environ, **OFFLINE})
    text = log.read_text()
    assert r.returncode == 0 and r.stdout.strip() == "(200, 384)", text
    assert text.count("\r") == 0, text
    bars = [ln for ln in text.splitlines() if ln.startswith("embedding with minilm-l6")]
    assert 2 <= len(bars) <= 3 and "200/200" in bars[-1] and "Batches" not in text, text
