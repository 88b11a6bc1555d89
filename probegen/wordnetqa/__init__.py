"""WordNetQA-style multiple-choice probes (Richardson & Sabharwal, "What Does My QA Model Know?"):
WordNet -> contexts -> probes -> distractors -> items -> dataset files -> evaluation.
"""
