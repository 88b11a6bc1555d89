"""A third-party asking method, registered through the ``probegen.methods`` entry-point group (issue 38).

The test writes a tiny external package in its own directory: a ``yesno`` method (each option
judged on its own: the causal LM's log P(" Yes") - log P(" No") after "<query> <option> / Is
that the right answer?"), its ``pyproject.toml`` with the entry point, and the ``*.dist-info`` an
install of it leaves, so ``importlib.metadata`` finds the entry point with the directory on
``PYTHONPATH`` (the venv is not touched, no probegen file is edited). ``probegen eval`` and
``probegen bias`` then run the method on real CoDA21 and WordNetQA sets with the bundled SmolLM2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kindplugin import write_dist_info

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"
METHOD = "yesno"

METHOD_MODULE = '''
"""yesno: each option judged on its own by a causal LM. A probegen method plugin."""

from probegen.core import PairScorer
from probegen.errors import ProbegenError
from probegen.methods import Method
from probegen.request_options import Option

#: the method's own option: the pair of answer words it reads (declared once; probegen does the rest)
WORDS = Option("judge_words", "--judge-words", "choice", choices=("yes-no", "true-false"), metavar="WORDS",
               help="the answer words read: P(Yes) against P(No), or P(True) against P(False) [default: yes-no]")


class YesNoScorer(PairScorer):
    """A (query, option) pair's score: log P(" Yes") - log P(" No") after asking whether it is right."""

    def __init__(self, inner, words="yes-no"):
        self.inner, self.name, self.kind = inner, inner.name, inner.kind
        self.query_style, self.reduction = inner.query_style, inner.reduction
        self.words = tuple(" " + w.capitalize() for w in words.split("-"))

    @staticmethod
    def ask(query, option):
        return f"{query} {option}\\nQuestion: is that the right answer? Answer:"

    def score_pairs(self, pairs, progress=False):
        asks = {p: self.ask(*p) for p in pairs}
        yes, no = self.words
        got = self.inner.score_pairs([(a, w) for a in asks.values() for w in self.words], progress=progress)
        return {p: got[(a, yes)] - got[(a, no)] for p, a in asks.items()}

    def settings(self):
        return {**self.inner.settings(), "method": "yesno", "judge": self.ask("{query}", "{option}"),
                "words": list(self.words)}

    def stats(self):
        return self.inner.stats()


class YesNo(Method):
    name = "yesno"
    title = "yes/no judgement"
    flags = {"eval": "yesno", "bias": "yesno"}
    report_text = "Yes/no method (`--method yesno`): each option judged on its own, scored P(Yes) against P(No)."
    options = (WORDS,)

    def load_scorer(self, runner, req):
        inner = runner.load_scorer(req.model, req.scorer, batch_size=req.batch_size)
        if inner.kind != "causal":
            raise ProbegenError(f"--method yesno asks a causal LM; {req.model} is a {inner.kind} model")
        return YesNoScorer(inner, req.options.get("judge_words", "yes-no"))
