"""The task registry (issue 17): built-in kinds, detection of every dataset layout, and the one
check of options against the tasks a command is given."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_checks import assert_one_line_error, never, run

from probegen import tasks
from probegen.coda21.task import Coda21Task
from probegen.errors import DatasetError, ProbegenError
from probegen.plugins import Registry
from probegen.tasks import Task, task_of
from probegen.wordincontext.task import LabelTask, WicTask, WsdTask, item_shape
from probegen.wordnetqa.task import MultipleChoiceTask

DATA = Path(__file__).parent / "data"
PAIR = {"id": "p1", "lemma": "bank", "pos": "n", "context": "They sat on the bank of the river.", "span": [16, 20],
        "context2": "The bank raised its rates.", "span2": [4, 8], "label": False, "split": "train"}
CHOICE = {"id": "c1", "lemma": "bank", "context": "The bank raised its rates.", "span": [4, 8],
          "choices": ["sloping land beside water", "a financial institution"], "gold": 1}
LABEL = {"id": "l1", "context": "a bank loan", "span": [2, 6], "label": "noun.group"}


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _coda21_dir(path: Path) -> Path:
    path.mkdir()
    items = [{"synset": f"s{i}.n.01", "lemma": f"s{i}", "definition": f"thing number {i}",
              "context": {"text": f"a w{i} b", "char_span": [2, 4]}} for i in range(3)]
    row = {"id": "g1", "pos": "n", "ancestor": "a.n.01", "relation": "parent", "items": items}
    (path / "groups.jsonl").write_text(json.dumps(row) + "\n")
    return path


def _mc_dir(path: Path, n: int = 3) -> Path:
    path.mkdir()
    rows = [{"id": f"q{i}", "probe": "definitions", "synset": f"a{i}.n.01", "question": f"q {i}",
             "choices": ["a", "b", "c", "d", "e"], "answer": i % 5} for i in range(n)]
    return _jsonl(path / "items.jsonl", rows).parent


# ---- the registry -----------------------------------------------------------------------------------
def test_the_builtin_kinds_are_registered_in_detection_order():
    names = [t.name for t in tasks.all_tasks()]
    assert names[:3] == ["wic", "wsd", "label"] and names[-2:] == ["coda21", "wordnetqa"]
    assert isinstance(tasks.get("coda21"), Coda21Task) and isinstance(tasks.get("wordnetqa"), MultipleChoiceTask)
    assert tasks.get("wsd").unit_name == "item" and tasks.get("coda21").unit_name == "group"
    assert all(isinstance(t, Task) for t in tasks.all_tasks())


def test_an_unknown_kind_is_one_line_naming_the_known_ones():
    with pytest.raises(ProbegenError) as e:
        tasks.get("no-such-kind")
    assert "'no-such-kind'" in str(e.value) and "coda21, wordnetqa" in str(e.value) and "\n" not in str(e.value)


def test_register_refuses_a_second_task_of_the_same_name():
    class Other(Coda21Task):
        pass

    with pytest.raises(ProbegenError, match="registered twice"):
        tasks.register(Other)
    assert tasks.register(Coda21Task) is tasks.get("coda21")  # the same class again is harmless


def test_spec_shapes_map_to_their_tasks():
    assert tasks.for_spec_shape("alignment").name == "coda21"
    assert tasks.for_spec_shape("multiple_choice").name == "wordnetqa"
    assert tasks.for_spec_shape("wic_pair").name == "wic"
    with pytest.raises(ProbegenError, match="no dataset kind is built by spec shape 'tree'"):
        tasks.for_spec_shape("tree")


# ---- detection --------------------------------------------------------------------------------------
def test_detect_every_builtin_layout(tmp_path):
    from probegen.wordincontext.dataset import WicDataset
    from probegen.wordincontext.jsonl import read_items

    wic_dir = WicDataset(read_items(_jsonl(tmp_path / "w.jsonl", [PAIR])), {"kind": "wic"}).write(tmp_path / "wic-dir")
    generic_choice = WicDataset(read_items(_jsonl(tmp_path / "c0.jsonl", [CHOICE])), {"kind": "wordincontext"})
    cases = {
        _coda21_dir(tmp_path / "coda"): "coda21",
        DATA / "coda21_three_groups.json": "coda21",
        _mc_dir(tmp_path / "mc"): "wordnetqa",
        DATA / "wordnetqa_release_four_probes.jsonl": "wordnetqa",
        DATA / "wic_semcor_24.jsonl": "wic",
        DATA / "wic_tsv": "wic",
        DATA / "wic_tsv" / "train" / "train.data.txt": "wic",
        wic_dir: "wic",
        _jsonl(tmp_path / "choice.jsonl", [CHOICE]): "wsd",
        generic_choice.write(tmp_path / "generic-choice"): "wsd",
        _jsonl(tmp_path / "label.jsonl", [LABEL, {**LABEL, "id": "l2", "label": "noun.act"}]): "label",
    }
    for path, kind in cases.items():
        assert tasks.detect(path).name == kind, path
    assert item_shape(DATA / "coda21_three_groups.json") is None


def test_detect_failures_are_one_line_naming_the_path_and_the_kinds(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        tasks.detect(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError) as e:
        tasks.detect(tmp_path / "empty")
    assert str(tmp_path / "empty") in str(e.value) and "coda21, wordnetqa" in str(e.value)
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "manifest.json").write_text(json.dumps({"kind": "treebank"}))
    with pytest.raises(DatasetError) as e:
        tasks.detect(odd)
    assert "'treebank'" in str(e.value) and str(odd) in str(e.value) and "wic, wsd, label" in str(e.value)


def test_detect_finishes_an_interrupted_write_first(tmp_path):
    from probegen.io import atomic_dir

    d = _mc_dir(tmp_path / "src")
    with atomic_dir(tmp_path / "mc") as tmp:
        (tmp / "items.jsonl").write_bytes((d / "items.jsonl").read_bytes())
    assert tasks.detect(tmp_path / "mc").name == "wordnetqa"


def test_the_word_in_context_task_of_loaded_items():
    from probegen.wordincontext.jsonl import parse_row

    assert task_of([parse_row(PAIR, 1)]) is tasks.get("wic")
    assert task_of([parse_row(CHOICE, 1)]) is tasks.get("wsd")
    assert task_of([parse_row(LABEL, 1)]) is tasks.get("label")


def test_the_trained_method_hooks_differ_by_item_shape():
    from probegen.wordincontext.jsonl import parse_row

    wic, wsd, lab = WicTask(), WsdTask(), LabelTask()
    pairs = [parse_row({**PAIR, "id": f"p{i}", "label": i % 3 != 0}, i) for i in range(6)]
    choices = [parse_row({**CHOICE, "id": f"c{i}", "gold": i % 2}, i) for i in range(5)]
    assert wic.prior_correct(pairs, pairs, 0).tolist() == [i % 3 != 0 for i in range(6)]
    assert wsd.prior_correct(choices, choices, 0).tolist() == [i % 2 == 0 for i in range(5)]
    vec = lambda rows: np.array([[len(t), (s or (0, 0))[0]] for t, s in rows], dtype=float)  # noqa: E731
    X, y, g = wsd.trained_features(choices, lambda c: (c.text, c.span), vec)
    assert X.shape == (10, 8) and y.sum() == 5 and g.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    X, y, g = wic.trained_features(pairs, lambda c: (c.text, c.span), vec)
    assert X.shape == (6, 8) and y.dtype == bool
    assert (wic.head_classes(pairs), wsd.head_classes(choices), lab.head_classes([parse_row(LABEL, 1)])) == ([False, True], None, ["noun.group"])
    assert wic.second_context and wsd.scores_choices and not lab.second_context
    assert wsd.gold_text(choices[1]) == "a financial institution" and wic.gold_text(pairs[0]) == "False"


# ---- options ----------------------------------------------------------------------------------------
def test_an_option_that_applies_to_none_of_the_tasks_is_one_line():
    wic = tasks.get("wic")
    with pytest.raises(ProbegenError) as e:
        tasks.check_options([wic], {"pattern": "is"}, "eval", ["wic-data"])
    assert str(e.value) == "--pattern applies to CoDA21 datasets only; wic-data is a WiC dataset"
    for opt in ("nonce", "reduction", "scorer", "split", "matching", "length_norm", "pll"):
        with pytest.raises(ProbegenError, match=f"--{opt.replace('_', '-')} applies to"):
            tasks.check_options([wic], {opt: "x"}, "eval", ["wic-data"])
    for opt in ("pattern", "nonce", "reduction", "scorer", "split", "folds", "controls"):
        with pytest.raises(ProbegenError, match=f"--{opt} applies to"):
            tasks.check_options([tasks.get("wsd")], {opt: 1}, "bias", ["wsd-data"])


def test_defaults_and_options_that_apply_to_one_task_pass():
    coda, mc = tasks.get("coda21"), tasks.get("wordnetqa")
    tasks.check_options([mc], {"pattern": None, "split": "test", "length_norm": "chars"}, "eval")
    tasks.check_options([coda, mc], {"pattern": "is", "split": "test", "folds": 3}, "bias")
    tasks.check_options([tasks.get("wic")], {"seeds": 3, "finetune": True, "method": "trained"}, "bias")
    with pytest.raises(ProbegenError, match="--seeds applies to WiC, WSD and word-in-context label datasets only"):
        tasks.check_options([coda, mc], {"seeds": 3}, "bias", ["a", "b"])
    with pytest.raises(ProbegenError, match="--nonce applies to CoDA21 datasets only; this is a multiple-choice"):
        tasks.check_options([mc], {"nonce": "dax"}, "eval")
    with pytest.raises(ProbegenError, match="--split applies to multiple-choice"):
        tasks.check_options([coda], {"split": "test"}, "export")


def test_option_values_are_checked_by_the_task_they_apply_to():
    with pytest.raises(ProbegenError, match="divide a per-token mean by characters"):
        tasks.check_options([tasks.get("wordnetqa")], {"reduction": "mean", "length_norm": "chars"}, "eval")
    with pytest.raises(ProbegenError, match="pattern"):
        tasks.check_options([tasks.get("coda21")], {"pattern": "no-such-pattern-without-slot"}, "eval")


def test_check_dataset_options_detects_and_falls_back_to_defaults(tmp_path):
    mc = _mc_dir(tmp_path / "mc")
    assert [t.name for t in tasks.check_dataset_options([mc], {"split": "test"}, "bias")] == ["wordnetqa"]
    with pytest.raises(ProbegenError, match=f"--pattern applies to CoDA21 datasets only; {mc} is a multiple-choice"):
        tasks.check_dataset_options([mc], {"pattern": "is"}, "bias")
    assert tasks.check_dataset_options([], {"seeds": 3}, "bias") == []  # no defaults named: nothing to check
    with pytest.raises(ProbegenError, match="--seeds applies to"):
        tasks.check_dataset_options([], {"seeds": 3}, "bias", default_tasks=[tasks.get("coda21"), tasks.get("wordnetqa")])


@pytest.mark.parametrize("command,args,needle", [
    ("eval", ["--pattern", "is"], "--pattern applies to CoDA21 datasets only"),
    ("eval", ["--nonce", "dax"], "--nonce applies to CoDA21 datasets only"),
    ("eval", ["--reduction", "mean"], "--reduction applies to CoDA21 and multiple-choice (WordNetQA) datasets only"),
    ("eval", ["--scorer", "embedding"], "--scorer applies to"),
    ("eval", ["--split", "test"], "--split applies to multiple-choice (WordNetQA) datasets only"),
    ("bias", ["--pattern", "is"], "--pattern applies to CoDA21 datasets only"),
    ("bias", ["--folds", "3"], "--folds applies to"),
    ("bias", ["--no-controls"], "--controls applies to"),
    ("bias", ["--split", "test"], "--split applies to multiple-choice (WordNetQA) datasets only"),
    ("bias", ["--reduction", "mean"], "--reduction applies to"),
])
def test_eval_and_bias_on_wic_reject_zero_shot_options(tmp_path, monkeypatch, command, args, needle):
    monkeypatch.setattr("probegen.run.trained.eval_trained", never("the trained evaluation"))
    monkeypatch.setattr("probegen.run.trained.run_trained", never("the trained run"))
    wic = DATA / "wic_semcor_24.jsonl"
    code, _, err = run(command, "--model", "minilm-l6", "--dataset", wic, *args, "--out", tmp_path / "o")
    msg = assert_one_line_error(code, err, needle, f"{wic} is a WiC dataset")
    assert "\n" not in msg
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "o").exists()


def test_bias_on_coda21_rejects_trained_options(tmp_path):
    coda = _coda21_dir(tmp_path / "coda")
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", coda, "--seeds", "2", "--out", tmp_path / "o")
    assert_one_line_error(code, err, "--seeds applies to WiC, WSD and word-in-context label datasets only")
    assert not (tmp_path / "o").exists()


def test_export_checks_its_options_against_the_dataset(tmp_path):
    coda = _coda21_dir(tmp_path / "coda")
    code, _, err = run("export", coda, "--split", "test", "--out", tmp_path / "x.json")
    assert_one_line_error(code, err, "--split applies to multiple-choice")
    code, _, err = run("export", DATA / "wic_semcor_24.jsonl", "--out", tmp_path / "x.json")
    assert_one_line_error(code, err, "datasets of kind 'wic' cannot be exported", "does not implement Exportable")
    assert not (tmp_path / "x.json").exists()


def test_stats_asks_the_task(tmp_path):
    code, out, err = run("stats", DATA / "wic_semcor_24.jsonl")
    assert code == 0, err
    assert out.splitlines()[0].endswith("(kind: wordincontext; 24 pairs)") and "T " in out
    code, out, err = run("stats", _jsonl(tmp_path / "label.jsonl", [LABEL, {**LABEL, "id": "l2", "label": "noun.act"}]))
    assert code == 0 and "2 items (labelled)" in out and "noun.act 1, noun.group 1" in out, err


# ---- plugins (the entry-point group; a real package is installed in test_task_plugin.py) ---------------
class _EntryPoint:
    def __init__(self, name: str, value: str, obj) -> None:
        self.name, self.value, self._obj = name, value, obj

    def load(self):
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry with its plugins to be loaded again (restored afterwards)."""
    import probegen.tasks as reg

    reg.all_tasks()  # the built-ins registered first
    fresh = Registry("task", reg.ENTRY_POINT_GROUP, reg.resolve)
    fresh.known = dict(reg.REGISTRY.known)
    monkeypatch.setattr(reg, "REGISTRY", fresh)
    return reg


