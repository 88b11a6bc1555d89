"""What each condition of the trained method shows of a target (shared by :mod:`~probegen.diagnostics.trained`
and :mod:`~probegen.run.finetune`)."""

from __future__ import annotations

from typing import Any


def view(target: Any, condition: str, mask: str) -> tuple[str, tuple[int, int]]:
    """The (text, span) a condition shows of one target (the label condition shows nothing).

    >>> from probegen.wordincontext.items import Target
    >>> t = Target("He sat on the bank.", (14, 18))
    >>> view(t, "full", "[MASK]"), view(t, "context", "[MASK]"), view(t, "word", "[MASK]")
    (('He sat on the bank.', (14, 18)), ('He sat on the [MASK].', (14, 20)), ('bank', (0, 4)))
    """
    if condition == "full":
        return target.text, target.span
    if condition == "context":
        m = target.masked(mask)
        return m.text, m.span
    if condition == "word":
        w = target.alone()
        return w.text, w.span
    raise ValueError(f"condition {condition!r} has no input")
