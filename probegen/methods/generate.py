"""The generative method (``--method generate``): a chat model asked each unit with the prompt
templates, its answer parsed (:mod:`probegen.generate`)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..request_options import PERMUTATIONS, PROMPTS
from .base import Method, ScorerRequest


class GenerateMethod(Method):
    """A chat model asked, its answer read (not scored); option orders by ``--permutations``."""

    name = "generate"
    title = "generate"
    flags = {"eval": "generate", "bias": "generate"}
    asks = True
    ordered = True
    likelihood = False
    not_scored = "a chat model's answer is read, not scored"
    options = (PERMUTATIONS, PROMPTS)
    confidence = "the vote share of each option over the orders"
    votes = True
    view_confidence = "share of option orders that chose it"
    report_text = (
        "Generative method (`--method generate`): each unit of each condition was asked as a prompt (the "
        "templates recorded under Scorer) and the answer parsed strictly; an answer that did not parse was "
        "shown its error once and asked again; what was still missing was completed by a seeded random "
        "choice of what was left. Accuracies include those random completions: the invalid rate beside them "
        "says how much of each figure is chance. With several option orders, each row's answer is the "
        "majority over the orders (an exact tie broken at random)."
    )

    def loader(self) -> Any:
        """What loads its scorer: ``(model, permutations, prompts, seed, **runtime settings)``."""
        from ..generate import load_generator

        return load_generator

    def load_scorer(self, runner: Any, req: ScorerRequest) -> Any:
        return runner.load_asking(self.name, lambda **settings: self.loader()(
            req.model, req.options.get("permutations") or 1, req.options.get("prompts"), req.seed, **settings))

    def summary_lines(self, block: Mapping[str, Any]) -> list[str]:
        """The evaluation summary's line on the parsed answers (validity shares) and the option orders.

        >>> print("\\n".join(GenerateMethod().summary_lines({"asks": 10, "valid": 0.6, "valid_after_retry": 0.1,
        ...     "partial": 0.2, "invalid": 0.1, "invalid_rate": 0.3, "random_rows": 0.25, "orders": 1,
        ...     "per_order": [0.4], "consistency": 1.0, "majority": 0.4})))  # doctest: +NORMALIZE_WHITESPACE
        generated answers: 10 asks; valid 60.0%, valid after one retry 10.0%, partial 20.0%, invalid 10.0% (invalid
        rate 30.0%; 25.0% of rows decided at random)
        """
        return [f"generated answers: {block['asks']} asks; valid {block['valid']:.1%}, valid after one retry "
                f"{block['valid_after_retry']:.1%}, partial {block['partial']:.1%}, invalid {block['invalid']:.1%} "
                f"(invalid rate {block['invalid_rate']:.1%}; {block['random_rows']:.1%} of rows decided at random)",
                *order_lines(block)]

    def report_section(self, block: Mapping[str, Any]) -> list[str]:
        """The report's table of the generative answers per condition.

        >>> g = {"asks": 4, "valid": 0.5, "valid_after_retry": 0.25, "partial": 0.25, "invalid": 0.0,
        ...      "invalid_rate": 0.25, "random_rows": 0.1, "orders": 1, "per_order": [0.5], "consistency": 1.0,
        ...      "majority": 0.5}
        >>> GenerateMethod().report_section({"full": g})[4]
        '| full | 4 | 50.0% | 25.0% | 25.0% | 0.0% | 25.0% | 10.0% | 0.500 | 1.000 |'
        """
        shares = ("valid", "valid_after_retry", "partial", "invalid", "invalid_rate", "random_rows")
        return order_table("Generated answers", ["asks", "valid", "valid after retry", "partial", "invalid",
                                                 "invalid rate", "rows at random"], block,
                           lambda g: [str(g["asks"]), *(f"{g[k]:.1%}" for k in shares)])


def order_table(title: str, columns: list[str], block: Mapping[str, Any],
                cells: Callable[[Mapping[str, Any]], list[str]]) -> list[str]:
    """A report table of the ``generation`` blocks per condition: ``cells(g)`` under ``columns``, then the
    accuracy per order and the consistency."""
    head = [*columns, "accuracy per order", "consistency"]
    lines = [f"#### {title}", "", f"| condition | {' | '.join(head)} |",
             "|---|" + "".join("---|" if c == "accuracy per order" else "---:|" for c in head)]
    for mode, g in block.items():
        if g:
            orders = " / ".join(f"{a:.3f}" for a in g["per_order"])
            lines.append(f"| {mode} | {' | '.join(cells(g))} | {orders} | {g['consistency']:.3f} |")
    return lines + [""]


def order_lines(block: Mapping[str, Any]) -> list[str]:
    """The summary's line on several option orders ([] with one)."""
    if block["orders"] <= 1:
        return []
    import numpy as np

    orders = ", ".join(f"{a:.3f}" for a in block["per_order"])
    n = (f"{block['orders']}-{block['orders_max']} (accuracy per order over the first {block['orders']}, which "
         "every unit has)" if block.get("orders_max") else f"{block['orders']}")
    return [f"option orders: {n}; accuracy per order {orders} (mean {np.mean(block['per_order']):.3f}); "
            f"consistency across orders {block['consistency']:.3f}; majority-answer accuracy "
            f"{block['majority']:.3f}"]
