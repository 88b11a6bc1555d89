"""WordNetQA-style multiple-choice probes (Richardson & Sabharwal, "What Does My QA Model Know?").

Data flow: WordNet graph -> contexts (example sentences with the target located) -> probes
(questions and gold answers) -> distractors -> items (5-way multiple choice, clusters, splits)
-> dataset files -> evaluation through the shared scorer.
"""
