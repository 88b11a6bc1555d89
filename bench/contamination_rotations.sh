#!/usr/bin/env bash
# False-positive rate of `probegen contamination` on unexposed models: each of K forms in turn as the
# "seen" form against the other K-1 as fresh (no form was seen, so every flag is a false positive).
#   bench/contamination_rotations.sh OUTROOT MODEL [MODEL ...] -- FORM1 FORM2 ... FORMK
set -euo pipefail
out=$1; shift
models=(); while [ "$1" != "--" ]; do models+=(--model "$1"); shift; done; shift
forms=("$@")
for i in "${!forms[@]}"; do
  fresh=(); for j in "${!forms[@]}"; do [ "$i" = "$j" ] || fresh+=("${forms[$j]}"); done
  probegen contamination "${models[@]}" --seen "${forms[$i]}" --fresh "${fresh[@]}" --out "$out/seen-form$((i + 1))" >/dev/null
done
python - "$out" <<'PY'
import json, sys
from pathlib import Path
flags = {}
for s in sorted(Path(sys.argv[1]).glob("seen-form*/summary.json")):
    for m in json.loads(s.read_text())["models"]:
        flags.setdefault(m["model"], []).append((s.parent.name, round(m["test"]["gap"], 3), round(m["test"]["p"], 4), m["test"]["flagged"]))
for m, rows in flags.items():
    print(f"{m}: flagged {sum(r[3] for r in rows)}/{len(rows)}", rows)
PY
