"""Issue 36 §5-6 in ``probegen view``: the compare tab's paired test (accuracy difference with a paired
cluster-bootstrap CI, exact McNemar, Holm over every pair of the page) and, with ``--items DIR``, each
item's statistics and flags, a 'flagged' filter and the clickable item map; in headless Chromium."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run
from scipy.stats import binomtest
from study_page import browser  # noqa: F401 - the fixture
from test_view import listed, open_page  # noqa: F401 - the fixtures and helpers of the viewer's tests

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordnetqa-release-sample" / \
    "definitions-train-sample.jsonl"


def rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Two eval runs (glove-50d, minilm-l6) on the WordNetQA release sample, their `probegen items`
    folder and the page viewing both with --items."""
    if not RELEASE.is_file():
        pytest.skip(f"{RELEASE} is not there (../shared/data)")
    root = tmp_path_factory.mktemp("viewitems")
    out = {name: root / name for name in ("glove", "minilm", "items")}
    for name, model in (("glove", "glove-50d"), ("minilm", "minilm-l6")):
        code, _, err = run("eval", "--model", model, "--dataset", RELEASE, "--out", out[name])
        assert code == 0, err
    code, _, err = run("items", out["glove"], out["minilm"], "--out", out["items"])
    assert code == 0, err
    out["page"] = root / "page.html"
    code, _, err = run("view", out["glove"], out["minilm"], "--items", out["items"], "--out", out["page"])
    assert code == 0, err
    return out


def flagged_ids(items_dir: Path) -> dict[str, str]:
    with open(items_dir / "items.csv", newline="", encoding="utf-8") as fh:
        return {r["item"]: r["flags"] for r in csv.DictReader(fh) if r["flags"]}


def test_flagged_filter_shows_only_flagged_items_and_their_statistics(built, open_page):  # noqa: F811
    order = [r["id"] for r in rows(built["glove"] / "items.jsonl")]
    flagged = flagged_ids(built["items"])
    assert 0 < len(flagged) < len(order)
    page = open_page(built["page"], "#run=0")
    assert page.is_visible("#f-flag")
    page.select_option("#f-flag", "flagged")
    assert listed(page) == [i for i in order if i in flagged]
    page.select_option("#f-flag", "unflagged")
    assert listed(page) == [i for i in order if i not in flagged]
    page.select_option("#f-flag", "")
    first = next(i for i in order if i in flagged)
    page.click(f"#list-body tr[data-id='{first}']")
    text = page.text_content("#item-stats")
    assert "flagged: " + flagged[first].split(";")[0] in text and "discrimination" in text


def test_a_click_on_the_item_map_opens_the_item(built, open_page):  # noqa: F811
    flagged = flagged_ids(built["items"])
    page = open_page(built["page"], "#tab=figures")
    points = page.locator("#item-map circle.imap-point")
    assert points.count() == len(rows(built["glove"] / "items.jsonl"))
    assert page.locator("#item-map circle.imap-point.flagged").count() == len(flagged)
    with open(built["items"] / "items.csv", newline="", encoding="utf-8") as fh:
        recs = list(csv.DictReader(fh))
    top = {(r["b"], r["a"]): r["item"] for r in recs}  # at each place the last point drawn is the one on top
    target = next(i for i in top.values() if i in flagged)
    page.click(f"#item-map circle.imap-point[data-id='{target}']")  # a real mouse click at the point
    page.wait_for_selector("#detail:not([hidden])")
    assert page.text_content("#detail h2") == target
    assert page.get_attribute("#tab-items", "aria-selected") == "true"
    assert "#" in page.url and "item=" in page.url  # the link keeps the open item


def test_compare_tab_shows_the_paired_test(built, open_page):  # noqa: F811
    a = {r["id"]: r["correct"] for r in rows(built["glove"] / "items.jsonl")}
    b = {r["id"]: r["correct"] for r in rows(built["minilm"] / "items.jsonl")}
    only_a = sum(1 for i in a if a[i] and not b[i])
    only_b = sum(1 for i in a if b[i] and not a[i])
    page = open_page(built["page"], "#tab=compare")
    stats = page.locator("#cmp-stats")
    diff = float(stats.get_attribute("data-diff"))
    assert diff == pytest.approx(sum(a.values()) / len(a) - sum(b.values()) / len(b))
    assert float(stats.get_attribute("data-p")) == pytest.approx(binomtest(only_a, only_a + only_b, 0.5).pvalue, rel=1e-5)
    assert f"{only_a} only A right, {only_b} only B right" in stats.text_content()
    assert page.locator("#pairs-table tbody tr").count() == 1  # two runs, one condition: one pair
    # swapped sides: the difference changes sign
    page.select_option("#cmp-a", page.input_value("#cmp-b"))
    page.select_option("#cmp-b", [o for o in page.eval_on_selector_all("#cmp-b option", "os => os.map(o => o.value)")
                                  if o.startswith("0~")][0])
    assert float(page.get_attribute("#cmp-stats", "data-diff")) == pytest.approx(-diff)


def test_items_folder_that_does_not_fit_is_one_line(built, tmp_path):
    code, _, err = run("view", built["glove"], "--items", tmp_path, "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "no items.csv")
    other = tmp_path / "other"
    other.mkdir()
    (other / "items.csv").write_text("item,unit,k,n,p,p_human,p_models,item_rest,b,b_lo,b_hi,a,a_lo,a_hi,c,outfit,flags\n"
                                     "zz,zz,4,2,0.5,,0.5,,0,,,1,,,0,1,\n", encoding="utf-8")
    code, _, err = run("view", built["glove"], "--items", other, "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "none of its 1 items")
    assert not (tmp_path / "p.html").exists()
