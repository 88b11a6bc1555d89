"""Item statistics over respondents (:mod:`probegen.exchange`): :mod:`.table` (the response table),
:mod:`.classical` (p-values, item-rest, distractors, KR-20), :mod:`.irt` (1PL/2PL/3PL), :mod:`.paired`
(paired comparisons, Holm), :mod:`.subset` (compact forms), :mod:`.cat` and :mod:`.adaptive` (adaptive tests).
"""
