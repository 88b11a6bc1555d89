"""synonym-pick: a third-party probe kind kept in one folder (issue 38 part 2).

Which lemma is a synonym of the word? Real WordNet synsets, their definitions and lemmas. The kind is
this package only: its task (``task.py``), its bias tables and controls (``bias.py``), its study page
(``study.py``) and its probe-spec section (``spec.py``); probegen finds it through the
``probegen.tasks`` entry point and no probegen file names it.
"""

from .task import SynonymPick

__all__ = ["SynonymPick"]
