"""Configuration of a WordNetQA generation run (a small dataclass, recorded in the manifest)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..errors import ProbegenError
from ..spec.concepts import ConceptFilter

PROBES = ("definitions", "hypernymy", "hyponymy", "synonymy")
DISTRACTOR_TYPES = ("random", "sister", "isa")
CONTEXT_SOURCES = ("wordnet", "wordnet+semcor")
POS_CODES = {"noun": "n", "verb": "v"}
N_CHOICES = 5


@dataclass(frozen=True)
class WordNetQAConfig:
    """Everything that decides which questions, answers and distractors a dataset gets
    (``probes=("all",)``: every probe type).

    >>> WordNetQAConfig(probes=("all",)).probes == PROBES
    True
    """

    probes: tuple[str, ...] = PROBES
    pos: tuple[str, ...] = ("n",)
    max_hops: int = 4  # gold ISA answers at 1..max_hops hops; ISA distractors at 1..max_hops too
    distractors: tuple[str, ...] = DISTRACTOR_TYPES  # one item per (question, distractor type)
    sister_depth: int = 2  # sister family of depth l: siblings plus descendants down to l-1 levels
    n_distractors: int = N_CHOICES - 1
    contexts: str = "wordnet"  # "wordnet+semcor": SemCor sentences fill in where WordNet has none
    max_contexts: int = 3  # contexts per concept (definitions: one question each)
    max_answers_per_hop: int = 1  # ISA probes: gold answers sampled per (concept, hop)
    min_answer_depth: int = 2  # noun hypernyms this close to the root (entity, abstraction, ...) are skipped
    instances: bool = False  # follow instance hypernymy (Paris -> city) for answers and ISA distractors
    max_concepts: int | None = None  # a seeded sample of concepts with a question of the probes, for quick sets
    dev_frac: float = 0.1
    test_frac: float = 0.1
    seed: int = 0
    # probe specs (probegen.spec): a probe named outside PROBES asks for the concept's relative by
    # ``relation`` (any of probegen.lexicon.QUERYABLE) at min_hops..max_hops steps; ``concepts``
    # filters the question concepts
    relation: str = ""
    min_hops: int = 1
    concepts: ConceptFilter | None = None
    # question templates: None picks templates/questions/<the wordnet's language>.yaml; a path is
    # the user's own file (--templates FILE)
    templates: str | None = None

    def __post_init__(self) -> None:
        probes = tuple(self.probes)
        if "all" in probes:
            probes = PROBES
        # canonical order, so ("synonymy", "definitions") and the reverse give the same dataset
        object.__setattr__(self, "probes",
                           tuple(p for p in PROBES if p in probes) + tuple(p for p in probes if p not in PROBES))
        object.__setattr__(self, "pos",
                           tuple(p for p in ("n", "v") if p in self.pos)
                           + tuple(p for p in self.pos if p not in ("n", "v")))
        dtypes = tuple(self.distractors)
        object.__setattr__(self, "distractors",
                           tuple(d for d in DISTRACTOR_TYPES if d in dtypes)
                           + tuple(d for d in dtypes if d not in DISTRACTOR_TYPES))

    def validate(self) -> None:
        """Raise a one-line ProbegenError for settings that cannot produce a dataset."""
        bad = [p for p in self.probes if p not in PROBES]
        if self.relation:
            from ..lexicon.base import QUERYABLE

            if self.relation not in QUERYABLE:
                raise ProbegenError(f"unknown relation {self.relation!r}; use one of {', '.join(QUERYABLE)}")
            if len(self.probes) != 1 or not bad:
                raise ProbegenError(f"a relation probe is one probe named outside {', '.join(PROBES)}, got "
                                    f"{', '.join(self.probes)}")
            bad = []
        if bad or not self.probes:
            raise ProbegenError(f"unknown probe {bad[0] if bad else ''!r}; use one of {', '.join(PROBES)} or all")
        if not 1 <= self.min_hops <= self.max_hops:
            raise ProbegenError(f"need 1 <= min_hops <= max_hops, got {self.min_hops} and {self.max_hops}")
        bad = [d for d in self.distractors if d not in DISTRACTOR_TYPES]
        if bad or not self.distractors:
            raise ProbegenError(f"unknown distractor type {bad[0] if bad else ''!r}; use a comma list of "
                                f"{', '.join(DISTRACTOR_TYPES)}")
        bad = [p for p in self.pos if p not in POS_CODES.values()]
        if bad or not self.pos:
            raise ProbegenError(f"unknown part of speech {bad}; use noun, verb or both")
        if not 1 <= self.max_hops <= 10:
            raise ProbegenError(f"--max-hops must lie in 1..10, got {self.max_hops}")
        if not 1 <= self.sister_depth <= 5:
            raise ProbegenError(f"--sister-depth must lie in 1..5, got {self.sister_depth}")
        if self.n_distractors != N_CHOICES - 1:
            raise ProbegenError(f"WordNetQA items are {N_CHOICES}-way: n_distractors must be {N_CHOICES - 1}")
        if self.contexts not in CONTEXT_SOURCES:
            raise ProbegenError(f"unknown context source {self.contexts!r}; use {' or '.join(CONTEXT_SOURCES)}")
        if self.max_contexts < 1 or self.max_answers_per_hop < 1:
            raise ProbegenError("--max-contexts and --max-answers-per-hop must be at least 1")
        if self.max_concepts is not None and self.max_concepts < 1:
            raise ProbegenError("--max-concepts must be at least 1")
        if not (0 <= self.dev_frac < 1 and 0 <= self.test_frac < 1 and self.dev_frac + self.test_frac < 1):
            raise ProbegenError(f"need 0 <= dev/test fractions and dev + test < 1, got {self.dev_frac} and "
                                f"{self.test_frac}")

    @property
    def name(self) -> str:
        """Short dataset name: ``wordnetqa-<probe>`` or ``wordnetqa-all``."""
        return "wordnetqa-" + (self.probes[0] if len(self.probes) == 1
                               else "all" if self.probes == PROBES else "+".join(self.probes))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # the spec fields appear only when set, so `make wordnetqa` manifests stay as they were
        for key, default in (("relation", ""), ("min_hops", 1), ("concepts", None), ("templates", None)):
            if d[key] == default:
                del d[key]
        if self.concepts is not None:
            d["concepts"] = self.concepts.to_dict()
        for k in ("probes", "pos", "distractors"):
            d[k] = list(d[k])
        return d
