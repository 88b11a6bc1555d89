"""Word in context: items that hide a target word in a context and ask about its sense.

The item shape decides the task: ``pair`` (WiC, :class:`WicTask`), ``choice`` (WSD,
:class:`WsdTask`) or ``label`` (one context, one class, :class:`LabelTask`). These kinds are
measured by a trained probe (``diagnostics.trained``), not by zero-shot scoring; that method's
hooks are methods here, so it never compares shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

import numpy as np

from ..core import as_unit_scorer
from ..errors import ProbegenError
from ..settings import Settings
from ..tasks.base import Evaluation, Log
from ..tasks.capabilities import SpecBuildable, Subsettable, Trainable, Writable

if TYPE_CHECKING:
    from ..spec.schema import SpecSection
    from .dataset import WicDataset

#: the item shape of a probegen directory of each manifest kind (``wordincontext``: read the items)
SHAPE_OF_KIND = {"wic": "pair", "wsd": "choice"}


def row_shape(row: Any) -> str:
    """The item shape of one generic-JSONL row, by the fields ``parse_row`` reads first.

    >>> row_shape({"context2": "x"}), row_shape({"choices": []}), row_shape({"label": "n"})
    ('pair', 'choice', 'label')
    """
    keys = row.keys() if isinstance(row, dict) else ()
    if "context2" in keys or "span2" in keys:
        return "pair"
    return "choice" if "choices" in keys or "gold" in keys else "label"


def item_shape(path: Path) -> str | None:
    """``pair``/``choice``/``label`` if ``path`` is a word-in-context dataset, else None (see the module doc)."""
    from ..io import first_jsonl_row
    from .dataset import ITEMS_FILE, manifest_kind
    from .jsonl import looks_generic
    from .wic_tsv import is_wic_tsv

    p = Path(path)
    if p.is_dir():
        kind = manifest_kind(p)
        if kind in SHAPE_OF_KIND:
            return SHAPE_OF_KIND[kind]
        if kind == "wordincontext":
            return row_shape(first_jsonl_row(p / ITEMS_FILE))
        layout = not (p / "groups.jsonl").exists() and not (p / ITEMS_FILE).exists()
        return "pair" if kind is None and layout and is_wic_tsv(p) else None
    if looks_generic(p):
        return row_shape(first_jsonl_row(p))
    return "pair" if p.exists() and is_wic_tsv(p) else None


def majority(values: Sequence[Any], seed: int) -> Any:
    """The most frequent value (as text); a tie is broken by a seeded draw, never by order.

    >>> str(majority([True, True, False], 0))
    'True'
    """
    vals, counts = np.unique(np.asarray(values, dtype=object).astype(str), return_counts=True)
    best = vals[counts == counts.max()]
    return best[np.random.default_rng(seed).integers(len(best))] if len(best) > 1 else best[0]


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[u, v, |u-v|, u*v]`` per row."""
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)


def choice_correct(scores: np.ndarray, groups: np.ndarray, y: np.ndarray, ids: Sequence[str] | None = None,
                   seed: int = 0) -> np.ndarray:
    """Per item (group): is the gold its top-scoring choice (the core's decision: a tie broken at
    random, seeded by ``seed`` and the item's id, ``ids[g]``, else its index)?

    >>> choice_correct(np.array([0.1, 0.9, 0.5, 0.2]), np.array([0, 0, 1, 1]), np.array([0, 1, 1, 0])).tolist()
    [True, True]
    """
    from ..core import decide_scores, tie_rng

    out = []
    for g in np.unique(groups):
        s, t = scores[groups == g], y[groups == g].astype(bool)
        uid = ids[int(g)] if ids is not None else str(int(g))
        pick = decide_scores(s[None, :], "argmax", tie_rng(seed, uid))[0]
        out.append(bool(t[pick]))
    return np.array(out)


