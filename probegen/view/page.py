"""The ``probegen view`` page: one self-contained HTML file. The data is embedded as JSON that no text
from a run can end; a strict Content-Security-Policy allows only the page's own script and style.

>>> html = page_html({"version": 1, "runs": [], "items": [], "plane": []})
>>> "default-src 'none'" in html and "connect-src" not in html
True
>>> embed_json({"d": "</script><b>&"})
'{"d":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import escape
from pathlib import Path
from typing import Any

STATIC = Path(__file__).with_name("static")


def embed_json(model: Any) -> str:
    """``model`` as strict JSON safe inside a ``<script>`` element (no ``<``, ``>`` or ``&`` left)."""
    from ..io import finite_json

    text = json.dumps(finite_json(model), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def csp(script: str, style: str, served: bool = False) -> str:
    """The page's Content-Security-Policy: its own script and style only (``served``: and ``data.json``)."""
    parts = ["default-src 'none'", f"script-src {_sha(script)}", f"style-src {_sha(style)}", "img-src data:",
             "base-uri 'none'", "form-action 'none'"]
    if served:
        parts.append("connect-src 'self'")
    return "; ".join(parts)


def assets() -> tuple[str, str]:
    """(script, style) of the page."""
    return (STATIC / "view.js").read_text(encoding="utf-8"), (STATIC / "view.css").read_text(encoding="utf-8")


TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="@POLICY@">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>@STYLE@</style>
</head>
<body>
<header>
<h1>@TITLE@</h1>
<table id="runs"></table>
</header>
<nav role="tablist">
<button type="button" role="tab" id="tab-items">Items</button>
<button type="button" role="tab" id="tab-compare">Compare runs</button>
<button type="button" role="tab" id="tab-figures">Figures</button>
<span class="keys"><kbd>j</kbd>/<kbd>k</kbd> next/previous item, <kbd>/</kbd> search, <kbd>Esc</kbd> close, <kbd>n</kbd>/<kbd>p</kbd> pages, <kbd>1</kbd>-<kbd>3</kbd> tabs</span>
</nav>
<main>
<div id="left">
<div class="filters" aria-label="filters">
<select id="f-run" aria-label="run"></select>
<select id="f-set" aria-label="dataset"></select>
<select id="f-cond" aria-label="condition"></select>
<select id="f-ok" aria-label="correctness"></select>
<select id="f-pos" aria-label="part of speech"></select>
<select id="f-rel" aria-label="relation"></select>
<select id="f-hops" aria-label="hops"></select>
<select id="f-dt" aria-label="distractor type"></select>
<select id="f-flag" aria-label="item flags" hidden></select>
<input id="f-mmin" class="num" type="number" step="any" placeholder="margin &#8805;" aria-label="margin at least">
<input id="f-mmax" class="num" type="number" step="any" placeholder="margin &#8804;" aria-label="margin at most">
<input id="f-q" type="search" placeholder="search words, definitions, ids (/)" aria-label="search">
<select id="f-sort" aria-label="sort"></select>
<button type="button" id="reset">reset</button>
<span id="f-cmp"></span>
</div>
<section id="panel-items">
<p><span id="count">loading...</span></p>
<table id="list"><thead><tr><th>item</th><th>dataset</th><th>conditions</th><th>acc.</th><th>margin</th><th>query</th></tr></thead><tbody id="list-body"></tbody></table>
<div class="pager"><button type="button" id="prev">previous</button><span id="page"></span><button type="button" id="next">next</button></div>
</section>
<section id="panel-compare" hidden><div id="compare"></div></section>
<section id="panel-figures" hidden><div id="figures"></div></section>
</div>
<aside id="detail" hidden></aside>
</main>
<script type="application/json" id="data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""  # noqa: E501 (the page's HTML, kept byte for byte)


def page_html(model: dict[str, Any] | None, served: bool = False, title: str | None = None) -> str:
    """The page; ``model`` embedded, or (``served``, ``model`` None) fetched from ``data.json``."""
    script, style = assets()
    if title is None:
        labels = [r.get("label") or r.get("model", "") for r in (model or {}).get("runs", [])]
        title = "probegen view" + (": " + ", ".join(labels) if labels else "")
    fill = {"@POLICY@": escape(csp(script, style, served), quote=False), "@TITLE@": escape(title),
            "@STYLE@": style, "@DATA@": "" if model is None else embed_json(model), "@SCRIPT@": script}
    # one pass, so a marker inside a filled-in text is never replaced in turn
    return re.sub("|".join(fill), lambda m: fill[m.group(0)], TEMPLATE)


def write_page(model: dict[str, Any], out: str | Path) -> Path:
    """Write the page to ``out`` whole, replacing only a file probegen wrote."""
    from ..io import atomic_output_file

    out = Path(out)
    with atomic_output_file(out) as fh:
        fh.write(page_html(model))
    return out
