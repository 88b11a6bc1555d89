"""Option decorators and click parameter types every command shares."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

import click
from click.core import ParameterSource

from probegen import request_options as opts
from probegen.errors import ProbegenError
from probegen.models import DEVICE_MAPS, check_api, parse_batch_tokens, resolve_device
from probegen.request_options import Option, OptionTypeError, OptionValueError
from probegen.runner import Runtime

#: a command function a decorator returns as it got it, options added
F = TypeVar("F", bound=Callable[..., Any])


class RegistryChoice(click.Choice[str]):
    """A choice among a registry's names, read when a value is checked or ``--help`` shown (so plugins'
    names are among them), then ``extra`` (``none``)."""

    def __init__(self, names: Callable[[], Any], *extra: str) -> None:
        self.names, self.extra = names, extra
        super().__init__(extra)

    @property
    def choices(self) -> tuple[str, ...]:
        """The registry's names now, then ``extra``."""
        return (*self.names(), *self.extra)

    @choices.setter
    def choices(self, value: Any) -> None:
        pass


class _Checked(click.ParamType[Any]):
    """A value checked by its option's own rule (:meth:`probegen.request_options.Option.parse`)."""

    option: Option

    def checked(self) -> Option:
        return self.option

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return self.checked().parse(value)
        except (OptionTypeError, OptionValueError) as e:
            self.fail(str(e), param, ctx)


class _CheckedChoice(_Checked, RegistryChoice):
    def __init__(self, option: Option) -> None:
        self.option = option  # its values read when shown: --method lists the registered methods (plugins too)
        super().__init__(lambda: self.checked().choices)

    def checked(self) -> Option:
        from probegen.methods import resolved

        return resolved([self.option])[0]


class _CheckedInt(_Checked, click.IntRange):
    def __init__(self, option: Option) -> None:
        super().__init__(None if option.lo is None else int(option.lo), None if option.hi is None else int(option.hi))
        self.option = option


class _CheckedFloat(_Checked, click.FloatRange):
    def __init__(self, option: Option) -> None:
        super().__init__(option.lo, option.hi, min_open=option.lo_open, max_open=option.hi_open)
        self.option = option


class _CheckedText(_Checked):
    def __init__(self, option: Option) -> None:
        self.option = option
        self.name = "N|rotations" if option.kind == "permutations" else "text"


def checked_type(option: Option) -> click.ParamType[Any]:
    """The click parameter type of ``option``: the command line's text parsed, then checked by the one
    rule the notebook calls use too (:mod:`probegen.request_options`); a bad value is click's usage
    error (exit 2) with that rule's message. Choices and ranges still show in ``--help``."""
    if option.choices or option.methods_of:
        return _CheckedChoice(option)
    if option.kind == "int":
        return _CheckedInt(option)
    if option.kind == "float":
        return _CheckedFloat(option)
    return _CheckedText(option)


class MethodCommand(click.Command):
    """A command with ``--method`` (``eval``, ``bias``) whose parameters include every option its methods
    declare (:attr:`probegen.methods.Method.options`, plugins' too), read from the registry when the
    command is parsed or its ``--help`` shown; the callback gets those given as ``method_options``."""

    _params: list[click.Parameter]
    _with_methods: bool
    _method_params: list[str]

    @property
    def params(self) -> list[click.Parameter]:
        """The command's own parameters, then its methods' options (added once, on first use)."""
        if not self._with_methods:
            from probegen.methods import all_methods, options

            self._with_methods = True
            taken = {p.name for p in self._params}
            for o in options(self.name):
                if o.name not in taken:
                    flags = [f for m in all_methods() if o in m.options and (f := m.flag(str(self.name)))]
                    self._params.append(click.Option([o.flag], type=checked_type(o), metavar=o.metavar or None,
                                                     help=f"--method {'/'.join(flags)}: {o.help}"))
                    self._method_params.append(o.name)
        return self._params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._params, self._with_methods, self._method_params = value, False, []

    def invoke(self, ctx: click.Context) -> Any:
        """The callback run with the methods' options given gathered in ``method_options``."""
        given = {n: ctx.params.pop(n) for n in self._method_params if n in ctx.params}
        ctx.params["method_options"] = {k: v for k, v in given.items() if v is not None}
        return super().invoke(ctx)


#: every ``--seed``: a non-negative integer that numpy's and scikit-learn's seeding take (below
#: 2**32); anything else is click's usage error (exit 2), never a traceback deep in a run
SEED = checked_type(opts.SEED)
PROBE = click.option("--probe", default=None, type=checked_type(opts.PROBE), metavar="PROBE",
                     help="WordNetQA release files: the probe type of every row (definitions, hypernymy, hyponymy, "
                          "synonymy, dictionary) [default: from the file name, else the notes; never the id].")


#: progress and notes: to stderr, so stdout holds only a command's results (click's own writer, handed to the
#: library as its log: the library calls click, not back into the commands)
log: Callable[[str], None] = functools.partial(click.echo, err=True)


