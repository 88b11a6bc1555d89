"""Parallel forms measured (docs/forms.md, docs/contamination.md): equivalence and the contamination check.

Builds three families of forms with the real commands (CoDA21 clean-hard nouns K = 3, WordNetQA
hypernymy K = 3, WordNetQA definitions K = 4), scores each form with the bundled models
(`probegen eval`), and runs

- `probegen forms` on each family: accuracy per respondent and form, the TOST of every pair of forms
  (mean of respondents), the difficulty KS tests and Kendall's tau -> ``bench/results/bench_forms_<set>.json``;
- `probegen contamination` with each form in turn as "seen" (no form was seen: every flag is a false
  positive) -> ``bench/results/bench_contamination_<set>.json``;
- with ``--slow``: SmolLM2-135M as a respondent too (CoDA21 and definitions; minutes per form on a
  CPU), and the planted exposure: SmolLM2-135M fine-tuned on the definitions form 1's gold answers
  (bench/contamination_finetune.py) checked against the fresh forms
  -> ``bench/results/bench_contamination_exposure.json``.

    python bench/bench_forms.py [--work probegen_out/bench/forms] [--slow] [--sets coda21,hypernymy,definitions]
    python bench/bench_forms.py --exposure-only      # the fine-tuned exposure alone

The forms are built once per work folder (seeded: a rebuild gives the same forms); the runs are redone.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = benchlib.BENCH_DIR.parent
SMOL = "smollm2-135m"
#: name -> (title, make arguments, K, fast respondents, slow respondents); a respondent is (model, extra eval args)
SETS: dict[str, tuple[str, list[str], int, list[tuple[str, list[str]]], list[tuple[str, list[str]]]]] = {
    "coda21": ("CoDA21 clean-hard nouns",
               ["coda21", "--hard", "--clean", "--pos", "noun", "--context-scorer", "first"], 3,
               [("glove-50d", []), ("glove-50d", ["--matching", "simple"]), ("minilm-l6", []),
                ("minilm-l6", ["--matching", "simple"])], [(SMOL, [])]),
    "hypernymy": ("WordNetQA hypernymy", ["wordnetqa", "--probe", "hypernymy", "--limit", "300"], 3,
                  [("glove-50d", []), ("minilm-l6", [])], []),
    "definitions": ("WordNetQA definitions",
                    ["wordnetqa", "--probe", "definitions", "--limit", "240", "--max-contexts", "1", "--seed", "1"], 4,
                    [("glove-50d", []), ("minilm-l6", [])], [(SMOL, [])]),
}
FINETUNE = ["--epochs", "3", "--lr", "3e-4", "--top", "6"]


def probegen(*args: str, log: Path) -> None:
    """Run ``probegen ARGS`` (output to ``log``; a failure stops the bench): :func:`benchlib.run_probegen`."""
    benchlib.run_probegen(args, log, "bench_forms")


def read_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def build(name: str, work: Path, log: Path) -> list[Path]:
    """The K forms of ``name`` (built unless the work folder has them)."""
    _, make, k, _, _ = SETS[name]
    forms = [work / "sets" / f"{name}-form{i + 1}" for i in range(k)]
    if not all((f / "manifest.json").is_file() for f in forms):
        for f in forms:
            shutil.rmtree(f, ignore_errors=True)
        probegen("make", *make, "--forms", str(k), "--out", str(work / "sets" / name), log=log)
    return forms


def label(model: str, extra: list[str]) -> str:
    return model + (f" --{extra[0].lstrip('-')} {extra[1]}" if extra else "")


def equivalence(name: str, forms: list[Path], respondents: list[tuple[str, list[str]]], work: Path, log: Path) -> dict:
    """Every respondent on every form, then `probegen forms`; the figures of its output files."""
    runs = []
    for model, extra in respondents:
        tag = model + "".join(extra).replace("--", "-")
        for i, form in enumerate(forms, 1):
            out = work / "runs" / f"{name}-{tag}-{i}"
            probegen("eval", "--model", model, "--dataset", str(form), *extra, "--out", str(out), log=log)
            runs.append(str(out))
    eq = work / "eq" / name
    probegen("forms", *runs, "--out", str(eq), log=log)
    summary = json.loads((eq / "summary.json").read_text(encoding="utf-8"))
    acc: dict[str, dict] = {}
    for r in read_csv(eq / "forms.csv"):
        a = acc.setdefault(r["respondent"], {"respondent": r["respondent"], "forms": {}})
        a["forms"][r["form"]] = {"accuracy": float(r["accuracy"]), "ci": [float(r["ci_lo"]), float(r["ci_hi"])],
                                 "items": int(r["items"]), "units": int(r["units"])}
    ks: dict[tuple[str, str, str], float] = {}
    for r in read_csv(eq / "difficulty.csv"):
        ks[(r["measure"], r["form_a"], r["form_b"])] = float(r["p"])
    taus = {(str(r["form_a"]), str(r["form_b"])): r.get("kendall_tau") for r in summary.get("ranks", [])}
    pairs, per_resp = [], []
    for r in read_csv(eq / "equivalence.csv"):
        key = (r["form_a"], r["form_b"])
        row = {"form_a": int(r["form_a"]), "form_b": int(r["form_b"]), "diff": float(r["diff"]),
               "ci90": [float(r["ci90_lo"]), float(r["ci90_hi"])], "margin_met": float(r["margin_met"]) if r["margin_met"] not in ("", None) else None,
               "equivalent": r["equivalent"] == "True"}
        if r["respondent"] in acc:
            per_resp.append({**row, "respondent": r["respondent"]})
        else:  # the mean over respondents
            pairs.append({**row, "respondent": r["respondent"], "ks_p": ks.get(("p", *key)),
                          "ks_b": ks.get(("irt_b", *key)), "kendall_tau": taus.get(key)})
    return {"set": name, "title": SETS[name][0], "k": len(forms),
            "respondents": [label(m, e) for m, e in respondents], "accuracy": list(acc.values()),
            "pairs": pairs, "per_respondent": per_resp, "margin": summary["margin"],
            "strata_within_tolerance": summary.get("strata_within_tolerance")}


def contamination(models: list[str], seen: Path, fresh: list[Path], out: Path, log: Path) -> list[dict]:
    """`probegen contamination`; per model the test's figures and the fresh-vs-fresh checks inside it."""
    args = [x for m in models for x in ("--model", m)]
    probegen("contamination", *args, "--seen", str(seen), "--fresh", *map(str, fresh), "--out", str(out), log=log)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = []
    for m in summary["models"]:
        t = m["test"]
        rows.append({"model": m["model"], "seen": t["seen"], "fresh_mean": t["fresh_mean"], "gap": t["gap"],
                     "ci": t["ci"], "df": t["df"], "p": t["p"], "flagged": bool(t["flagged"]), "tau": t.get("tau"),
                     "min_detectable_gap": t.get("min_detectable_gap"),
                     "fresh_null": [{"form": f["form"], "gap": f["gap"], "p": f["p"], "flagged": bool(f["flagged"])}
                                    for f in m.get("fresh_null", [])]})
    return rows


