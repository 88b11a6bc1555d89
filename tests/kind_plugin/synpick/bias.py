"""synonym-pick's bias tables, subsets, control and entropy inputs: what ``probegen bias`` measures of
a scored synonym-pick dataset, handed over as plain data (:mod:`probegen.tasks.bias_inputs`).

- the table: one unit per item of the generic scoring, the label baseline chance 1/n;
- subsets: one per WordNet lexicographer file (``lexfile``: noun.act, noun.person, ...) with at least
  :data:`MIN_ITEMS` items;
- the control: the choice-only control (diagnostics' engine for choice views) over the items' options;
- entropy: the word's sense (its synset) and its gold synonym.
"""

from collections import Counter

from probegen.tasks import Task
from probegen.tasks.bias_inputs import BiasInputs, ChoiceView, keep_subsets, record_table

#: the fewest items a lexicographer-file subset needs to be reported
MIN_ITEMS = 5


def choice_views(items: list, kind: str) -> list[ChoiceView]:
    """One choice view per item: its options, the gold synonym, clustered by synset (one control over
    all items: ``probe`` is the kind)."""
    return [ChoiceView(it["id"], tuple(it["choices"]), int(it["gold"]), it["id"], kind, it["word"], it["id"])
            for it in items]


class BiasHooks(Task):
    """The kind's bias inputs (:meth:`probegen.tasks.Task.bias_inputs`)."""

    def bias_inputs(self, data, records):
        items = list(data.items)
        lexfile = {it["id"]: it["lexfile"] for it in items}

        def table(strata):
            return record_table(records, None if strata is None else [i for i, f in lexfile.items() if f in strata])

        views = choice_views(items, self.name)
        return BiasInputs(
            table=table,
            unit=self.unit_name,
            n_items=len(items),
            strata=tuple(sorted(set(lexfile.values()))),
            subsets=keep_subsets(Counter(lexfile.values()), MIN_ITEMS),
            choice_views=views,
            entropy={"sense": [(v.word, v.sense) for v in views],
                     "label": [(v.word, v.choices[v.answer]) for v in views]},
            entropy_notes={"sense_note": "a word's sense is the synset it was drawn from"},
            notes=[f"subsets: WordNet lexicographer files with at least {MIN_ITEMS} items"],
        )
