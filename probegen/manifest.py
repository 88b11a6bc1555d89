"""Dataset manifests: everything needed to know how a dataset was made and to reproduce it.

Manifests carry no timestamps or host names, so the same config and seed give byte-identical
files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .data import DataInfo
    from .lexicon.base import LexicalResource

from .version import __version__

# Marks probegen output so that it can be filtered out of pre-training corpora.
CANARY = "PROBEGEN CANARY GUID 6f1c2a5e-8d0b-4b7e-9a43-probegen-coda21-wordnetqa"


def data_block(wordnet: DataInfo | LexicalResource, semcor: DataInfo | None = None) -> dict[str, Any]:
    """The data-provenance part of a manifest from located DataInfo objects (or, for the wordnet, a
    :class:`~probegen.lexicon.LexicalResource`: any but WordNet 3.0 is recorded by its ``describe()``;
    3.0 keeps the block it always had, so its datasets stay byte-identical)."""
    if hasattr(wordnet, "describe") and wordnet.source != "pwn30":
        out: dict[str, Any] = {"wordnet": wordnet.describe()}
    else:
        out = {"wordnet": {"version": wordnet.version, "sha256": wordnet.sha256}}
    if semcor is not None:
        out["semcor"] = {"version": semcor.version, "sha256": semcor.sha256}
    return out


def make_manifest(kind: str, config: dict[str, Any], seed: int, data: dict[str, Any], counts: dict[str, Any],
                  **extra: Any) -> dict[str, Any]:
    """Assemble a manifest dict (written as manifest.json beside the data)."""
    return {
        "kind": kind,
        "probegen_version": __version__,
        "canary": CANARY,
        "seed": seed,
        "config": config,
        "data": data,
        "counts": counts,
        **extra,
    }
