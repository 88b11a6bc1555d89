"""The one runner: every command that scores does it through a :class:`Runner`.

A library function that loads a model takes a required ``runner``; only the entry points (commands,
the notebook API) make one. It holds the :class:`Runtime`, joins a ``torchrun`` process group once
(:mod:`probegen.distributed`), loads models rank 0 first and keeps them, and lets rank 0 alone write
outputs and show progress.

>>> r = Runner(Runtime(device="cpu"), log=lambda m: None)
>>> r.is_main, r.describe()
(True, {'processes': 1, 'backend': None})
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar, cast

import numpy as np

from . import distributed as dist

Log = Callable[[str], None]
T = TypeVar("T")


def _silent(msg: str) -> None:
    """The log of ranks other than 0: one process speaks for the run."""


@dataclass(frozen=True)
class Runtime:
    """Where and in what precision models run (the ``--device/--dtype/--device-map/--max-batch-tokens``
    options), and ``scorer`` method settings for every model a command loads (e.g. ``{"pll": "word-l2r"}``).
    ``None`` leaves a setting to the scorer's default.
    """

    device: str = "auto"
    dtype: str = "auto"
    device_map: str | None = None
    max_batch_tokens: int | str | None = None  # None: per-device default; "auto": search; an int: fixed
    scorer: dict[str, Any] = field(default_factory=dict)

    def settings(self) -> dict[str, Any]:
        """As :func:`probegen.models.load_scorer` keyword arguments (unset ones left out).

        >>> Runtime(device="cpu", scorer={"pll": "word-l2r"}).settings()
        {'device': 'cpu', 'dtype': 'auto', 'pll': 'word-l2r'}
        """
        base = {"device": self.device, "dtype": self.dtype, "device_map": self.device_map,
                "max_batch_tokens": self.max_batch_tokens}
        return {k: v for k, v in {**base, **self.scorer}.items() if v is not None}

    def api(self) -> dict[str, Any]:
        """The served-model settings (``--api-base`` ...; empty without a server): what a model name is
        resolved against (:func:`probegen.models.resolve_model`).

        >>> Runtime().with_scorer(api_base="http://127.0.0.1:8000/v1", pll="word-l2r").api()
        {'api_base': 'http://127.0.0.1:8000/v1'}
        """
        from .models import API_SETTINGS

        return {k: v for k, v in self.scorer.items() if k in API_SETTINGS}

    def with_scorer(self, **settings: Any) -> "Runtime":
        """A copy with more scorer settings (``None`` values are dropped).

        >>> Runtime().with_scorer(pll="word-l2r", reduction=None).scorer
        {'pll': 'word-l2r'}
        """
        return replace(self, scorer={**self.scorer, **{k: v for k, v in settings.items() if v is not None}})


class Runner:
    """Process group, runtime, model loading, scoring and rank-0 output of one command (``log``: where rank 0
    reports progress lines; :attr:`models`: what this runner resolved and loaded)."""

    def __init__(self, runtime: Runtime | None = None, log: Log = print) -> None:
        from .models import ModelStore

        self.runtime = runtime or Runtime()
        self.models = ModelStore()
        # under torchrun: join the process group (recorded: this runner then owns it); rank 0 speaks for the run
        self.joined = dist.init_from_env()
        self.log: Log = log if dist.is_main() else _silent

    def close(self) -> None:
        """Leave the process group if this runner joined it, and drop the models it loaded."""
        if self.joined:
            dist.shutdown()
            self.joined = False
        self.models = type(self.models)()

    def main_log(self, log: Log) -> Log:
        """``log`` on rank 0, a silent log elsewhere (a library function's own log under this runner)."""
        return log if self.is_main else _silent

    @property
    def is_main(self) -> bool:
        """True on the process that writes outputs and shows progress (rank 0)."""
        return dist.is_main()

    #: whether this process may show progress bars (rank 0 only)
    progress = is_main

    def describe(self) -> dict[str, Any]:
        """What ran, for results.json: the number of processes and the backend."""
        return dist.describe()

    def share(self, value: T) -> T:
        """Rank 0's ``value`` on every rank (``value`` itself in one process); every rank must call it."""
        return cast(T, dist.all_gather(value)[0])

    def resolve(self, model: str) -> Any:
        """Where ``model`` points (a :class:`~probegen.models.ResolvedModel`), against the runtime's server if any."""
        from .models import resolve_model

        return resolve_model(model, self.runtime.api(), self.models)

    def load_scorer(self, model: str, kind: str | None = None, **settings: Any) -> Any:
        """The scorer for ``model`` with the runtime's settings (explicit ``settings`` win), rank 0 first (it
        converts and caches weights once); weights are loaded once per runner and shared."""
        from .models import load_scorer

        given = {**self.runtime.settings(), **{k: v for k, v in settings.items() if v is not None}}
        with dist.main_first():
            return load_scorer(model, kind, store=self.models, **given)

    def load_asking(self, method: str, load: Callable[..., Any]) -> Any:
        """The scorer of a method that asks a chat model (``generate``, ``letter``, :mod:`probegen.methods`):
        ``load(**runtime settings)`` in one process, rank 0 first."""
        from .errors import ProbegenError

        # answers are not sharded across ranks: one process asks (a server spreads the model)
        if self.describe()["processes"] > 1:
            raise ProbegenError(f"--method {method} runs in one process: start it without torchrun "
                                "(a model too big for one GPU is served, e.g. by vLLM, and asked with --api-base)")
        with dist.main_first():
            return load(**self.runtime.settings())

    def score(self, units: Sequence[Any], scorer: Any, progress: bool = True) -> list[np.ndarray]:
        """Every unit's score matrix, from one table of unique requests (:func:`core.score_units`)."""
        from .core import score_units

        return score_units(units, scorer, progress=progress and self.progress)

    def evaluate(self, units: Sequence[Any], scorer: Any, seed: int = 0, progress: bool = True,
                 adjust: Callable[[Any, np.ndarray], np.ndarray] | None = None) -> list[Any]:
        """Every unit's :class:`~probegen.core.Outcome` (:func:`core.evaluate_units`), progress on rank 0 only."""
        from .core import evaluate_units

        return evaluate_units(units, scorer, seed, progress=progress and self.progress, adjust=adjust)

    @contextlib.contextmanager
    def output_dir(self, out: Path) -> Iterator[Path]:
        """A folder to write ``out`` into: on rank 0 the atomic temporary that becomes ``out``, elsewhere a
        scratch folder thrown away. No rank leaves before the output is in place."""
        from .io import atomic_dir

        try:
            if self.is_main:
                with atomic_dir(out) as tmp:
                    yield tmp
            else:
                with tempfile.TemporaryDirectory(prefix="probegen-rank-") as scratch:
                    yield Path(scratch)
        finally:
            dist.barrier()

    def write(self, fn: Callable[[], T]) -> T | None:
        """``fn()`` on rank 0 (a writer of outputs), then every rank waits for it; None elsewhere."""
        try:
            return fn() if self.is_main else None
        finally:
            dist.barrier()
