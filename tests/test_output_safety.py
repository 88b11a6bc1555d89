"""Outputs never destroy a user's files (issue 16, items 1, 2, 3 and 10).

1. ``--out`` replaces only a directory probegen can show it wrote (its marker, exactly its files).
2. An output that is, holds or sits inside an input of the command is refused.
3. A kill between the two renames of the directory swap is recovered by the next write or load.
10. The manifest itself is covered by the integrity check, and a manifest without ``files`` is an error.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, never, run

from probegen import io
from probegen.coda21 import dataset as D
from probegen.errors import DatasetError, ProbegenError
from probegen.wordnetqa import dataset as W

ROOT = Path(__file__).resolve().parent.parent


def tiny_rows(k: int = 3) -> list[dict]:
    items = [{"synset": f"s{i}.n.01", "lemma": f"s{i}", "definition": f"thing number {i}",
              "context": {"text": f"a w{i} b", "char_span": [2, 2 + len(f"w{i}")]}} for i in range(k)]
    return [{"id": "g", "pos": "n", "ancestor": "a.n.01", "relation": "parent", "items": items}]


def tiny_coda21(path: Path) -> Path:
    """A tiny CoDA21 dataset written by probegen's own writer (manifest, hashes, marker)."""
    groups = [D.Group.from_json(r) for r in tiny_rows()]
    return D.write(D.Coda21Dataset(groups, {"kind": "coda21", "seed": 0, "counts": {"groups": 1}}), path)


def foreign_experiment(path: Path) -> Path:
    """The issue's repro: a user's folder that happens to hold a results.json."""
    (path / "checkpoints").mkdir(parents=True)
    (path / "results.json").write_text('{"acc":0.9}\n')
    (path / "checkpoints" / "model.bin").write_text("w\n")
    (path / "notes.md").write_text("n\n")
    return path


def assert_untouched(path: Path) -> None:
    assert (path / "checkpoints" / "model.bin").read_text() == "w\n"
    assert (path / "notes.md").read_text() == "n\n"
    assert (path / "results.json").read_text() == '{"acc":0.9}\n'


# ---- item 1: only probegen's own outputs are replaced ----------------------------------------------
def test_eval_refuses_a_folder_probegen_did_not_write(tmp_path):
    ds = tiny_coda21(tmp_path / "tiny")
    exp = foreign_experiment(tmp_path / "myexp")
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(exp))
    assert_one_line_error(code, err, str(exp), "probegen")
    assert_untouched(exp)


def test_eval_replaces_its_own_run_but_not_one_with_extra_or_changed_files(tmp_path, monkeypatch):
    ds = tiny_coda21(tmp_path / "tiny")
    out = tmp_path / "run"
    for _ in range(2):  # the second run replaces the first: it is exactly what probegen wrote
        code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
        assert code == 0, err
    assert (out / "results.json").is_file() and (out / io.MARKER).is_file()
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    (out / "notes.md").write_text("mine")
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
    assert_one_line_error(code, err, "notes.md")
    assert (out / "notes.md").read_text() == "mine"
    (out / "notes.md").unlink()
    with open(out / "results.json", "a") as fh:
        fh.write("\n")
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
    assert_one_line_error(code, err, "results.json", "changed")


def test_a_plot_drawn_into_a_run_is_recorded_so_the_run_stays_replaceable(tmp_path):
    ds = tiny_coda21(tmp_path / "tiny")
    out = tmp_path / "run"
    assert run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))[0] == 0
    code, _, err = run("plot-group", str(out))
    assert code == 0, err
    assert "group-g.png" in json.loads((out / io.MARKER).read_text())["files"]
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
    assert code == 0, err


def test_export_hf_refuses_a_folder_probegen_did_not_write(tmp_path):
    ds = tiny_coda21(tmp_path / "tiny")
    exp = foreign_experiment(tmp_path / "myexp")
    (exp / "manifest.json").write_text("{}")
    code, _, err = run("export", str(ds), "--format", "hf", "--out", str(exp))
    assert_one_line_error(code, err, str(exp))
    assert_untouched(exp)
    assert (exp / "manifest.json").read_text() == "{}"


