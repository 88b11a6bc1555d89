"""Item statistics over runs: which items are good and which respondents really differ.

- :mod:`.table`: one long response table over runs and studies (respondent x item, missing cells allowed);
- :mod:`.classical`: p-values, item-rest correlations, distractor tables, KR-20 with a bootstrap CI;
- :mod:`.irt`: 1PL/2PL/3PL (guessing floor fixed at 1/k) by marginal maximum likelihood, with intervals and flags;
- :mod:`.paired`: two runs on the same items (paired bootstrap CI, exact McNemar), all pairs with Holm's correction;
- :mod:`.subset`: compact forms (random, anchor, information) and a predictor of full-set accuracy.
"""
