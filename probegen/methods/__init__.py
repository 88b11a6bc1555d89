"""The method registry: every way of asking a model (:class:`~probegen.methods.base.Method`), and the
one place that lists them: ``score`` (the cloze method; ``--method zeroshot`` of bias), ``letter``,
``generate`` and ``trained``. Reports and the viewer ask the method a run recorded (:func:`recorded`).

Third-party methods register through the entry-point group ``probegen.methods``::

    [project.entry-points."probegen.methods"]
    yesno = "my_package.method:YesNo"

where the object is a :class:`Method` subclass (or an instance) with a new ``name``.

>>> [m.name for m in all_methods()]
['score', 'trained', 'generate', 'letter']
>>> names("eval"), names("bias")
(['score', 'generate', 'letter'], ['zeroshot', 'trained', 'generate', 'letter'])
>>> get("zeroshot").name, get("letter").asks
('score', True)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from ..errors import ProbegenError
from ..plugins import Registry
from ..request_options import BIAS_OPTIONS, EVAL_OPTIONS, Option
from .base import SCORING_ONLY, Method, ScorerRequest, resolve

__all__ = ["ENTRY_POINT_GROUP", "REGISTRY", "SCORING_ONLY", "Method", "ScorerRequest", "all_methods", "check_options",
           "default", "generation_method", "get", "is_method", "method_options", "names", "options", "recorded",
           "register", "resolved", "trained_method"]

ENTRY_POINT_GROUP = "probegen.methods"

def _check(m: Method, known: dict[str, Method]) -> None:
    """A method's options are Options of new names (not a command's, not another method's)."""
    taken = {o.name: o for o in (*EVAL_OPTIONS, *BIAS_OPTIONS, *(o for k in known.values() for o in k.options))}
    for o in m.options:
        if not isinstance(o, Option) or taken.get(o.name, o) != o:
            raise ProbegenError(f"method {m.name!r}: its option {getattr(o, 'name', o)!r} is not a "
                                "probegen.request_options.Option of a new name (a command's or another method's)")


def _builtins() -> tuple[type[Method], ...]:
    from .generate import GenerateMethod
    from .letter import LetterMethod
    from .score import ScoreMethod
    from .trained import TrainedMethod

    return ScoreMethod, TrainedMethod, GenerateMethod, LetterMethod  # the order --method lists them in


REGISTRY: Registry[Method] = Registry("method", ENTRY_POINT_GROUP, resolve, _check, _builtins)


def register(method: Method | type[Method]) -> Method:
    """Add a method (a :class:`Method` subclass or instance); its name must be new. Returns the instance."""
    return REGISTRY.add(method)


def all_methods() -> list[Method]:
    """Every registered method (built-in first, then plugins by entry-point name)."""
    return REGISTRY.all()


def names(command: str) -> list[str]:
    """The ``--method`` values ``command`` (``eval``, ``bias``) offers, in registry order."""
    return [f for m in all_methods() if (f := m.flag(command)) is not None]


def default() -> Method:
    """The method a command runs when none is asked (the viewer shows no ``--method`` for it).

    >>> default().name, default().flag("bias")
    ('score', 'zeroshot')
    """
    return next(m for m in all_methods() if m.default)


def trained_method() -> Method:
    """The method that trains a probe (what a kind without zero-shot ablations is measured with)."""
    return next(m for m in all_methods() if m.trains)


def get(name: str | None, command: str | None = None) -> Method:
    """The method named ``name`` (a registry name or a ``--method`` value; None: the :func:`default`); with
    ``command``, only a value that command offers. A ProbegenError naming the choices otherwise."""
    if name is None:
        return default()
    for m in all_methods():
        if (command is None and m.name == name) or name in ([m.flags.get(command)] if command else m.flags.values()):
            return m
    known = names(command) if command else [m.name for m in all_methods()]
    raise ProbegenError(f"unknown method {name!r}; choose from {', '.join(known)}")


def recorded(name: Any, fallback: str | None = None) -> Method:
    """The method a results.json records by ``name`` or title (``cloze``); the method named ``fallback``
    (None: the :func:`default`) for none or a name that is no method (a masked LM's ``pll``)."""
    found = {**{m.title: m for m in all_methods() if m.title}, **{m.name: m for m in all_methods()}}
    if isinstance(name, str) and name in found:
        return found[name]
    return found[fallback] if fallback else default()


def generation_method(block: Mapping[str, Any]) -> Method:
    """The method that wrote a rows' ``generation`` block: its ``method``, else the generative one (runs
    written before the method was recorded).

    >>> generation_method({"asks": 3}).name, generation_method({"method": "letter"}).name
    ('generate', 'letter')
    """
    from .generate import GenerateMethod

    return recorded(block.get("method"), GenerateMethod.name)


def is_method(name: Any) -> bool:
    """Whether ``name`` is a registered method's name (what a run records)."""
    return isinstance(name, str) and name in {m.name for m in all_methods()}


def options(command: str | None = None) -> list[Option]:
    """Every method's own option once, in registry order; with ``command``, those of the methods it offers.

    >>> [o.flag for o in options("eval")]
    ['--permutations', '--prompts']
    """
    found = {o.name: o for m in all_methods() if command is None or m.flag(command) for o in m.options}
    return list(found.values())


def resolved(table: Iterable[Option]) -> list[Option]:
    """``table`` with ``--method``'s choices (an option's ``methods_of``) filled in from the registry.

    >>> from probegen.request_options import BIAS_OPTIONS
    >>> [o.choices for o in resolved(BIAS_OPTIONS) if o.name == "method"]
    [('zeroshot', 'trained', 'generate', 'letter')]
    """
    return [replace(o, choices=tuple(names(o.methods_of))) if o.methods_of else o for o in table]


def method_options(given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (a request's ``method_options``) checked by the declaring options, None values left out;
    a name no method declares is a TypeError.

    >>> method_options({"permutations": 3, "prompts": None})
    {'permutations': 3}
    >>> method_options({"permutations": 0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    probegen.request_options.OptionValueError: permutations (--permutations) must be a number of option orders ...
    >>> method_options({"temperature": 0.5})
    Traceback (most recent call last):
    TypeError: no method takes the option 'temperature'; method options: permutations, prompts
    """
    table = {o.name: o for o in options()}
    if not isinstance(given, Mapping):
        raise TypeError(f"method_options must be a mapping of option names to values; got {given!r}")
    for k in given:
        if k not in table:
            raise TypeError(f"no method takes the option {k!r}; method options: {', '.join(table) or 'none'}")
    return {k: table[k].check(v) for k, v in given.items() if v is not None}


def check_options(name: str, given: Mapping[str, Any]) -> Method:
    """The method ``name`` after rejecting the options in ``given`` (None = not given) that do not apply to it.

    >>> check_options("generate", {"reduction": "mean"})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --reduction does not apply to --method generate: a chat model's answer is read,
    not scored
    >>> check_options("score", {"permutations": 5})
    Traceback (most recent call last):
    probegen.errors.ProbegenError: --permutations applies to --method generate only (and --method letter)
    """
    owners = {o.name: [m.name for m in all_methods() if o in m.options] for o in options()}
    method = get(name)
    method.check_options(given, owners)
    return method