def test_plugin_entry_points_register_once(fresh_registry, monkeypatch):
    class Mini(MultipleChoiceTask):
        name = "mini"
        title = "mini"

    calls = []

    def eps(group):
        calls.append(group)
        return [_EntryPoint("mini", "mini_pkg:Mini", Mini)]

    monkeypatch.setattr(fresh_registry.REGISTRY, "entry_points", eps)
    assert [t.name for t in fresh_registry.all_tasks()][-2:] == ["wordnetqa", "mini"]  # its parent's priority, then order
    assert isinstance(fresh_registry.get("mini"), Mini)
    assert calls == ["probegen.tasks"]  # loaded lazily, once


@pytest.mark.parametrize("obj,needle", [
    (ImportError("No module named 'mini_pkg'"), "cannot be loaded: ImportError: No module named 'mini_pkg'"),
    ("not a task", "cannot be loaded: TypeError"),
    (Coda21Task, "registered twice"),
])
def test_a_broken_plugin_is_one_line_naming_it(fresh_registry, monkeypatch, obj, needle):
    class Clash(Coda21Task):  # a second task named coda21
        pass

    monkeypatch.setattr(fresh_registry.REGISTRY, "entry_points", lambda group: [_EntryPoint("mini", "mini_pkg:Mini", Clash if obj is Coda21Task else obj)])
    for _ in range(2):  # every lookup fails, not only the first
        with pytest.raises(ProbegenError) as e:
            fresh_registry.detect(DATA / "coda21_three_groups.json")
        assert str(e.value).startswith("task plugin 'mini' (mini_pkg:Mini)") and needle in str(e.value) and "\n" not in str(e.value)


