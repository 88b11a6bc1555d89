"""probegen: controlled, adversarial lexical-semantic probes generated from WordNet and SemCor."""

__version__ = "0.1.0"
