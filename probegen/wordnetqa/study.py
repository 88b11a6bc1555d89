"""A human study of a WordNetQA dataset (:class:`probegen.tasks.Studyable`'s hooks, the ``mc`` page layout)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError, ProbegenError
from ..study.views import MASK
from ..study.views import study_rng as _rng
from .render import templates_of

if TYPE_CHECKING:
    from .evaluate import MCData
    from .items import MCItem
    from .render import Templates


def choice_pool(data: MCData, cfg: Any) -> tuple[list[Any], str, dict[str, int]]:
    """Multiple-choice items a study samples from: one per concept cluster (of ``cfg.split``)."""
    skipped: dict[str, int] = {}
    items = list(data.items)
    if cfg.split:
        items = [it for it in items if it.split == cfg.split]
        if not items:
            raise ProbegenError(f"the dataset has no items in split {cfg.split!r}")
    if set(cfg.conditions) - {"full"}:
        known = templates_of(data).template_by_id
        usable = [it for it in items if known(it.template) is not None]
        if len(usable) < len(items):
            skipped["no template or context (full condition only)"] = len(items) - len(usable)
        items = usable
    by_cluster: dict[str, list[Any]] = {}
    for it in items:
        by_cluster.setdefault(it.cluster, []).append(it)
    clusters = sorted(by_cluster)
    pool = [by_cluster[c][int(_rng(cfg.seed, f"study-pick/{c}").integers(len(by_cluster[c])))] for c in clusters]
    return pool, "concept clusters", skipped


# ---- views and gold -------------------------------------------------------------------------------
_SPAN, _WORD = "\x00", "\x01"  # stand-ins for the target, located once the stem is filled


def _marked(stem: str, fills: dict[str, str]) -> tuple[str, list[list[int]]]:
    r"""``stem`` with each stand-in replaced by its text, and the character spans of those texts.

    >>> _marked("In \"a \x00 saw\", \"\x01\" means:", {"\x00": "dog", "\x01": "dog"})
    ('In "a dog saw", "dog" means:', [[6, 9], [17, 20]])
    """
    out, marks, pos = [], [], 0
    for piece in re.split("([\x00\x01])", stem):
        text = fills.get(piece, piece)
        if piece in fills:
            marks.append([pos, pos + len(text)])
        out.append(text)
        pos += len(text)
    return "".join(out), marks


def mc_prompt_marks(item: MCItem, condition: str, templates: Templates) -> tuple[str, list[list[int]]]:
    """The question stem of a WordNetQA item in ``condition`` and the target word's spans in it (none
    in ``context``, which hides it)."""
    from .render import RELEASE_TEMPLATE, fill_stem, word_spans

    tmpl = templates.template_by_id(item.template)
    ctx = item.context
    if condition == "full":
        if tmpl is not None:
            sentence = ctx.replaced(_SPAN) if ctx else ""
            span_text = ctx.text[slice(*ctx.char_span)] if ctx else ""
            prompt, marks = _marked(fill_stem(tmpl, sentence, _WORD, item.definition),
                                    {_SPAN: span_text, _WORD: item.surface})
            if prompt == item.question:  # else the stored question is not this template's: show it unmarked
                return prompt, marks
        elif item.template == RELEASE_TEMPLATE and ctx is not None:  # release stems: cut as the bias ablations cut them
            # the spans the release reader located (every form of the word, by morphology)
            spans = item.stem_spans or tuple(word_spans(item.question, item.surface))
            return item.question, [list(sp) for sp in spans]
        return item.question, []
    if tmpl is None:
        raise DatasetError(
            f"item {item.id} has no known template (a release-format row?): only the full condition can be shown"
        )
    if condition == "word":
        return _marked(templates.probe_spec(item.probe)["word_stem"].format(word=_WORD), {_WORD: item.surface})
    sentence = item.context.replaced(MASK) if item.context else ""
    return fill_stem(tmpl, sentence, MASK, item.definition), []


def mc_view(item: MCItem, condition: str, templates: Templates) -> dict[str, Any]:
    """A WordNetQA item as shown in ``condition``: the stem, the choices and the target word's spans."""
    prompt, marks = mc_prompt_marks(item, condition, templates)
    return {"kind": "mc", "prompt": prompt, "choices": list(item.choices), "marks": marks}


def mc_gold(item: MCItem, kept_out: dict[str, str] | None = None) -> dict[str, Any]:
    """What scoring needs of a WordNetQA item: gold index, choice count, hidden word, and the
    conditions it is kept out of, with why (:func:`~probegen.wordnetqa.task.excluded_conditions`)."""
    gold = {
        "kind": "mc",
        "dataset_id": item.id,
        "unit": item.cluster,
        "gold": int(item.answer),
        "n": len(item.choices),
        "words": [[item.surface, item.word]],
    }
    if kept_out:
        gold["kept_out"] = dict(kept_out)
    return gold
