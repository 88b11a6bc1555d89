"""lm-eval files as respondents (issue 46, item 8): do the IRT difficulty intervals of ``probegen
items`` cover planted difficulties when the respondents come in through lm-eval's own layout?

Planted 2PL parameters (:func:`probegen.itemstats.irt.simulate`: a ~ LogNormal(0, 0.3), b ~ N(0, 1),
theta ~ N(0, 1), no missing cells) over the 40 WordNetQA release hyponymy rows; each simulated model's
answers are written as an lm-eval ``--log_samples`` file of the set's probegen lm-eval export
(``filtered_resps`` whose arg-max is the planted answer, lm-eval's ``results_<time>.json`` beside
it). ``acc_norm`` answers as ``acc`` but for a share ``--flip`` of the items, where it picks a longer
wrong option (per-character normalisation can only move the pick to a longer option): the two
metrics answer almost alike, as they do in real files. ``probegen items --irt 2pl`` then reads the
files with ``--lm-eval-metric acc`` (the default: one respondent per model) and ``both`` (two per
model), and the share of the 95% difficulty intervals (``b_lo``..``b_hi``) that hold the planted
``b`` is counted over every item and replicate.

    python bench/bench_lm_eval_respondents.py [--models 30] [--reps 20] [--flip 0.05]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from probegen.itemstats.irt import simulate  # noqa: E402

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / \
    "hyponymy-train-sample.jsonl"
TIME = "2026-01-01T00-00-00.000000"
METRICS = ("acc", "both")


def _lls(choices: list[str], gold: int, right: bool, norm_pick: int | None, rng: np.random.Generator) -> list[float]:
    """Log-likelihoods whose arg-max is the gold option (``right``) or a wrong one, and whose
    per-character arg-max is ``norm_pick`` (None: the same option)."""
    lens = np.array([len(c) for c in choices], float)
    wrong = [i for i in range(len(choices)) if i != gold]
    pick = gold if right else int(rng.choice(wrong))
    v = np.full(len(choices), 10.0)  # per-character cost: ll = -len * v
    v[pick] = 1.0
    if norm_pick is not None and lens[norm_pick] > lens[pick]:
        v[norm_pick] = 0.5 * (1.0 + lens[pick] / lens[norm_pick])  # longer, cheaper per character, lower total
    ll = -lens * v
    return ll.round(4).tolist()


def write_files(folder: Path, docs_path: Path, task: str, y: np.ndarray, flip: float, seed: int) -> list[Path]:
    """One lm-eval samples file per simulated model (row of ``y``), beside lm-eval's results file."""
    rng = np.random.default_rng(seed)
    docs = [json.loads(x) for x in docs_path.read_text().splitlines()]
    out = []
    for j, row in enumerate(y):
        d = folder / f"model-{j}"
        d.mkdir(parents=True)
        (d / f"results_{TIME}.json").write_text(json.dumps({"model_name": f"sim/model-{j}", "configs": {task: {
            "dataset_kwargs": {"data_files": {"test": str(docs_path)}}}}}))
        recs = []
        for i, doc in enumerate(docs):
            gold, choices = doc["gold"], doc["choices"]
            longer = [c for c in range(len(choices)) if c != gold and len(choices[c]) > min(len(x) for x in choices)]
            norm_pick = int(rng.choice(longer)) if longer and rng.random() < flip else None
            lls = _lls(choices, gold, bool(row[i]), norm_pick, rng)
            norm = [ll / len(c) for ll, c in zip(lls, choices)]
            recs.append({"doc_id": i, "doc": doc, "target": gold, "filtered_resps": [[str(x), "False"] for x in lls],
                         "acc": float(int(np.argmax(lls)) == gold), "acc_norm": float(int(np.argmax(norm)) == gold)})
        path = d / f"samples_{task}_{TIME}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        out.append(path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--flip", type=float, default=0.05, help="share of items acc_norm answers otherwise")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from probegen.exporters import export
    from probegen.itemstats.analyse import run_items

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        export(RELEASE, "lm-eval", root / "export")
        docs = [json.loads(x) for x in (root / "export" / "docs.jsonl").read_text().splitlines()]
        task = json.loads((root / "export" / "manifest.json").read_text())["task"]
        hits = {m: [] for m in METRICS}
        agree = []
        for rep in range(args.reps):
            sim = simulate(args.models, len(docs), "2pl", missing=0.0, seed=rep)
            files = write_files(root / f"rep{rep}" / "lm", root / "export" / "docs.jsonl", task, sim["y"], args.flip,
                                rep)
            for metric in METRICS:
                out = root / f"rep{rep}" / f"items-{metric}"
                run_items(files, out, irt_model="2pl", n_boot=50, seed=rep, lm_eval_metric=metric)
                with open(out / "items.csv", newline="") as fh:
                    got = {r["item"]: r for r in csv.DictReader(fh)}
                truth = {d["id"]: b for d, b in zip(docs, sim["b"])}
                inside = [float(got[i]["b_lo"]) <= truth[i] <= float(got[i]["b_hi"]) for i in truth if got[i]["b_lo"]]
                hits[metric] += inside
                if metric == "both":
                    with open(out / "responses.csv", newline="") as fh:
                        cells = {(r["model"], r["method"], r["item"]): r["correct"] for r in csv.DictReader(fh)}
                    same = [cells[m, "lm-eval:acc", i] == cells[m, "lm-eval:acc_norm", i]
                            for (m, meth, i) in cells if meth == "lm-eval:acc"]
                    agree.append(float(np.mean(same)))
            print(f"rep {rep}: " + ", ".join(f"{m} {np.mean(hits[m]):.3f}" for m in METRICS), flush=True)
        for metric in METRICS:
            h = np.array(hits[metric], float)
            rows.append({"lm_eval_metric": metric, "respondents_per_model": 1 if metric == "acc" else 2,
                         "intervals": int(h.size), "coverage": float(h.mean()),
                         "coverage_se": float(h.std(ddof=1) / np.sqrt(h.size))})
    benchlib.write_result(args.out, "bench_lm_eval_respondents", rows,
                          config={"models": args.models, "items": 40, "reps": args.reps, "flip": args.flip,
                                  "irt": "2pl", "nominal": 0.95, "acc_acc_norm_agreement": float(np.mean(agree))})


if __name__ == "__main__":
    main()
