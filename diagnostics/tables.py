"""Formatting shared by the reports (:mod:`~probegen.diagnostics.eval_report`, its Markdown
:mod:`~probegen.diagnostics.eval_markdown`, and the bias report :mod:`~probegen.diagnostics.report`):
values with CIs, the accuracy rows of a metrics tree, and the table of a method's answers."""

from __future__ import annotations

from typing import Any, Sequence


def fmt(v: Any, ci: Sequence[float] | None = None, digits: int = 3) -> str:
    """'0.363 [0.310, 0.420]', '0.363' without a CI, '-' without a value.

    >>> fmt(0.3634, [0.31, 0.42]), fmt(None), fmt({"value": 0.5, "ci": None})
    ('0.363 [0.310, 0.420]', '-', '0.500')
    """
    if isinstance(v, dict):
        v, ci = v.get("value"), v.get("ci")
    if v is None:
        return "-"
    return f"{v:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "")


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines.

    >>> md_table(["a", "b"], [["1", "2"]])
    ['| a | b |', '|---|---|', '| 1 | 2 |']
    """
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def accuracy_rows(metrics: dict[str, Any], prefix: str = "") -> list[tuple[str, str, Any]]:
    """(name, measure, the dict holding it) of every accuracy with a CI in ``metrics``, depth first.

    >>> [r[:2] for r in accuracy_rows({"accuracy": 0.5, "accuracy_ci": [0.4, 0.6],
    ...                                "by_probe": {"d": {"accuracy": 1, "accuracy_ci": None}}})]
    [('all', 'accuracy'), ('by_probe / d', 'accuracy')]
    """
    out = []
    for measure in ("accuracy", "strict_cluster_accuracy"):
        if f"{measure}_ci" in metrics:
            out.append((prefix or "all", measure, metrics))
    for k, v in metrics.items():
        if isinstance(v, dict):
            out += accuracy_rows(v, f"{prefix} / {k}" if prefix else k)
    return out


def generation_section(block: dict[str, Any] | None) -> list[str]:
    """The report's table of an asking method's answers per condition ([] without one): the section
    of the method the blocks record (:meth:`probegen.methods.Method.report_section`).

    >>> g = {"asks": 4, "valid": 0.5, "valid_after_retry": 0.25, "partial": 0.25, "invalid": 0.0,
    ...      "invalid_rate": 0.25, "random_rows": 0.1, "orders": 1, "per_order": [0.5], "consistency": 1.0,
    ...      "majority": 0.5}
    >>> generation_section({"full": g})[4]
    '| full | 4 | 50.0% | 25.0% | 25.0% | 0.0% | 25.0% | 10.0% | 0.500 | 1.000 |'
    """
    if not block:
        return []
    from probegen import methods

    recorded = next((g["method"] for g in block.values() if g and methods.is_method(g.get("method"))), None)
    return methods.recorded(recorded, "generate").report_section(block)
