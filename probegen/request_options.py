"""Every option of ``probegen eval`` and ``probegen bias`` with its one type, range and message: click's
parameter types are made from this table and the requests check every field against it, so a bad value
fails the same way from the command line or a notebook call (:class:`OptionTypeError`,
:class:`OptionValueError`, both ProbegenErrors).

>>> N_BOOT.check(500)
500
>>> N_BOOT.check(1)
Traceback (most recent call last):
probegen.request_options.OptionValueError: n_boot (--bootstrap) must be an integer from 2 to 100000 (a CI needs two \
replicates to have a width; past 100,000 its Monte Carlo error is far below its sampling error and the resampling \
only costs memory); got 1
>>> LIMIT.check("3")
Traceback (most recent call last):
probegen.request_options.OptionTypeError: limit (--limit) must be an integer; got '3'
>>> LIMIT.parse("3")  # the command line's text is parsed first
3
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .errors import ProbegenError
from .scorers import KINDS


class OptionTypeError(ProbegenError, TypeError):
    """An option given a value of the wrong type (``limit="3"``, ``model=None``)."""


class OptionValueError(ProbegenError, ValueError):
    """An option given a value of the right type outside its range or choices."""


#: largest bootstrap replicate count: past it a CI's Monte Carlo error is far below its sampling error,
#: and the replicate x unit resampling matrices only cost memory (10^9 asked for 37 GiB)
MAX_BOOT = 100_000
#: seeds are handed to numpy and scikit-learn, which take 0 .. 2**32 - 1
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Option:
    """One option: its request field ``name``, command-line ``flag``, ``kind`` (int, float, str, bool,
    choice, path, paths, permutations, device, dtype) and range; ``optional``: None passes (not set)."""

    name: str
    flag: str
    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    why: str = ""
    optional: bool = True
    #: ``--method`` of this command: the choices are filled in from the registry (:func:`probegen.methods.resolved`)
    methods_of: str = ""
    #: what ``--help`` says of it and names its value ("": click's default)
    help: str = ""
    metavar: str = ""

    @property
    def label(self) -> str:
        """How a message names the option: the notebook's name and the command line's flag."""
        return f"{self.name} ({self.flag})"

    def _type_error(self, what: str, value: Any) -> OptionTypeError:
        return OptionTypeError(f"{self.label} must be {what}; got {value!r}")

    def _range(self) -> str:
        if self.lo is not None and self.hi is not None and not (self.lo_open or self.hi_open):
            return f"from {_num(self.lo)} to {_num(self.hi)}"
        parts = []
        if self.lo is not None:
            parts.append(f"{'above' if self.lo_open else 'at least'} {_num(self.lo)}")
        if self.hi is not None:
            parts.append(f"{'below' if self.hi_open else 'at most'} {_num(self.hi)}")
        return " and ".join(parts)

    def _check_range(self, value: float, what: str) -> None:
        bad = ((self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo))
               or (self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi)))
        if bad:
            why = f" ({self.why})" if self.why else ""
            raise OptionValueError(f"{self.label} must be {what} {self._range()}{why}; got {value!r}")

    def check(self, value: Any, optional: bool | None = None) -> Any:
        """``value`` normalised if it is of this option's type and in its range, else an
        :class:`OptionTypeError` / :class:`OptionValueError`; ``optional``: whether None passes (None: the option's)."""
        if value is None and (self.optional if optional is None else optional):
            return None
        return getattr(self, f"_check_{self.kind}")(value)

    def parse(self, text: Any) -> Any:
        """A command-line text as this option's type, then :meth:`check` (text that does not parse fails
        with the notebook call's type message)."""
        if isinstance(text, str):
            if self.kind == "int" or (self.kind == "permutations" and text != "rotations"):
                text = _maybe(int, text)
            elif self.kind == "float":
                text = _maybe(float, text)
        return self.check(text)

    def _check_int(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._type_error("an integer", value)
        self._check_range(value, "an integer")
        return int(value)

    def _check_float(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._type_error("a number", value)
        if not math.isfinite(value):
            raise OptionValueError(f"{self.label} must be a finite number; got {value!r}")
        self._check_range(value, "a number")
        return float(value)

    def _check_str(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self._type_error("a string", value)
        if not value.strip():
            raise OptionValueError(f"{self.label} must not be empty; got {value!r}")
        return value

    def _check_bool(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self._type_error("True or False", value)
        return value

    def _check_choice(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self._type_error(f"one of {', '.join(self.choices)}", value)
        if value not in self.choices:
            raise OptionValueError(f"{self.label} must be one of {', '.join(self.choices)}; got {value!r}")
        return value

    def _check_path(self, value: Any) -> str:
        if not isinstance(value, (str, os.PathLike)):
            raise self._type_error("a path (str or pathlib.Path)", value)
        text = os.fspath(value)
        if not isinstance(text, str) or not text.strip():
            raise OptionValueError(f"{self.label} must be a non-empty path; got {value!r}")
        if "\x00" in text:
            raise OptionValueError(f"{self.label} must be a path without NUL characters; got {value!r}")
        return text

    def _check_paths(self, value: Any) -> tuple[str, ...]:
        if isinstance(value, (str, os.PathLike)) or not isinstance(value, (list, tuple)):
            raise self._type_error("a list of paths", value)
        return tuple(self._check_path(v) for v in value)

    def _check_permutations(self, value: Any) -> int | str:
        if value == "rotations":
            return "rotations"
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._type_error("a number of option orders or 'rotations'", value)
        self._check_range(value, "a number of option orders")
        return int(value)

    def _check_device(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self._type_error("auto, cpu, cuda, cuda:N or mps", value)
        if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", value.strip().lower()):
            raise OptionValueError(f"{self.label} must be auto, cpu, cuda, cuda:N or mps; got {value!r}")
        return value

    _check_dtype = _check_choice


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _maybe(convert: Any, text: str) -> Any:
    try:
        return convert(text)
    except ValueError:
        return text


def checked(options: Iterable[Option], values: Mapping[str, Any],
            optional: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """``values`` checked against ``options`` by name; names without an option pass. ``optional``: by name,
    whether None passes."""
    table = {o.name: o for o in options}
    optional = optional or {}
    return {k: table[k].check(v, optional.get(k)) if k in table else v for k, v in values.items()}


def check_request(request: Any, options: Iterable[Option]) -> None:
    """Check every field of a frozen request dataclass against ``options`` (from its ``__post_init__``),
    normalising in place; a field left at a None default may stay None."""
    from dataclasses import MISSING, fields

    fs = fields(request)
    optional = {f.name: f.default is None for f in fs if f.default is not MISSING}
    for name, value in checked(options, {f.name: getattr(request, f.name) for f in fs}, optional).items():
        object.__setattr__(request, name, value)


#: model precisions (``--dtype``; ``int8``: dynamic quantisation of an LM's Linear layers, CPU only)
DTYPES = ("auto", "float32", "bfloat16", "float16", "int8")
SPLITS = ("train", "dev", "test")

MODEL = Option("model", "--model", "str", optional=False)
DATASET = Option("dataset", "--dataset", "path", optional=False)
DATASETS = Option("datasets", "--dataset", "paths")
OUT = Option("out", "--out", "path")
SEED = Option("seed", "--seed", "int", 0, MAX_SEED, why="numpy and scikit-learn take seeds below 2**32",
              optional=False)
N_BOOT = Option("n_boot", "--bootstrap", "int", 2, MAX_BOOT,
                why="a CI needs two replicates to have a width; past 100,000 its Monte Carlo error is far below "
                    "its sampling error and the resampling only costs memory")
SCORER = Option("scorer", "--scorer", "choice", choices=KINDS)
NONCE = Option("nonce", "--nonce", "str")
PATTERN = Option("pattern", "--pattern", "str")
REDUCTION = Option("reduction", "--reduction", "choice", choices=("sum", "mean"))
MATCHING = Option("matching", "--matching", "choice", choices=("alignment", "simple"))
LENGTH_NORM = Option("length_norm", "--length-norm", "choice", choices=("none", "tokens", "chars"))
SPLIT = Option("split", "--split", "choice", choices=SPLITS)
PLL = Option("pll", "--pll", "choice", choices=("original", "word-l2r"))
LIMIT = Option("limit", "--limit", "int", 1)
SAMPLE = Option("sample", "--sample", "int", 1)
ON_INVALID = Option("on_invalid", "--on-invalid", "choice", choices=("error", "skip"))
PROBE = Option("probe", "--probe", "str")
#: the options the asking methods (``generate``, ``letter``) declare (:attr:`probegen.methods.Method.options`)
PERMUTATIONS = Option("permutations", "--permutations", "permutations", 1, 100, metavar="N|rotations",
                      help="ask each unit under N seeded option orders, or every cyclic rotation of the options "
                           "(rotations); report accuracy per order, consistency and the majority answer's accuracy "
                           "[default: 1].")
PROMPTS = Option("prompts", "--prompts", "path", metavar="FILE",
                 help="prompt templates in the shape of templates/prompts/en.yaml [default: that file].")
DEBIAS_SHARE = Option("debias_share", "--debias-share", "float", 0, 1, lo_open=True, hi_open=True)
BATCH_SIZE = Option("batch_size", "--batch-size", "int", 1)
EVAL_METHOD = Option("method", "--method", "choice", optional=False, methods_of="eval")
ADAPTIVE = Option("adaptive", "--adaptive", "path")
BUDGET = Option("budget", "--budget", "int", 1, why="items an adaptive test gives at most")
TARGET_SE = Option("target_se", "--target-se", "float", 0, lo_open=True, why="the ability's standard error")
BATCH_ITEMS = Option("batch_items", "--batch-items", "int", 1)
RANDOMESQUE = Option("randomesque", "--randomesque", "int", 1, why="records drawn among, 1 = the most informative")
BIAS_METHOD = Option("method", "--method", "choice", methods_of="bias")
FOLDS = Option("folds", "--folds", "int", 2, 100, why="cross-validation folds of the trained controls")
CONTROLS = Option("controls", "--controls/--no-controls", "bool", optional=False)
FINETUNE = Option("finetune", "--finetune", "bool", optional=False)
SEEDS = Option("seeds", "--seeds", "int", 1, 100, why="runs per condition of the trained method")
HUMAN = Option("human", "--human", "paths")
BESIDE = Option("beside", "--beside", "paths")
DEVICE = Option("device", "--device", "device", optional=False)
API_TIMEOUT = Option("api_timeout", "--api-timeout", "float", 1, why="seconds one request to --api-base may take")

# ---- the float options of the other commands: every one is finite and in range (click's FloatRange
# lets NaN through: NaN compares false with both bounds)
CONTAMINATION_ALPHA = Option("alpha", "--alpha", "float", 0, 0.5, lo_open=True, why="the level of the test")
FORMS_MARGIN = Option("margin", "--margin", "float", 0.001, 0.5, why="the TOST's equivalence margin in accuracy")
FORMS_ALPHA = Option("alpha", "--alpha", "float", 0.001, 0.2, why="the level of each one-sided test")
FILTER_THRESHOLD = Option("threshold", "--threshold", "float", 0, 1, why="a share of the splits")
FILTER_TOLERANCE = Option("tolerance", "--tolerance", "float", 0, 1, why="an accuracy above chance")
FILTER_HOLDOUT = Option("holdout", "--holdout", "float", 0, 1, lo_open=True, hi_open=True,
                        why="a share of the concepts")
MAX_SIMILARITY = Option("max_similarity", "--max-similarity", "float", -1, 1, why="a cosine similarity")
DEV_FRAC = Option("dev_frac", "--dev-frac", "float", 0, 1, hi_open=True, why="a share of the set")
TEST_FRAC = Option("test_frac", "--test-frac", "float", 0, 1, hi_open=True, why="a share of the set")
DTYPE = Option("dtype", "--dtype", "dtype", choices=DTYPES, optional=False)

#: the options of ``probegen eval`` / :func:`probegen.score` (and the built-in methods' own)
EVAL_OPTIONS: tuple[Option, ...] = (
    MODEL, DATASET, OUT, EVAL_METHOD, SCORER, NONCE, PATTERN, REDUCTION, MATCHING, LENGTH_NORM, SPLIT, PLL, LIMIT,
    SAMPLE, ON_INVALID, PROBE, PERMUTATIONS, PROMPTS, N_BOOT, DEBIAS_SHARE, SEED, BATCH_SIZE, ADAPTIVE, BUDGET,
    TARGET_SE, BATCH_ITEMS, RANDOMESQUE)
#: the options of ``probegen bias`` / :func:`probegen.bias`, by request field
BIAS_OPTIONS: tuple[Option, ...] = (
    MODEL, DATASETS, OUT, SEED, N_BOOT, SCORER, NONCE, PATTERN, REDUCTION, BATCH_SIZE, FOLDS, SPLIT, CONTROLS,
    DEBIAS_SHARE, BIAS_METHOD, FINETUNE, SEEDS, HUMAN, BESIDE, LIMIT, SAMPLE, ON_INVALID, PROBE, PERMUTATIONS, PROMPTS)
#: the runtime options both notebook calls take beside the request's
RUNTIME_OPTIONS: tuple[Option, ...] = (DEVICE, DTYPE)
