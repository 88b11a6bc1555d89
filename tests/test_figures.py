"""The measured tables of the docs are generated, not typed: docs/figures/*.md from bench/results/*.json.

Rendering the committed results must reproduce the committed figures byte for byte (a hand edit or
a figure not re-rendered after a new result fails), every table must name the machine, commit and
date of its result file, and the bench scripts' ``--out`` must write that provenance (bench_gpu's
CPU smoke run on three real CoDA21 groups).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
FIGURES = REPO / "docs" / "figures"
sys.path.insert(0, str(BENCH))

import benchlib  # noqa: E402
import render_figures  # noqa: E402

PROVENANCE = re.compile(r"^\*Result `bench/results/(?P<file>[\w.-]+)\.json` \(`bench/\w+\.py`\): machine (?P<machine>.+); "
                        r"commit (?P<commit>[0-9a-f]{7,40}(-dirty)?|unknown); date (?P<date>\d{4}-\d\d-\d\dT[\d:]+\+00:00)\.\*$")


def test_committed_figures_are_the_render_of_the_committed_results(tmp_path):
    """bench/render_figures.py over bench/results/ writes exactly the committed docs/figures/*.md."""
    assert render_figures.main(["--results", str(BENCH / "results"), "--out", str(tmp_path)]) == 0
    for name in render_figures.FIGURES:
        committed = FIGURES / f"{name}.md"
        assert committed.is_file(), f"{committed} is missing: run `python bench/render_figures.py`"
        assert (tmp_path / f"{name}.md").read_bytes() == committed.read_bytes(), (
            f"docs/figures/{name}.md is not the render of bench/results/: edited by hand or stale; "
            "run `python bench/render_figures.py` (or `make bench`)")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.md" for n in render_figures.FIGURES)


def tables_and_lines(text: str) -> list[tuple[int, str]]:
    """(index of the line after each Markdown table, the provenance line that covers it): the first line after
    the table that is a provenance line or a heading, so tables of one result (a figure's accuracy and
    pairs tables) share the line under the last of them, and a heading before any provenance fails."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            after = next((ln for ln in lines[j:] if ln.startswith(("*Result `", "#"))), "")
            out.append((j, after))
            i = j
        else:
            i += 1
    return out


@pytest.mark.parametrize("name", render_figures.FIGURES)
def test_every_table_names_its_machine_commit_and_date(name):
    """Under each table of each figure (committed and freshly rendered) the line naming its result file's
    machine, commit and date; a figure without its result says which script makes it."""
    for text in ((FIGURES / f"{name}.md").read_text(encoding="utf-8"), render_figures.render(BENCH / "results")[name]):
        check_provenance(name, text)


def check_provenance(name: str, text: str) -> None:
    tables = tables_and_lines(text)
    if not tables:  # no result file yet: the figure says which script makes it instead
        assert "*No result yet for " in text, f"docs/figures/{name}.md has no table and does not say why"
    for _, line in tables:
        m = PROVENANCE.match(line)
        assert m, f"docs/figures/{name}.md: a table is not followed by its provenance line: {line!r}"
        doc = json.loads((BENCH / "results" / f"{m['file']}.json").read_text(encoding="utf-8"))
        assert m["commit"] == doc["commit"] and m["date"] == doc["date"]
        assert m["machine"] == render_figures.machine_text(doc["machine"]) and m["machine"]


def test_a_new_result_changes_its_figure_and_names_the_new_commit(tmp_path):
    """A result from another commit shows in the figure (a stale figure is visible by its commit)."""
    results = tmp_path / "results"
    results.mkdir()
    doc = json.loads((BENCH / "results" / "bench_generate.json").read_text(encoding="utf-8"))
    doc["commit"], doc["rows"][0]["groups"] = "abcdef1-dirty", 999
    (results / "bench_generate.json").write_text(json.dumps(doc), encoding="utf-8")
    text = render_figures.render(results)["papers"]
    assert "commit abcdef1-dirty;" in text and "| 999 (" in text
    assert "No result yet for CoDA21 accuracy against Table 2" in text  # bench_papers.json absent: said, not blank


def test_machine_and_commit_are_recorded():
    m = benchlib.machine()
    assert m["cpu"] and m["cores"] >= 1 and isinstance(m["cpu_flags"], list) and m["python"] and m["torch"]
    assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", benchlib.commit())


@pytest.mark.real
def test_bench_gpu_out_writes_rows_with_machine_commit_and_date(clean_hard_nouns, tmp_path, monkeypatch):
    """bench_gpu.py --cpu-smoke --out: the JSON has the table, the machine, the commit and the date."""
    from probegen.coda21.dataset import Coda21Dataset, write
    from probegen.scorers import _budget

    d = write(Coda21Dataset(clean_hard_nouns.groups[:3], dict(clean_hard_nouns.manifest)), tmp_path / "ds")
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH / "bench_gpu.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(_budget, "START_TOKENS", _budget.START_TOKENS)
    monkeypatch.setattr(_budget, "budget_path", _budget.budget_path)
    out = tmp_path / "results" / "bench_gpu_smoke.json"
    table = bench.main(["--cpu-smoke", "--dataset", str(d), "--shapes", "smollm2-135m", "--out", str(out)])
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["bench"] == "bench_gpu" and doc["smoke"] is True and len(doc["rows"]) == len(table) > 0
    assert doc["machine"]["device"].startswith("CPU") and doc["machine"]["cores"] >= 1 and doc["machine"]["cpu"]
    assert doc["commit"] == benchlib.commit() and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]+\+00:00", doc["date"])
    # a smoke run is no GPU figure: the gpu page says what to run instead of showing CPU numbers
    assert "No result yet for the GPU table" in render_figures.render(out.parent)["gpu"]


# ---- no typed measured table in the docs ------------------------------------------------------------------------

#: a body cell that starts with a number (after bold/italic marks or a sign): ".196 [...]", "0 / 4", "+0.001", "20 x 100"
NUMERIC_CELL = re.compile(r"^[*_\s]*[-+]?(\d|\.\d)")
#: or holds a decimal number ("noun .413 (.137)"), not a version ("inspect-ai 0.3.285")
DECIMAL = re.compile(r"(?<![\w.])[-+]?\d*\.\d+(?![\w.])")
#: a table whose body cells are at least this share numeric is a measured figure; reference tables (options,
#: formats, messages, what maps to what) score 0.11 at most, the generated figures 0.6 and above
MEASURED_SHARE = 0.3
#: measured tables still typed, by (page, first header cell), with the reason; nothing else may be
TYPED_EXCEPTIONS: dict[tuple[str, str], str] = {}


def markdown_tables(text: str) -> list[tuple[int, list[str], list[list[str]]]]:
    """(line number, header cells, body rows of cells) of every pipe table in ``text``."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|\s*:?-{3,}", lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            split = [[c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))] for ln in lines[i:j]]
            out.append((i + 1, split[0], split[2:]))
            i = j
        else:
            i += 1
    return out


def typed_measured_tables(text: str) -> list[tuple[int, str, float]]:
    """(line, first header cell, numeric share) of each table of ``text`` that looks measured."""
    found = []
    for line, header, body in markdown_tables(text):
        cells = [c for row in body for c in row if c]
        share = sum(bool(NUMERIC_CELL.match(c) or DECIMAL.search(c)) for c in cells) / max(len(cells), 1)
        if share >= MEASURED_SHARE:
            found.append((line, header[0], share))
    return found


def doc_pages() -> list[Path]:
    return sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_measured_table_is_typed_in_a_page(page):
    """A table whose cells are mostly numbers comes from docs/figures (a ``--8<--`` include rendered from
    bench/results/), never typed into a page, unless it is a listed exception with its reason."""
    name = str(page.relative_to(REPO))
    typed = [(line, head, share) for line, head, share in typed_measured_tables(page.read_text(encoding="utf-8"))
             if (name, head) not in TYPED_EXCEPTIONS]
    assert not typed, (f"{name}: measured tables typed by hand (line, first header, numeric share): {typed}; "
                       "write them from a bench script's result file (bench/render_figures.py -> docs/figures/) "
                       "and include them with --8<--")


def test_the_typed_table_rule_tells_figures_from_reference_tables():
    """The rule catches a planted typed figure, passes a reference table, and every exception still exists."""
    planted = "| model | accuracy | seconds |\n|---|---:|---:|\n| glove-50d | .375 [.225, .525] | 12.5 |\n| minilm-l6 | 0.725 | 9 |\n"
    reference = ("| option | meaning |\n| --- | --- |\n| `--limit N` | the first N units |\n| `--seed` | the seed |\n"
                 "| `--format inspect-log` | inspect-ai 0.3.285 eval log |\n")
    in_words = "| spec | size | accuracy (random) |\n| --- | --- | --- |\n| `a` | n 16 groups | noun .259 (.179) |\n"
    assert [h for _, h, _ in typed_measured_tables(in_words)] == ["spec"]  # numbers inside words count too
    assert [h for _, h, _ in typed_measured_tables("text\n\n" + planted)] == ["model"]
    assert typed_measured_tables(reference) == []
    for page, head in TYPED_EXCEPTIONS:
        heads = [h for _, h, _ in typed_measured_tables((REPO / page).read_text(encoding="utf-8"))]
        assert head in heads, f"exception ({page}, {head}) no longer matches a typed table: remove it"
    for name in render_figures.FIGURES:  # the generated figures themselves are measured tables by the same rule
        text = (FIGURES / f"{name}.md").read_text(encoding="utf-8")
        assert typed_measured_tables(text) or "No result yet" in text, name


def test_every_figure_is_included_by_a_page():
    """Each docs/figures/X.md is shown somewhere (a --8<-- include), so a generated figure is not orphaned."""
    pages = "\n".join(p.read_text(encoding="utf-8") for p in doc_pages())
    for name in render_figures.FIGURES:
        assert f'--8<-- "docs/figures/{name}.md"' in pages, f"docs/figures/{name}.md is included by no page"