def test_make_coda21_refuses_a_folder_probegen_did_not_write(tmp_path, monkeypatch):
    exp = foreign_experiment(tmp_path / "myexp")
    (exp / "manifest.json").write_text("{}")
    monkeypatch.setattr("probegen.coda21.dataset.build", never("dataset generation"))
    code, _, err = run("make", "coda21", "--context-scorer", "first", "--out", str(exp))
    assert_one_line_error(code, err, str(exp))
    assert_untouched(exp)


def test_a_probegen_marker_does_not_change_the_dataset_files(tmp_path):
    """The marker is one more hidden file; the dataset's own files and loading are as before."""
    a, b = tiny_coda21(tmp_path / "a"), tiny_coda21(tmp_path / "b")
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted([D.GROUPS_FILE, D.MANIFEST_FILE, io.MARKER])
    assert all((a / n).read_bytes() == (b / n).read_bytes() for n in names)
    assert len(D.load(a).groups) == 1


# ---- item 2: an output is never an input -------------------------------------------------------------
@pytest.mark.parametrize("where", ["same", "inside", "holds"])
def test_eval_output_that_is_holds_or_sits_inside_its_dataset_is_refused(tmp_path, monkeypatch, where):
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))
    if where == "holds":  # an earlier run folder that the dataset was later put into
        exp = tmp_path / "exp"
        exp.mkdir()
        (exp / "results.json").write_text("{}")
        ds = tiny_coda21(exp / "data")
        out = exp
    else:
        ds = tiny_coda21(tmp_path / "tiny")
        out = ds if where == "same" else ds / "run"
    before = {p: p.read_bytes() for p in ds.rglob("*") if p.is_file()}
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
    assert_one_line_error(code, err, "input", str(ds.resolve()))
    assert {p: p.read_bytes() for p in ds.rglob("*") if p.is_file()} == before
    assert not (ds / "run").exists()


