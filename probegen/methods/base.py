"""The :class:`Method` base class: one way of asking a model about a unit, saying once its ``--method``
values, options, scorer, results.json record, viewer settings and report sections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from ..errors import ProbegenError
from ..request_options import Option

if TYPE_CHECKING:
    from ..runner import Runner

#: options of a likelihood scorer: given to a method that reads no likelihoods, each is an error
SCORING_ONLY = ("scorer", "reduction", "length_norm", "pattern", "pll")
#: settings of a likelihood scorer the viewer shows (for a method that reads likelihoods)
SCORE_SETTINGS = ("reduction", "length_norm", "pattern")


@dataclass(frozen=True)
class ScorerRequest:
    """What a method's scorer is loaded with; ``options``: the method's own options given, by name."""

    model: str
    scorer: str | None = None
    reduction: str = "sum"
    batch_size: int | None = None
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)


class Method:
    """One way of asking. Subclass it, set :attr:`name` and what differs from the cloze defaults, and
    register it (entry-point group ``probegen.methods``)."""

    #: the registry name, recorded in results.json by every method but ``score``
    name: ClassVar[str] = ""
    #: how reports and the viewer name it
    title: ClassVar[str] = ""
    #: its ``--method`` value per command (a command missing here does not offer it)
    flags: ClassVar[Mapping[str, str]] = {}
    #: a chat model asked with the generative prompts (resolved by its backend; ``responses.jsonl``)
    asks: ClassVar[bool] = False
    #: options are shown in an order (PriDe's ``--debias-share`` can remove the position prior)
    ordered: ClassVar[bool] = False
    #: a probe trained on the encoder: no zero-shot scorer is loaded
    trains: ClassVar[bool] = False
    #: the likelihood options (:data:`SCORING_ONLY`) apply; ``not_scored`` says why not otherwise
    likelihood: ClassVar[bool] = True
    not_scored: ClassVar[str] = ""
    #: the options only this method takes: each reaches the command line, the notebook calls, request
    #: checks, ``ScorerRequest.options`` and results.json (``eval.method_options``)
    options: ClassVar[tuple[Option, ...]] = ()
    #: the report's paragraph on the method, and what a row's confidence is in the report and the viewer
    report_text: ClassVar[str] = ""
    confidence: ClassVar[str] = "softmax over the candidates' scores as the run reduced them"
    view_confidence: ClassVar[str] = "probability over the candidates (softmax of the log-probs)"
    #: the method a command runs when none is asked
    default: ClassVar[bool] = False
    #: its distribution is vote shares of one-hot answers: floored before PriDe divides by the prior
    votes: ClassVar[bool] = False

    def flag(self, command: str) -> str | None:
        """Its ``--method`` value in ``command`` (None: the command does not offer it)."""
        return self.flags.get(command)

    def check_options(self, given: Mapping[str, Any], owners: Mapping[str, list[str]]) -> None:
        """One line for an option given (not None) that does not apply to this method: a likelihood option
        to a method that reads none, or another method's (``owners``: option -> methods that take it)."""
        if not self.likelihood:
            bad = [k for k in SCORING_ONLY if given.get(k) is not None]
            if bad:
                raise ProbegenError(f"--{bad[0].replace('_', '-')} does not apply to --method {self.name}: "
                                    f"{self.not_scored}")
        for k, names in owners.items():
            if k not in {o.name for o in self.options} and given.get(k) is not None:
                rest = f" (and --method {', --method '.join(names[1:])})" if names[1:] else ""
                raise ProbegenError(f"--{k.replace('_', '-')} applies to --method {names[0]} only{rest}")

    def load_scorer(self, runner: Runner, req: ScorerRequest) -> Any:
        """The scorer this method asks with, loaded by ``runner``: the model's likelihood scorer."""
        from ..scorers import LM_KINDS

        settings: dict[str, Any] = {"batch_size": req.batch_size} if req.batch_size else {}
        scorer = runner.load_scorer(req.model, req.scorer, **settings)
        if scorer.kind in LM_KINDS:
            scorer = runner.load_scorer(req.model, req.scorer, reduction=req.reduction, **settings)
        return scorer

    def record(self, ev_block: dict[str, Any], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """results.json's ``eval`` block: a method that reads no likelihoods records those settings as null;
        ``options`` given are recorded as ``method_options``."""
        given = {"method_options": dict(options)} if options else {}
        if self.likelihood:
            return {**ev_block, **given} if self.name == "score" else {**ev_block, "method": self.name, **given}
        return {**{k: (None if k in SCORING_ONLY else v) for k, v in ev_block.items()}, "method": self.name, **given}

    def style(self, scorer_kind: str | None) -> str:
        """The query style the viewer rebuilds a likelihood run's queries in (as the scorer asked them)."""
        return "plain" if scorer_kind in ("static", "embedding") else "pattern"

    def shown_settings(self, ev: Mapping[str, Any], scorer: Mapping[str, Any]) -> tuple[str, ...]:
        """The ``eval`` settings the viewer shows for this method (besides matching and split)."""
        return SCORE_SETTINGS if self.likelihood else ()

    def scorer_settings(self) -> tuple[str, ...]:
        """The scorer settings the viewer shows for this method (``permutations`` of an ordered one)."""
        return ("permutations",) if self.ordered else ()

    def summary_lines(self, block: Mapping[str, Any]) -> list[str]:
        """The lines an evaluation summary adds for the rows' ``generation`` block ([] by default)."""
        return []

    def report_section(self, block: Mapping[str, Any]) -> list[str]:
        """The report's table of the ``generation`` blocks per condition ([] by default)."""
        return []


def resolve(obj: Any) -> Method:
    """A :class:`Method` instance from a subclass or an instance (an entry point may name either)."""
    m = obj() if isinstance(obj, type) and issubclass(obj, Method) else obj
    if not isinstance(m, Method):
        raise ProbegenError(f"{obj!r} is not a probegen Method (a subclass of probegen.methods.Method)")
    return m
