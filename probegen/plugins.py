"""Loading third-party plugins from an entry-point group: one rule for every registry. A plugin that
fails to import, raises or calls ``sys.exit()`` is one ProbegenError line naming the entry point."""

from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

from .errors import ProbegenError

T = TypeVar("T")


def load_plugins(eps: Iterable[Any], what: str, group: str, resolve: Callable[[Any], T],
                 register: Callable[[T], Any]) -> None:
    """Resolve and register each entry point of ``eps``, sorted by name; ``what`` names it in errors.

    >>> load_plugins([], "task", "probegen.tasks", lambda obj: obj, lambda obj: None)
    """
    for ep in sorted(eps, key=lambda e: e.name):
        try:
            obj = resolve(ep.load())
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - a broken plugin, whatever it raised (SystemExit too)
            why = " ".join(f"{type(e).__name__}: {e}".split())
            if isinstance(e, SystemExit):
                why = f"it called sys.exit({e.code!r}) while being imported"
            raise ProbegenError(f"{what} plugin {ep.name!r} ({ep.value}) from entry-point group {group} "
                                f"cannot be loaded: {why}") from None
        try:
            register(obj)
        except ProbegenError as e:
            raise ProbegenError(f"{what} plugin {ep.name!r} ({ep.value}): {e}") from None
