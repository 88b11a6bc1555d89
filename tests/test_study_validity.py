"""Human studies measure what model bias measures (issue 18, part 5), on a real study.

The dataset is a real ``probegen make wordnetqa --probe all`` set (real WordNet 3.0, 12 concepts
per probe); its study (``--n 10``, seed 0) samples 4 synonymy questions. A synonymy question's
Context version is its Full version and its Word version names the gold, so ``probegen bias``
keeps synonymy out of Bias_C/Bias_W; the study keeps the same items out of Context and Word
(shown in Full only), scores the human ratios and the guesses on the items left, and puts the
model on the study's items on the same footing. The page's instructions are checked against
what the page shows, item by item, in Debian's Chromium driven by Playwright; a wrong token
gets a readable page, API clients JSON.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from cli_checks import run
from study_page import ThreadServer


@pytest.fixture(scope="module")
def allprobes(tmp_path_factory) -> Path:
    """``probegen make wordnetqa --probe all --limit 12``: the four probe types, real WordNet."""
    out = tmp_path_factory.mktemp("wqa") / "wordnetqa-all"
    code, _, err = run("make", "wordnetqa", "--probe", "all", "--limit", 12, "--out", out)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def study(allprobes, tmp_path_factory) -> Path:
    """The study of the golden recipe: 10 items, 2 annotators per condition, 4 shared."""
    out = tmp_path_factory.mktemp("study") / "s"
    code, stdout, err = run("study", "make", allprobes, "--n", 10, "--annotators", 2, "--overlap", 4, "--out", out)
    assert code == 0, err
    assert "kept out of context: 4 item(s)" in stdout and "kept out of word: 4 item(s)" in stdout
    return out


def rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


def probe_of(allprobes: Path, study: Path) -> dict[str, str]:
    """Study uid -> the probe type of its dataset item (read from the dataset, not from the study)."""
    from probegen.wordnetqa.dataset import load

    items = {it.id: it for it in load(allprobes).items}
    return {g["uid"]: items[g["dataset_id"]].probe for g in rows(study / "gold.jsonl")}


def test_synonymy_items_are_kept_out_of_context_and_word_and_counted(allprobes, study):
    from probegen.wordnetqa.task import EXCLUDED_RATIOS as MC_EXCLUDED

    probe = probe_of(allprobes, study)
    syn = {u for u, p in probe.items() if p == "synonymy"}
    assert len(probe) == 10 and len(syn) == 4  # the sample really holds synonymy questions
    ann = json.loads((study / "assignment.json").read_text())["annotators"]
    shown = {c: {u for a in ann.values() if a["condition"] == c for u in a["items"]} for c in ("full", "context", "word")}
    assert shown["full"] == set(probe)  # Full keeps every sampled item
    assert shown["context"] == shown["word"] == set(probe) - syn  # and nothing else is left out
    served = {(r["condition"], r["uid"]) for r in rows(study / "items.jsonl")}
    assert not any((c, u) in served for u in syn for c in ("context", "word"))  # no view of them is even written
    # the manifest counts them under bias's own reasons
    m = json.loads((study / "manifest.json").read_text())
    assert m["counts"]["per_condition"] == {"full": 10, "context": 6, "word": 6}
    assert m["counts"]["kept_out"] == {"context": {MC_EXCLUDED["synonymy"]["bias_c"]: 4},
                                       "word": {MC_EXCLUDED["synonymy"]["bias_w"]: 4}}
    assert m["counts"]["per_annotator"] == {"full-1": 7, "full-2": 7, "context-1": 5, "context-2": 5, "word-1": 5, "word-2": 5}
    # what the rule is about holds on the real items: Context = Full, and the Word stem names a gold lemma
    views = {(r["condition"], r["uid"]): r["view"] for r in rows(study / "items.jsonl")}
    gold = {g["uid"]: g for g in rows(study / "gold.jsonl")}
    for u in syn:
        full = views[("full", u)]
        assert "_____" not in full["prompt"] and full["marks"] == []  # no target word to hide or highlight
        assert gold[u]["words"][0][0] in full["choices"][gold[u]["gold"]]
    for u in set(probe) - syn:  # the kept items really hide the word in Context
        assert "_____" in views[("context", u)]["prompt"] and views[("context", u)]["prompt"] != views[("full", u)]["prompt"]
    # the CSV export says it as the CSV shows it: the highlighted word in [brackets], none in a synonymy stem
    import csv

    assert run("study", "export", study, "--out", study.parent / "s.csv")[0] == 0
    for r in csv.DictReader(open(study.parent / "s.csv", newline="")):
        if r["condition"] == "full":
            assert ("word in [brackets]" in r["instructions"]) == (r["item"] not in syn) == ("[" in r["prompt"]), r


def test_human_and_model_ratios_and_guesses_are_on_the_kept_items(allprobes, study, tmp_path):
    from probegen.study.store import AnswerLog, load_study

    s = tmp_path / "s"
    shutil.copytree(study, s)
    st = load_study(s)
    gold, log = st.gold(), AnswerLog(st)
    # full: all right; context: right, guesses right; word: all wrong
    for aid, a in st.annotators.items():
        for uid in a["items"]:
            g = gold[uid]
            ans = (g["gold"] + 1) % g["n"] if a["condition"] == "word" else g["gold"]
            log.submit(aid, uid, ans, g["words"][0][0] if a["condition"] == "context" else None)
    bias_dir = tmp_path / "bias"
    code, _, err = run("bias", "--model", "glove-50d", "--dataset", allprobes, "--no-controls", "--bootstrap", 200, "--out", bias_dir)
    assert code == 0, err
    code, out, err = run("study", "score", s, "--model", bias_dir, "--bootstrap", 200, "--out", tmp_path / "score")
    assert code == 0, err
    res = json.loads((tmp_path / "score" / "results.json").read_text())
    kept = {u for u, g in gold.items() if "kept_out" not in g}
    assert len(kept) == 6
    c = res["conditions"]
    assert (c["full"]["n_items"], c["context"]["n_items"], c["word"]["n_items"]) == (10, 6, 6)
    assert (c["full"]["n_planned"], c["context"]["n_planned"], c["word"]["n_planned"]) == (10, 6, 6)
    assert c["context"]["guess"] == {"n": 10, "accuracy": 1.0}  # 2 x (2 shared + 3 dealt out), no synonymy stem
    assert res["bias"]["n_units"] == 6
    assert res["bias"]["ratios"]["bias_c"]["value"] == pytest.approx(1.0)
    assert res["bias"]["ratios"]["bias_w"]["value"] == pytest.approx((0 - 0.2) / 0.8)
    # the model on the study: its Context/Word figures and its ratios leave the same items out
    m = res["models"][0]
    for cond in ("context", "word"):
        recs = {r["id"]: r for r in rows(bias_dir / allprobes.name / f"{cond}.jsonl")}
        want = np.mean([float(recs[gold[u]["dataset_id"]]["correct"]) for u in sorted(kept)])
        assert m["conditions"][cond]["n_items"] == 6 and m["conditions"][cond]["accuracy"] == pytest.approx(want)
    assert m["conditions"]["full"]["n_items"] == 10 and m["bias"]["n_units"] == 6
    report = (tmp_path / "score" / "report.md").read_text()
    assert "Kept out of Context by design" in report and "Kept out of Word by design" in report
    assert "4 items: a synonymy stem is the definition alone" in report
    assert "kept out of context by design" in out and "4 item(s)" in out


# ---- the page in a real headless browser -------------------------------------------------------------
def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def test_a_wrong_token_gets_a_readable_page_and_api_clients_json(study, tmp_path, browser):
    s = tmp_path / "s"
    shutil.copytree(study, s)
    tokens = json.loads((s / "tokens.json").read_text())
    wrong = tokens["full-1"][:-3] + "xyz"
    srv = ThreadServer(s)
    try:
        page = browser.new_page()
        for path, status, title in ((f"/a/{wrong}", 403, "This link does not work"), ("/a/", 404, "Page not found"),
                                    ("/nothing/here", 404, "Page not found")):
            resp = page.goto(srv.base + path)
            assert resp.status == status and resp.headers["content-type"].startswith("text/html"), path
            text = page.inner_text("body")
            assert title in text and "link you were given" in text and "{" not in text, text
            assert page.locator("#error-page h2").is_visible()  # styled by the study's stylesheet: a page, not a dump
            assert wrong not in page.content() and not any(t in page.content() for t in tokens.values())
        # API clients: JSON errors on the API paths, and on the page path when they ask for JSON
        for url, accept in ((f"{srv.base}/api/{wrong}/state", None), (f"{srv.base}/api/{wrong}/state", "text/html"),
                            (f"{srv.base}/a/{wrong}", "application/json")):
            code, ctype, body = get(url, accept)
            assert code == 403 and ctype.startswith("application/json") and json.loads(body)["error"] == "unknown annotator token"
        code, ctype, body = get(f"{srv.base}/api/{tokens['full-1']}/nothing")
        assert code == 404 and ctype.startswith("application/json")
        # the right token still gets the annotator page
        resp = page.goto(f"{srv.base}/a/{tokens['full-1']}")
        assert resp.status == 200
        page.wait_for_selector("#task:not([hidden])")
    finally:
        srv.close()


def check_instructions_match(page, cond: str) -> None:
    """What the instructions say is on the page is there, and what they do not mention is not."""
    said = page.inner_text("#instructions")
    targets, blanks = page.locator("#prompt .target"), page.locator("#prompt .blank")
    if "highlighted word" in said:
        assert targets.count() >= 1 and targets.first.is_visible(), said
        assert targets.first.evaluate("e => getComputedStyle(e).backgroundColor") not in ("rgba(0, 0, 0, 0)", "transparent")
    else:
        assert targets.count() == 0, said
    if "hidden (_____)" in said:
        assert blanks.count() >= 1 and blanks.first.is_visible() and page.locator("#guess").is_visible(), said
    else:
        assert blanks.count() == 0 and page.locator("#guess-box").is_hidden(), said
    assert ("without a sentence" in said) == (cond == "word")


def test_the_instructions_describe_each_page_as_it_is(study, tmp_path, browser):
    from playwright.sync_api import expect

    s = tmp_path / "s"
    shutil.copytree(study, s)
    ann = json.loads((s / "assignment.json").read_text())["annotators"]
    gold = {g["uid"]: g for g in rows(s / "gold.jsonl")}
    tokens = json.loads((s / "tokens.json").read_text())
    seen: dict[str, set[str]] = {}
    srv = ThreadServer(s)
    try:
        page = browser.new_page()
        for aid in ("full-1", "full-2", "context-1", "word-1"):
            cond, items = ann[aid]["condition"], ann[aid]["items"]
            page.goto(f"{srv.base}/a/{tokens[aid]}")
            for j, uid in enumerate(items):
                page.wait_for_selector(f"#task[data-item='{uid}']")
                check_instructions_match(page, cond)
                seen.setdefault(cond, set()).add(page.inner_text("#instructions").split(".")[0])
                if cond == "context":
                    page.fill("#guess", gold[uid]["words"][0][0])
                    page.press("#guess", "Enter")
                page.keyboard.press(str(gold[uid]["gold"] + 1))
                page.keyboard.press("Enter")
                expect(page.locator("#progress-text")).to_have_text(f"{j + 1} of {len(items)} answered", timeout=10000)
    finally:
        srv.close()
    # Full shows both kinds of question: a word in a sentence (highlighted) and a synonymy question (no word)
    assert seen["full"] == {"Read the text and pick the answer that fits the highlighted word as it is used there",
                            "Read the question and pick the answer that fits it best"}
    assert len(seen["context"]) == len(seen["word"]) == 1
