"""Each command a user runs detects every dataset's kind once, checks its options once, resolves
every model once and loads it once (issue 27 §4: one request, validated once; a model resolved
once into a typed description and loaded once, by the runner).

The counters wrap the real functions (they still run): :func:`probegen.tasks.detect` per dataset,
every option-check entry point per command, :func:`probegen.models.resolve_model`'s real work (a
lookup the runner's store did not answer) per model name, and a model's weights read
(:meth:`probegen.models.ModelStore.memo` running its loader) per model.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest
from cli_checks import run

from probegen.paths import shared_data_candidates

ROOT = Path(__file__).resolve().parent.parent
RELEASE = next((p / "wordnetqa-release-sample" for p in shared_data_candidates() if p.is_dir()), None)
pytestmark = pytest.mark.skipif(RELEASE is None, reason="the shared release sample is not installed")

#: (module, function) of every option-check entry point a command may use
CHECKS = [
    ("probegen.tasks", "check_options"),
    ("probegen.tasks", "check_dataset_options"),
    ("probegen.run.evaluation", "check_method_options"),
    ("probegen.run.evaluation", "check_model_options"),
    ("probegen.run.api", "check_eval_request"),
    ("probegen.run.bias_request", "check_options"),
    ("probegen.run.bias_request", "choose_method"),
    ("probegen.exporters", "check_export"),
    ("probegen.run.command_requests", "check_export_request"),
    ("probegen.run.command_requests", "check_compare_request"),
    ("probegen.run.command_requests", "check_filter_request"),
    ("probegen.run.command_requests", "check_study_request"),
    ("probegen.diagnostics.filtering", "check_holdout"),
]


def _wrap(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, count: Callable[..., None]) -> None:
    real = getattr(module, name)

    def counted(*a: Any, **k: Any) -> Any:
        count(*a, **k)
        return real(*a, **k)

    monkeypatch.setattr(module, name, counted)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Calls of the counted functions while a test runs: ("detect", dataset), ("check", function),
    ("resolve", model name), ("load", model path)."""
    import importlib

    from probegen import models, tasks

    c: Counter = Counter()
    _wrap(monkeypatch, tasks, "detect", lambda p: c.update([("detect", str(Path(p).resolve()))]))
    for mod, fn in CHECKS:
        label = f"{mod.rsplit('.', 1)[-1]}.{fn}"
        _wrap(monkeypatch, importlib.import_module(mod), fn, lambda *a, _n=label, **k: c.update([("check", _n)]))
    _wrap(monkeypatch, models, "_resolve_local", lambda name, store: c.update([("resolve", name)]))
    real_memo = models.ModelStore.memo

    def memo(self: Any, key: tuple, load: Callable[[], Any]) -> Any:
        if key not in self.loaded:
            c.update([("load", key[1])])
        return real_memo(self, key, load)

    monkeypatch.setattr(models.ModelStore, "memo", memo)
    return c


def _ok(*args: Any) -> str:
    code, out, err = run(*args)
    assert code == 0, err
    return out


def _assert_once(c: Counter, datasets: int, models: int, checks: set[str]) -> None:
    """Every counted step ran exactly once per dataset / model / check, and as many of each as asked."""
    shown = dict(sorted(c.items()))
    print(shown)  # the measurement (pytest -s)
    assert all(n == 1 for n in c.values()), shown
    assert sum(1 for k in c if k[0] == "detect") == datasets, shown
    assert sum(1 for k in c if k[0] == "resolve") == models, shown
    assert {k[1] for k in c if k[0] == "check"} >= checks, shown


@pytest.fixture(scope="module")
def wqa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real WordNetQA definitions set (80 concepts: enough clusters for a study and a filter)."""
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.config import WordNetQAConfig

    out = tmp_path_factory.mktemp("wqa") / "wordnetqa-definitions"
    D.write(D.build(WordNetQAConfig(probes=("definitions",), max_concepts=80, seed=0), progress=False,
                    log=lambda m: None), out)
    return out


@pytest.fixture(scope="module")
def coda(clean_hard_nouns: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Six real CoDA21 clean-hard noun groups, written twice (a pair for compare)."""
    from probegen.coda21.dataset import Coda21Dataset, write

    root = tmp_path_factory.mktemp("coda")
    a = write(Coda21Dataset(clean_hard_nouns.groups[:6], clean_hard_nouns.manifest), root / "coda-a")
    b = root / "coda-b"
    shutil.copytree(a, b)
    return Path(a), b


def test_eval_score_multiple_choice(counts: Counter, wqa: Path, tmp_path: Path) -> None:
    _ok("eval", "--model", "glove-50d", "--dataset", wqa, "--limit", 5, "--bootstrap", 20, "--out", tmp_path / "o")
    _assert_once(counts, 1, 1, {"api.check_eval_request", "tasks.check_options", "evaluation.check_method_options"})
    assert counts[("load", next(k[1] for k in counts if k[0] == "load"))] == 1