def add_device_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Click decorator: ``--device``, ``--dtype``, ``--device-map``, ``--max-batch-tokens`` and the
    ``--api-*`` options, checked before any work and handed to the command as its ``runtime``
    parameter (a :class:`probegen.runner.Runtime`), of which it makes ONE Runner for every load."""
    if "runtime" not in inspect.signature(command).parameters:  # the options would be accepted and ignored
        raise TypeError(f"{command.__name__}: a command with the device options takes a `runtime` parameter")

    @functools.wraps(command)
    def wrapper(*args: Any, device: str, dtype: str, device_map: str | None, max_batch_tokens: str | None,
                api_base: str | None, api_key_env: str | None, concurrency: int | None, api_timeout: float | None,
                **kw: Any) -> Any:
        runtime = Runtime(device, dtype, device_map, parse_batch_tokens(max_batch_tokens))
        if device_map is None:
            resolve_device(device)  # fail now, not after generating a dataset
        return command(*args, runtime=_with_api(runtime, api_base, api_key_env, concurrency, api_timeout), **kw)

    options = [  # as they are listed in --help
        click.option("--device", default="auto", show_default=True, type=checked_type(opts.DEVICE),
                     metavar="auto|cpu|cuda|cuda:N|mps",
                     help="Where models run (auto: CUDA if available, else CPU)."),
        click.option("--dtype", type=checked_type(opts.DTYPE), default="auto", show_default=True,
                     help="Model precision (auto: bfloat16 on GPUs that support it, else float32; int8: dynamic int8 "
                          "Linear layers, CPU only); below float32 on the CPU it is checked against float32 on the "
                          "first 50 units and refused under 96% agreement; part of score-cache keys."),
        click.option("--device-map", type=click.Choice(DEVICE_MAPS), default=None,
                     help="Spread a model too big for one GPU over all GPUs (accelerate); overrides --device."),
        click.option("--max-batch-tokens", default=None, metavar="N|auto",
                     help="Token budget of one forward pass [default: CPU: the scorer's default; CUDA: auto = largest "
                          "that fits, remembered per model and device]."),
        click.option("--api-base", default=None, metavar="URL",
                     help="An OpenAI-compatible server (vLLM, SGLang, TGI, an API), e.g. http://host:8000/v1: model "
                          "names it serves are scored by it (completions endpoint, echo + logprobs)."),
        click.option("--api-key-env", default=None, metavar="VAR",
                     help="Environment variable holding the server's API key [default: OPENAI_API_KEY]; the key is "
                          "never written anywhere."),
        click.option("--concurrency", type=click.IntRange(1, 256), default=None,
                     help="Requests in flight at once to --api-base [default: 4]."),
        click.option("--api-timeout", type=checked_type(opts.API_TIMEOUT), default=None, metavar="SECONDS",
                     help="Timeout of one request to --api-base (retried with backoff) [default: 120]."),
    ]
    return stacked(*options)(wrapper)


def _with_api(runtime: Runtime, api_base: str | None, key_env: str | None, concurrency: int | None,
              timeout: float | None) -> Runtime:
    """``runtime`` with the ``--api-base`` settings; the server is asked for its models now (a wrong
    URL or key fails before any work). An api option without ``--api-base`` is an error."""
    if not api_base:
        given = [n for n, v in (("--api-key-env", key_env), ("--concurrency", concurrency),
                                ("--api-timeout", timeout)) if v is not None]
        if given:
            raise ProbegenError(f"{', '.join(given)} appl(ies) to a served model only; add --api-base URL")
        return runtime
    check_api(api_base, api_key_env=key_env, api_timeout=timeout)
    return runtime.with_scorer(api_base=api_base, api_key_env=key_env, concurrency=concurrency, api_timeout=timeout)


def add_wordnet_source_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Click decorator: ``--wordnet-source`` of every ``make`` command, checked before it runs and stored
    as the click object's ``wordnet`` (what the command hands its builder); the command gets no argument."""

    @functools.wraps(command)
    def wrapper(*args: Any, wordnet_source: str | None, **kw: Any) -> Any:
        from probegen.lexicon.sources import effective_source

        ctx = click.get_current_context()
        obj = ctx.obj if isinstance(ctx.obj, dict) else {}
        obj["wordnet"] = effective_source(wordnet_source, obj.get("wordnet"))
        ctx.obj = obj
        return command(*args, **kw)

    return click.option(
        "--wordnet-source", default=None, metavar="pwn30|pwn31|PATH|wn:LEXICON",
        help="The wordnet to build from: Princeton WordNet 3.0 (default) or 3.1, a WNDB folder, a WN-LMF "
             ".xml/.xml.gz file, or a lexicon of the wn package (wn:oewn:2024).",
    )(wrapper)


def given_options(ctx: click.Context, *names: str) -> frozenset[str]:
    """Which of ``names`` the user set (command line or env): options are checked for what was asked, not
    for their defaults."""
    return frozenset(n for n in names if ctx.get_parameter_source(n) not in (ParameterSource.DEFAULT, None))


def stacked(*decorators: Callable[[Any], Any]) -> Callable[[F], F]:
    """Click option decorators as one, applied as if written above a command in this order."""
    return lambda command: functools.reduce(lambda f, d: d(f), reversed(decorators), command)


class FirstMethod:
    """A ``--method`` default: the first method ``command`` offers (the registry read when the value or
    ``--help`` needs it), shown by its name."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __call__(self) -> str:
        from probegen.methods import names

        return names(self.command)[0]

    __str__ = __call__
