"""Parallel forms: K disjoint, difficulty-matched datasets drawn from one candidate pool
(:mod:`.split`), and the evidence that they measure the same thing (:mod:`.report`)."""