'''

def write_plugin(root: Path) -> Path:
    """The package directory, with the dist-info an install would write."""
    (root / "yesno_method").mkdir(parents=True)
    (root / "yesno_method" / "__init__.py").write_text(textwrap.dedent(METHOD_MODULE))
    write_dist_info(root, "probegen-yesno", "probegen.methods", {METHOD: "yesno_method:YesNo"})
    return root


def probegen(args: list, plugin: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)]), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def plugin_and_data(clean_hard_nouns, tmp_path_factory):
    """The plugin, a 4-group CoDA21 clean-hard noun set and the WordNetQA definition sample."""
    from probegen.coda21.dataset import Coda21Dataset, write

    if not RELEASE.is_file():
        pytest.skip(f"{RELEASE} is not there (../shared/data)")
    root = tmp_path_factory.mktemp("method-plugin")
    coda = write(Coda21Dataset(clean_hard_nouns.groups[:4], clean_hard_nouns.manifest), root / "coda21")
    return write_plugin(root / "yesno"), {"coda21": coda, "wordnetqa": RELEASE}


CPU = ["--model", "smollm2-135m", "--device", "cpu", "--dtype", "float32"]


def test_the_plugin_is_not_registered_in_this_process():
    from probegen import methods

    assert METHOD not in [m.name for m in methods.all_methods()]
    assert METHOD not in methods.names("eval")


@pytest.mark.parametrize("kind", ["coda21", "wordnetqa"])
def test_eval_with_a_plugin_method(plugin_and_data, tmp_path, kind):
    plugin, data = plugin_and_data
    limit = ["--limit", 6] if kind == "wordnetqa" else []
    r = probegen(["eval", *CPU, "--method", METHOD, "--dataset", data[kind], *limit, "--bootstrap", 50,
                  "--out", tmp_path / "run"], plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["scorer"]["kind"] == "causal" and res["scorer"]["method"] == METHOD and "judge" in res["scorer"]
    assert res["eval"]["method"] == METHOD and res["eval"]["reduction"] == "sum"  # a likelihood method: settings apply
    m = res["metrics"]["all"] if kind == "coda21" else res["metrics"]  # CoDA21: per part of speech and all
    assert 0.0 <= m["accuracy"] <= 1.0 and f"{m['accuracy']:.3f}" in r.stdout
    assert not (tmp_path / "run" / "responses.jsonl").exists()  # it asks no chat prompts
    # the viewer reads the run's method from what it recorded, in a process that knows the plugin
    r = probegen(["view", tmp_path / "run", "--out", tmp_path / "view.html"], plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    # without the plugin the run is not shown as the default method: one line naming the method, nothing written
    r = probegen(["view", tmp_path / "run", "--out", tmp_path / "bare.html"], tmp_path / "no-plugin", tmp_path)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        f"probegen: error: {tmp_path / 'run' / 'results.json'}: the run was made with --method {METHOD}, which no "
        "installed package provides (entry-point group probegen.methods; installed: score, trained, generate, "
        "letter): install the plugin that defines it to view this run"]
    assert not (tmp_path / "bare.html").exists()


def test_bias_with_a_plugin_method(plugin_and_data, tmp_path):
    plugin, data = plugin_and_data
    for kind in ("coda21", "wordnetqa"):
        out = tmp_path / kind
        r = probegen(["bias", *CPU, "--method", METHOD, "--dataset", data[kind], "--limit", 4, "--bootstrap", 50,
                      "--no-controls", "--out", out], plugin, tmp_path)
        assert r.returncode == 0, r.stderr
        res = json.loads((out / "results.json").read_text())
        assert res["scorer"]["method"] == METHOD and res["eval"]["method"] == METHOD
        (entry,) = res["datasets"]
        assert {"full", "context", "word"} <= set(entry["all"]["ablations"])
        report = (out / "report.md").read_text()
        assert "Yes/no method (`--method yesno`)" in report  # the method's own paragraph


def test_plugin_method_options_are_checked(plugin_and_data, tmp_path):
    plugin, data = plugin_and_data
    r = probegen(["eval", *CPU, "--method", METHOD, "--dataset", data["wordnetqa"], "--permutations", 3,
                  "--out", tmp_path / "o"], plugin, tmp_path)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        "probegen: error: --permutations applies to --method generate only (and --method letter)"]
    r = probegen(["eval", "--help"], plugin, tmp_path)
    assert f"[score|generate|letter|{METHOD}]" in r.stdout.replace("\n", "").replace(" ", "")
    r = probegen(["bias", "--model", "glove-50d", "--method", METHOD, "--dataset", data["wordnetqa"], "--out",
                  tmp_path / "g"], plugin, tmp_path)
    assert r.returncode == 1 and "--method yesno asks a causal LM; glove-50d is a static model" in r.stderr


NOTEBOOK = """
import json, sys, probegen
try:
    run = probegen.score("smollm2-135m", sys.argv[1], out=sys.argv[2], method="yesno", judge_words=sys.argv[3],
                         limit=4, n_boot=50, device="cpu", dtype="float32")
except ValueError as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
else:
    print(json.dumps({"eval": run.results["eval"], "scorer": run.results["scorer"]}))
"""


def test_a_plugin_method_option_end_to_end(plugin_and_data, tmp_path):
    """The plugin declares ``judge_words`` once (WORDS): the command line offers and checks ``--judge-words``,
    the notebook call takes ``judge_words=``, the method's scorer gets it and results.json records it."""
    plugin, data = plugin_and_data
    r = probegen(["eval", "--help"], plugin, tmp_path)
    assert "--judge-words WORDS" in r.stdout and "--method yesno: the answer words read" in " ".join(r.stdout.split())
    r = probegen(["eval", *CPU, "--method", METHOD, "--dataset", data["wordnetqa"], "--judge-words", "true-false",
                  "--limit", 4, "--bootstrap", 50, "--out", tmp_path / "cli"], plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert res["eval"]["method_options"] == {"judge_words": "true-false"}
    assert res["scorer"]["words"] == [" True", " False"]  # the option reached the method's scorer
    r = subprocess.run([sys.executable, "-c", NOTEBOOK, str(data["wordnetqa"]), str(tmp_path / "nb"), "true-false"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)]), "HF_HUB_OFFLINE": "1",
                            "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    nb = json.loads(r.stdout.strip().splitlines()[-1])
    assert nb["eval"] == res["eval"] and nb["scorer"]["words"] == [" True", " False"]  # the command line's run
    # a bad value: one line naming the option, exit 2 (the notebook call: a ValueError with the same words)
    message = "judge_words (--judge-words) must be one of yes-no, true-false; got 'maybe'"
    r = probegen(["eval", *CPU, "--method", METHOD, "--dataset", data["wordnetqa"], "--judge-words", "maybe",
                  "--out", tmp_path / "bad"], plugin, tmp_path)
    assert r.returncode == 2 and message in " ".join(r.stderr.split()) and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-c", NOTEBOOK, str(data["wordnetqa"]), str(tmp_path / "bad"), "maybe"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)])})
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"error": f"OptionValueError: {message}"}
    assert not (tmp_path / "bad").exists()
    # the option with another method is an error, not ignored
    for command in ("eval", "bias"):
        r = probegen([command, "--model", "glove-50d", "--dataset", data["wordnetqa"], "--judge-words", "yes-no",
                      "--out", tmp_path / "other"], plugin, tmp_path)
        assert r.returncode == 1 and r.stderr.strip().splitlines() == [
            "probegen: error: --judge-words applies to --method yesno only"], r.stderr
    r = probegen(["bias", *CPU, "--method", METHOD, "--dataset", data["wordnetqa"], "--judge-words", "true-false",
                  "--limit", 2, "--bootstrap", 50, "--no-controls", "--out", tmp_path / "bias"], plugin, tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "bias" / "results.json").read_text())
    assert res["eval"]["method_options"] == {"judge_words": "true-false"} and res["scorer"]["words"][0] == " True"
