"""Loading third-party plugins from an entry-point group: one rule for every registry. A plugin that
fails to import, raises or calls ``sys.exit()`` is one ProbegenError line naming the entry point.
:class:`Registry` is the named registry (tasks, methods) built on it."""

from __future__ import annotations

from importlib import metadata
from typing import Any, Callable, Generic, Iterable, TypeVar

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


class Registry(Generic[T]):
    """Named plugins of one kind (``what``: "task", "method"), in the order registered: the objects
    ``builtins()`` gives and the entry points of ``group``, both loaded on first use (a broken plugin fails
    every lookup), and any :meth:`add`-ed at run time. ``resolve`` turns a class into its instance;
    ``check(obj, known)`` may reject one against those known. A name is registered once (the same class
    again is harmless).

    >>> reg = Registry("thing", "probegen.no-such-group", lambda obj: obj)
    >>> class A:
    ...     name = "a"
    >>> reg.add(A()).name, [x.name for x in reg.all()]
    ('a', ['a'])
    >>> class B:
    ...     name = "a"
    >>> reg.add(B())
    Traceback (most recent call last):
    probegen.errors.ProbegenError: thing 'a' is registered twice (A and B)
    """

    def __init__(self, what: str, group: str, resolve: Callable[[Any], T],
                 check: Callable[[T, dict[str, T]], None] | None = None,
                 builtins: Callable[[], Iterable[Any]] = tuple) -> None:
        self.what, self.group, self.resolve = what, group, resolve
        self._check, self._builtins = check, builtins
        self.known: dict[str, T] = {}
        self.loaded = {"builtins": False, "plugins": False}
        self.entry_points = metadata.entry_points  # an attribute, so a test can offer other entry points

    def add(self, obj: Any) -> T:
        """Register ``obj`` (a class or an instance) under its new ``name``; returns the instance."""
        x = self.resolve(obj)
        name = getattr(x, "name", None)
        if not isinstance(name, str) or not name:
            raise ProbegenError(f"{self.what} {type(x).__name__} has no name")
        if self._check is not None:
            self._check(x, self.known)
        old = self.known.get(name)
        if old is not None and type(old) is not type(x):
            raise ProbegenError(f"{self.what} {name!r} is registered twice ({type(old).__name__} and "
                                f"{type(x).__name__})")
        self.known[name] = x
        return x

    def all(self) -> list[T]:
        """Every registered object (built-ins, then plugins by entry-point name, on the first call)."""
        if not self.loaded["builtins"]:
            self.loaded["builtins"] = True
            for b in self._builtins():
                self.add(b)
        if not self.loaded["plugins"]:
            load_plugins(self.entry_points(group=self.group), self.what, self.group, self.resolve, self.add)
            self.loaded["plugins"] = True  # after: a broken plugin fails every lookup, never only the first
        return list(self.known.values())
