"""The generative method end to end: the bundled SmolLM2-135M-Instruct asked every probe kind, in
process (transformers ``generate`` with its chat template) and through a real vLLM server's chat
endpoint; the pipeline's numbers re-derived from the raw answers it stored.

A 135M model answers badly (it copies the format's example, repeats the options): what these tests
check is that the parse, the retry, the random completion, the decisions, the per-order figures
and the replay are exact, whatever the model says.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from cli_checks import assert_one_line_error, linked_cache, run

pytestmark = pytest.mark.real
RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample"


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Real sets: CoDA21 clean-hard nouns (first SemCor context), WiC pairs and WSD items from SemCor."""
    root = tmp_path_factory.mktemp("sets")
    for args in (["make", "coda21", "--context-scorer", "first", "--pos", "noun", "--out", root / "coda21-clean-hard"],
                 ["make", "wic", "--max-pairs", "60", "--out", root / "wic"],
                 ["make", "wsd", "--max-items", "60", "--out", root / "wsd"]):
        code, _, err = run(*args)
        assert code == 0, err
    return root


@pytest.fixture(scope="module")
def chat_cache(tmp_path_factory):
    """A response cache of this module's own (a replay test counts requests)."""
    with pytest.MonkeyPatch.context() as mp:
        home = linked_cache(tmp_path_factory.mktemp("cache"))
        mp.setenv("PROBEGEN_CACHE", str(home))
        yield home


def _jsonl(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]


def _rederive(out: Path, rows_file: str) -> None:
    """Every record's per-order answers and prediction follow from the stored raw answers alone:
    parse them again, complete what is missing with the same seeded draw, vote, decide."""
    from probegen.core import Unit, decide
    from probegen.generate.parse import parse
    from probegen.generate.scorer import complete

    results = json.loads((out / "results.json").read_text())
    seed = results["scorer"]["seed"]
    by_unit: dict[str, list[dict]] = {}
    for ex in _jsonl(out / "responses.jsonl"):
        by_unit.setdefault(ex["unit"], []).append(ex)
        answers = [m["content"] for m in ex["messages"] if m["role"] == "assistant"]
        assert 1 <= len(answers) <= 2
        n, k = len(ex["option_order"]), len(ex["answer"])
        final = parse(ex["ask"], answers[-1], k, n, ex["options"])
        if len(answers) == 2:
            assert not parse(ex["ask"], answers[0], k, n, ex["options"]).valid
        rng = np.random.default_rng([seed, zlib.crc32(f"{ex['unit']}/order/{ex['order']}/complete".encode())])
        shown = complete(final.answer, n, ex["ask"] == "matching", rng)
        assert [ex["option_order"][j] for j in shown] == ex["answer"], (ex["unit"], answers)
        assert ex["status"] == ("valid" if final.valid and len(answers) == 1 else "valid-after-retry" if final.valid
                                else "invalid" if all(a is None for a in final.answer) else "partial")
    records = _jsonl(out / rows_file)
    for r in records:
        mine = sorted(by_unit[str(r["id"])], key=lambda e: e["order"])
        assert r["generation"]["answers"] == [e["answer"] for e in mine]
        votes = np.zeros((len(mine[0]["answer"]), len(mine[0]["option_order"])))
        for e in mine:
            votes[np.arange(len(e["answer"])), e["answer"]] += 1
        gold = np.atleast_1d(r["gold"])
        unit = Unit(str(r["id"]), ("",) * len(votes), (tuple(map(str, range(votes.shape[1]))),) * len(votes),
                    "alignment" if mine[0]["ask"] == "matching" else "argmax", tuple(int(g) for g in gold))
        pred = np.atleast_1d(r["pred"])
        assert pred.tolist() == decide(unit, votes / len(mine), seed).tolist()


