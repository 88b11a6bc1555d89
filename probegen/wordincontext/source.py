"""SemCor occurrences for the word-in-context builders: grouped by (lemma, POS), with a character
span, filtered by the no-leak rule (``probegen.leaks``); :func:`doc`, :func:`key` and :func:`order`
read the SemCor ids an occurrence carries.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..contexts import Context, recorded
from ..errors import ProbegenError

if TYPE_CHECKING:
    from ..data import DataInfo
    from ..lexicon.base import LexicalResource
    from ..wordnet_graph import WordNetGraph

POS_NAMES = {"noun": ("n",), "verb": ("v",), "both": ("n", "v")}


class SplitConfig:
    """What a WiC and a WSD build's settings share: parts of speech and split fractions."""

    pos: tuple[str, ...]
    dev_frac: float
    test_frac: float

    def check_split(self, units: str, built: str) -> None:
        """One line if the fractions leave no ``units`` for train or ``pos`` is not nouns and verbs."""
        if not 0 <= self.dev_frac < 1 or not 0 < self.test_frac < 1 or self.dev_frac + self.test_frac >= 1:
            raise ProbegenError(f"--dev-frac and --test-frac must be fractions leaving some {units} for train")
        if not set(self.pos) <= {"n", "v"} or not self.pos:
            raise ProbegenError(f"{built} are built for nouns and verbs (pos n, v)")

    def to_dict(self) -> dict[str, Any]:
        """The settings as the manifest records them."""
        return {**asdict(self), "pos": list(self.pos)}  # type: ignore[call-overload]  # subclasses are dataclasses


def rng_for(seed: int, key: str) -> np.random.Generator:
    """A generator that depends only on the seed and a key (a lemma, an item id)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def doc(o: Context) -> str:
    """The SemCor document (``brown1/br-a01``) an occurrence's sentence belongs to.

    >>> doc(Context.from_tokens(("A", "jury", "."), (1, 2), ref="brown1/br-a01#3"))
    'brown1/br-a01'
    """
    return recorded(o.ref, "ref").split("#", 1)[0]


def key(o: Context) -> str:
    """An occurrence's unique key: sentence id and first token (``brown1/br-a01#3:1``)."""
    return f"{o.ref}:{recorded(o.span, 'span')[0]}"


def order(o: Context) -> tuple[str, int, int]:
    """Corpus order: document, sentence number, token position."""
    d, _, snum = recorded(o.ref, "ref").partition("#")
    return d, int(snum) if snum.isdigit() else -1, recorded(o.span, "span")[0]


@dataclass
class SourceStats:
    """What the occurrence filters removed (written to the manifest)."""

    occurrences: int = 0  # tagged tokens of the chosen parts of speech
    too_long: int = 0  # sentence longer than max_tokens
    leak_checked: int = 0
    leaky: int = 0  # another form of the target visible outside its span

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)


def occurrences(index: dict[str, list[Context]], graph: WordNetGraph, pos: tuple[str, ...], max_tokens: int,
                stats: SourceStats) -> list[Context]:
    """Every SemCor occurrence of a synset of ``pos`` in a sentence of at most ``max_tokens`` tokens,
    in corpus order."""
    out = []
    for synset in sorted(index):
        if synset not in graph or graph.pos(synset) not in pos:
            continue
        for c in index[synset]:
            stats.occurrences += 1
            tokens = recorded(c.tokens, "tokens")
            if len(tokens) > max_tokens:
                stats.too_long += 1
                continue
            out.append(Context.from_tokens(tokens, recorded(c.span, "span"), c.ref, c.source,
                                           recorded(c.lemma, "lemma").lower(), synset))
    out.sort(key=order)
    return out


@dataclass
class LeakFilter:
    """``ok(occurrence)``: the context shows no other form of the target (counted in ``stats``)."""

    morph: Any
    stats: SourceStats
    _memo: dict[str, bool] = field(default_factory=dict)

    def ok(self, o: Context) -> bool:
        k = key(o)
        got = self._memo.get(k)
        if got is None:
            from ..leaks import leaks

            got = self._memo[k] = not leaks(o.text, o.char_span, recorded(o.lemma, "lemma"), self.morph)
            self.stats.leak_checked += 1
            self.stats.leaky += not got
        return got


def leak_filter(wn: LexicalResource, stats: SourceStats) -> LeakFilter:
    """The no-leak check over WordNet's morphology (one memo per build)."""
    from ..leaks import Morphology

    return LeakFilter(Morphology(wn), stats)


def split_by_rank(keys: list[str], dev_frac: float, test_frac: float, rng: np.random.Generator) -> dict[str, str]:
    """key -> train/dev/test by a seeded permutation cut at the fractions (keys stay whole).

    >>> sp = split_by_rank([f"k{i}" for i in range(10)], 0.1, 0.2, np.random.default_rng(0))
    >>> sorted(sp.values()).count("test"), sorted(sp.values()).count("dev")
    (2, 1)
    """
    n = len(keys)
    n_test, n_dev = int(round(test_frac * n)), int(round(dev_frac * n))
    out = {}
    for rank, i in enumerate(rng.permutation(n).tolist()):
        out[keys[i]] = "test" if rank < n_test else "dev" if rank < n_test + n_dev else "train"
    return out


def load_sources(wordnet: str | None, semcor: str | None, log: Callable[[str], None]) -> tuple[
        LexicalResource, DataInfo, WordNetGraph, LexicalResource, dict[str, list[Context]]]:
    """(wordnet, SemCor info, graph, wordnet, SemCor context index), located and loaded (the wordnet
    needs sense keys)."""
    from ..data import locate_semcor
    from ..errors import ProbegenError
    from ..lexicon.sources import has_sense_keys, open_resource, where
    from ..semcor import context_index
    from ..wordnet_graph import load_graph

    wn = open_resource(wordnet)
    if not has_sense_keys(wn):  # one line now; these sets have no example-sentence variant
        raise ProbegenError(f"word-in-context sets need SemCor's sense tags, and {wn.label or wn.source} has no "
                            "WordNet sense keys to map them; use --wordnet-source pwn30 or pwn31")
    sc_info = locate_semcor(semcor)
    log(f"{where(wn)}; SemCor {sc_info.version} ({sc_info.source})")
    graph = load_graph(wordnet)
    return wn, sc_info, graph, wn, context_index(sc_info, wn, wn)
