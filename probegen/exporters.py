"""Exports that other tools run: an lm-evaluation-harness task folder and a Hugging Face folder,
both written from one list of multiple-choice *docs* (probegen's own causal-LM query, the choices
in order, the gold index) that the kind makes (:meth:`probegen.tasks.Exportable.export_docs`).

``lm-eval``: ``task.yaml`` + ``docs.jsonl`` (+ README.md, manifest.json). With an empty
``target_delimiter`` and a doc text of ``context + lead`` (:func:`lm_eval_text`), lm-eval scores the
same (context, continuation) strings as probegen's :func:`boundary_split`, so its ``acc`` is
``probegen eval``'s accuracy and ``acc_norm`` is ``--length-norm chars``. ``hf``:
``data/<split>.parquet`` and a dataset card, loadable with ``datasets.load_dataset(DIR)``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .errors import ProbegenError
from .io import atomic_dir, check_docs_back, file_hashes, read_jsonl, write_json, write_jsonl
from .manifest import CANARY
from .scorers.base import boundary_split
from .version import __version__

if TYPE_CHECKING:
    from .tasks import Exportable

TASK_YAML = "task.yaml"
DOCS_FILE = "docs.jsonl"
CARD_FILE = "README.md"
MANIFEST_FILE = "manifest.json"
SPLITS = ("train", "dev", "test")


# ---- lm-evaluation-harness ----------------------------------------------------------------------
def lm_eval_split(context: str, continuation: str) -> tuple[str, str]:
    """lm-eval's (context, continuation) before tokenising: the context's trailing whitespace moves over.

    >>> lm_eval_split("Definition of bkatuhla is ", "a dog")
    ('Definition of bkatuhla is', ' a dog')
    """
    n = len(context) - len(context.rstrip())
    return (context[:-n], context[-n:] + continuation) if n else (context, continuation)


def lm_eval_text(query: str, choices: Sequence[str]) -> str:
    """The doc text that, with ``target_delimiter: ""``, makes lm-eval score probegen's strings.

    >>> lm_eval_text("Definition of bkatuhla is", ["a dog", "a cat"])
    'Definition of bkatuhla is '
    >>> lm_eval_text("Question: ...\\nAnswer:\\n", ["yes"])
    'Question: ...\\nAnswer:\\n'
    """
    leads = set()
    ctx = query
    for c in choices:
        ctx, cont = boundary_split(query, c)
        leads.add(cont[: len(cont) - len(c)])
    if not ctx.strip():
        raise ProbegenError(f"cannot export an empty query (choices {list(choices)[:2]}...)")
    if len(leads) != 1:
        raise ProbegenError(f"query {query[-40:]!r}: some choices start with whitespace and some do not; lm-eval "
                            "cannot score them alike")
    text = ctx + leads.pop()
    for c in choices:  # the invariant the export rests on
        if lm_eval_split(text, c) != boundary_split(query, c):
            raise ProbegenError(f"query {query[-40:]!r}: cannot reproduce probegen's whitespace handling in lm-eval")
    return text


def task_name(name: str) -> str:
    """A valid lm-eval task name from a dataset name.

    >>> task_name("wordnetqa-all test")
    'probegen_wordnetqa_all_test'
    """
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return slug if slug.startswith("probegen") else f"probegen_{slug}"


def _exportable(kind: str) -> "Exportable":
    """The :class:`~probegen.tasks.Exportable` task named ``kind`` (one line if the kind is not one)."""
    from . import tasks

    task = tasks.get(kind)
    if not isinstance(task, tasks.Exportable):
        raise tasks.incapable(task, "export")
    return task


def task_yaml(task: str, docs_path: str, kind: str, source: str) -> str:
    """The lm-eval task config reading ``docs_path`` (absolute: relative data_files resolve
    against lm-eval's working directory, not this file)."""
    notes = [f"probegen {__version__} export of {source} ({kind}); see README.md beside this file."]
    notes += [n for n in (_exportable(kind).lm_eval_note(),) if n]
    notes.append(
        "target_delimiter is empty on purpose: each doc's text already ends with the whitespace that "
        "probegen's scorer puts before a choice, so lm-eval scores the same strings."
    )
    # words joined by single spaces first: the comment lines are those of a plain greedy fill at 96 columns
    wrap = functools.partial(textwrap.wrap, width=96, break_long_words=False, break_on_hyphens=False)
    comment = "".join("# " + line + "\n" for n in notes for line in wrap(" ".join(n.split())))
    return (
        comment
        + f"task: {task}\n"
        + "dataset_path: json\n"
        + "dataset_kwargs:\n"
        + "  data_files:\n"
        + f"    test: {json.dumps(docs_path, ensure_ascii=False)}\n"  # a JSON string is a YAML scalar
        + "test_split: test\n"
        + "output_type: multiple_choice\n"
        + "doc_to_text: text\n"
        + "doc_to_choice: choices\n"
        + "doc_to_target: gold\n"
        + 'target_delimiter: ""\n'
        + "metric_list:\n"
        + "  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
        + "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n"
        + "metadata:\n"
        + "  version: 1.0\n"
    )


def _lm_eval_readme(task: str, kind: str, source: str, n: int, settings: dict[str, Any]) -> str:
    eval_cmd = f"probegen eval --model MODEL --dataset {source}"
    metric = _exportable(kind).lm_eval_metric(eval_cmd, settings)
    return f"""# lm-evaluation-harness task `{task}`

Exported by probegen {__version__} from `{source}` ({kind}, {n} docs). Settings: `{json.dumps(settings, sort_keys=True)}`.

```
lm_eval --model hf --model_args pretrained=MODEL --tasks {task} --include_path THIS_FOLDER
```

Each line of `{DOCS_FILE}` is one doc: `query` (probegen's scorer query), `text` (what lm-eval
conditions on: the query plus the whitespace probegen puts before a choice, read with an empty
`target_delimiter`), `choices`, `gold` (index) and probegen's metadata.

{metric}

Same numbers, same model: lm-eval and probegen split context and continuation the same way, and
both prepend a BOS token only where the tokenizer does by default (lm-eval's `add_bos_token`
unset). Exact ties: lm-eval takes the first tied choice, probegen breaks ties at random.

`{TASK_YAML}` names `{DOCS_FILE}` by absolute path, because lm-eval (through `datasets`) resolves
a relative `data_files` against its working directory: after moving this folder, export again
or edit that path.

{CANARY}
"""  # noqa: E501 (the README's text as written)


def write_lm_eval(docs: list[dict[str, Any]], out: Path, kind: str, source: str, manifest: dict[str, Any],
                  settings: dict[str, Any], task: str) -> Path:
    """Write an lm-eval task folder (task ``task``) at ``out``; returns the folder."""
    out = Path(os.path.realpath(out))
    rows = [{**d, "text": lm_eval_text(d["query"], d["choices"])} for d in docs]
    with atomic_dir(out) as tmp:
        write_jsonl(tmp / DOCS_FILE, rows)
        check_docs_back(out, DOCS_FILE, rows, read_jsonl(tmp / DOCS_FILE))
        (tmp / TASK_YAML).write_text(task_yaml(task, str(out / DOCS_FILE), kind, source), encoding="utf-8")
        (tmp / CARD_FILE).write_text(_lm_eval_readme(task, kind, source, len(rows), settings), encoding="utf-8")
        _write_manifest(tmp, "lm-eval", manifest, settings, [DOCS_FILE, TASK_YAML, CARD_FILE], task=task)
    return out


def _write_manifest(tmp: Path, fmt: str, manifest: dict[str, Any], settings: dict[str, Any], names: list[str],
                    **extra: Any) -> dict[str, Any]:
    """manifest.json of an export: the source dataset's manifest, the settings and file hashes."""
    m = {"kind": "export", "format": fmt, "probegen_version": __version__, "canary": CANARY,
         "settings": settings, "dataset_manifest": manifest, **extra, "files": file_hashes(tmp, names)}
    write_json(tmp / MANIFEST_FILE, m)
    return m


# ---- Hugging Face datasets ----------------------------------------------------------------------
def write_hf(docs: list[dict[str, Any]], out: Path, kind: str, source: str, manifest: dict[str, Any],
             settings: dict[str, Any]) -> tuple[Path, dict[str, int]]:
    """Write ``data/<split>.parquet`` per split and a dataset card; returns (folder, rows per split)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    by_split: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_split.setdefault(d.get("split", "test"), []).append(d)
    order = sorted(by_split, key=lambda s: (SPLITS.index(s) if s in SPLITS else len(SPLITS), s))
    out = Path(os.path.realpath(out))
    with atomic_dir(out) as tmp:
        (tmp / "data").mkdir()
        names = []
        for split in order:
            names.append(f"data/{split}.parquet")
            pq.write_table(pa.Table.from_pylist(by_split[split]), tmp / names[-1])
            check_docs_back(out, names[-1], by_split[split], pq.read_table(tmp / names[-1]).to_pylist())
        m = _write_manifest(tmp, "hf", manifest, settings, names)
        (tmp / CARD_FILE).write_text(_hf_card(kind, source, order, by_split, m), encoding="utf-8")
    return out, {s: len(by_split[s]) for s in order}


def _hf_card(kind: str, source: str, splits: list[str], by_split: dict[str, list[Any]],
             manifest: dict[str, Any]) -> str:
    files = "".join(f"  - split: {s}\n    path: data/{s}.parquet\n" for s in splits)
    counts = ", ".join(f"{s}: {len(by_split[s])}" for s in splits)
    what = _exportable(kind).hf_description()
    return f"""---
pretty_name: {json.dumps(f"probegen {source}", ensure_ascii=False)}
tags:
- probegen
- wordnet
task_categories:
- multiple-choice
configs:
- config_name: default
  data_files:
{files}---

# {source}

A {kind} probe set made by probegen {__version__} ({counts} rows). {what}

`query` is the text probegen's causal-LM scorer conditions on; a choice is scored as its
continuation after one space (or the whitespace the query ends with).

```python
import datasets
ds = datasets.load_dataset("path/to/this/folder")
```

{CANARY}

## Manifest

```json
{json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False)}
```
"""


# ---- entry point --------------------------------------------------------------------------------
FORMATS: dict[str, Callable[..., Any]] = {"lm-eval": write_lm_eval, "hf": write_hf}


def check_export(kind: Any, dataset: str | Path, fmt: str, split: str | None = None, seed: int | None = None,
                 nonce: str | None = None, pattern: str | None = None) -> None:
    """Every option of an ``fmt`` export of ``dataset`` (of task ``kind``) checked: one line before any work."""
    from . import tasks

    if fmt not in FORMATS:
        raise ProbegenError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    if not isinstance(kind, tasks.Exportable):  # checked with the options: one line before any work
        raise tasks.incapable(kind, "export", dataset)
    if fmt not in kind.export_formats:
        raise ProbegenError(f"{dataset} is a {kind.name} dataset; it cannot be exported as {fmt}")
    tasks.check_options([kind], {"split": split, "seed": seed, "nonce": nonce, "pattern": pattern}, "export", [dataset])


def export(dataset: str | Path, fmt: str, out: str | Path, split: str | None = None, seed: int | None = None,
           nonce: str | None = None, pattern: str | None = None, task: str | None = None, kind: Any = None) -> str:
    """Export a probegen dataset as ``fmt`` (``lm-eval`` or ``hf``) into the folder ``out``.

    Returns a one-line summary. ``split``: WordNetQA only. ``seed``, ``nonce``, ``pattern``: CoDA21
    only, rendered as ``probegen eval`` does. ``kind``: the task, once checked (:func:`check_export`).
    """
    from . import tasks

    if kind is None:  # a direct library call (`probegen export` checked its request already)
        check_export(kind := tasks.detect(dataset), dataset, fmt, split, seed, nonce, pattern)
    if not isinstance(kind, tasks.Exportable):  # check_export said so already: narrows the type
        raise tasks.incapable(kind, "export", dataset)
    source = Path(dataset).name if Path(dataset).is_dir() else Path(dataset).stem
    ds, docs, settings = kind.export_docs(dataset, split, seed, nonce, pattern)
    return _write_export(fmt, out, kind.name, source, ds.manifest, docs, settings, split, task)


def _write_export(fmt: str, out: str | Path, kind: str, source: str, manifest: dict[str, Any],
                  docs: list[dict[str, Any]], settings: dict[str, Any], split: str | None, task: str | None) -> str:
    """Write the docs as ``fmt``; the one-line summary."""
    if fmt == "lm-eval":
        if task is not None and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", task):
            raise ProbegenError(f"--task {task!r}: use letters, digits, '_', '.' and '-'")
        name = task or task_name(f"{source} {split}" if split else source)
        path = write_lm_eval(docs, Path(out), kind, source, manifest, settings, name)
        return (f"wrote {path} (lm-eval task {name}, {len(docs)} docs); run: lm_eval --model hf "
                f"--model_args pretrained=MODEL --tasks {name} --include_path {path}")
    if task is not None:
        raise ProbegenError("--task applies to --format lm-eval")
    path, sizes = write_hf(docs, Path(out), kind, source, manifest, settings)
    return f"wrote {path} (Hugging Face dataset: {', '.join(f'{s} {n}' for s, n in sizes.items())})"
