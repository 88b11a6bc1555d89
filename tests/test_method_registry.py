"""The method registry (issue 38): the list of methods is written once (probegen/methods) and nothing
outside it compares method strings; ``--method`` offers what is registered."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_layering import _literals  # the literal strings of a comparison side, as the kind check reads them

from probegen import methods
from probegen.errors import ProbegenError

ROOT = Path(__file__).resolve().parents[1]
METHOD_STRINGS = frozenset({"score", "zeroshot", "cloze", "letter", "generate", "trained"})
# (file, literal) pairs where the literal names something else than a method
NOT_METHODS = {
    ("probegen/scorers/base.py", "score"): "the score cache's namespace of plain scores",
}


def method_comparisons(text: str) -> list[tuple[int, str]]:
    """(line, method literal) of every ``==``/``!=``/``in``/``not in`` comparison against a method string."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            found: set[str] = set()
            for side in (node.left, *node.comparators):
                found |= _literals(side) & METHOD_STRINGS
            out += [(node.lineno, m) for m in sorted(found)]
    return sorted(out)


def test_no_method_string_is_compared_outside_the_method_registry():
    files = [*(ROOT / "probegen").rglob("*.py"), *(ROOT / "diagnostics").rglob("*.py"), ROOT / "cli.py",
             *(ROOT / "commands").rglob("*.py")]
    files = sorted(f for f in files if (ROOT / "probegen" / "methods") not in f.parents and f.is_file())
    found = []
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        found += [f"{rel}:{line}: {m!r}" for line, m in method_comparisons(f.read_text(encoding="utf-8"))
                  if (rel, m) not in NOT_METHODS]
    js = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "probegen" / "view" / "static").glob("*.js")
          for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
          if re.search(r"method\s*[!=]==?\s*\"", line)]
    assert not found + js, "method strings compared outside probegen/methods (ask the method):\n" + "\n".join(found + js)


def test_the_check_finds_a_comparison():
    assert method_comparisons('if req.method in ("generate", "letter"):\n    pass\n') == [(1, "generate"), (1, "letter")]
    assert method_comparisons('x = m == "trained"\n') == [(1, "trained")]
    # a kind that branched on the generative method's query style again (Task.prompt_units asks instead)
    assert method_comparisons('if style != "generate":\n    pass\n') == [(1, "generate")]


def test_the_method_list_is_written_once():
    lists = []
    for f in [*(ROOT / "probegen").rglob("*.py"), *(ROOT / "diagnostics").rglob("*.py"), *(ROOT / "commands").rglob("*.py")]:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(_literals(node) & {"generate", "letter"}) == 2:
                lists.append(f"{f.relative_to(ROOT)}:{node.lineno}")
    assert not lists, "a list of methods outside the registry:\n" + "\n".join(lists)


def test_the_registry_answers_what_commands_compared():
    assert methods.names("eval") == ["score", "generate", "letter"]
    assert methods.names("bias") == ["zeroshot", "trained", "generate", "letter"]
    assert [m.name for m in methods.all_methods() if m.asks] == ["generate", "letter"]
    assert methods.get("zeroshot", "bias") is methods.get("score") and methods.get("trained").trains
    assert methods.recorded("pll").name == "score" and methods.recorded("cloze").name == "score"
    with pytest.raises(ProbegenError, match="unknown method 'trained'; choose from score, generate, letter"):
        methods.get("trained", "eval")
    with pytest.raises(ProbegenError, match="is registered twice"):
        methods.register(type("Other", (methods.Method,), {"name": "letter"}))
