"""Sizes of the WordNetQA probes as published (Richardson & Sabharwal): ``unique_questions``,
``with_perturbations`` (every distractor perturbation counted), ``synsets`` (../shared/reference/README.md).
"""

from __future__ import annotations

PAPER_SIZES: dict[str, dict[str, int]] = {
    "hypernymy": {"unique_questions": 19705, "with_perturbations": 35094, "synsets": 7849},
    "hyponymy": {"unique_questions": 6697, "with_perturbations": 35243, "synsets": 3452},
    "synonymy": {"unique_questions": 28254, "with_perturbations": 91069, "synsets": 15632},
    "definitions": {"unique_questions": 31380, "with_perturbations": 148662, "synsets": 15159},
}


def size_table(counts: dict[str, dict[str, int]]) -> str:
    """Our unique questions / items / synsets per probe beside the paper's.

    >>> print(size_table({"hyponymy": {"unique_questions": 700, "items": 2000, "synsets": 345}}))
    probe         questions   paper  ratio     items   paper  ratio   synsets  paper  ratio
    hyponymy            700    6697   0.10      2000   35243   0.06       345   3452   0.10
    >>> print(size_table({"entailment": {"unique_questions": 368, "items": 814, "synsets": 326}}).splitlines()[1])
    entailment          368       -      -       814       -      -       326      -      -
    """
    lines = [f"{'probe':<12} {'questions':>10} {'paper':>7} {'ratio':>6} {'items':>9} {'paper':>7} {'ratio':>6} "
             f"{'synsets':>9} {'paper':>6} {'ratio':>6}"]
    for probe, c in counts.items():
        if not isinstance(c, dict) or "items" not in c:
            continue
        if probe not in PAPER_SIZES:  # a probe spec's own probe: no published size
            lines.append(f"{probe:<12} {c['unique_questions']:>10} {'-':>7} {'-':>6} {c['items']:>9} {'-':>7} {'-':>6} "
                         f"{c['synsets']:>9} {'-':>6} {'-':>6}")
            continue
        r = PAPER_SIZES[probe]
        lines.append(
            f"{probe:<12} {c['unique_questions']:>10} {r['unique_questions']:>7} "
            f"{c['unique_questions'] / r['unique_questions']:>6.2f} {c['items']:>9} {r['with_perturbations']:>7} "
            f"{c['items'] / r['with_perturbations']:>6.2f} {c['synsets']:>9} {r['synsets']:>6} "
            f"{c['synsets'] / r['synsets']:>6.2f}"
        )
    return "\n".join(lines)
