"""probegen: controlled, adversarial lexical-semantic probes generated from WordNet and SemCor.

The command line is ``probegen``; in a notebook, :func:`score` and :func:`bias` run the same paths
as ``probegen eval`` and ``probegen bias`` and return a :class:`~probegen.run.api.Run`
(folder, results, rows, summary); see :mod:`probegen.run.api`.
"""

from __future__ import annotations

from typing import Any

from .version import __version__ as __version__  # re-exported: probegen.__version__

__all__ = ["bias", "score"]


def score(model: str, dataset: Any, out: Any = None, **options: Any) -> Any:
    """``probegen eval`` as a function (:func:`probegen.run.api.score`)."""
    from .run.api import score as run

    return run(model, dataset, out, **options)


def bias(model: str, dataset: Any, out: Any = None, **options: Any) -> Any:
    """``probegen bias`` as a function (:func:`probegen.run.api.bias`)."""
    from .run.api import bias as run

    return run(model, dataset, out, **options)