# ---- a loaded dataset has a manifest (issue 38 §3: tasks.Dataset) --------------------------------------------
def test_a_kind_whose_load_returns_no_manifest_fails_in_one_line(tmp_path):
    """Every kind's ``load`` is checked on return: code that reads a dataset relies on ``data.manifest``."""
    from types import SimpleNamespace

    class NoManifest(Task):
        name = "no-manifest"

        def claims(self, path):
            return True

        def load(self, path, ablations=False):
            return SimpleNamespace(items=[])  # no manifest

        def units(self, data, condition, settings, style="pattern"):
            return []

    class WithManifest(NoManifest):
        def load(self, path, ablations=False):
            return SimpleNamespace(items=[], manifest={"kind": "no-manifest"})

    with pytest.raises(DatasetError, match=r"the 'no-manifest' kind's load returned a SimpleNamespace without a "
                                           r"manifest dict"):
        NoManifest().load(tmp_path)
    data = WithManifest().load(tmp_path)
    assert isinstance(data, tasks.Dataset) and data.manifest == {"kind": "no-manifest"}
    built_in = tasks.detect(DATA / "coda21_three_groups.json").load(DATA / "coda21_three_groups.json")
    assert isinstance(built_in, tasks.Dataset) and isinstance(built_in.manifest, dict)