def test_check_output_not_input_compares_real_paths(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    with pytest.raises(ProbegenError, match="would overwrite the input"):
        io.check_output_not_input(tmp_path / "link", [tmp_path / "d"])
    io.check_output_not_input(tmp_path / "d-run", [tmp_path / "d"])  # a sibling with a common prefix is fine


# ---- item 3: an interrupted swap is recovered --------------------------------------------------------
KILL_AFTER_RENAME = """
import os, sys
from probegen.coda21 import dataset as D
real, calls = os.rename, []
def rename(a, b):
    real(a, b)
    calls.append(b)
    if len(calls) == int(sys.argv[3]):
        os._exit(9)  # killed: no except or finally block runs
os.rename = rename
D.write(D.load(sys.argv[1]), sys.argv[2])
"""


def write_killed_after_rename(src: Path, out: Path, n: int) -> None:
    r = subprocess.run([sys.executable, "-c", KILL_AFTER_RENAME, str(src), str(out), str(n)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 9, r.stderr


def test_kill_between_the_renames_is_restored_by_the_next_load(tmp_path, caplog):
    out = tiny_coda21(tmp_path / "ds")
    old = (out / D.MANIFEST_FILE).read_bytes()
    write_killed_after_rename(out, out, 1)  # the old dataset moved aside, the new one not yet in place
    assert not out.exists()
    with caplog.at_level(logging.WARNING):
        ds = D.load(out)
    assert len(ds.groups) == 1 and (out / D.MANIFEST_FILE).read_bytes() == old
    assert any("restored" in r.getMessage() and str(out) in r.getMessage() for r in caplog.records)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_kill_between_the_renames_is_restored_by_the_next_command(tmp_path, caplog):
    out = tiny_coda21(tmp_path / "ds")
    write_killed_after_rename(out, out, 1)
    with caplog.at_level(logging.WARNING):
        code, stdout, err = run("stats", str(out))
    assert code == 0, err
    assert [r.getMessage() for r in caplog.records if "restored" in r.getMessage()] == [
        f"restored the previous output {out} from an interrupted write"]


def test_kill_between_the_renames_is_restored_by_the_next_write(tmp_path, caplog):
    out = tiny_coda21(tmp_path / "ds")
    write_killed_after_rename(out, out, 1)
    with caplog.at_level(logging.WARNING):
        tiny_coda21(tmp_path / "ds")
    assert any("restored" in r.getMessage() for r in caplog.records)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_leftover_old_copy_after_the_swap_is_removed_and_said(tmp_path, caplog):
    out = tiny_coda21(tmp_path / "ds")
    write_killed_after_rename(out, out, 2)  # the new dataset is in place; the old copy was not deleted
    assert any(p.name.startswith(".ds.") for p in tmp_path.iterdir())
    with caplog.at_level(logging.WARNING):
        D.load(out)
    assert any("removed" in r.getMessage() for r in caplog.records)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_leftovers_that_are_not_probegens_are_left_alone(tmp_path):
    out = tiny_coda21(tmp_path / "ds")
    mine = tmp_path / ".ds.probegen-old-999999999-abcd"  # probegen's name pattern, but no marker inside
    mine.mkdir()
    (mine / "notes.md").write_text("mine")
    D.load(out)
    tiny_coda21(tmp_path / "ds")
    assert (mine / "notes.md").read_text() == "mine"


# ---- item 10: the manifest is covered, and a files block is required ---------------------------------
def test_edited_manifest_seed_is_caught_on_load(tmp_path):
    out = tiny_coda21(tmp_path / "ds")
    m = json.loads((out / D.MANIFEST_FILE).read_text())
    m["seed"] = 1
    (out / D.MANIFEST_FILE).write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    with pytest.raises(DatasetError, match="manifest.json was changed"):
        D.load(out)


def test_edited_wordnetqa_counts_are_caught_on_load(tmp_path):
    rows = [{"id": f"q{i}", "probe": "definitions", "synset": f"a{i}.n.01", "question": f"q {i}",
             "choices": ["a", "b", "c", "d", "e"], "answer": i % 5} for i in range(3)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = W.write(W.load(tmp_path / "items.jsonl"), tmp_path / "mc")
    m = json.loads((out / W.MANIFEST_FILE).read_text())
    m["counts"] = {"items": 99}
    (out / W.MANIFEST_FILE).write_text(json.dumps(m))
    with pytest.raises(DatasetError, match="manifest.json was changed"):
        W.load(out)


def test_manifest_without_files_block_is_an_error(tmp_path):
    out = tiny_coda21(tmp_path / "ds")
    m = json.loads((out / D.MANIFEST_FILE).read_text())
    del m["files"]
    (out / io.MARKER).unlink()  # even with the marker gone too
    (out / D.MANIFEST_FILE).write_text(json.dumps(m))
    with pytest.raises(DatasetError, match="no 'files' block") as e:
        D.load(out)
    assert str(out / D.MANIFEST_FILE) in str(e.value)
    code, _, err = run("stats", str(out))
    assert_one_line_error(code, err, "files")


# ---- single files the user names with --out: replaced only if probegen wrote them ------------------
def test_export_to_a_file_replaces_only_its_own_earlier_export(tmp_path):
    ds = tiny_coda21(tmp_path / "tiny")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    code, _, err = run("export", str(ds), "--format", "coda21-json", "--out", str(notes))
    assert_one_line_error(code, err, "notes.txt", "probegen did not write it")
    assert notes.read_text() == "my notes\n"
    out = tmp_path / "tiny.json"
    for _ in range(2):  # a second export replaces the first: probegen recorded it
        code, _, err = run("export", str(ds), "--format", "coda21-json", "--out", str(out))
        assert code == 0, err
    first = out.read_bytes()
    out.write_bytes(first + b" ")  # edited by the user since
    code, _, err = run("export", str(ds), "--format", "coda21-json", "--out", str(out))
    assert_one_line_error(code, err, "changed after probegen wrote it")
    assert out.read_bytes() == first + b" "


def test_plot_group_out_never_replaces_a_users_file_or_its_run(tmp_path):
    ds = tiny_coda21(tmp_path / "tiny")
    run_dir = tmp_path / "run"
    assert run("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(run_dir))[0] == 0
    groups = (run_dir / "groups.jsonl").read_bytes()
    code, _, err = run("plot-group", str(run_dir), "--out", str(run_dir / "groups.jsonl"))
    assert_one_line_error(code, err, "groups.jsonl")
    assert (run_dir / "groups.jsonl").read_bytes() == groups
    photo = tmp_path / "holiday.png"
    photo.write_bytes(b"\x89PNG mine")
    code, _, err = run("plot-group", str(run_dir), "--out", str(photo))
    assert_one_line_error(code, err, "holiday.png", "probegen did not write it")
    assert photo.read_bytes() == b"\x89PNG mine"
    fig = tmp_path / "fig.png"
    assert run("plot-group", str(run_dir), "--out", str(fig))[0] == 0
    assert run("plot-group", str(run_dir), "--out", str(fig))[0] == 0  # its own figure is replaced


# ---- issue 26, item 3: a folder is replaced only by the command family that wrote it ---------------
def snapshot(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_eval_never_replaces_a_study(tmp_path, monkeypatch):
    """The issue's repro: `study make --out S`, then `eval --out S` on the never-served study."""
    ds = tiny_coda21(tmp_path / "tiny")
    study = tmp_path / "S"
    code, _, err = run("study", "make", ds, "--n", 1, "--annotators", 1, "--overlap", 0, "--conditions", "full", "--out", study)
    assert code == 0, err
    before = snapshot(study)
    assert {"tokens.json", "gold.jsonl"} <= set(before)
    monkeypatch.setattr("probegen.models.load_scorer", never("model loading"))  # refused before any work
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", ds, "--out", study)
    assert_one_line_error(code, err, str(study), "a human study", "`probegen study make`", "choose another --out")
    assert snapshot(study) == before


def test_eval_and_make_never_replace_each_others_outputs(tmp_path, monkeypatch):
    ds, other = tiny_coda21(tmp_path / "tiny"), tiny_coda21(tmp_path / "other")
    before = snapshot(other)
    code, _, err = run("eval", "--model", "glove-50d", "--dataset", ds, "--out", other)  # a run onto a dataset
    assert_one_line_error(code, err, str(other), "it is a dataset", "writes a run")
    assert snapshot(other) == before
    out = tmp_path / "run"
    assert run("eval", "--model", "glove-50d", "--dataset", ds, "--out", out)[0] == 0
    before = snapshot(out)
    monkeypatch.setattr("probegen.coda21.dataset.build", never("dataset generation"))
    code, _, err = run("make", "coda21", "--context-scorer", "first", "--out", out)  # a dataset onto a run
    assert_one_line_error(code, err, str(out), "it is a run", "`probegen eval`", "writes a dataset")
    assert snapshot(out) == before


def test_the_swap_itself_checks_the_family_and_old_markers_are_told_by_layout(tmp_path):
    """Library writers (no early check) are refused at the swap; a marker of an older probegen,
    without ``writer``, is read by its layout: a manifest is a dataset's, a results.json a run's."""
    ds = tiny_coda21(tmp_path / "tiny")
    assert json.loads((ds / io.MARKER).read_text())["writer"] == "dataset"
    marker = json.loads((ds / io.MARKER).read_text())
    del marker["writer"]  # as an older probegen wrote it
    (ds / io.MARKER).write_text(json.dumps(marker))
    before = snapshot(ds)
    with pytest.raises(ProbegenError, match="it is a dataset.*writes a run"):
        with io.atomic_dir(ds) as tmp:
            (tmp / "results.json").write_text("{}")
    assert snapshot(ds) == before
    tiny_coda21(ds)  # a dataset still replaces its own (older) dataset
    assert json.loads((ds / io.MARKER).read_text())["writer"] == "dataset"
