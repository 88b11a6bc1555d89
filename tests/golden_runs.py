"""Every command's outputs on small real sets, in a canonical form the golden test compares.

The recipe below builds small real datasets (CoDA21 hard and easy, the four WordNetQA probes, WiC,
WSD, an adversarial build with its twin, a spec-built probe) and runs every command that reads
them (``eval``, ``bias``, ``compare``, ``filter``, ``export``, ``stats``, ``study make``). The
outputs were recorded with the code as it was before the task registry and the one runner
(issue 17): ``tests/data/golden/`` holds their canonical contents and sha256s.

Canonical form: JSON and JSONL are parsed and the keys that differ between two runs of the same
command (timings, cache counters, the temporary root) are dropped; everything else is kept
byte for byte. Recording: ``PROBEGEN_GOLDEN_RECORD=1 pytest tests/test_golden.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Callable

GOLDEN = Path(__file__).parent / "data" / "golden"
# run-to-run differences: timings and counters; the tiny model is re-saved in each run, so its
# fingerprint (and hashes of files that quote it) change; study tokens are fresh secrets by design
VOLATILE = {"run", "timings", "scorer_stats", "created", "created_at", "elapsed_s", "wall_s", "seconds", "fingerprint",
            "manifest_sha256"}
SKIP_NAMES = {"tokens.json"}
_SECRET_LINK = re.compile(r"/a/[A-Za-z0-9_-]{20,}")
SKIP_SUFFIXES = {".png", ".pdf", ".svg", ".lock", ".sqlite"}

# (name, argv) in order; {root} is the temporary root, {tiny} a tiny random causal LM.
RECIPE: list[tuple[str, list[str]]] = [
    ("make-coda21-hard", ["make", "coda21", "--pos", "noun", "--context-scorer", "first", "--out", "{root}/d/coda21-hard"]),
    ("make-coda21-easy", ["make", "coda21", "--easy", "--pos", "noun", "--context-scorer", "first", "--out", "{root}/d/coda21-easy"]),
    ("make-coda21-lmf", ["make", "coda21", "--wordnet-source", "{lmf}", "--contexts", "examples", "--pos", "noun",
                         "--k-min", "2", "--noisy", "--context-scorer", "{tiny}", "--out", "{root}/d/coda21-lmf"]),
    ("make-wordnetqa", ["make", "wordnetqa", "--probe", "all", "--limit", "12", "--out", "{root}/d/wqa"]),
    ("make-wordnetqa-adv", ["make", "wordnetqa", "--probe", "hypernymy", "--limit", "15", "--adversarial", "--against", "glove-50d",
                            "--out", "{root}/d/wqa-adv"]),
    ("make-wic", ["make", "wic", "--max-pairs", "60", "--out", "{root}/d/wic"]),
    ("make-wsd", ["make", "wsd", "--max-items", "60", "--out", "{root}/d/wsd"]),
    ("make-spec", ["make", "spec", "verb-entailment-mc", "--set", "multiple_choice.max_concepts=300", "--out", "{root}/d/spec"]),
    ("stats-coda21", ["stats", "{root}/d/coda21-hard"]),
    ("stats-wqa", ["stats", "{root}/d/wqa"]),
    ("stats-wic", ["stats", "{root}/d/wic"]),
    ("stats-wsd", ["stats", "{root}/d/wsd"]),
    ("eval-coda21-glove", ["eval", "--model", "glove-50d", "--dataset", "{root}/d/coda21-hard", "--out", "{root}/r/e1"]),
    ("eval-coda21-easy-tiny", ["eval", "--model", "{tiny}", "--dataset", "{root}/d/coda21-lmf", "--out", "{root}/r/e2"]),
    ("eval-wqa-minilm", ["eval", "--model", "minilm-l6", "--dataset", "{root}/d/wqa", "--out", "{root}/r/e3"]),
    ("eval-wqa-tiny", ["eval", "--model", "{tiny}", "--dataset", "{root}/d/wqa", "--length-norm", "tokens", "--out", "{root}/r/e4"]),
    ("eval-wic", ["eval", "--model", "minilm-l6", "--dataset", "{root}/d/wic", "--out", "{root}/r/e5"]),
    ("eval-wsd", ["eval", "--model", "minilm-l6", "--dataset", "{root}/d/wsd", "--out", "{root}/r/e6"]),
    ("eval-spec", ["eval", "--model", "glove-50d", "--dataset", "{root}/d/spec", "--out", "{root}/r/e7"]),
    ("bias-glove", ["bias", "--model", "glove-50d", "--dataset", "{root}/d/coda21-easy", "--dataset", "{root}/d/wqa",
                    "--bootstrap", "200", "--out", "{root}/r/b1"]),
    ("bias-tiny", ["bias", "--model", "{tiny}", "--dataset", "{root}/d/wqa", "--bootstrap", "200", "--out", "{root}/r/b2"]),
    ("bias-trained", ["bias", "--method", "trained", "--model", "minilm-l6", "--dataset", "{root}/d/wic", "--seeds", "1",
                      "--bootstrap", "200", "--out", "{root}/r/b3"]),
    ("compare", ["compare", "{root}/d/wqa-adv-twin", "{root}/d/wqa-adv", "--model", "glove-50d", "--bootstrap", "200",
                 "--out", "{root}/r/c1"]),
    ("filter", ["filter", "{root}/d/wqa", "--artefacts", "--budget", "6", "--out", "{root}/d/wqa-filtered"]),
    ("export-coda21-json", ["export", "{root}/d/coda21-hard", "--out", "{root}/x/coda21.json"]),
    ("export-coda21-lm-eval", ["export", "{root}/d/coda21-easy", "--format", "lm-eval", "--out", "{root}/x/coda21-lm-eval"]),
    ("export-wqa-json", ["export", "{root}/d/wqa", "--out", "{root}/x/wqa.json"]),
    ("export-wqa-hf", ["export", "{root}/d/wqa", "--format", "hf", "--out", "{root}/x/wqa-hf"]),
    ("study-make", ["study", "make", "{root}/d/wqa", "--n", "10", "--annotators", "2", "--overlap", "4", "--out", "{root}/s/wqa"]),
]


def _drop_volatile(x: Any) -> Any:
    if isinstance(x, dict):
        # lm-eval's task.yaml quotes the absolute path of docs.jsonl: its hash depends on the root
        return {k: _drop_volatile(v) for k, v in x.items() if k not in VOLATILE and k != "task.yaml"}
    if isinstance(x, list):
        return [_drop_volatile(v) for v in x]
    return x


def canonical_file(path: Path, subs: dict[str, str]) -> Any:
    """A file's content with run-to-run differences removed: parsed JSON(L), else text."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # binary (e.g. an arrow table): its bytes
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    for old, new in subs.items():
        text = text.replace(old, new)
    text = re.sub(r"fingerprint=[0-9a-f]{16}", "fingerprint=<FP>", text)
    if path.suffix in (".json", ".jsonl"):
        try:
            return _drop_volatile(json.loads(text, parse_constant=_not_strict(path)))
        except ValueError:  # JSON lines (some exports name them .json)
            return [_drop_volatile(json.loads(ln, parse_constant=_not_strict(path))) for ln in text.splitlines()
                    if ln.strip()]
    return text