def test_an_asking_scorer_gets_the_kinds_prompt_units():
    """The caller picks: a scorer that keeps exchanges (the generative and letter methods) is given each kind's
    prompt_units, any other its units in its query style; no kind sees a method's name."""
    from probegen.core import PromptUnit, UnitScorer
    from probegen.tasks import Settings

    class Scorer(UnitScorer):
        def __init__(self, asks):
            self.asks = asks

        def score_units(self, units, progress=False):
            return []

        def exchanges(self):
            return [] if self.asks else None

    data_dir = Path(__file__).parent / "data"
    coda, wic = tasks.get("coda21"), tasks.get("wic")
    cd = coda.load(data_dir / "coda21_three_groups.json")
    asked = coda.scorer_units(cd, "context", Settings(), Scorer(True))
    assert asked == coda.prompt_units(cd, "context", Settings()) and isinstance(asked[0], PromptUnit)
    assert all("[bkatuhla]" in q for q in asked[0].queries) and dict(asked[0].fields) == {"nonce": "bkatuhla"}
    scored = coda.scorer_units(cd, "context", Settings(), Scorer(False))
    assert scored == coda.units(cd, "context", Settings()) and not any("[" in q for q in scored[0].queries)
    wd = wic.load(data_dir / "wic_semcor_24.jsonl")
    assert len(wic.scorer_units(wd, "full", Settings(), Scorer(True))) == len(wd.items)
    with pytest.raises(ProbegenError, match="not scored zero-shot"):
        wic.scorer_units(wd, "full", Settings(), Scorer(False))