def test_eval_score_coda21_lm(counts: Counter, coda: tuple[Path, Path], tmp_path: Path) -> None:
    _ok("eval", "--model", "smollm2-135m", "--dataset", coda[0], "--reduction", "mean", "--limit", 2,
        "--bootstrap", 20, "--out", tmp_path / "o")
    _assert_once(counts, 1, 1, {"api.check_eval_request", "tasks.check_options", "evaluation.check_model_options"})
    assert sum(1 for k in counts if k[0] == "load") == 1


@pytest.mark.parametrize("method", ["letter", "generate"])
def test_eval_letter_and_generate(counts: Counter, tmp_path: Path, method: str) -> None:
    assert RELEASE is not None
    _ok("eval", "--model", "smollm2-135m", "--method", method, "--dataset", RELEASE / "synonymy-train-sample.jsonl",
        "--limit", 2, "--bootstrap", 20, "--out", tmp_path / "o")
    _assert_once(counts, 1, 1, {"api.check_eval_request", "tasks.check_options"})
    assert sum(1 for k in counts if k[0] == "load") == 1


def test_eval_trained_word_in_context(counts: Counter, tmp_path: Path) -> None:
    _ok("eval", "--model", "minilm-l6", "--dataset", ROOT / "tests" / "data" / "wic_semcor_24.jsonl",
        "--out", tmp_path / "o")
    _assert_once(counts, 1, 1, {"api.check_eval_request", "tasks.check_options"})
    assert sum(1 for k in counts if k[0] == "load") == 1


def test_bias_trained(counts: Counter, tmp_path: Path) -> None:
    _ok("bias", "--model", "minilm-l6", "--dataset", ROOT / "tests" / "data" / "wic_semcor_24.jsonl", "--seeds", 1,
        "--bootstrap", 20, "--out", tmp_path / "b")
    _assert_once(counts, 1, 1, {"bias_request.check_options", "bias_request.choose_method", "tasks.check_options"})
    assert sum(1 for k in counts if k[0] == "load") == 1


def test_bias(counts: Counter, coda: tuple[Path, Path], tmp_path: Path) -> None:
    _ok("bias", "--model", "glove-50d", "--dataset", coda[0], "--limit", 3, "--no-controls", "--bootstrap", 20,
        "--out", tmp_path / "b")
    _assert_once(counts, 1, 1, {"bias_request.check_options", "bias_request.choose_method", "tasks.check_options"})
    assert sum(1 for k in counts if k[0] == "load") == 1


def test_compare(counts: Counter, coda: tuple[Path, Path], tmp_path: Path) -> None:
    _ok("compare", *coda, "--model", "glove-50d", "--model", "minilm-l6", "--bootstrap", 20, "--out", tmp_path / "c")
    _assert_once(counts, 2, 2, {"command_requests.check_compare_request"})
    assert sum(1 for k in counts if k[0] == "load") == 2


def test_export(counts: Counter, wqa: Path, tmp_path: Path) -> None:
    _ok("export", wqa, "--format", "lm-eval", "--out", tmp_path / "x")
    _assert_once(counts, 1, 0, {"command_requests.check_export_request", "exporters.check_export", "tasks.check_options"})


def test_export_release(counts: Counter, wqa: Path, tmp_path: Path) -> None:
    _ok("export", wqa, "--out", tmp_path / "x.jsonl")
    _assert_once(counts, 1, 0, {"command_requests.check_export_request", "tasks.check_options"})


def test_filter(counts: Counter, wqa: Path, tmp_path: Path) -> None:
    _ok("filter", wqa, "--artefacts", "--budget", 5, "--splits", 2, "--out", tmp_path / "f")
    _assert_once(counts, 1, 0, {"command_requests.check_filter_request", "filtering.check_holdout",
                                "tasks.check_options"})


def test_study_make(counts: Counter, wqa: Path, tmp_path: Path) -> None:
    _ok("study", "make", wqa, "--n", 10, "--annotators", 2, "--overlap", 4, "--out", tmp_path / "s")
    _assert_once(counts, 1, 0, {"command_requests.check_study_request", "tasks.check_options"})


def test_stats(counts: Counter, wqa: Path) -> None:
    _ok("stats", wqa)
    _assert_once(counts, 1, 0, set())


def test_make_coda21(counts: Counter, tmp_path: Path) -> None:
    _ok("make", "coda21", "--pos", "verb", "--context-scorer", "first", "--seed", 2, "--out", tmp_path / "a")
    # the embedder: resolved once before any work, loaded at most once (its embeddings may be cached)
    _assert_once(counts, 0, 1, set())


def test_make_spec(counts: Counter, tmp_path: Path) -> None:
    _ok("make", "spec", "coda21-clean-hard", "--set", "concepts.pos=[verb]", "--set", "contexts.scorer=first",
        "--seed", 2, "--out", tmp_path / "b")
    _assert_once(counts, 0, 1, set())


def test_filter_then_bias(counts: Counter, wqa: Path, tmp_path: Path) -> None:
    # the bias run before/after filtering reads the source and the filtered set: no kind detected again
    _ok("filter", wqa, "--artefacts", "--budget", 5, "--splits", 2, "--model", "glove-50d", "--out", tmp_path / "f")
    _assert_once(counts, 1, 1, {"command_requests.check_filter_request", "tasks.check_options"})
    assert sum(1 for k in counts if k[0] == "load") == 1