def _not_strict(path: Path) -> Callable[[str], Any]:
    """``parse_constant`` that fails the run: every JSON probegen writes is strict (issue 46: no NaN
    or Infinity, which a strict reader rejects)."""
    def fail(token: str) -> Any:
        raise AssertionError(f"{path}: {token} in a JSON output (a value that is not finite must be null)")
    return fail


def canonical_tree(root: Path, subs: dict[str, str]) -> dict[str, Any]:
    """{relative path: canonical content} of every non-hidden output file below ``root``."""
    out: dict[str, Any] = {}
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for f in files:
        rel = f.name if root.is_file() else f.relative_to(root).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts) or f.suffix in SKIP_SUFFIXES or f.name in SKIP_NAMES:
            continue
        out[rel] = canonical_file(f, subs)
    return out


def digest(content: Any) -> str:
    """sha256 of a canonical content (floats written with repr: any bit that changes shows)."""
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def produce(root: Path, tiny: str, lmf: str, run: Callable[..., tuple[int, str, str]]) -> dict[str, Any]:
    """Run the recipe under ``root``; {step: {"stdout": ..., "files": {path: content}}}."""
    subs = {str(root): "<ROOT>", tiny: "<TINY>", lmf: "<LMF>"}
    results: dict[str, Any] = {}
    for name, argv in RECIPE:
        args = [a.format(root=root, tiny=tiny, lmf=lmf) for a in argv]
        code, out, err = run(*args)
        assert code == 0, (name, code, err[-3000:])
        outputs = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--out"]
        files: dict[str, Any] = {}
        for o in outputs:
            files.update({f"{Path(o).name}/{k}": v for k, v in canonical_tree(Path(o), subs).items()})
            twin = Path(o + "-twin")
            if twin.exists():
                files.update({f"{twin.name}/{k}": v for k, v in canonical_tree(twin, subs).items()})
        stdout = _SECRET_LINK.sub("/a/<TOKEN>", out)
        for old, new in subs.items():
            stdout = stdout.replace(old, new)
        results[name] = {"stdout": stdout, "files": files}
    return results