def rotations(name: str, forms: list[Path], models: list[str], work: Path, log: Path) -> list[dict]:
    """Each form in turn as "seen" against the others, with unexposed models: every flag is a false positive."""
    rows = []
    for i, seen in enumerate(forms):
        fresh = [f for f in forms if f != seen]
        for r in contamination(models, seen, fresh, work / "rot" / name / f"seen-form{i + 1}", log):
            rows.append({"set": name, "title": SETS[name][0], "seen_form": i + 1, **r})
    return rows


def exposure(forms: list[Path], work: Path, log: Path) -> tuple[list[dict], dict]:
    """SmolLM2-135M fine-tuned on form 1's gold answers, checked with the base and the other models."""
    tuned = work / "smollm2-tuned-form1"
    shutil.rmtree(tuned, ignore_errors=True)
    t = time.perf_counter()
    with log.open("a", encoding="utf-8") as fh:
        r = subprocess.run([sys.executable, str(benchlib.BENCH_DIR / "contamination_finetune.py"), str(forms[0]),
                            str(tuned), *FINETUNE], stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
    if r.returncode:
        sys.exit(f"bench_forms: the fine-tune failed; see {log}")
    info = json.loads((tuned / "exposure.json").read_text(encoding="utf-8"))
    info["seconds_total"] = round(time.perf_counter() - t, 1)
    rows = contamination([str(tuned), SMOL, "glove-50d", "minilm-l6"], forms[0], forms[1:], work / "exposed", log)
    for row in rows:
        if row["model"] == str(tuned):
            row["model"] = f"{SMOL} tuned on form 1"
    return rows, info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "probegen_out" / "bench" / "forms")
    ap.add_argument("--slow", action="store_true", help="SmolLM2 as a respondent, and the fine-tuned exposure")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated: " + ", ".join(SETS))
    ap.add_argument("--results", type=Path, default=benchlib.RESULTS_DIR)
    ap.add_argument("--exposure-only", action="store_true", help="only the fine-tuned exposure (implies --slow)")
    args = ap.parse_args(argv)
    names = [] if args.exposure_only else args.sets.split(",")
    args.slow = args.slow or args.exposure_only
    work = args.work
    for sub in ("runs", "eq", "rot", "exposed") if names else ("exposed",):
        shutil.rmtree(work / sub, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "bench_forms.log"
    log.write_text("", encoding="utf-8")
    config = {"slow": args.slow, "sets": {n: {"title": SETS[n][0], "make": "probegen make " + " ".join(SETS[n][1])
                                              + f" --forms {SETS[n][2]}"} for n in SETS},
              "margin": 0.03, "alpha": 0.05}
    for name in names:  # one result file per family, written as soon as it is measured
        t = time.perf_counter()
        forms = build(name, work, log)
        _, _, _, fast, slow = SETS[name]
        resp = fast + (slow if args.slow else [])
        eq = equivalence(name, forms, resp, work, log)
        models = list(dict.fromkeys(m for m, _ in resp))
        rot = rotations(name, forms, models, work, log)
        cfg = {**config, "sets": {name: config["sets"][name]}, "seconds": round(time.perf_counter() - t, 1)}
        benchlib.write_result(args.results / f"bench_forms_{name}.json", "bench_forms", [eq], config=cfg)
        benchlib.write_result(args.results / f"bench_contamination_{name}.json", "bench_forms", rot, config=cfg)
        print(f"bench_forms: {name} done in {cfg['seconds']:.0f} s", flush=True)
    if args.exposure_only or (args.slow and "definitions" in names):
        t = time.perf_counter()
        rows, info = exposure(build("definitions", work, log), work, log)
        benchlib.write_result(args.results / "bench_contamination_exposure.json", "bench_forms", rows,
                              config={"make": config["sets"]["definitions"]["make"], "finetune": info,
                                      "seconds": round(time.perf_counter() - t, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