class WordInContextTask(Subsettable["WicDataset"], Writable["WicDataset"], Trainable["WicDataset"]):
    """What every word-in-context shape shares; subclasses set :attr:`shape` and its hooks."""

    #: how ``probegen stats`` names the items
    stats_noun: ClassVar[str] = "items"
    kinds: ClassVar[tuple[str, ...]] = ("wordincontext",)
    priority = 10  # strict shape rules: asked before the catch-all file rules
    zero_shot = False
    options = frozenset()  # eval trains a linear probe: --seed and --batch-size only
    bias_options = frozenset({"method", "finetune", "seeds"})
    conditions = ("full", "context", "word")

    def choose(self, records: Sequence[Any], keys: Sequence[Any], how: str, n: int, seed: int) -> set[Any]:
        """Per split, in proportion to its share of the keys (at least one each): the trained probe
        still has a train and a test split, and no lemma (document) is in two of them."""
        from ..tasks.base import pick

        by_split: dict[str, list[Any]] = {}
        for r, k in zip(records, keys):
            by_split.setdefault(str(r.split), []).append(k)
        total = len(dict.fromkeys(keys))
        if n >= total:
            return set(keys)
        chosen: set[Any] = set()
        for i, (_, ks) in enumerate(sorted(by_split.items())):
            chosen |= pick(ks, how, max(1, round(n * len(dict.fromkeys(ks)) / total)), seed + i)
        return chosen

    def cluster_of(self, record: Any) -> str:
        """The item's training/resampling unit (a WiC pair's lemma, a WSD item's SemCor document)."""
        return str(record.unit or record.lemma)

    def claims(self, path: Path) -> bool:
        return item_shape(path) == self.shape

    def load(self, path: str | Path, ablations: bool = False) -> WicDataset:
        from .dataset import load

        return load(path)

    def write(self, data: WicDataset, out: str | Path) -> Path:
        from .dataset import write

        return write(data, out)

    def counts(self, data: WicDataset) -> dict[str, Any]:
        from .dataset import split_counts

        return {"splits": split_counts(data.items), "items": len(data.items)}

    def evaluate(self, data: WicDataset, scorer: Any, settings: Settings, progress: bool = True) -> Evaluation:
        if as_unit_scorer(scorer).exchanges() is not None:  # asked, not scored: the generic path
            return super().evaluate(data, scorer, settings, progress)
        raise ProbegenError(f"{self.title} datasets are measured by a trained probe, not by zero-shot scoring: use "
                            "`probegen eval` (a linear probe), `probegen bias --method trained`, or ask a chat model "
                            "with --method generate")

    # ---- the generative method: every item asked as a prompt (probegen.generate) --------------------
    def units(self, data: WicDataset, condition: str, settings: Settings, style: str = "pattern") -> list[Any]:
        """Never: items are not scored zero-shot (a chat model is asked them: :meth:`prompt_units`)."""
        raise ProbegenError(f"{self.title} datasets are not scored zero-shot: a trained probe measures them, "
                            "or a chat model answers them (--method generate)")

    def prompt_units(self, data: WicDataset, condition: str, settings: Settings) -> list[Any]:
        """Every item as a chat model is asked it, in file order."""
        if condition not in self.conditions:
            raise ProbegenError(f"{self.title} datasets have no {condition!r} condition")
        return [self.generative_unit(it, condition, settings.nonce) for it in data.items]

    def generative_unit(self, item: Any, condition: str, nonce: str) -> Any:
        """One item as a prompt's unit in ``condition``."""
        raise ProbegenError(f"the generative method does not ask {self.title} items")

    @staticmethod
    def shown(ctx: Any, condition: str, nonce: str) -> str:
        """A context as a prompt shows it: the target in square brackets (``context``: the made-up
        word in its place); nothing in the ``word`` condition.

        >>> from probegen.contexts import Context
        >>> c = Context.from_text("He sat on the bank.", "bank")
        >>> WordInContextTask.shown(c, "full", "bkatuhla"), WordInContextTask.shown(c, "context", "bkatuhla")
        ('He sat on the [bank].', 'He sat on the [bkatuhla].')
        """
        from ..text import replace_char_span

        if condition == "word":
            return ""
        return replace_char_span(ctx.text, ctx.char_span, f"[{nonce if condition == 'context' else ctx.surface}]")

    @staticmethod
    def named(item: Any, condition: str, nonce: str) -> str:
        """The word a prompt asks about: the made-up word when it is hidden, else the lemma."""
        return nonce if condition == "context" else str(item.lemma).replace("_", " ")

    def stats(self, path: str | Path, log: Log) -> str:
        """Items per split with lemmas, units and labels, and the leak rate of the contexts."""
        from ..leaks import format_leak_rates, leak_rates, morphology_for
        from .dataset import load, split_counts

        ds = load(path)
        lines = [f"{path}  (kind: {ds.kind}; {len(ds.items)} {self.stats_noun})",
                 f"{'split':<6} {'items':>6} {'lemmas':>7} {'units':>6}  labels"]
        for split, c in split_counts(ds.items).items():
            labels = (self.split_labels.format(**c) if self.split_labels
                      else ", ".join(f"{k} {v}" for k, v in c["labels"].items()))
            lines.append(f"{split:<6} {c['items']:>6} {c['lemmas']:>7} {c['units']:>6}  {labels}")
        rows: list[Any] = [(it.pos, t.text, t.span, it.lemma) for it in ds.items for t in (it.context, it.context2)
                           if t is not None]
        lines.append(format_leak_rates(leak_rates(rows, morphology_for(ds.manifest, log))))
        return "\n".join(lines)

    #: the label column of one split's counts (:func:`~probegen.wordincontext.dataset.split_counts`), or
    #: None: every label with its count
    split_labels: ClassVar[str | None] = None

    # ---- the trained method's hooks (diagnostics.trained, run.finetune) --------------------
    def trained_features(self, items: Sequence[Any], view: Callable[[Any], tuple[str, Any]],
                         vectors: Callable[[list[tuple[str, Any]]],
                                           np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u = vectors([view(it.context) for it in items])
        return u, np.array([self.gold_text(it) for it in items]), np.arange(len(items))

    def prior_correct(self, train: Sequence[Any], test: Sequence[Any], seed: int) -> np.ndarray:
        lab = majority([self.gold_text(it) for it in train], seed)
        return np.array([self.gold_text(it) == lab for it in test])

    def classifier_correct(self, clf: Any, X: np.ndarray, y: np.ndarray, groups: np.ndarray,
                           ids: Sequence[str] | None = None, seed: int = 0) -> np.ndarray:
        return np.asarray(clf.predict(X) == y)

    def gold_text(self, item: Any) -> str:
        return str(item.label)

    def head_classes(self, train: Sequence[Any]) -> list[Any] | None:
        return sorted({str(it.label) for it in train})

    def gold_index(self, item: Any, classes: Sequence[Any] | None) -> int:
        """The gold class index of ``item`` among ``classes`` (-1 if unseen in training)."""
        assert classes is not None  # this kind's classes are its training labels (:meth:`classes`)
        return classes.index(str(item.label)) if str(item.label) in classes else -1


class WicTask(WordInContextTask, SpecBuildable["WicDataset"]):
    """WiC pairs: is the target used in the same sense in both contexts?"""

    name = "wic"
    title = "WiC"
    unit_name = "pair"
    cluster_name = "lemma"
    shape = "pair"
    kinds = ("wic", "wordincontext")
    stats_noun = "pairs"
    paper_bert = {"name": "WiC (paper, BERT)", "bias_w": 0.473, "bias_c": 1.055}  # Table 7, dev set
    second_context = True
    spec_shape = "wic_pair"

    split_labels = "T {true} / F {false}"

    def trained_features(self, items: Sequence[Any], view: Callable[[Any], tuple[str, Any]],
                         vectors: Callable[[list[tuple[str, Any]]], np.ndarray]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u = vectors([view(it.context) for it in items])
        v = vectors([view(it.context2) for it in items])
        return pair_features(u, v), np.array([bool(it.label) for it in items]), np.arange(len(items))

    def classifier_correct(self, clf: Any, X: np.ndarray, y: np.ndarray, groups: np.ndarray,
                           ids: Sequence[str] | None = None, seed: int = 0) -> np.ndarray:
        # P(F), P(T) as the two options of each pair, decided by the core: an exact 0.5 is a tie, broken at random
        classes = list(clf.classes_)
        proba = clf.predict_proba(X)[:, [classes.index(False), classes.index(True)]]
        gold = np.stack([~y.astype(bool), y.astype(bool)], axis=1)
        return choice_correct(proba.ravel(), np.repeat(np.arange(len(y)), 2), gold.ravel(), ids, seed)

    def head_classes(self, train: Sequence[Any]) -> list[Any] | None:
        return [False, True]

    def generative_unit(self, item: Any, condition: str, nonce: str) -> Any:
        """A yes-no question: is the word used in the same sense in both sentences? (option 0 = yes)"""
        from ..core import PromptUnit

        fields = (("sentence1", self.shown(item.context, condition, nonce)),
                  ("sentence2", self.shown(item.context2, condition, nonce)),
                  ("word", self.named(item, condition, nonce)))
        return PromptUnit("%s" % item.id, ("",), (("yes", "no"),), "argmax", (0 if bool(item.label) else 1,),
                          ask="yes-no", fields=fields)

    def gold_index(self, item: Any, classes: Sequence[Any] | None) -> int:
        return int(bool(item.label))

    def bootstrap_unit(self, data: WicDataset) -> str:
        # a probegen WiC set (or WiC copy) resamples lemmas; a generic file its own units
        return "lemma" if data.kind == self.name else super().bootstrap_unit(data)

    def built_summary(self, data: WicDataset) -> str:
        c = data.manifest.get("counts", {})
        return ", ".join(f"{s}: {v['items']} {self.stats_noun}" for s, v in c.get("splits", {}).items())

    def spec_section(self) -> SpecSection:
        from .spec import SECTION

        return SECTION


class LabelTask(WordInContextTask):
    """One context, one class label (e.g. a supersense tag), from a generic word-in-context JSONL."""

    name = "label"
    title = "word-in-context label"
    priority = 12
    shape = "label"
    stats_noun = "items (labelled)"


class WsdTask(WordInContextTask):
    """WSD items: one context, candidate sense definitions and the gold index."""

    name = "wsd"
    title = "WSD"
    priority = 11  # after WiC pairs, before labels (detection order)
    shape = "choice"
    kinds = ("wsd", "wordincontext")
    stats_noun = "items (choose the sense)"
    paper_bert = {"name": "WSD (paper, BERT)", "bias_w": 0.346, "bias_c": 0.874}  # Table 7, dev set
    scores_choices = True
    # senses are listed in an order under --method letter/generate: PriDe's prior applies (WiC's yes/no has no order)
    options = WordInContextTask.options | {"debias_share"}
    bias_options = WordInContextTask.bias_options | {"debias_share"}

    split_labels = "mean choices {mean_choices}"

    def trained_features(self, items: Sequence[Any], view: Callable[[Any], tuple[str, Any]],
                         vectors: Callable[[list[tuple[str, Any]]], np.ndarray]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One row per (item, choice): ``[u, d, |u-d|, u*d]``, y = is gold, group = the item's index."""
        u = vectors([view(it.context) for it in items])
        idx = np.array([i for i, it in enumerate(items) for _ in it.choices])
        d = vectors([(c, None) for it in items for c in it.choices])
        y = np.array([j == it.gold for it in items for j in range(len(it.choices))])
        return pair_features(u[idx], d), y, idx

    def prior_correct(self, train: Sequence[Any], test: Sequence[Any], seed: int) -> np.ndarray:
        """Per test item: is the gold at the training data's most frequent gold position?"""
        pos = int(majority([it.gold for it in train], seed))
        return np.array([it.gold == pos for it in test])

    def classifier_correct(self, clf: Any, X: np.ndarray, y: np.ndarray, groups: np.ndarray,
                           ids: Sequence[str] | None = None, seed: int = 0) -> np.ndarray:
        return choice_correct(clf.decision_function(X), groups, y, ids, seed)

    def gold_text(self, item: Any) -> str:
        return str(item.choices[item.gold])

    def sense_text(self, item: Any) -> str | None:
        return str(item.choices[item.gold])

    def head_classes(self, train: Sequence[Any]) -> list[Any] | None:
        return None

    def generative_unit(self, item: Any, condition: str, nonce: str) -> Any:
        """A lettered choice among the item's sense definitions (the ``sense`` prompt)."""
        from ..core import PromptUnit

        fields = (("sentence", self.shown(item.context, condition, nonce)),
                  ("word", self.named(item, condition, nonce)))
        return PromptUnit(str(item.id), ("",), (tuple(item.choices),), "argmax", (int(item.gold),), ask="sense",
                          fields=fields)

    def gold_index(self, item: Any, classes: Sequence[Any] | None) -> int:
        return int(item.gold)
