"""The letter method (``--method letter``): the generative prompt, read as the probability of each
option label as the answer's next token(s) (:mod:`probegen.generate.letter`)."""

from __future__ import annotations

from typing import Any, Mapping

from .generate import GenerateMethod, order_lines, order_table


class LetterMethod(GenerateMethod):
    """The generative prompts (options and all), the option labels' probabilities read: every ask is decided."""

    name = "letter"
    title = "letter"
    flags = {"eval": "letter", "bias": "letter"}
    not_scored = "the option labels' probabilities are read"
    votes = False
    view_confidence = "probability of its option label, averaged over the option orders"
    confidence = "the label distribution, mapped to options and averaged over the orders"
    report_text = (
        "Letter method (`--method letter`): each unit of each condition was asked with the generative prompt "
        "(the templates recorded under Scorer) and read, not parsed: the next token's probability of each "
        "option label, renormalised over the labels (label mass: what they had before), mapped back to the "
        "options and averaged over the orders; every row is decided by the one decision rule, so there are "
        "no invalid answers."
    )

    def loader(self) -> Any:
        from ..generate.letter import load_letter

        return load_letter

    def summary_lines(self, block: Mapping[str, Any]) -> list[str]:
        """Read, not parsed: every ask is decided, so no validity shares.

        >>> print(LetterMethod().summary_lines({"method": "letter", "asks": 40, "label_mass": 0.8176,
        ...                                     "orders": 1})[0])  # doctest: +NORMALIZE_WHITESPACE
        letter answers: 40 asks, each the next token's distribution over the option labels; mean probability mass
        on the option labels 81.8%
        """
        mass = (f"; mean probability mass on the option labels {block['label_mass']:.1%}" if "label_mass" in block
                else "")
        return [f"letter answers: {block['asks']} asks, each the next token's distribution over the option "
                f"labels{mass}", *order_lines(block)]

    def report_section(self, block: Mapping[str, Any]) -> list[str]:
        """The letter method's table: asks, the labels' probability mass, accuracy per order, consistency.

        >>> LetterMethod().report_section({"full": {"method": "letter", "asks": 40, "label_mass": 0.8176,
        ...                                "orders": 2, "per_order": [0.25, 0.2], "consistency": 0.1}})[4]
        '| full | 40 | 81.8% | 0.250 / 0.200 | 0.100 |'
        """
        return order_table("Letter answers", ["asks", "mean label mass"], block,
                           lambda g: [str(g["asks"]), f"{g['label_mass']:.1%}" if "label_mass" in g else "-"])
