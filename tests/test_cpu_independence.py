"""Same seed, same result on any CPU (issue 45): the trained controls, the artefact filter, the
adversarial selection and the trained method decide alike when every feature and score they see is
moved by a relative 1e-6, the size of another CPU's float32 rounding of a model's outputs.

Another CPU is a deterministic machine: it computes the same value from the same inputs. So the
perturbation here is a function of the value (a hash of its bits picks the factor in
``1 +- 1e-6``): equal values stay equal, as they would on any CPU, and unequal ones move
independently. It is applied where features enter a fit (:func:`probegen.diagnostics.fitting.quantize_features`,
before its rounding) and where scores leave the scorer (:func:`probegen.core.score_units`), and the
command outputs that a user reads are compared: decisions, control accuracies, the filtered rows and
the adversarial items, which must be identical, byte for byte where they are counts or texts.

Seen to fail with the stochastic-gradient fit used before (``SGDClassifier(alpha=1e-5, max_iter=50)``
in ``probegen.diagnostics.fitting.linear_classifier``): the choice-only accuracies and the filtered rows differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_checks import run

REL = 1e-6


def _factor(x: np.ndarray, rel: float) -> np.ndarray:
    """``1 + rel * u`` with ``u`` in [-1, 1) a hash of each float64's bits (equal values, equal factors)."""
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    h = (bits * np.uint64(0x9E3779B97F4A7C15)) ^ (bits >> np.uint64(29))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    u = (h >> np.uint64(11)).astype(np.float64) / 2.0**53 * 2.0 - 1.0
    return 1.0 + rel * u


def perturb(X: Any, rel: float = REL) -> Any:
    """``X`` (dense or scipy sparse) with every value moved by a value-determined relative ``rel``.

    >>> a = np.array([1.0, 1.0, 2.0])
    >>> p = perturb(a)
    >>> bool(p[0] == p[1]), bool(np.all(np.abs(p / a - 1) <= REL)), bool(np.any(p != a))
    (True, True, True)
    """
    if hasattr(X, "tocsr"):
        out = X.tocsr(copy=True)
        out.data = out.data * _factor(out.data, rel)
        return out
    arr = np.asarray(X, dtype=np.float64)
    return arr * _factor(arr, rel)


def _perturbing(monkeypatch: pytest.MonkeyPatch, what: str, rel: float = REL) -> None:
    """Perturb the ``features`` that enter every trained fit, or the ``scores`` a selection ranks."""
    import probegen.core as core
    from probegen.diagnostics import fitting

    if what == "features":
        quantize = fitting.quantize_features
        monkeypatch.setattr(fitting, "quantize_features", lambda X: quantize(perturb(X, rel)))
        return
    score_units = core.score_units

    def scored(*args: Any, **kwargs: Any) -> list[np.ndarray]:
        return [perturb(m, rel) for m in score_units(*args, **kwargs)]

    monkeypatch.setattr(core, "score_units", scored)


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cpu-sets")
    for args in (["make", "wordnetqa", "--probe", "all", "--limit", "12", "--out", d / "wqa"],
                 ["make", "coda21", "--easy", "--pos", "noun", "--context-scorer", "first", "--out", d / "coda21"],
                 ["make", "wic", "--max-pairs", "60", "--out", d / "wic"]):
        code, _, err = run(*args)
        assert code == 0, err[-2000:]
    return d


# (name, what is perturbed, argv with {d} the sets and {o} the output). The bias run's model scores are
# left alone there (the trained controls are what it guards); a model's own decisions are checked on
# their own: glove-50d's CoDA21 alignments, decided on whole steps of the decision grid.
COMMANDS = [
    ("bias controls", "features", ["bias", "--model", "glove-50d", "--dataset", "{d}/coda21", "--dataset", "{d}/wqa",
                       "--bootstrap", "50", "--out", "{o}"]),
    ("artefact filter", "features", ["filter", "{d}/wqa", "--artefacts", "--budget", "6", "--out", "{o}"]),
    ("adversarial selection", "scores", ["make", "wordnetqa", "--probe", "hypernymy", "--limit", "15", "--adversarial",
                               "--against", "glove-50d", "--out", "{o}"]),
    ("model decisions", "scores", ["eval", "--model", "glove-50d", "--dataset", "{d}/coda21", "--out", "{o}"]),
    ("trained method", "features", ["bias", "--method", "trained", "--model", "minilm-l6", "--dataset", "{d}/wic", "--seeds", "1",
                        "--bootstrap", "50", "--out", "{o}"]),
]


def _decisions(x: Any) -> Any:
    """What a reader acts on: everything but floats that are not accuracies or CIs, which may move in
    their last digits (a score, a weight); accuracies are counts over items, so they must not move at all."""
    if isinstance(x, dict):
        return {k: _decisions(v) for k, v in x.items()
                if not (isinstance(v, float) and k not in ("accuracy", "chance"))
                and k not in ("timings", "created", "date", "score", "scores", "weight", "top_features",
                              "calibration")}  # calibration: the scores themselves, not decisions
    if isinstance(x, list):
        return [_decisions(v) for v in x]
    return x


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            d = _first_difference(a.get(k), b.get(k), f"{where}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {str(a)[:300]} != {str(b)[:300]}"


def _outputs(root: Path) -> dict[str, Any]:
    """The JSON and JSONL files a reader opens (not the hidden ownership marker, which names its folder)."""
    out: dict[str, Any] = {}
    for f in sorted(p for p in root.rglob("*") if not p.name.startswith(".")):
        if f.suffix == ".jsonl":
            out[f.relative_to(root).as_posix()] = [_decisions(json.loads(ln)) for ln in f.read_text().splitlines() if ln]
        elif f.suffix == ".json":
            out[f.relative_to(root).as_posix()] = _decisions(json.loads(f.read_text()))
    return out


def _volatile(x: Any) -> Any:
    """Paths and run times differ between the two output folders by construction."""
    text = json.dumps(x, sort_keys=True)
    return json.loads(text.replace("/plain", "/<OUT>").replace("/perturbed", "/<OUT>"))


@pytest.mark.parametrize("name,what,argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_decisions_do_not_move_with_another_cpus_rounding(name: str, what: str, argv: list[str], sets: Path,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = {}
    for mode in ("plain", "perturbed"):
        out = tmp_path / mode
        with monkeypatch.context() as m:
            if mode == "perturbed":
                _perturbing(m, what)
            code, _, err = run(*[a.format(d=sets, o=out) if isinstance(a, str) else a for a in argv])
        assert code == 0, err[-2000:]
        results[mode] = {k: _volatile(v) for k, v in _outputs(out).items()}
    assert sorted(results["plain"]) == sorted(results["perturbed"])
    moved = [f"{k}{_first_difference(results['plain'][k], results['perturbed'][k])}" for k in results["plain"]
             if results["plain"][k] != results["perturbed"][k]]
    assert not moved, f"{name}: changed under a relative {REL} perturbation: {moved}"


def test_quantised_features_make_last_bit_noise_vanish_from_the_fit() -> None:
    """At a real CPU's rounding (1e-13 relative), the quantised features are bit-identical, so the fitted
    coefficients are too; without the grid they differ in their last bits (seen: break
    ``quantize_features`` into the identity and this fails)."""
    from probegen.diagnostics import fitting

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 12))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=400) > 0).astype(int)
    a = fitting.fit(fitting.linear_classifier(), X, y)
    b = fitting.fit(fitting.linear_classifier(), perturb(X, 1e-13), y)
    assert np.array_equal(fitting.quantize_features(X), fitting.quantize_features(perturb(X, 1e-13)))
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
