"""exchange/ and itemstats/ meet one way (issue 49): exchange makes respondents (its one public table type,
``probegen.exchange.respondent.Respondent``) from runs, studies and other harnesses' files, and itemstats
analyses them; no module of exchange imports itemstats, lazily or not."""

from __future__ import annotations

from test_import_cycles import import_graph, library_sources


def _edges(src: str, dst: str) -> list[tuple[str, str]]:
    g = import_graph(library_sources())
    return sorted((a, b) for a, b in g.edges if a.startswith(src) and b.startswith(dst))


def test_exchange_never_imports_itemstats():
    assert _edges("probegen.exchange", "probegen.itemstats") == []


def test_itemstats_reads_runs_through_exchange():
    assert ("probegen.itemstats.table", "probegen.exchange.runs") in _edges("probegen.itemstats", "probegen.exchange")


def test_the_check_sees_a_lazy_import_back():
    g = import_graph({"probegen.exchange.": "", "probegen.exchange.ingest": "def f():\n    from ..itemstats import table\n",
                      "probegen.itemstats.": "", "probegen.itemstats.table": ""})
    assert ("probegen.exchange.ingest", "probegen.itemstats.table") in g.edges
