"""``probegen view`` (issue 29): the page that shows every item of real runs, in Debian's Chromium.

Real runs, built once for the module: glove-50d and minilm-l6 evaluated on the WordNetQA release
sample (definitions, 40 rows) with two texts made hostile (a choice holding ``<script>`` and one
holding an ``<img onerror>`` breakout), a minilm-l6 bias run on the same rows (its point on the
bias plane is defined), and glove-50d on the three-group CoDA21 file. Every expectation (counts,
the wrong-only filter, a distractor-type filter, the comparison counts) is computed here from the
runs' own ``items.jsonl`` / ``groups.jsonl``, independently of the page. Every request that leaves
the page fails the test, and the page is opened from ``file://``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run
from study_page import browser  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample" / "definitions-train-sample.jsonl"
CODA3 = Path(__file__).parent / "data" / "coda21_three_groups.json"
SCRIPT = "<script>window.pwned=1</script>"
IMG = '"><img src=x onerror=window.pwned=1>'
CLOSE = "</script><script>window.pwned=2</script>"


def rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    if not RELEASE.is_file():
        pytest.skip(f"{RELEASE} is not there (../shared/data)")
    root = tmp_path_factory.mktemp("view")
    data = rows(RELEASE)
    data[0]["question"]["choices"][1]["text"] = SCRIPT  # distractors: the gold stays what it was
    data[0]["question"]["choices"][2]["text"] = IMG
    data[1]["question"]["choices"][3]["text"] = CLOSE
    ds = root / "definitions-xss.jsonl"
    ds.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    out = {"ds": ds, "xss_ids": [data[0]["id"], data[1]["id"]]}
    for name, argv in {
        "glove": ["eval", "--model", "glove-50d", "--dataset", ds],
        "minilm": ["eval", "--model", "minilm-l6", "--dataset", ds],
        "bias": ["bias", "--model", "minilm-l6", "--dataset", ds, "--bootstrap", 200],
        "coda": ["eval", "--model", "glove-50d", "--dataset", CODA3],
    }.items():
        out[name] = root / name
        code, _, err = run(*argv, "--out", out[name])
        assert code == 0, err
    page = root / "page.html"
    code, stdout, err = run("view", out["glove"], out["minilm"], out["bias"], out["coda"], "--out", page)
    assert code == 0, err
    assert stdout.strip() == str(page)  # the page's path, on stdout
    out["page"] = page
    return out


@pytest.fixture
def open_page(browser):  # noqa: F811
    """Open a page from disk; every request other than the page itself is recorded and aborted."""
    pages = []

    def opener(path: Path, fragment: str = ""):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        left: list[str] = []
        url = path.resolve().as_uri()

        def guard(route):
            if route.request.url.split("#", 1)[0] == url:
                route.continue_()
            else:
                left.append(route.request.url)
                route.abort()

        ctx.route("**/*", guard)
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)  # a CSP refusal included
        page.goto(url + fragment)
        page.wait_for_selector("body[data-ready='1']", timeout=20000)
        pages.append((ctx, left, errors))
        return page

    yield opener
    for ctx, left, errors in pages:
        ctx.close()
        assert left == [], f"the page made requests: {left}"
        assert errors == [], errors


def listed(page) -> list[str]:
    """Ids of every item the filters keep (all pages)."""
    ids = []
    while True:
        ids += page.eval_on_selector_all("#list-body tr", "rs => rs.map(r => r.dataset.id)")
        if page.is_disabled("#next"):
            return ids
        page.click("#next")


def choose(page, select: str, value: str) -> None:
    page.select_option(select, value)


def test_open_counts_and_the_wrong_only_filter(runs, open_page):
    items = rows(runs["minilm"] / "items.jsonl")
    page = open_page(runs["page"], "#run=1")
    assert page.get_attribute("#count", "data-shown") == str(len(items))
    assert listed(page) == [r["id"] for r in items]
    choose(page, "#f-ok", "wrong")
    wrong = [r["id"] for r in items if not r["correct"]]
    assert 0 < len(wrong) < len(items)
    assert page.get_attribute("#count", "data-shown") == str(len(wrong))
    assert listed(page) == wrong
    choose(page, "#f-ok", "right")
    assert listed(page) == [r["id"] for r in items if r["correct"]]
    choose(page, "#f-ok", "")
    choose(page, "#f-dt", "sister")  # distractor type
    assert listed(page) == [r["id"] for r in items if r["distractor_type"] == "sister"]
    page.fill("#f-q", "PWNED")  # free text over words and definitions
    page.wait_for_timeout(400)
    want = [r["id"] for r in items if r["distractor_type"] == "sister" and "pwned" in json.dumps(r["choices"]).lower()]
    assert listed(page) == want


def test_groups_filter_and_matrix(runs, open_page):
    groups = rows(runs["coda"] / "groups.jsonl")
    page = open_page(runs["page"], "#run=3")
    assert page.get_attribute("#count", "data-shown") == str(len(groups))
    for status, keep in (("wrong", lambda g: all(p != q for p, q in zip(g["pred"], g["gold"]))),
                         ("right", lambda g: g["pred"] == g["gold"]),
                         ("partly", lambda g: g["pred"] != g["gold"] and any(p == q for p, q in zip(g["pred"], g["gold"])))):
        choose(page, "#f-ok", status)
        assert listed(page) == [g["id"] for g in groups if keep(g)], status
    choose(page, "#f-ok", "")
    g = groups[0]
    page.click(f"#list-body tr[data-id='{g['id']}']")
    cells = page.locator("#detail table.matrix td.cell")
    assert cells.count() == g["k"] ** 2
    chosen = page.eval_on_selector_all("#detail table.matrix tbody tr", "trs => trs.map(tr => [...tr.querySelectorAll('td.cell')].findIndex(td => td.classList.contains('chosen')))")
    gold = page.eval_on_selector_all("#detail table.matrix tbody tr", "trs => trs.map(tr => [...tr.querySelectorAll('td.cell')].findIndex(td => td.classList.contains('gold')))")
    assert chosen == g["pred"] and gold == g["gold"]
    assert page.locator("#detail ol.defs li").count() == g["k"]  # the definitions as the columns show them
    page.click("#tab-figures")  # a bar of the group-accuracy histogram opens its groups
    def tenth(x: dict) -> int:  # JavaScript's Math.round, half up
        return math.floor(x["correct"] * 10 + 0.5)

    page.click(f"svg rect.bar[data-bin='{tenth(g)}']")
    assert listed(page) == [x["id"] for x in groups if tenth(x) == tenth(g)]


def test_compare_two_runs(runs, open_page):
    a = {r["id"]: r["correct"] for r in rows(runs["glove"] / "items.jsonl")}
    b = {r["id"]: r["correct"] for r in rows(runs["minilm"] / "items.jsonl")}
    want = {"both": [i for i in a if a[i] and b[i]], "onlyA": [i for i in a if a[i] and not b[i]],
            "onlyB": [i for i in a if not a[i] and b[i]], "neither": [i for i in a if not a[i] and not b[i]]}
    assert all(want.values()), want  # every cell is exercised
    page = open_page(runs["page"], "#tab=compare")
    assert page.input_value("#cmp-a").startswith("0~") and page.input_value("#cmp-b").startswith("1~")
    for cat, ids in want.items():
        assert page.text_content(f"#cmp-table button[data-cat='{cat}']").startswith(f"{len(ids)} ("), cat
    for cat, ids in want.items():
        page.click("#tab-compare")
        page.click(f"#cmp-table button[data-cat='{cat}']")
        assert listed(page) == ids, cat


def test_bias_plane_point_opens_its_items_and_conditions_side_by_side(runs, open_page):
    res = json.loads((runs["bias"] / "results.json").read_text())
    entry = res["datasets"][0]
    assert entry["all"]["ratios"]["bias_c"]["value"] is not None
    page = open_page(runs["page"], "#tab=figures")
    point = page.locator("#plane circle.point[data-run='2']")
    assert point.count() == 1
    point.click()
    assert page.get_attribute("#panel-items", "hidden") is None
    full = rows(runs["bias"] / entry["files"]["full"])
    assert listed(page) == [r["id"] for r in full]
    assert "set=" in page.evaluate("location.hash")
    page.click(f"#list-body tr[data-id='{full[2]['id']}']")
    seen = {(r["condition"], r["id"]): r for r in rows(runs["bias"] / entry["files"]["units"])}
    conds = page.eval_on_selector_all("#detail section.cond", "ss => ss.map(s => s.dataset.cond)")
    assert conds == [c for c in entry["ablation_order"] if c in entry["files"]]
    shown = page.eval_on_selector_all("#side table.queries td", "tds => tds.map(t => t.textContent)")
    assert shown == [seen[(c, full[2]["id"])]["queries"][0] or "(empty query)" for c in conds]
    # each condition's decision, as its rows file has it
    for c in conds:
        row = next(r for r in rows(runs["bias"] / entry["files"][c]) if r["id"] == full[2]["id"])
        status = page.get_attribute(f"#detail section.cond[data-cond='{c}']", "class")
        assert ("right" if row["correct"] else "wrong") in status.split()


def test_hostile_texts_stay_text(runs, open_page):
    page = open_page(runs["page"])
    for run_index in (0, 1, 2):
        for rid in runs["xss_ids"]:
            set_name = runs["ds"].stem
            page.evaluate(f"location.hash = {json.dumps(f'#run={run_index}&item={run_index}~{set_name}~{rid}')}")
            page.wait_for_selector(f"#detail h2:text-is('{rid}')")
            text = page.text_content("#detail")
            assert (SCRIPT in text and IMG in text) if rid == runs["xss_ids"][0] else CLOSE in text
    page.fill("#f-q", "pwned")
    page.wait_for_timeout(400)
    assert page.evaluate("window.pwned") is None
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 2  # the data block and the page's own script
    html = runs["page"].read_text(encoding="utf-8")
    assert SCRIPT not in html and "<img" not in html and html.count("</script>") == 2
    csp = page.get_attribute("meta[http-equiv='Content-Security-Policy']", "content")
    assert csp.startswith("default-src 'none'; script-src 'sha256-") and "unsafe" not in csp


def test_link_keeps_filters_and_the_open_item_and_keys_move(runs, open_page):
    items = rows(runs["glove"] / "items.jsonl")
    page = open_page(runs["page"], "#run=0")
    choose(page, "#f-ok", "wrong")
    page.keyboard.press("j")
    first_wrong = [r["id"] for r in items if not r["correct"]]
    assert page.text_content("#detail h2") == first_wrong[0]
    page.keyboard.press("j")
    assert page.text_content("#detail h2") == first_wrong[1]
    link = page.evaluate("location.hash")
    again = open_page(runs["page"], link)  # a new page from the link alone
    assert again.text_content("#detail h2") == first_wrong[1]
    assert again.input_value("#f-ok") == "wrong" and again.get_attribute("#count", "data-shown") == str(len(first_wrong))
    again.keyboard.press("Escape")
    assert again.is_hidden("#detail")


def test_screenshot(runs, open_page, tmp_path):
    """The README's screenshot, written to docs/ only with PROBEGEN_UPDATE_SCREENSHOT=1."""
    page = open_page(runs["page"], f"#run=2&item=2~{runs['ds'].stem}~{runs['xss_ids'][0]}")
    out = ROOT / "docs" / "view.png" if os.environ.get("PROBEGEN_UPDATE_SCREENSHOT") == "1" else tmp_path / "view.png"
    page.screenshot(path=str(out))
    assert out.stat().st_size > 20_000


