"""Loading the probe templates that live as data files in ``templates/`` (JSON, and the WordNetQA
question templates per language in ``templates/questions/<language>.yaml``)."""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Collection, cast

from .errors import ProbegenError


@lru_cache(maxsize=None)
def load_template(name: str) -> dict[str, Any]:
    """The parsed JSON template file ``templates/<name>.json``."""
    try:
        text = resources.files("probegen.templates").joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProbegenError(f"template file templates/{name}.json not found") from None
    return cast("dict[str, Any]", json.loads(text))


def default_nonce() -> str:
    """The default made-up word (CoDA21's 'bkatuhla')."""
    return str(load_template("nonce_words")["default"])


def dataset_nonce(manifest: dict[str, Any] | None) -> str:
    """The made-up word a dataset asks for (its manifest's ``nonce``), else the default.

    >>> dataset_nonce({"nonce": "wugaflor"}), dataset_nonce({})
    ('wugaflor', 'bkatuhla')
    """
    return (manifest or {}).get("nonce") or default_nonce()


# ---- WordNetQA question templates, one file per language ----------------------------------------
#: the bundled question templates: templates/questions/<language>.yaml
QUESTIONS_DIR = "questions"
_PROBE_KEYS = ("choice", "templates", "word_stem", "lm_query", "plain_query")
_FIELDS = {"stem": ("sentence", "word", "definition"), "word_stem": ("word",), "lm_query": ("stem",),
           "plain_query": ("sentence", "word", "definition"), "choice": ("gloss", "lemma", "lemmas")}


@dataclass(frozen=True)
class QuestionTemplates:
    """One question-template file: where it came from, its language, its sha256 and its content."""

    file: str  # templates/questions/<lang>.yaml, or the path given with --templates
    language: str
    sha256: str
    data: dict[str, Any] = field(compare=False, repr=False)
    bundled: bool = True

    def record(self) -> dict[str, Any]:
        """What a manifest records; a file of the user's own travels with its content, so eval and
        bias can render its questions later without the file."""
        out: dict[str, Any] = {"file": self.file, "language": self.language, "sha256": self.sha256}
        if not self.bundled:
            out["content"] = self.data
        return out


def bundled_languages() -> list[str]:
    """Languages with bundled question templates.

    >>> "en" in bundled_languages() and "es" in bundled_languages()
    True
    """
    folder = resources.files("probegen.templates").joinpath(QUESTIONS_DIR)
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=None)
def question_templates(language: str = "en", path: str | None = None) -> QuestionTemplates:
    """The question templates of a wordnet's ``language`` (``es-ES`` -> ``es``), or of the file ``path``.

    >>> question_templates("es-ES").file
    'templates/questions/es.yaml'
    >>> question_templates("xx")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: no question templates for the wordnet's language 'xx' (bundled: en, es): write
    them in the shape of templates/questions/en.yaml and pass --templates FILE
    """
    if path:
        from .io import open_input

        p = Path(path).expanduser()
        try:
            with open_input(p, "templates file") as fh:  # a FIFO or a device: one line, unread
                raw = fh.read()
        except OSError as e:
            raise ProbegenError(f"--templates {path}: cannot read it ({e.strerror or e})") from None
        return QuestionTemplates(path, language, hashlib.sha256(raw).hexdigest(), _parse_questions(raw, path),
                                 bundled=False)
    lang = (language or "en").split("-")[0].split("_")[0].lower()
    if lang not in bundled_languages():
        raise ProbegenError(f"no question templates for the wordnet's language {language!r} (bundled: "
                            f"{', '.join(bundled_languages())}): write them in the shape of "
                            f"templates/{QUESTIONS_DIR}/en.yaml and pass --templates FILE")
    name = f"templates/{QUESTIONS_DIR}/{lang}.yaml"
    raw = resources.files("probegen.templates").joinpath(QUESTIONS_DIR, f"{lang}.yaml").read_bytes()
    return QuestionTemplates(name, lang, hashlib.sha256(raw).hexdigest(), _parse_questions(raw, name))


def _parse_questions(raw: bytes, name: str) -> dict[str, Any]:
    """A question-template file parsed (YAML or JSON) and checked: one-line errors name the file and field."""
    from .io import load_yaml_file

    data = load_yaml_file(raw, name)  # no aliases: a "billion laughs" would be copied into the manifest
    if not isinstance(data, dict) or not isinstance(data.get("probes"), dict) or not data["probes"]:
        raise ProbegenError(f"{name}: needs a 'probes' mapping (see templates/{QUESTIONS_DIR}/en.yaml)")
    for probe, block in data["probes"].items():
        _check_probe_block(block, f"{name}: probes.{probe}")
    cq = data.get("choice_query")
    if not isinstance(cq, dict) or not all(isinstance(cq.get(k), str) for k in ("lm", "plain")):
        raise ProbegenError(f"{name}: choice_query needs 'lm' and 'plain' strings")
    return data


def _check_probe_block(block: Any, where: str) -> None:
    if not isinstance(block, dict):
        raise ProbegenError(f"{where}: must be a mapping with {', '.join(_PROBE_KEYS)}")
    for key in _PROBE_KEYS:
        if key not in block:
            raise ProbegenError(f"{where}: missing {key!r}")
    temps = block["templates"]
    if not isinstance(temps, list) or not temps:
        raise ProbegenError(f"{where}.templates: needs a list of {{id, stem}}")
    for i, t in enumerate(temps):
        if (not isinstance(t, dict) or not isinstance(t.get("id"), str) or not t["id"]
                or not isinstance(t.get("stem"), str)):
            raise ProbegenError(f"{where}.templates[{i}]: needs a non-empty string 'id' and a string 'stem'")
        check_fields(t["stem"], _FIELDS["stem"], f"{where}.templates[{i}].stem")
    for key in ("choice", "word_stem", "lm_query", "plain_query"):
        if not isinstance(block[key], str):
            raise ProbegenError(f"{where}.{key}: must be a string")
        check_fields(block[key], _FIELDS[key], f"{where}.{key}")


def check_fields(text: str, allowed: Collection[str], where: str) -> None:
    """Fail now on a placeholder filling in would crash on: an unknown name, a format spec or a conversion.

    >>> check_fields("In {sentence}, {word:d} means", ("sentence", "word"),
    ...               "q.yaml: probes.x.templates[0].stem")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    probegen.errors.ProbegenError: q.yaml: probes.x.templates[0].stem: placeholder {word:d} takes no format spec or
    conversion; write {word}
    """
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ProbegenError(f"{where}: malformed ({e}); write a literal brace as {{{{ or }}}}") from None
    for f, spec, conv in fields:
        if f not in allowed:
            raise ProbegenError(f"{where}: unknown placeholder {{{f}}}; use "
                                f"{', '.join('{' + a + '}' for a in allowed)}")
        if spec or conv:
            shown = "{" + f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            raise ProbegenError(f"{where}: placeholder {shown} takes no format spec or conversion; write {{{f}}}")