def test_eval_coda21_in_process_rederived_and_replayed(sets, chat_cache, tmp_path):
    args = ["eval", "--model", "smollm2-135m", "--method", "generate", "--dataset", sets / "coda21-clean-hard",
            "--limit", "4", "--device", "cpu"]
    code, out, err = run(*args, "--out", tmp_path / "a")
    assert code == 0, err
    print("\n" + out)
    res = json.loads((tmp_path / "a" / "results.json").read_text())
    gen = res["generation"]
    assert res["scorer"]["method"] == "generate" and res["scorer"]["prompts"]["file"] == "templates/prompts/en.yaml"
    assert gen["asks"] == 4 and gen["orders"] == 1 and gen["consistency"] == 1.0
    assert abs(gen["majority"] - res["metrics"]["all"]["accuracy"]) < 1e-12
    assert "invalid rate" in out
    _rederive(tmp_path / "a", "groups.jsonl")
    # the same run again: every answer from the response cache, no generation, the same files
    code, _, err = run(*args, "--out", tmp_path / "b")
    assert code == 0, err
    stats = json.loads((tmp_path / "b" / "results.json").read_text())["run"]["scorer_stats"]
    assert stats["chat_cached"] >= 4 and stats["chat_responses"] == 0 and stats.get("chat_requests", 0) == 0
    for f in ("groups.jsonl", "responses.jsonl"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_bias_mc_release_permutations_beside_a_scored_model(chat_cache, tmp_path):
    # 3 items x 4 conditions x 2 orders: the smallest run that still shows orders, consistency and the plane
    data = ["--dataset", RELEASE / "definitions-train-sample.jsonl", "--limit", "3", "--bootstrap", "200", "--no-controls"]
    code, _, err = run("bias", "--model", "glove-50d", *data, "--out", tmp_path / "glove")
    assert code == 0, err
    code, out, err = run("bias", "--model", "smollm2-135m", "--method", "generate", "--permutations", "2", "--device", "cpu",
                         *data, "--beside", tmp_path / "glove", "--out", tmp_path / "gen")
    assert code == 0, err
    beside = json.loads((tmp_path / "gen" / "results.json").read_text())["beside"]
    assert [p["name"] for p in beside] == ["glove-50d (score): definitions-train-sample"]
    assert "## Other runs on the plane (--beside)" in (tmp_path / "gen" / "report.md").read_text()
    tmp_path = tmp_path / "gen"
    print("\n" + out)
    res = json.loads((tmp_path / "results.json").read_text())
    entry = res["datasets"][0]
    assert set(entry["generation"]) == {"full", "context", "word", "choice"}
    full = entry["generation"]["full"]
    assert full["orders"] == 2 and len(full["per_order"]) == 2 and 0 <= full["consistency"] <= 1
    assert abs(full["majority"] - entry["all"]["ablations"]["full"]["accuracy"]) < 1e-9
    report = (tmp_path / "report.md").read_text()
    assert "#### Generated answers" in report and "Generative method" in report
    exchanges = _jsonl(tmp_path / "responses.jsonl")
    assert len(exchanges) == 3 * 4 * 2  # items x conditions x orders
    # choices are shown in seeded orders: never the file's own order for every item
    assert any(e["option_order"] != sorted(e["option_order"]) for e in exchanges if e["ask"] == "choice")


@pytest.mark.parametrize("kind, rows_file", [("wic", "items.jsonl"), ("wsd", "items.jsonl")])
def test_eval_word_in_context(sets, chat_cache, tmp_path, kind, rows_file):
    code, out, err = run("eval", "--model", "smollm2-135m", "--method", "generate", "--device", "cpu",
                         "--dataset", sets / kind, "--limit", "4", "--out", tmp_path)
    assert code == 0, err
    print("\n" + out)
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["generation"]["asks"] == res["metrics"]["units"]
    _rederive(tmp_path, res["files"]["rows"])
    ask = _jsonl(tmp_path / "responses.jsonl")[0]
    assert ask["ask"] == ("yes-no" if kind == "wic" else "sense")


def test_served_chat_equals_in_process(vllm, sets, chat_cache, tmp_path):
    base, key, _ = vllm
    common = ["--method", "generate", "--dataset", sets / "coda21-clean-hard", "--limit", "4"]
    code, _, err = run("eval", "--model", "smollm2-135m", "--device", "cpu", "--dtype", "float32", *common, "--out", tmp_path / "local")
    assert code == 0, err
    code, out, err = run("eval", "--model", "smollm2", "--api-base", base, *common, "--out", tmp_path / "api",
                         env={"OPENAI_API_KEY": key})
    assert code == 0, err
    print("\n" + out)
    _rederive(tmp_path / "api", "groups.jsonl")
    a, b = (_jsonl(tmp_path / d / "responses.jsonl") for d in ("local", "api"))
    same = sum(x["messages"] == y["messages"] for x, y in zip(a, b))
    print(f"served vs in-process: {same} of {len(a)} exchanges identical")
    assert same >= len(a) - 1  # float32 both; one late token may flip on a near-tie
    res = json.loads((tmp_path / "api" / "results.json").read_text())
    assert res["scorer"]["backend"]["api_base"] == base and key not in json.dumps(res)


def test_bias_served_wic(vllm, sets, chat_cache, tmp_path):
    base, key, _ = vllm
    code, out, err = run("bias", "--model", "smollm2", "--api-base", base, "--method", "generate", "--dataset", sets / "wic",
                         "--limit", "6", "--bootstrap", "200", "--out", tmp_path, env={"OPENAI_API_KEY": key})
    assert code == 0, err
    print("\n" + out)
    entry = json.loads((tmp_path / "results.json").read_text())["datasets"][0]
    assert set(entry["generation"]) == {"full", "context", "word"}


@pytest.mark.parametrize("extra, needles", [
    (["--reduction", "mean"], ["--reduction does not apply to --method generate"]),
    (["--length-norm", "chars"], ["--length-norm does not apply to --method generate"]),
])
def test_scoring_options_refused(sets, extra, needles):
    code, _, err = run("eval", "--model", "smollm2-135m", "--method", "generate", "--dataset", RELEASE / "definitions-train-sample.jsonl",
                       *extra)
    assert_one_line_error(code, err, *needles)


def test_generate_options_need_the_method(sets):
    code, _, err = run("eval", "--model", "smollm2-135m", "--permutations", "3", "--dataset", sets / "coda21-clean-hard")
    assert_one_line_error(code, err, "--permutations applies to --method generate only")
    code, _, err = run("bias", "--model", "smollm2-135m", "--prompts", "x.yaml", "--dataset", sets / "coda21-clean-hard")
    assert_one_line_error(code, err, "--prompts applies to --method generate only")


def test_model_without_chat_template(sets):
    code, _, err = run("eval", "--model", "minilm-l6", "--method", "generate", "--dataset", sets / "coda21-clean-hard", "--limit", "1")
    assert_one_line_error(code, err, "minilm-l6")