def test_big_pages_open_and_filter_fast(runs, open_page, tmp_path):
    """2,000 bias rows (the real run's items repeated under new ids) open and filter in < 2 s."""
    from probegen.view.load import load_runs
    from probegen.view.page import page_html

    model = load_runs([runs["bias"]])
    base = model["items"]
    model["items"] = [{**it, "id": f"{it['id']}#{n}"} for n in range(2000 // len(base) + 1) for it in base][:2000]
    path = tmp_path / "big.html"
    path.write_text(page_html(model), encoding="utf-8")
    t0 = time.perf_counter()
    page = open_page(path)
    choose(page, "#f-ok", "wrong")
    page.fill("#f-q", "the")
    page.wait_for_timeout(200)
    elapsed = time.perf_counter() - t0 - 0.2
    assert page.get_attribute("#count", "data-shown") is not None
    assert elapsed < 2.0, elapsed


def test_cli_refuses_and_defaults(runs, tmp_path, monkeypatch):
    mine = tmp_path / "notes.html"
    mine.write_text("mine")
    code, _, err = run("view", runs["glove"], "--out", mine)
    assert_one_line_error(code, err, "probegen did not write it")
    assert mine.read_text() == "mine"
    code, _, err = run("view", runs["glove"], "--out", runs["glove"] / "view.html")
    assert code == 1 and "probegen: error:" in err  # never into a run (an input)
    code, _, err = run("view", tmp_path / "nothing")
    assert_one_line_error(code, err, "does not exist")
    broken = tmp_path / "broken"
    shutil.copytree(runs["glove"], broken)
    (broken / ".probegen-output.json").unlink()  # an edited run without its marker: rows are still checked
    lines = (broken / "items.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"scores": [', '"scores": ["x", ')
    (broken / "items.jsonl").write_text("\n".join(lines) + "\n")
    code, _, err = run("view", broken, "--out", tmp_path / "b.html")
    assert_one_line_error(code, err, f"{broken / 'items.jsonl'}:3:")
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run("view", runs["glove"])
    assert code == 0, err
    assert stdout.strip() == str(Path("probegen_out") / "views" / "glove.html")
    code, stdout, err = run("view", runs["glove"])  # its own page is replaced
    assert code == 0, err


def test_serve_answers_the_page_and_its_data_on_loopback(runs):
    import threading
    import urllib.request

    from probegen.view.load import load_runs
    from probegen.view.serve import make_server

    srv = make_server(load_runs([runs["glove"]]), "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        base = f"http://127.0.0.1:{srv.server_port}"
        with urllib.request.urlopen(base + "/") as r:
            body = r.read().decode()
            assert "connect-src 'self'" in r.headers["Content-Security-Policy"]
        assert '<script type="application/json" id="data"></script>' in body
        with urllib.request.urlopen(base + "/data.json") as r:
            assert len(json.loads(r.read())["items"]) == len(rows(runs["glove"] / "items.jsonl"))
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


def test_serve_stops_on_ctrl_c_with_130(runs):
    """``probegen view --serve`` binds 127.0.0.1, answers, and Ctrl-C exits 130 within seconds."""
    import signal
    import subprocess
    import sys
    import urllib.request

    exe = Path(sys.executable).with_name("probegen")
    proc = subprocess.Popen([str(exe), "view", str(runs["glove"]), "--serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving the view of 1 run(s) on http://127.0.0.1:"), line
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        with urllib.request.urlopen(url + "data.json", timeout=10) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)  # the server bounds its own stop (probegen.serving); this only guards the suite
        assert code == 130, proc.stderr.read()
        assert proc.stderr.read().strip().endswith("probegen: error: interrupted")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


GENERATE_RUN = Path(__file__).parent / "data" / "view" / "smollm2-generate-4p"


def test_generate_run_shows_raw_answers_parse_errors_and_option_orders(open_page, tmp_path, monkeypatch):
    """A real --method generate run (SmolLM2, recorded): the prompt, the raw answer, the option
    order; a hostile raw answer and parse error stay text."""
    monkeypatch.chdir(ROOT)  # the run names its dataset relative to the repository
    gen = tmp_path / "gen"
    shutil.copytree(GENERATE_RUN, gen)
    ex = rows(gen / "responses.jsonl")
    ex[0]["messages"][-1]["content"] = "A. " + SCRIPT
    ex[0]["errors"] = [IMG]
    (gen / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ex))
    page_file = tmp_path / "gen.html"
    code, _, err = run("view", gen, "--out", page_file)
    assert code == 0, err
    unit = ex[0]["unit"]
    page = open_page(page_file, f"#item=0~wordnetqa_release_four_probes~{unit}")
    text = page.text_content("#detail")
    assert "A. " + SCRIPT in text and IMG in text  # the raw answer and the parse error, as text
    assert ex[0]["messages"][1]["content"].split("\n")[0] in text  # the prompt
    shown = " ".join(f"{chr(65 + p)}={chr(65 + j)}" for p, j in enumerate(ex[0]["option_order"]))
    assert shown in text  # the option order the model saw
    assert page.evaluate("window.pwned") is None and page.evaluate("document.querySelectorAll('img').length") == 0
