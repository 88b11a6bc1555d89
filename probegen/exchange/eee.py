"""The Every Eval Ever 0.3.0 JSON schemas (``eee_schema/``, MIT, copied from the wheel, which needs Python
>= 3.12) and the one check of an aggregate and its samples (export and import)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ProbegenError

EEE_SCHEMA_VERSION = "0.3.0"
SCHEMA_DIR = Path(__file__).with_name("eee_schema")


def eee_validator(which: str) -> Any:
    """A validator of the bundled schema ``which`` (``eval`` or ``instance_level_eval``)."""
    import jsonschema

    schema = json.loads((SCHEMA_DIR / f"{which}.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


def validate_eee(aggregate: dict[str, Any], rows: list[dict[str, Any]], where: str = "export") -> None:
    """Check an aggregate and its samples against the Every Eval Ever schemas and each other; one line if not."""
    for doc, which, at in [(aggregate, "eval", f"{where} (aggregate)")] + [
            (r, "instance_level_eval", f"{where} line {i}") for i, r in enumerate(rows, 1)]:
        err = next(iter(sorted(eee_validator(which).iter_errors(doc), key=lambda e: list(e.path))), None)
        if err is not None:
            path = "/".join(map(str, err.path)) or "(top)"
            raise ProbegenError(f"{at}: not Every Eval Ever {EEE_SCHEMA_VERSION} at {path}: {err.message[:160]}")
    ids = {r["evaluation_id"] for r in rows}
    if ids != {aggregate["evaluation_id"]}:
        raise ProbegenError(f"{where}: samples of {len(ids)} evaluation(s) {sorted(ids)[:2]}, aggregate "
                            f"{aggregate['evaluation_id']!r}: mixed evaluations")
