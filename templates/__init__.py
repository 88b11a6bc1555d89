"""Probe templates as data: patterns, question templates and nonce words (JSON/TXT files)."""
