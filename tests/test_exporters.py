"""Exports that other tools run: lm-evaluation-harness task folders and Hugging Face folders.

The round trip runs an exported real WordNetQA set and real CoDA21 groups through
lm-evaluation-harness itself (the PyPI package, the bundled SmolLM2 by local path, offline) and
checks its accuracies and per-item predictions against ``probegen eval`` on the same items.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from probegen.commands.cli import cli
from probegen.errors import ProbegenError
from probegen.exporters import export, lm_eval_split, lm_eval_text
from probegen.scorers.base import boundary_split

QUIET = {"progress": False, "log": lambda m: None}


@pytest.fixture(scope="module")
def wnqa_dir(tmp_path_factory):
    """A few dozen real WordNetQA items: ten of each probe (both query shapes, all splits)."""
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.config import WordNetQAConfig

    ds = D.build(WordNetQAConfig(max_concepts=12, seed=3), **QUIET)
    items = [it for p in ("definitions", "hypernymy", "hyponymy", "synonymy") for it in [i for i in ds.items if i.probe == p][:10]]
    return D.write(D.WordNetQADataset(items, ds.manifest), tmp_path_factory.mktemp("wnqa") / "wnqa-small")


@pytest.fixture(scope="module")
def coda_dir(clean_hard_nouns, tmp_path_factory):
    """Four real CoDA21 clean-hard noun groups (of different sizes)."""
    from probegen.coda21.dataset import Coda21Dataset, write

    groups = clean_hard_nouns.groups[:4]
    assert len({g.k for g in groups}) > 1  # the micro/macro difference is exercised
    return write(Coda21Dataset(groups, clean_hard_nouns.manifest), tmp_path_factory.mktemp("coda") / "coda-small")


# ---- lm-eval's whitespace rule -------------------------------------------------------------------
@pytest.mark.parametrize(
    "query, choices",
    [
        ("Definition of bkatuhla is", ["a dog", "a cat"]),
        ("Question: what?\nAnswer:", ["yes", "no"]),
        ("Question: what?\nAnswer:\n", ["yes", "no"]),
        ("ends with two spaces  ", ["x", "y"]),
        ("no space", [" lead", "\tlead"]),
    ],
)
def test_lm_eval_text_reproduces_probegens_split(query, choices):
    text = lm_eval_text(query, choices)
    for c in choices:
        assert lm_eval_split(text, "" + c) == boundary_split(query, c)  # target_delimiter ""


def test_lm_eval_text_rejects_what_lm_eval_cannot_score_alike():
    with pytest.raises(ProbegenError, match="some choices start with whitespace"):
        lm_eval_text("no space", ["a", " b"])
    with pytest.raises(ProbegenError, match="empty query"):
        lm_eval_text("  ", ["a"])


# ---- files ---------------------------------------------------------------------------------------
@pytest.mark.real
def test_lm_eval_folder_is_a_valid_task(wnqa_dir, tmp_path):
    from probegen.wordnetqa import dataset as D

    out = tmp_path / "lm"
    msg = export(wnqa_dir, "lm-eval", out)
    assert "probegen_wnqa_small" in msg
    cfg = yaml.safe_load((out / "task.yaml").read_text())
    assert cfg["task"] == "probegen_wnqa_small" and cfg["output_type"] == "multiple_choice"
    assert cfg["dataset_path"] == "json" and cfg["test_split"] == "test"
    assert Path(cfg["dataset_kwargs"]["data_files"]["test"]) == out.resolve() / "docs.jsonl"
    assert (cfg["doc_to_text"], cfg["doc_to_choice"], cfg["doc_to_target"], cfg["target_delimiter"]) == ("text", "choices", "gold", "")
    assert [m["metric"] for m in cfg["metric_list"]] == ["acc", "acc_norm"]
    docs = [json.loads(line) for line in (out / "docs.jsonl").read_text().splitlines()]
    ds = D.load(wnqa_dir)
    items = ds.items
    assert [d["id"] for d in docs] == [it.id for it in items]
    for d, it in zip(docs, items):
        assert d["query"] == ds.templates.query(it, "pattern", "full", "bkatuhla")  # probegen's own renderer
        assert (d["choices"], d["gold"]) == (list(it.choices), it.answer)
    # same input, same bytes; a second export replaces the first
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    export(wnqa_dir, "lm-eval", out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    assert [p.name for p in tmp_path.iterdir()] == ["lm"]  # no temp folder left behind


@pytest.mark.real
def test_hf_folder_loads_with_datasets(wnqa_dir, tmp_path):
    import datasets

    out = tmp_path / "hf"
    export(wnqa_dir, "hf", out)
    card = (out / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    files = {f["split"]: f["path"] for f in front["configs"][0]["data_files"]}
    assert set(files) == {"train", "dev", "test"} and all((out / p).is_file() for p in files.values())
    embedded = json.loads(card.split("```json\n")[1].split("\n```")[0])
    assert embedded == json.loads((out / "manifest.json").read_text()) and embedded["dataset_manifest"]["kind"] == "wordnetqa"
    ds = datasets.load_dataset(str(out))
    assert set(ds) == {"train", "dev", "test"}
    n = sum(len(ds[s]) for s in ds)
    assert n == 40
    lm = tmp_path / "lm"
    export(wnqa_dir, "lm-eval", lm)
    docs = {d["id"]: d for d in map(json.loads, (lm / "docs.jsonl").read_text().splitlines())}
    for row in ds["test"]:
        d = docs[row["id"]]
        assert (row["query"], row["choices"], row["gold"]) == (d["query"], d["choices"], d["gold"])
    again = datasets.load_dataset("parquet", data_files={"test": str(out / files["test"])})["test"]
    assert again["id"] == ds["test"]["id"]


@pytest.mark.real
def test_cli_export_formats_and_errors(wnqa_dir, coda_dir, tmp_path):
    r = CliRunner().invoke(cli, ["export", str(coda_dir), "--format", "lm-eval", "--task", "my_coda", "--out", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    yml = (tmp_path / "c" / "task.yaml").read_text()
    assert "task: my_coda" in yml and "--matching" in yml and "alignment" in yml  # the CoDA21 note
    docs = [json.loads(line) for line in (tmp_path / "c" / "docs.jsonl").read_text().splitlines()]
    assert len(docs) == sum(d["k"] for d in {d["group"]: d for d in docs}.values())
    r = CliRunner().invoke(cli, ["export", str(wnqa_dir), "--format", "hf", "--split", "test", "--out", str(tmp_path / "h")])
    assert r.exit_code == 0 and "test 5" in r.stdout, r.output
    for args in (
        [str(wnqa_dir), "--format", "lm-eval", "--pattern", "is"],
        [str(coda_dir), "--format", "hf", "--split", "test"],
        [str(wnqa_dir), "--format", "lm-eval", "--task", "bad name"],
        [str(wnqa_dir), "--nonce", "blick"],
    ):
        r = CliRunner().invoke(cli, ["export", *args, "--out", str(tmp_path / "x")])
        assert r.exit_code == 1 and r.stderr.startswith("probegen: error:") and len(r.stderr.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "x").exists()


# ---- the round trip through lm-evaluation-harness itself -----------------------------------------
_RUN_LM_EVAL = textwrap.dedent(
    """
    import json, sys
    import yaml
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    model, out, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    tasks = [yaml.safe_load(open(f"{d}/task.yaml"))["task"] for d in dirs]
    res = simple_evaluate(model="hf", model_args=f"pretrained={model},dtype=float32", tasks=tasks, device="cpu",
                          batch_size=8, task_manager=TaskManager(include_path=dirs, include_defaults=False),
                          log_samples=True, bootstrap_iters=0)
    samples = {t: [{"id": s["doc"]["id"], "lls": [float(r[0]) for r in s["filtered_resps"]], "acc": s["acc"],
                    "acc_norm": s["acc_norm"]} for s in res["samples"][t]] for t in tasks}
    json.dump({"results": res["results"], "samples": samples}, open(out, "w"))
    """
)


def _smollm2_path() -> Path:
    from probegen import models

    return models._smollm2_dir(Path(models.resolve_model("smollm2-135m").path_or_id))


@pytest.mark.real
def test_lm_eval_round_trip_equals_probegen_eval(wnqa_dir, coda_dir, tmp_path):
    from probegen.run.evaluation import EvalRequest, run_eval
    from probegen.runner import Runner

    runner = Runner(log=lambda m: None)
    lm_w, lm_c = tmp_path / "lm-wnqa", tmp_path / "lm-coda"
    export(wnqa_dir, "lm-eval", lm_w)
    export(coda_dir, "lm-eval", lm_c)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
    got = tmp_path / "lm-eval.json"
    # from another working directory: the task must not depend on where lm-eval runs
    p = subprocess.run([sys.executable, "-c", _RUN_LM_EVAL, str(_smollm2_path()), str(got), str(lm_w), str(lm_c)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    lm = json.loads(got.read_text())

    # WordNetQA: acc <-> summed log-probs, acc_norm <-> --length-norm chars; item by item
    samples = {s["id"]: s for s in lm["samples"]["probegen_wnqa_small"]}
    assert len(samples) == 40
    for norm, metric in (("none", "acc"), ("chars", "acc_norm")):
        run = tmp_path / f"pg-{norm}"
        run_eval(EvalRequest("smollm2-135m", str(wnqa_dir), length_norm=norm), run, runner=runner)
        acc = json.loads((run / "results.json").read_text())["metrics"]["accuracy"]
        assert lm["results"]["probegen_wnqa_small"][f"{metric},none"] == pytest.approx(acc, abs=1e-12)
        for r in map(json.loads, (run / "items.jsonl").read_text().splitlines()):
            lls = np.array(samples[r["id"]]["lls"])
            if norm == "chars":
                lls = lls / np.array([len(c) for c in r["choices"]])
            np.testing.assert_allclose(lls, r["scores"][0], atol=1e-3)
            assert [int(np.argmax(lls))] == r["pred"] and samples[r["id"]][metric] == float(r["correct"])

    # CoDA21: each context's lm-eval prediction is probegen's --matching simple prediction
    run = tmp_path / "pg-coda"
    run_eval(EvalRequest("smollm2-135m", str(coda_dir), matching="simple"), run, runner=runner)
    samples = {s["id"]: s for s in lm["samples"]["probegen_coda_small"]}
    hits = []
    for g in map(json.loads, (run / "groups.jsonl").read_text().splitlines()):
        for i in range(g["k"]):
            s = samples[f"{g['id']}/{i}"]
            np.testing.assert_allclose(s["lls"], g["scores"][i], atol=1e-3)
            assert int(np.argmax(s["lls"])) == g["pred"][i]
            hits.append(g["pred"][i] == g["gold"][i])
    assert len(samples) == len(hits)
    # lm-eval averages contexts (micro); probegen reports the mean of group accuracies (macro)
    assert lm["results"]["probegen_coda_small"]["acc,none"] == pytest.approx(np.mean(hits), abs=1e-12)
