"""The documentation site builds strict (`make docs`): no broken link, anchor or figure snippet.

One real `mkdocs build --strict` of mkdocs.yml (the pages in docs/, the API reference generated from
the docstrings, the figure tables included from docs/figures/), and one of a copy of docs/ with a
broken link, a broken anchor and a missing snippet planted, which must fail naming each. The README's
relative links (docs/*.md, with anchors) are checked against the files and the built pages, since
GitHub shows the README, not mkdocs.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "mkdocs.yml"

pytest.importorskip("mkdocs", reason="mkdocs is in the [test] extra (make test installs it)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict`, from the repository root as `make docs` runs it (snippet paths are relative to it)."""
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = _build(CONFIG, out)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def _ids(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_site_builds_strict_with_every_page(site: Path) -> None:
    nav_pages = re.findall(r":\s*([\w-]+\.md)\s*$", CONFIG.read_text(encoding="utf-8"), flags=re.M)
    assert len(nav_pages) >= 20, nav_pages
    for name in nav_pages:
        assert (site / name.replace(".md", ".html")).is_file(), name
    # every page in docs/ is in the nav (the figure snippets and the griffe extension are not pages)
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages == set(nav_pages), pages ^ set(nav_pages)
    # the snippets were included, not left as directives; no page fetches a font or script from the web
    for page in site.glob("*.html"):
        body = page.read_text(encoding="utf-8")
        assert "--8&lt;--" not in body and "--8<--" not in body, page.name
        assert "fonts.googleapis" not in body and "googletagmanager" not in body, page.name


def test_api_reference_is_generated_from_docstrings(site: Path) -> None:
    text = _text(site / "api.html")
    for name in ("probegen.score", "probegen.bias", "probegen.run.api.Run", "probegen.tasks.Task",
                 "Subsettable", "SpecBuildable", "probegen.tasks.register", "probegen.scorers.Scorer",
                 "probegen.core.Unit", "ENTRY_POINT_GROUP"):
        assert name in text, name
    # a docstring's words reach the page (Run's), and Sphinx roles are rendered as code, not as ':class:'
    assert "One finished run: its folder" in text
    assert ":class:" not in text and ":func:" not in text


def test_readme_links_resolve(site: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in local), "the README links into docs/"
    # GitHub's anchors of the README's own headings: lower case, punctuation dropped, spaces to hyphens
    own = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
           for h in re.findall(r"^#+ (.+)$", readme, flags=re.M)}
    for link in local:
        path, _, anchor = link.partition("#")
        if not path:
            assert anchor in own, f"README links to a missing heading: {link}"
            continue
        assert (REPO / path).exists(), f"README links to a missing file: {link}"
        if anchor:
            assert path.startswith("docs/") and path.endswith(".md"), link
            page = site / Path(path).relative_to("docs").with_suffix(".html")
            assert anchor in _ids(page), f"README links to a missing anchor: {link}"


def test_readme_first_screen_has_the_tour_and_the_bias_report() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[2:6] == ["```bash", lines[3], lines[4], "```"] and lines[3].startswith("make demo") \
        and lines[4].startswith("make test"), "the two set-up commands come first"
    first = "\n".join(lines[:60])
    assert "<!-- docs-test: tour -->\n```bash" in first
    assert "probegen eval " in first and "probegen bias " in first and "report.md" in first
    assert len(lines) <= 200, f"the README is {len(lines)} lines: the rest belongs in docs/"


def _planted_build(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    """Build a copy of docs/ with ``text`` appended to the tutorial.

    The copy's API reference keeps its headings but not its ``:::`` directives (mkdocstrings reads the sources
    beside mkdocs.yml, and the real build above covers it), so the build checks what is planted: pages, links,
    anchors, snippets."""
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    api = (docs / "api.md").read_text(encoding="utf-8")  # its headings and text, without the ::: directives
    (docs / "api.md").write_text(re.sub(r"^::: .*\n(?:    .*\n)*", "", api, flags=re.M), encoding="utf-8")
    with (docs / "tutorial.md").open("a", encoding="utf-8") as f:
        f.write("\n\n" + text + "\n")
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    config["docs_dir"] = str(docs)
    config["plugins"] = [p for p in config["plugins"] if not (isinstance(p, dict) and "mkdocstrings" in p)]
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            ext["pymdownx.snippets"]["base_path"] = [str(tmp_path)]
    copy = tmp_path / "mkdocs.yml"
    copy.write_text(yaml.safe_dump(config), encoding="utf-8")
    return _build(copy, tmp_path / "site")


def test_the_copy_builds_when_nothing_is_planted(tmp_path: Path) -> None:
    """The control for the two tests below: the same copy, with a good link and anchor, builds."""
    proc = _planted_build(tmp_path, "See [bias diagnostics](bias.md#others-files-the-wordnetqa-release-and-dictionaryqa).")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_broken_link_and_anchor_fail_the_build(tmp_path: Path) -> None:
    proc = _planted_build(tmp_path, "See [a page that is not there](no-such-page.md) and "
                                    "[a section that is not there](bias.md#no-such-section).")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "no-such-page.md" in out and "#no-such-section" in out, out


def test_missing_figure_snippet_fails_the_build(tmp_path: Path) -> None:
    proc = _planted_build(tmp_path, '--8<-- "docs/figures/no-such-figure.md"')
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "no-such-figure.md" in out, out
