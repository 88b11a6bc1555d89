"""Word-in-context datasets: WiC-style pairs and WSD-style items from SemCor, the WiC release TSV
format, and a generic JSONL any lexical-semantic dataset can be written in."""
