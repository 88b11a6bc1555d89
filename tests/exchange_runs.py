"""Real runs the exchange tests export and read back (tests/test_exchange_*.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from click.testing import CliRunner

from probegen.commands.cli import cli

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / \
    "definitions-train-sample.jsonl"


def invoke(*args: str):
    """``probegen ARGS`` in-process (exceptions propagate: a traceback is a test failure)."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def glove_coda_run(clean_hard_nouns, tmp_path_factory, groups: int) -> Path:
    """A real CoDA21 eval run (glove-50d, the first ``groups`` clean-hard noun groups): items are
    group rows ``<group>#<row>``."""
    from probegen.coda21.dataset import Coda21Dataset, write

    ds = write(Coda21Dataset(clean_hard_nouns.groups[:groups], clean_hard_nouns.manifest),
               tmp_path_factory.mktemp("coda") / f"coda-{groups}")
    out = ds.parent / "run"
    r = invoke("eval", "--model", "glove-50d", "--dataset", str(ds), "--out", str(out))
    assert r.exit_code == 0, r.output
    return out


def glove_wnqa_run(tmp_path_factory) -> Path:
    """A real `probegen eval` run: GloVe on the 40 WordNetQA release-sample definition questions."""
    out = tmp_path_factory.mktemp("runs") / "glove"
    r = invoke("eval", "--model", "glove-50d", "--dataset", str(SAMPLE), "--out", str(out))
    assert r.exit_code == 0, r.output
    return out


def foreign_eee(src: Path, dst: Path, rename: dict[str, str] | None = None) -> Path:
    """The probegen export stripped of probegen's own fields (as another harness would write it);
    ``rename`` changes sample ids. The checksum is recomputed: the file is a valid EEE pair."""
    (agg_p,) = [p for p in src.rglob("*.json") if not p.name.startswith(".")]
    samples_p = agg_p.with_name(f"{agg_p.stem}_samples.jsonl")
    agg = json.loads(agg_p.read_text())
    agg["evaluation_results"][0]["source_data"].pop("additional_details")
    rows = [json.loads(x) for x in samples_p.read_text().splitlines()]
    for r in rows:
        r.pop("metadata")
        r["sample_id"] = (rename or {}).get(r["sample_id"], r["sample_id"])
    dst.mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (dst / samples_p.name).write_text(text)
    agg["detailed_evaluation_results"]["checksum"] = hashlib.sha256(text.encode()).hexdigest()
    (dst / agg_p.name).write_text(json.dumps(agg))
    return dst / samples_p.name

# ---- a real lm-evaluation-harness run, samples written as its CLI writes them ---------------------
_RUN_LM_EVAL = textwrap.dedent(
    """
    import sys, yaml
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    model, out, limit, folders = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    tasks = [yaml.safe_load(open(f"{f}/task.yaml"))["task"] for f in folders]
    tracker = EvaluationTracker(output_path=out)
    res = simple_evaluate(model="hf", model_args=f"pretrained={model},dtype=float32", tasks=tasks, device="cpu",
                          batch_size=8, task_manager=TaskManager(include_path=folders, include_defaults=False),
                          log_samples=True, bootstrap_iters=0, limit=limit, evaluation_tracker=tracker)
    # what `lm_eval --log_samples --output_path OUT` does after evaluating (lm_eval/_cli/run.py)
    samples = res.pop("samples")
    tracker.save_results_aggregated(results=res, samples=samples)
    for name in res["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    """
)


def run_lm_eval(folders: list[Path], out: Path, cwd: Path, limit: int = 6) -> Path:
    """Real lm-eval (smollm2-135m on CPU, the first ``limit`` docs of each task) on probegen lm-eval
    export ``folders``, with ``--log_samples``: ``out`` holds results_<time>.json and the samples."""
    from probegen import models

    smollm2 = models._smollm2_dir(Path(models.resolve_model("smollm2-135m").path_or_id))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_CACHE": str(cwd / "hf-cache")}
    p = subprocess.run([sys.executable, "-c", _RUN_LM_EVAL, str(smollm2), str(out), str(limit), *map(str, folders)],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return out
