"""Issue 46 §4: every JSON probegen writes is strict JSON, and every float option is finite and in range.

- the one serialiser (:func:`probegen.io.json_text`, behind ``write_json``, ``write_jsonl`` and
  ``dumps``) writes a value that is not finite as ``null`` with the reason beside it, and no module
  writes JSON around it;
- a broad set of commands on the real WordNetQA release sample (eval, items, bias, export in every
  format, contamination with a zero between-form variance, forms) writes nothing that
  ``json.loads(text, parse_constant=<raise>)`` rejects, in JSON, JSONL or inside an inspect-ai log;
- every float option of every command is checked by the option table
  (:mod:`probegen.request_options`), so ``nan`` and ``inf`` are refused.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import click
import pytest
from cli_checks import run

from probegen.io import write_json, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT.parent / "shared" / "data" / "wordnetqa-release-sample"
DEFS = SAMPLES / "definitions-train-sample.jsonl"


def refuse(token: str) -> None:
    raise ValueError(f"not strict JSON: {token}")


def strict(text: str) -> object:
    """``json.loads`` as a strict reader does it: NaN, Infinity and -Infinity refused."""
    return json.loads(text, parse_constant=refuse)


def test_the_writers_write_null_with_the_reason(tmp_path):
    obj = {"df": float("inf"), "p": float("nan"), "ci": [float("-inf"), 0.5], "ok": 1.5,
           "nested": [{"x": float("nan")}], "t": (1.0, float("inf"))}
    write_json(tmp_path / "a.json", obj)
    got = strict((tmp_path / "a.json").read_text())
    assert got["df"] is None and got["df_not_finite"] == "Infinity"
    assert got["p"] is None and got["p_not_finite"] == "NaN"
    assert got["ci"] == [None, 0.5] and got["ci_not_finite"] == {"0": "-Infinity"}
    assert got["nested"] == [{"x": None, "x_not_finite": "NaN"}] and got["ok"] == 1.5
    assert got["t"] == [1.0, None] and got["t_not_finite"] == {"1": "Infinity"}
    write_jsonl(tmp_path / "a.jsonl", [obj, {"y": float("nan"), "y_note": "why it is not a number"}])
    rows = [strict(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert rows[0] == got
    assert rows[1] == {"y": None, "y_note": "why it is not a number"}  # the writer's own reason is kept
    # finite values are written as json.dumps writes them: outputs without NaN are unchanged byte for byte
    from probegen.io import json_text

    finite = {"b": [1, 2.5, "é"], "a": {"c": None, "d": True}}
    assert json_text(finite) == json.dumps(finite, sort_keys=True, ensure_ascii=False)


#: JSON written into a file without the one serialiser (``json.dump(obj, fh)``, ``fh.write(json.dumps(...))``)
_BYPASS = re.compile(r"json\.dump\(|(?:write|writelines|write_text)\([^)\n]*json\.dumps\(")


def test_no_module_writes_json_around_the_one_serialiser():
    """Strictness lives in probegen.io.json_text; a writer calling json.dump(s) into a file would bypass it."""
    offenders = []
    # the library, and the bench's results writer (bench scripts that simulate other tools' files,
    # e.g. lm-eval's, write those tools' formats)
    files = [f for folder in ("probegen", "commands", "diagnostics") for f in sorted((ROOT / folder).rglob("*.py"))]
    for f in [*files, ROOT / "bench" / "benchlib.py"]:
        if f == ROOT / "probegen" / "io.py":
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if _BYPASS.search(line):
                offenders.append(f"{f.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, "write JSON with probegen.io (write_json, write_jsonl, json_text):\n" + "\n".join(offenders)


def test_the_bypass_pattern_catches_a_bypass():
    assert _BYPASS.search('        fh.write(json.dumps(data, indent=1))')
    assert _BYPASS.search('    json.dump(doc, fh)')
    assert not _BYPASS.search('    key = json.dumps(list(w), ensure_ascii=False)')


# ---- every float option ------------------------------------------------------------------------------
def _float_params() -> list[tuple[str, click.Parameter]]:
    from probegen.commands.cli import cli

    out = []

    def walk(cmd: click.Command, path: str) -> None:
        for p in cmd.params:
            if isinstance(p.type, click.types.FloatParamType):
                out.append((f"{path} {p.opts[0]}", p))
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")

    walk(cli, "probegen")
    return out


def test_every_float_option_is_checked_by_the_option_table():
    """A float option built on click's FloatRange lets NaN through (NaN compares false with both
    bounds: `--alpha nan` printed "95% CI +nan to +nan"). Every one must be the table's type, and
    refuse nan and inf."""
    from probegen.commands.cli import cli
    from probegen.commands.options import _CheckedFloat

    params = _float_params()
    names = {n for n, _ in params}
    assert {"probegen contamination --alpha", "probegen forms --margin", "probegen forms --alpha",
            "probegen filter --holdout"} <= names, sorted(names)
    ctx = click.Context(cli)
    for name, p in params:
        assert isinstance(p.type, _CheckedFloat), f"{name}: use checked_type(request_options.X), not {p.type!r}"
        for bad in ("nan", "inf", "-inf"):
            with pytest.raises(click.BadParameter, match="finite"):
                p.type.convert(bad, p, ctx)


@pytest.mark.parametrize("argv", [
    ["contamination", "--model", "m", "--seen", "a", "--fresh", "b", "c", "--alpha", "nan", "--out", "o"],
    ["forms", "a", "b", "--margin", "nan", "--out", "o"],
    ["forms", "a", "b", "--alpha", "nan", "--out", "o"],
    ["filter", "a", "--artefacts", "--budget", "2", "--holdout", "nan"],
    ["filter", "a", "--artefacts", "--budget", "2", "--threshold", "inf"],
    ["make", "wordnetqa", "--test-frac", "nan", "--out", "o"],
])
def test_a_float_option_that_is_not_finite_is_one_usage_error(argv, tmp_path):
    code, out, err = run(*argv)
    assert code == 2 and "must be a finite number" in err and "Traceback" not in err, err


# ---- what the commands write -------------------------------------------------------------------------
def _as_form(src: Path, out: Path, form: int, k: int) -> Path:
    """A release file as a dataset folder whose manifest calls it form ``form`` of ``k`` of one family."""
    from dataclasses import replace

    from probegen.run.run_bias import load_dataset

    _, data = load_dataset(src)
    block = {"family": "strict", "of": k, "form": form, "siblings": [f"form{i}" for i in range(1, k + 1)]}
    replace(data, manifest={**data.manifest, "forms": block}).write(out)
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    """One folder holding what a broad set of commands wrote on the release sample."""
    if not DEFS.is_file():
        pytest.skip("the WordNetQA release sample is not here")
    root = tmp_path_factory.mktemp("strict")
    rows = [json.loads(x) for x in DEFS.read_text().splitlines() if x.strip()]
    concepts = sorted({r["notes"]["gold_synset"] for r in rows})
    forms = []
    for i in range(4):
        part = root / "release" / f"form{i + 1}.jsonl"
        part.parent.mkdir(exist_ok=True)
        part.write_text("".join(json.dumps(r) + "\n" for r in rows if r["notes"]["gold_synset"] in concepts[i::4]))
        forms.append(_as_form(part, root / "sets" / f"form{i + 1}", i + 1, 4))
    steps = [
        ["eval", "--model", "glove-50d", "--dataset", DEFS, "--out", root / "r" / "glove"],
        ["eval", "--model", "minilm-l6", "--dataset", DEFS, "--out", root / "r" / "minilm"],
        ["items", root / "r" / "glove", root / "r" / "minilm", "--irt", "none", "--bootstrap", 50,
         "--out", root / "items"],
        ["bias", "--model", "glove-50d", "--dataset", DEFS, "--bootstrap", 50, "--out", root / "r" / "bias"],
        ["export", root / "r" / "glove", "--format", "eee", "--out", root / "x" / "eee"],
        ["export", root / "r" / "glove", "--format", "inspect-log", "--out", root / "x" / "glove.eval"],
        ["export", root / "r" / "glove", "--format", "inspect-log", "--out", root / "x" / "glove.json"],
        ["export", DEFS, "--format", "lm-eval", "--out", root / "x" / "lm-eval"],
        ["export", DEFS, "--format", "wordnetqa-json", "--out", root / "x" / "release.jsonl"],
        # glove-50d's fresh accuracies here spread less than their sampling error: tau2 = 0, df infinite
        ["contamination", "--model", "glove-50d", "--seen", forms[0], "--fresh", *forms[1:],
         "--out", root / "contamination"],
    ]
    for i, form in enumerate(forms[:2]):
        steps.append(["eval", "--model", "glove-50d", "--dataset", form, "--out", root / "fr" / f"glove-{i + 1}"])
    steps.append(["forms", root / "fr" / "glove-1", root / "fr" / "glove-2", "--bootstrap", 50, "--out",
                  root / "forms"])
    for argv in steps:
        code, _, err = run(*argv)
        assert code == 0, (argv[0], err[-2000:])
    return root


def _json_texts(root: Path) -> list[tuple[str, str]]:
    """(name, text) of every JSON and JSONL document under ``root``, hidden records and the JSON inside
    inspect-ai .eval logs (zip files) included."""
    out = []
    for f in sorted(root.rglob("*")):
        if f.suffix in (".json", ".jsonl") and f.is_file():
            out.append((str(f.relative_to(root)), f.read_text(encoding="utf-8")))
        elif f.suffix == ".eval":
            with zipfile.ZipFile(f) as z:
                out += [(f"{f.relative_to(root)}!{n}", z.read(n).decode("utf-8")) for n in z.namelist()
                        if n.endswith(".json")]
    return out


def test_every_json_the_commands_write_is_strict(outputs):
    texts = _json_texts(outputs)
    kinds = {Path(n.split("!")[0]).suffix for n, _ in texts}
    assert {".json", ".jsonl", ".eval"} <= kinds and len(texts) > 30, (kinds, len(texts))
    for name, text in texts:
        if name.endswith(".jsonl") or name.startswith("release/"):
            for i, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        strict(line)
                    except ValueError as e:
                        raise AssertionError(f"{name}:{i}: {e}") from None
        else:
            try:
                strict(text)
            except ValueError as e:
                raise AssertionError(f"{name}: {e}") from None
    # the case the issue found: summary.json wrote "df": Infinity when the between-form variance is 0
    (m,) = strict((outputs / "contamination" / "summary.json").read_text())["models"]
    assert m["test"]["tau2"] == 0 and m["test"]["df"] is None and m["test"]["df_note"]
