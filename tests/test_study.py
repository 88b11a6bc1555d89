"""Human studies: make (sampling, assignment, gold apart), answers (validation, durability),
CSV round trip, scoring (accuracy CIs, Cohen's kappa, human bias, model-human gap), and two
real headless-browser runs of the annotator page (Debian's Chromium driven by Playwright).

Data: a WordNetQA definitions set generated from the real WordNet with a small config, and
``tests/data/coda21_three_groups.json``: three real clean-hard noun groups (WordNet 3.0 +
SemCor 3.0, first-context choice) exported in the original CoDA21 schema.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score
from study_page import ThreadServer

from probegen.commands.cli import cli
from probegen.study.design import StudyConfig, build_study, write_study
from probegen.study.store import AnswerLog, load_study, read_answers
from probegen.study.views import MASK

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CODA_JSON = HERE / "data" / "coda21_three_groups.json"


def run(*args: str):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def one_line_error(code: int, err: str, *needles: str) -> None:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("probegen: error:"), err
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture(scope="module")
def wqa(tmp_path_factory):
    """A real WordNetQA definitions set (real WordNet, 80 concepts)."""
    from probegen.wordnetqa import dataset as D
    from probegen.wordnetqa.config import WordNetQAConfig

    out = tmp_path_factory.mktemp("wqa") / "wordnetqa-definitions"
    D.write(D.build(WordNetQAConfig(probes=("definitions",), max_concepts=80, seed=0), progress=False, log=lambda m: None), out)
    return out


def make(dataset, out, **kw) -> Path:
    write_study(build_study(dataset, StudyConfig(**kw)), out)
    return out


def gold_of(study: Path) -> dict[str, dict]:
    return {r["uid"]: r for r in map(json.loads, (study / "gold.jsonl").read_text().splitlines())}


def assignment(study: Path) -> dict[str, dict]:
    return json.loads((study / "assignment.json").read_text())["annotators"]


def wrong(g: dict, ans):
    """A wrong answer of the same shape (a group: the first two rows swapped)."""
    if g["kind"] == "mc":
        return (g["gold"] + 1) % g["n"]
    a = list(g["gold"])
    a[0], a[1] = a[1], a[0]
    return a


# ---- make ------------------------------------------------------------------------------------------
def test_make_samples_assigns_and_keeps_gold_apart(wqa, tmp_path):
    code, out, err = run("study", "make", wqa, "--n", 10, "--annotators", 2, "--overlap", 4, "--out", tmp_path / "s")
    assert code == 0, err
    s = tmp_path / "s"
    assert "/a/" in out  # links with tokens are listed
    m = json.loads((s / "manifest.json").read_text())
    assert m["kind"] == "study" and m["n"] == 10 and m["conditions"] == ["full", "context", "word"]
    assert len(m["dataset"]["fingerprint"]) == 64 and m["seed"] == 0
    ann = assignment(s)
    assert sorted(ann) == ["context-1", "context-2", "full-1", "full-2", "word-1", "word-2"]
    gold = gold_of(s)
    assert len(gold) == 10
    for cond in ("full", "context", "word"):
        a, b = ann[f"{cond}-1"], ann[f"{cond}-2"]
        assert len(a["items"]) == len(b["items"]) == 7  # 4 shared + 6 dealt out in turn
        shared = set(a["items"]) & set(b["items"])
        assert shared == set(a["shared"]) == set(b["shared"]) and len(shared) == 4
        assert set(a["items"]) | set(b["items"]) == set(gold)  # every item answered at least once
    # one item per concept cluster; what annotators get names no synset and no gold
    assert len({g["unit"] for g in gold.values()}) == 10
    visible = (s / "items.jsonl").read_text() + (s / "assignment.json").read_text()
    for g in gold.values():
        assert g["dataset_id"] not in visible and g["unit"] not in visible
    for row in map(json.loads, (s / "items.jsonl").read_text().splitlines()):
        assert set(row) == {"uid", "condition", "view"} and set(row["view"]) == {"kind", "prompt", "choices", "marks"}
    assert oct((s / "tokens.json").stat().st_mode & 0o777) == "0o600"


def test_same_seed_gives_identical_files_but_fresh_tokens(wqa, tmp_path):
    a = make(wqa, tmp_path / "a", n=6, annotators=2, overlap=2)
    b = make(wqa, tmp_path / "b", n=6, annotators=2, overlap=2)
    for f in ("items.jsonl", "assignment.json", "gold.jsonl", "manifest.json"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    ta, tb = (json.loads((x / "tokens.json").read_text()) for x in (a, b))
    assert ta.keys() == tb.keys() and all(ta[k] != tb[k] and len(ta[k]) >= 24 for k in ta)
    c = make(wqa, tmp_path / "c", n=6, annotators=2, overlap=2, seed=1)
    assert (a / "gold.jsonl").read_bytes() != (c / "gold.jsonl").read_bytes()


def test_views_hide_the_target_by_span(wqa, tmp_path):
    from probegen.wordnetqa.dataset import load

    s = make(wqa, tmp_path / "s", n=8, annotators=1, overlap=0)
    items = {it.id: it for it in load(wqa).items}
    gold = gold_of(s)
    rows = [json.loads(ln) for ln in (s / "items.jsonl").read_text().splitlines()]
    for r in rows:
        it = items[gold[r["uid"]]["dataset_id"]]
        p = r["view"]["prompt"]
        marked = [p[a:b] for a, b in r["view"]["marks"]]
        if r["condition"] == "full":  # the word highlighted where it stands: in the sentence and in the stem
            assert p == it.question and marked == [it.context.text[slice(*it.context.char_span)], it.surface]
        elif r["condition"] == "context":
            assert it.context.replaced(MASK) in p and f'"{MASK}"' in p and marked == []  # hidden in the sentence and the stem
        else:
            assert it.context.text not in p and marked == [it.surface]  # the word, no sentence
        assert r["view"]["choices"] == list(it.choices)


def test_coda21_original_json_groups_align_with_shuffled_definitions(tmp_path):
    from probegen.coda21.dataset import load

    s = make(CODA_JSON, tmp_path / "s", conditions=("full", "context", "word"), n=3, annotators=1, overlap=0)
    groups = {g.id: g for g in load(CODA_JSON).groups}
    gold = gold_of(s)
    rows = {(r["condition"], r["uid"]): r["view"] for r in map(json.loads, (s / "items.jsonl").read_text().splitlines())}
    assert any(g["gold"] != list(range(g["n"])) for g in gold.values())  # gold not recoverable from order
    for uid, g in gold.items():
        grp = groups[g["dataset_id"]]
        assert sorted(g["gold"]) == list(range(grp.k))
        for cond in ("full", "context", "word"):
            v = rows[(cond, uid)]
            assert v["kind"] == "align" and len(v["rows"]) == grp.k
            for r, it in enumerate(grp.items):
                assert v["definitions"][g["gold"][r]] == it.definition
                left, mid, right = v["rows"][r]
                if cond == "full":
                    assert left + mid + right == it.context.text and mid == it.context.word
                elif cond == "context":
                    assert mid == MASK and left + it.context.word + right == it.context.text
                else:
                    assert (left, mid, right) == ("", it.context.word, "")


@pytest.mark.real
def test_make_on_a_generated_coda21_directory(clean_hard_nouns, tmp_path):
    from probegen.coda21.dataset import write

    write(clean_hard_nouns, tmp_path / "coda21-clean-hard")
    code, out, err = run("study", "make", tmp_path / "coda21-clean-hard", "--n", 20, "--annotators", 2, "--overlap", 10,
                         "--out", tmp_path / "s")
    assert code == 0, err
    m = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert m["unit"] == "group" and m["counts"]["per_annotator"]["full-1"] == 15
    assert m["dataset"]["fingerprint"] == clean_hard_nouns.fingerprint


def test_make_errors_are_one_line(wqa, tmp_path):
    one_line_error(*run("study", "make", wqa, "--n", 5, "--out", tmp_path / "a")[::2], "--overlap 50 exceeds --n 5")
    one_line_error(*run("study", "make", wqa, "--conditions", "full,mask", "--overlap", 0, "--out", tmp_path / "a")[::2], "unknown condition 'mask'")
    one_line_error(*run("study", "make", wqa, "--n", 500, "--overlap", 0, "--out", tmp_path / "a")[::2], "only 80 usable concept clusters")
    one_line_error(*run("study", "make", wqa, "--n", 4, "--annotators", 1, "--overlap", 2, "--out", tmp_path / "a")[::2], "at least 2 annotators")
    one_line_error(*run("study", "make", tmp_path / "nope", "--out", tmp_path / "a")[::2], "does not exist")
    make(wqa, tmp_path / "b", n=4, annotators=1, overlap=0)
    one_line_error(*run("study", "make", wqa, "--n", 4, "--overlap", 0, "--out", tmp_path / "b")[::2], "never overwritten")
    assert not (tmp_path / "a").exists() and not list(tmp_path.glob(".a*"))


def test_serve_on_a_busy_port_is_one_line(wqa, tmp_path):
    s = make(wqa, tmp_path / "s", conditions=("full",), n=2, annotators=1, overlap=0)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        one_line_error(*run("study", "serve", s, "--port", busy.getsockname()[1])[::2], "cannot listen on 127.0.0.1")
    one_line_error(*run("study", "serve", tmp_path / "nope")[::2], "does not exist")


# ---- answers ---------------------------------------------------------------------------------------
def test_server_rejects_foreign_items_tokens_and_bad_bodies(wqa, tmp_path):
    from probegen.study.server import create_app

    s = make(wqa, tmp_path / "s", conditions=("full", "context"), n=4, annotators=2, overlap=2)
    tokens = json.loads((s / "tokens.json").read_text())
    ann, gold = assignment(s), gold_of(s)
    c = create_app(s).test_client()
    full, ctx = tokens["full-1"], tokens["context-1"]
    mine = ann["full-1"]["items"][0]
    foreign = next(u for u in gold if u not in ann["full-1"]["items"])
    assert c.get("/a/not-a-token").status_code == 403
    assert c.get("/api/not-a-token/state").status_code == 403
    r = c.post("/api/not-a-token/answer", json={"item": mine, "answer": 0})
    assert r.status_code == 403 and "error" in r.get_json()
    state = c.get(f"/api/{full}/state").get_json()
    assert [it["item"] for it in state["items"]] == ann["full-1"]["items"] and state["answered"] == {}
    assert "gold" not in json.dumps(state) and all("answer" not in it for it in state["items"])
    assert c.post(f"/api/{full}/answer", json={"item": foreign, "answer": 0}).status_code == 403
    for bad in ({"item": mine}, {"item": mine, "answer": 7}, {"item": mine, "answer": [0]}, {"item": mine, "answer": True}):
        r = c.post(f"/api/{full}/answer", json=bad)
        assert r.status_code == 400 and r.get_json()["error"], bad
    assert c.post(f"/api/{full}/answer", data="{not json", content_type="application/json").status_code == 400
    assert c.post(f"/api/{full}/answer", json={"item": mine, "answer": 1, "guess": "x"}).status_code == 400  # no guess in full
    cm = ann["context-1"]["items"][0]
    assert c.post(f"/api/{ctx}/answer", json={"item": cm, "answer": 1}).status_code == 400  # guess first
    assert c.post(f"/api/{ctx}/answer", json={"item": cm, "answer": 1, "guess": "  dog "}).status_code == 200
    ok = c.post(f"/api/{full}/answer", json={"item": mine, "answer": "C"})
    assert ok.status_code == 200 and ok.get_json()["stored"] and ok.get_json()["answered"] == 1
    again = c.post(f"/api/{full}/answer", json={"item": mine, "answer": 2})
    assert again.status_code == 200 and not again.get_json()["stored"]  # a retry is a no-op
    assert c.post(f"/api/{full}/answer", json={"item": mine, "answer": 3}).status_code == 409
    recs = read_answers(s / "answers" / "full-1.jsonl")
    assert [(r["item"], r["answer"]) for r in recs] == [(mine, 2)]
    assert read_answers(s / "answers" / "context-1.jsonl")[0]["guess"] == "dog"
    assert c.get(f"/api/{full}/state").get_json()["answered"] == {mine: {"answer": 2, "guess": None}}


def test_a_torn_last_line_is_dropped_and_never_glued(wqa, tmp_path):
    s = make(wqa, tmp_path / "s", conditions=("full",), n=3, annotators=1, overlap=0)
    study = load_study(s)
    items = study.annotators["full-1"]["items"]
    AnswerLog(study).submit("full-1", items[0], 0)
    path = s / "answers" / "full-1.jsonl"
    with open(path, "a") as fh:
        fh.write('{"annotator": "full-1", "item": "')  # a crash mid-append: never acknowledged
    assert [r["item"] for r in read_answers(path)] == [items[0]]
    log = AnswerLog(study)
    assert set(log.answered["full-1"]) == {items[0]}
    log.submit("full-1", items[1], 1)
    assert [r["item"] for r in read_answers(path)] == items[:2]
    assert path.read_text().count("\n") == 2


# ---- scoring ---------------------------------------------------------------------------------------
def answer_plan(study: Path, wrong_when) -> dict[str, dict[str, object]]:
    """annotator -> item -> answer, gold unless ``wrong_when(annotator, position, uid)``."""
    gold, plan = gold_of(study), {}
    for aid, a in assignment(study).items():
        plan[aid] = {u: (wrong(gold[u], None) if wrong_when(aid, j, u) else gold[u]["gold"]) for j, u in enumerate(a["items"])}
    return plan


def store(study: Path, plan, guess_right=True) -> None:
    st = load_study(study)
    log = AnswerLog(st)
    gold = st.gold()
    for aid, answers in plan.items():
        for uid, ans in answers.items():
            guess = None
            if st.annotators[aid]["condition"] == "context":
                words = [w[0] if guess_right else "zzz" for w in gold[uid]["words"]]
                guess = words if gold[uid]["kind"] == "align" else words[0]
            log.submit(aid, uid, ans, guess)


def expected(study: Path, plan) -> dict[str, float]:
    """Item accuracy per condition computed by hand: mean over items of the mean over annotators."""
    gold, ann = gold_of(study), assignment(study)
    out = {}
    for cond in ("full", "context", "word"):
        per: dict[str, list[float]] = {}
        for aid, answers in plan.items():
            if ann[aid]["condition"] != cond:
                continue
            for u, a in answers.items():
                g = gold[u]
                per.setdefault(u, []).append(float(a == g["gold"]) if g["kind"] == "mc" else float(np.mean(np.array(a) == g["gold"])))
        if per:
            out[cond] = float(np.mean([np.mean(v) for v in per.values()]))
    return out


def test_score_accuracy_kappa_and_bias_on_known_answers(wqa, tmp_path):
    s = make(wqa, tmp_path / "s", n=20, annotators=2, overlap=10)
    ann = assignment(s)
    # full: all right; context: annotator 2 wrong on every shared item; word: both wrong on every third item
    shared = set(ann["full-1"]["shared"])
    plan = answer_plan(s, lambda aid, j, u: (aid == "context-2" and u in set(ann["context-2"]["shared"]))
                       or (aid.startswith("word") and int(u[1:]) % 3 == 0))
    store(s, plan)
    code, out, err = run("study", "score", s, "--bootstrap", 500)
    assert code == 0, err
    res = json.loads((s / "score" / "results.json").read_text())
    want = expected(s, plan)
    c = res["conditions"]
    assert c["full"]["accuracy"] == 1.0 and c["full"]["ci"] == [1.0, 1.0]
    assert c["context"]["accuracy"] == pytest.approx(want["context"]) == pytest.approx(0.75)  # 10 shared at .5, 10 single at 1
    assert c["word"]["accuracy"] == pytest.approx(want["word"]) == pytest.approx(14 / 20)
    for cond in ("context", "word"):
        lo, hi = c[cond]["ci"]
        assert 0 <= lo < c[cond]["accuracy"] < hi <= 1
    assert c["full"]["chance"] == pytest.approx(0.2) and c["full"]["n_annotations"] == 30
    # kappa: full agree everywhere; context: 2 always wrong on the overlap -> the sklearn value on those labels
    assert c["full"]["agreement"]["pairs"][0]["kappa"] == pytest.approx(1.0)
    shared_ctx = sorted(ann["context-1"]["shared"])
    k = cohen_kappa_score([str(plan["context-1"][u]) for u in shared_ctx], [str(plan["context-2"][u]) for u in shared_ctx])
    assert c["context"]["agreement"]["pairs"][0]["kappa"] == pytest.approx(k) and k < 0.5
    assert c["context"]["agreement"]["pairs"][0]["items"] == len(shared) == 10
    assert c["context"]["guess"] == {"n": 30, "accuracy": 1.0}
    # bias with the chance baseline: (M - .2) / (1 - .2)
    r = res["bias"]["ratios"]
    assert r["bias_c"]["value"] == pytest.approx((0.75 - 0.2) / 0.8)
    assert r["bias_w"]["value"] == pytest.approx((0.7 - 0.2) / 0.8)
    assert r["bias_c"]["ci"][0] < r["bias_c"]["value"] < r["bias_c"]["ci"][1]
    assert (s / "score" / "bias_plane.png").read_bytes()[:4] == b"\x89PNG"
    report = (s / "score" / "report.md").read_text()
    assert "0.750" in report and "Bias_C = 0.69" in report
    assert "full" in out and "Bias_C" in out


def test_score_with_a_real_bias_run_gives_the_gap_table_and_bias_human(wqa, tmp_path):
    s = make(wqa, tmp_path / "s", conditions=("full", "context", "word"), n=10, annotators=1, overlap=0)
    plan = answer_plan(s, lambda aid, j, u: aid == "word-1" and j < 5)
    store(s, plan)
    bias_dir = tmp_path / "bias"
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", wqa, "--no-controls", "--bootstrap", 200, "--out", bias_dir,
                       "--human", s)
    assert code == 0, err
    code, out, err = run("study", "score", s, "--model", bias_dir, "--bootstrap", 200, "--out", tmp_path / "score")
    assert code == 0, err
    res = json.loads((tmp_path / "score" / "results.json").read_text())
    gold = gold_of(s)
    for cond in ("full", "context", "word"):
        recs = {r["id"]: r for r in map(json.loads, (bias_dir / wqa.name / f"{cond}.jsonl").read_text().splitlines())}
        model_acc = np.mean([float(recs[g["dataset_id"]]["correct"]) for g in gold.values()])
        m = res["models"][0]["conditions"][cond]
        assert m["accuracy"] == pytest.approx(model_acc)
        assert m["gap"] == pytest.approx(res["conditions"][cond]["accuracy"] - model_acc)
    assert res["conditions"]["word"]["accuracy"] == 0.5
    assert "Table 5" in (tmp_path / "score" / "report.md").read_text()
    # probegen bias --human: the human point beside the model's on the plane, and in results and report
    bres = json.loads((bias_dir / "results.json").read_text())
    assert bres["human"][0]["accuracy"]["word"] == 0.5
    assert bres["human"][0]["bias"]["ratios"]["bias_w"]["value"] == pytest.approx((0.5 - 0.2) / 0.8)
    assert "Human baselines" in (bias_dir / "report.md").read_text()
    # a bias run on another dataset is named in a one-line error
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text(json.dumps({"model": "x", "datasets": [{"name": "coda21-x", "path": "/x", "files": {"full": "a"}}]}))
    one_line_error(*run("study", "score", s, "--model", other, "--out", tmp_path / "o")[::2], "has no dataset")


def test_score_before_any_answer_is_one_line(wqa, tmp_path):
    s = make(wqa, tmp_path / "s", conditions=("full",), n=3, annotators=1, overlap=0)
    one_line_error(*run("study", "score", s)[::2], "no answers yet")
    one_line_error(*run("study", "score", tmp_path / "nope")[::2], "does not exist")


# ---- CSV -------------------------------------------------------------------------------------------
def test_csv_round_trip_and_bad_rows_with_line_numbers(tmp_path):
    import csv

    from probegen.study.csvio import format_answer

    s = make(CODA_JSON, tmp_path / "s", conditions=("full", "context"), n=3, annotators=2, overlap=1)
    code, out, err = run("study", "export", s, "--out", tmp_path / "a.csv")
    assert code == 0, err
    rows = list(csv.DictReader(open(tmp_path / "a.csv", newline="")))
    assert len(rows) == 8 and all(r["answer"] == "" for r in rows)  # 4 annotators x (1 shared + 1)
    assert "gold" not in (tmp_path / "a.csv").read_text().lower()
    gold = gold_of(s)
    plan: dict[str, dict] = {}
    for r in rows:
        g = gold[r["item"]]
        ans = g["gold"] if r["annotator"].endswith("1") else wrong(g, None)
        plan.setdefault(r["annotator"], {})[r["item"]] = ans
        r["answer"] = format_answer({"kind": "align", "rows": []}, ans)
        r["guess"] = "|".join(w[0] for w in g["words"]) if r["condition"] == "context" else ""
    with open(tmp_path / "b.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    code, out, err = run("study", "import", s, tmp_path / "b.csv")
    assert code == 0 and "imported 8" in out, err
    code, out, _ = run("study", "import", s, tmp_path / "b.csv")  # idempotent
    assert code == 0 and "imported 0" in out and "8 already stored" in out
    res_code, _, err = run("study", "score", s, "--bootstrap", 200)
    assert res_code == 0, err
    res = json.loads((s / "score" / "results.json").read_text())
    want = expected(s, plan)
    assert res["conditions"]["full"]["accuracy"] == pytest.approx(want["full"])
    assert res["conditions"]["context"]["guess"]["accuracy"] == 1.0
    # export shows the stored answers; a bad file names its lines and stores nothing
    run("study", "export", s, "--out", tmp_path / "c.csv")
    assert [r["answer"] for r in csv.DictReader(open(tmp_path / "c.csv", newline=""))] == [r["answer"] for r in rows]
    s2 = make(CODA_JSON, tmp_path / "s2", conditions=("full", "context"), n=3, annotators=2, overlap=1)
    bad = list(rows)
    bad[1] = dict(bad[1], answer="A,A,B,C,D")
    bad[3] = dict(bad[3], annotator="nobody")
    bad[5] = dict(bad[5], item="q9")
    with open(tmp_path / "bad.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(bad)
    code, _, err = run("study", "import", s2, tmp_path / "bad.csv")
    one_line_error(code, err, "3 bad row(s)", "permutation", "unknown annotator 'nobody'", "not assigned", "nothing imported")
    starts = [int(x.split()[1].rstrip(":")) for x in err.split("; ") if x.lstrip().startswith("line")]
    lines = (tmp_path / "bad.csv").read_text().splitlines()
    assert all(lines[n - 1].startswith(("full-", "context-", "nobody")) for n in starts)  # the rows' first lines
    assert not any((s2 / "answers").iterdir())
    (tmp_path / "nocol.csv").write_text("annotator,item\nfull-1,q1\n")
    one_line_error(*run("study", "import", s2, tmp_path / "nocol.csv")[::2], "missing column 'answer'")


def test_every_study_command_has_help_with_examples():
    for cmd in ("make", "serve", "score", "export", "import"):
        code, out, _ = run("study", cmd, "--help")
        assert code == 0 and "Examples:" in out, cmd
    code, out, _ = run("bias", "--help")
    assert "--human" in out


# ---- the page in a real headless browser -------------------------------------------------------------
def wait_answered(page, k: int, total: int) -> None:
    """The page counts an answer only once the server acknowledged it (stored and fsynced)."""
    from playwright.sync_api import expect

    expect(page.locator("#progress-text")).to_have_text(f"{k} of {total} answered", timeout=10000)


def answer_mc(page, uid: str, ans: int, how: str, guess: str | None) -> None:
    page.wait_for_selector(f"#task[data-item='{uid}']")
    assert page.locator("#mc").is_visible() and page.locator("#align").is_hidden()
    if guess is not None:
        page.fill("#guess", guess)
        page.press("#guess", "Enter")  # the guess first, then the answer
    if how == "digit":
        page.keyboard.press(str(ans + 1))
        page.keyboard.press("Enter")
    elif how == "letter":
        page.keyboard.press("abcde"[ans])
        page.keyboard.press("Enter")
    else:
        page.click(f"#choices li[data-index='{ans}']")
        page.click("#submit")


def answer_group(page, uid: str, ans: list[int], how: str, guesses: list[str] | None) -> None:
    page.wait_for_selector(f"#task[data-item='{uid}']")
    assert page.locator("#align").is_visible() and page.locator("#mc").is_hidden()
    if guesses is not None:
        inputs = page.locator("#rows input")
        for r, g in enumerate(guesses):
            inputs.nth(r).fill(g)
        inputs.nth(len(guesses) - 1).press("Enter")  # leaves the last guess box
    for r, d in enumerate(ans):
        if how == "keys":
            page.keyboard.press(str(r + 1))
            page.keyboard.press("abcdefghij"[d])
        else:
            page.click(f"#rows li[data-row='{r}'] .line")
            page.click(f"#defs li[data-index='{d}']")
    assert page.locator("#rows li.paired").count() == len(ans)
    if how == "keys":
        page.keyboard.press("Enter")
    else:
        page.click("#submit")


def test_browser_answers_a_study_end_to_end_with_a_reload(wqa, tmp_path, browser):
    mc = make(wqa, tmp_path / "mc", n=4, annotators=2, overlap=2)
    ann = assignment(mc)
    # full-1 right, full-2 wrong on its first item; context-1 wrong on its last; word-2 wrong on all but the first
    wrong_at = {("full-2", 0), ("context-1", 2), ("word-2", 1), ("word-2", 2)}
    plan = answer_plan(mc, lambda aid, j, u: (aid, j) in wrong_at)
    gold = gold_of(mc)
    how = {"full": "digit", "context": "letter", "word": "click"}
    srv = ThreadServer(mc)
    try:
        tokens = json.loads((mc / "tokens.json").read_text())
        page = browser.new_page()
        for aid, tok in tokens.items():
            cond = ann[aid]["condition"]
            page.goto(f"{srv.base}/a/{tok}")
            for j, uid in enumerate(ann[aid]["items"]):
                guess = gold[uid]["words"][0][0] if cond == "context" else None
                answer_mc(page, uid, plan[aid][uid], how[cond], guess)
                wait_answered(page, j + 1, 3)
                if aid == "context-2" and j == 1:  # reload mid-way: the page resumes at the third item
                    page.reload()
                    wait_answered(page, 2, 3)
                    assert page.get_attribute("#task", "data-item") == ann[aid]["items"][2]
                    assert "Welcome back" in page.inner_text("#status")
            page.wait_for_selector("#done:not([hidden])")
        # a CoDA21 study: groups aligned by clicks (full) and by keys with guesses (context), one pair swapped
        co = make(CODA_JSON, tmp_path / "co", conditions=("full", "context"), n=2, annotators=1, overlap=0)
        srv.close()
        srv = ThreadServer(co)
        cann, cgold = assignment(co), gold_of(co)
        cplan = answer_plan(co, lambda aid, j, u: aid == "context-1" and j == 0)
        for aid, tok in json.loads((co / "tokens.json").read_text()).items():
            cond = cann[aid]["condition"]
            page.goto(f"{srv.base}/a/{tok}")
            for j, uid in enumerate(cann[aid]["items"]):
                guesses = [w[0] for w in cgold[uid]["words"]] if cond == "context" else None
                answer_group(page, uid, cplan[aid][uid], "keys" if cond == "context" else "clicks", guesses)
                wait_answered(page, j + 1, 2)
            page.wait_for_selector("#done:not([hidden])")
    finally:
        srv.close()
    # what the browser stored is exactly the plan, and score gives the hand-computed numbers
    for study, p in ((mc, plan), (co, cplan)):
        stored = {aid: {r["item"]: r["answer"] for r in read_answers(study / "answers" / f"{aid}.jsonl")} for aid in p}
        assert stored == p
    code, _, err = run("study", "score", mc, "--bootstrap", 200)
    assert code == 0, err
    res = json.loads((mc / "score" / "results.json").read_text())
    want = expected(mc, plan)
    for cond in ("full", "context", "word"):
        assert res["conditions"][cond]["accuracy"] == pytest.approx(want[cond]), cond
        assert res["conditions"][cond]["n_annotations"] == 6
    assert res["conditions"]["context"]["guess"]["accuracy"] == 1.0
    assert res["bias"]["ratios"]["bias_w"]["value"] == pytest.approx((want["word"] - 0.2) / (want["full"] - 0.2))
    run("study", "score", co, "--bootstrap", 200)
    cres = json.loads((co / "score" / "results.json").read_text())
    assert cres["conditions"]["full"]["accuracy"] == 1.0
    k0 = cgold[cann["context-1"]["items"][0]]["n"]
    assert cres["conditions"]["context"]["accuracy"] == pytest.approx(((k0 - 2) / k0 + 1.0) / 2)  # one swap = 2 rows wrong
    assert cres["conditions"]["context"]["guess"]["accuracy"] == 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(study: Path, port: int, log: Path) -> subprocess.Popen:
    with open(log, "a") as fh:
        proc = subprocess.Popen([sys.executable, "-c", "from probegen.commands.cli import main; main()", "study", "serve", str(study), "--port", str(port)],
                                cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("server did not start within 60 s")


def test_browser_answers_survive_a_killed_server(wqa, tmp_path, browser):
    s = make(wqa, tmp_path / "s", conditions=("full",), n=5, annotators=1, overlap=0)
    items = assignment(s)["full-1"]["items"]
    gold = gold_of(s)
    tok = json.loads((s / "tokens.json").read_text())["full-1"]
    port = _free_port()
    proc = _start_server(s, port, tmp_path / "server.log")
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{port}/a/{tok}")
        given = {}
        for j, uid in enumerate(items[:3]):
            given[uid] = (gold[uid]["gold"] + j) % 5
            answer_mc(page, uid, given[uid], "digit", None)
            wait_answered(page, j + 1, 5)
        os.kill(proc.pid, signal.SIGKILL)  # no shutdown, no flush: only what was fsynced is left
        proc.wait(timeout=10)
        proc = _start_server(s, port, tmp_path / "server.log")
        page.reload()
        wait_answered(page, 3, 5)
        assert page.get_attribute("#task", "data-item") == items[3]
        state = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/{tok}/state").read())
        assert {u: a["answer"] for u, a in state["answered"].items()} == given
        answer_mc(page, items[3], gold[items[3]]["gold"], "click", None)
        wait_answered(page, 4, 5)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    stored = [(r["item"], r["answer"]) for r in read_answers(s / "answers" / "full-1.jsonl")]
    assert stored == list(given.items()) + [(items[3], gold[items[3]]["gold"])]
