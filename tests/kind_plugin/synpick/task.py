"""The synonym-pick task: reading, units; the capabilities come from the sibling modules."""

import json
from pathlib import Path
from types import SimpleNamespace

from probegen.core import Unit
from probegen.errors import DatasetError

from .bias import BiasHooks
from .spec import SpecHooks
from .study import StudyHooks

KIND = "synonym-pick"
QUERIES = {"full": "{definition} ({word})", "context": "{definition}", "word": "{word}"}


class SynonymPick(BiasHooks, StudyHooks, SpecHooks):
    name = KIND
    title = "synonym pick"
    unit_name = "word"
    conditions = tuple(QUERIES)

    def claims(self, path):
        return path.is_dir() and (path / "pairs.jsonl").is_file() and \
            json.loads((path / "manifest.json").read_text()).get("kind") == KIND

    def load(self, path, ablations=False):
        p = Path(path)
        items = [json.loads(line) for line in (p / "pairs.jsonl").read_text().splitlines() if line.strip()]
        if not items:
            raise DatasetError(f"{p} has no pairs")
        return SimpleNamespace(items=items, manifest=json.loads((p / "manifest.json").read_text()))

    def units(self, data, condition, settings, style="pattern"):
        return [Unit.choice(it["id"], QUERIES[condition].format(**it), it["choices"], it["gold"]) for it in data.items]