#: How far a float may move between two CPUs. Scores are float32 model outputs: a BLAS built for
#: another instruction set sums in another order (relative differences of 1e-7..1e-5 over a
#: 384-dimensional dot product or a 49k-token log-softmax), and the outputs round them to a few
#: digits, where a difference in the 7th digit can flip the 6th (-0.025667 vs -0.025668 on
#: another machine). 1e-4 relative / 1e-5 absolute is far above both and far below anything a
#: reader of a score would notice. Decisions, counts and texts are still compared exactly.
REL_TOL, ABS_TOL = 1e-4, 1e-5
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def floats_close(a: float, b: float, unit: float = 0.0) -> bool:
    """``a`` and ``b`` equal up to another CPU's rounding; ``unit``: the last printed digit's value.

    >>> floats_close(-0.025667, -0.025668), floats_close(0.5, 0.51)
    (True, False)
    >>> floats_close(0.417, 0.416, unit=0.001), floats_close(0.417, 0.415, unit=0.001)
    (True, False)
    """
    if math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL + unit * (1 + 1e-9))


def _unit(token: str) -> float:
    """The value of the last digit printed in ``token`` (``'0.417'`` -> 0.001; no point -> 0)."""
    mantissa = token.lower().split("e")[0]
    if "." not in mantissa:
        return 0.0
    digits = len(mantissa.split(".")[1])
    return 10.0 ** -digits * (10.0 ** int(token.lower().split("e")[1]) if "e" in token.lower() else 1.0)


def texts_close(a: str, b: str) -> bool:
    """Two texts equal except for numbers that differ by at most one printed digit (plus :data:`REL_TOL`).

    >>> texts_close("acc 0.4170 [0.31, 0.52]", "acc 0.4169 [0.31, 0.52]")
    True
    >>> texts_close("acc 0.4170", "acc 0.4180"), texts_close("acc 0.4170", "ACC 0.4170")
    (False, False)
    """
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    if len(na) != len(nb) or _NUMBER.split(a) != _NUMBER.split(b):
        return False
    for x, y in zip(na, nb):
        if x != y and ("." not in x + y or not floats_close(float(x), float(y), max(_unit(x), _unit(y)))):
            return False  # integers (counts, ids) are exact
    return True


def close(a: Any, b: Any, where: str = "") -> str | None:
    """Where ``a`` and ``b`` differ beyond another CPU's float rounding (:func:`floats_close`), or None."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            if floats_close(a, b, max(_unit(repr(a)), _unit(repr(b))) if _short(a) and _short(b) else 0.0):
                return None
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            d = close(a[k], b[k], f"{where}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} != {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            d = close(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, str) and isinstance(b, str) and texts_close(a, b):
        return None
    return None if a == b else f"{where}: {str(a)[:300]!r} != {str(b)[:300]!r}"


def _short(x: float) -> bool:
    """A float that looks rounded for output (3 to 6 decimals), whose last digit may flip on another CPU.

    Fewer decimals are not given the one-digit allowance: 0.5 and 0.6 are two accuracies, not a rounding.
    """
    return isinstance(x, float) and "e" not in repr(x) and 3 <= len(repr(x).split(".")[-1]) <= 6


def save(results: dict[str, Any]) -> None:
    """Write the golden contents and their sha256s."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(GOLDEN / "outputs.json.gz", "wb", mtime=0) as fh:
        fh.write(json.dumps(results, sort_keys=True, ensure_ascii=False).encode())
    hashes = {step: {"stdout": digest(r["stdout"]), **{f: digest(c) for f, c in r["files"].items()}} for step, r in results.items()}
    (GOLDEN / "hashes.json").write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


def load() -> tuple[dict[str, Any], dict[str, Any]]:
    """(golden contents, golden sha256s)."""
    with gzip.open(GOLDEN / "outputs.json.gz", "rb") as fh:
        results = json.loads(fh.read())
    return results, json.loads((GOLDEN / "hashes.json").read_text())
