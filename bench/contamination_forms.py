"""Disjoint forms of one built WordNetQA dataset, for ``probegen contamination`` until ``make --forms`` lands.

The dataset's concepts (synsets) are shuffled with a seed and dealt round-robin into K forms, so the
forms share no synset and are random halves/thirds/... of one draw (matched in expectation on every
stratum). Each form is a dataset folder: the items of its concepts and the parent's manifest with
its own file hash and a ``form`` block naming the parent, the seed and its siblings.

    python bench/contamination_forms.py DATASET K OUTROOT [--seed 0] [--per-form N]
    python bench/contamination_forms.py --lite FORM OUT   # one item (first variant) per question
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from probegen.io import atomic_dir, atomic_write, json_text, sha256_file, write_json


def slice_forms(src: Path, k: int, out_root: Path, seed: int = 0, per_form: int | None = None) -> list[Path]:
    """Write K disjoint forms of the WordNetQA dataset folder ``src`` under ``out_root``; their paths."""
    rows = [json.loads(line) for line in (src / "items.jsonl").read_text(encoding="utf-8").splitlines() if line]
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    concepts = sorted({r["synset"] for r in rows})
    random.Random(seed).shuffle(concepts)
    forms = [concepts[i::k][:per_form] for i in range(k)]
    names = [f"{src.name}-form{i + 1}" for i in range(k)]
    paths = []
    for i, keep in enumerate(forms):
        keep_set = set(keep)
        out = out_root / names[i]
        with atomic_dir(out) as tmp:
            with atomic_write(tmp / "items.jsonl") as fh:
                for r in rows:
                    if r["synset"] in keep_set:
                        fh.write(json_text(r) + "\n")
            m = {**manifest, "name": names[i], "files": {"items.jsonl": sha256_file(tmp / "items.jsonl")},
                 "form": {"parent": str(src), "index": i + 1, "of": k, "seed": seed, "concepts": len(keep),
                          "siblings": [n for n in names if n != names[i]], "how": "concepts dealt round-robin"}}
            write_json(tmp / "manifest.json", m)
        paths.append(out)
    return paths


def lite(src: Path, out: Path) -> Path:
    """A form with one item per question (its first distractor variant): the same questions, fewer items."""
    rows = [json.loads(line) for line in (src / "items.jsonl").read_text(encoding="utf-8").splitlines() if line]
    first = list({r["question_id"]: r for r in reversed(rows)}.values())[::-1]
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    with atomic_dir(out) as tmp:
        with atomic_write(tmp / "items.jsonl") as fh:
            fh.writelines(json_text(r) + "\n" for r in first)
        form = {**manifest.get("form", {}), "lite_of": str(src)}
        write_json(tmp / "manifest.json", {**manifest, "name": out.name, "form": form,
                                           "files": {"items.jsonl": sha256_file(tmp / "items.jsonl")}})
    return out


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--lite"]:
        print(lite(Path(sys.argv[2]), Path(sys.argv[3])))
        raise SystemExit
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("k", type=int)
    ap.add_argument("out_root", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-form", type=int, default=None)
    a = ap.parse_args()
    for p in slice_forms(a.dataset, a.k, a.out_root, a.seed, a.per_form):
        print(p)
