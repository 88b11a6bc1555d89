"""Kind branches outside the kind packages (issue 27 §3): a wider net than test_layering's literal check.

A *kind branch* is code that asks which probe kind it holds instead of asking the kind: a comparison or
``match`` against a kind string, ``isinstance`` with a kind's class (its task, dataset or item class),
``startswith``/``endswith`` with a kind string, a kind predicate (``is_group(...)``), and in the
pages' JavaScript ``x.kind === "mc"``. The kind packages (``probegen/tasks``, ``probegen/coda21``,
``probegen/wordnetqa``, ``probegen/wordincontext``) may branch on their own kinds; everywhere else a
branch is counted. ``BASELINE`` holds today's count per file: the test fails when a file gains a
branch or a new file gets one, and asks for the baseline to be lowered when a file loses them, so the
count only goes down.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layering import _literals  # the string literals of a comparison's side

ROOT = Path(__file__).resolve().parents[1]
KIND_PACKAGES = ("probegen/tasks/", "probegen/coda21/", "probegen/wordnetqa/", "probegen/wordincontext/")
KIND_STRINGS = frozenset({"coda21", "wordnetqa", "wic", "wsd", "wordincontext", "pair", "choice", "label", "align",
                          "mc", "group"})
KIND_CLASSES = frozenset({"Coda21Task", "MultipleChoiceTask", "WordInContextTask", "WicTask", "LabelTask", "WsdTask",
                          "Coda21Dataset", "WordNetQADataset", "WicDataset", "Group", "MCItem", "WicItem"})
KIND_PREDICATES = frozenset({"is_group"})
# (file, literal): the literal names something else than a kind there
NOT_KINDS = {
    ("probegen/wordnetqa/render.py", "choice"): "the choice-only rendering mode (an ablation condition)",
    ("probegen/study/views.py", "label"): "a view's condition name",
}
JS_BRANCH = re.compile(r"""\.kind\s*[!=]==?\s*["'](\w+)["']|["'](\w+)["']\s*[!=]==?\s*\w+\.kind\b""")

#: kind branches per file; lower an entry when you remove branches. Issue 27's "before" was 22, all of them
#: the study's and the viewer's page shapes (csvio 5, study.js 8, store 2, views 1, view.js 6); now none:
#: the study and the viewer ask a view's layout (probegen.study.views.layout_of, the pages' LAYOUTS tables)
BASELINE: dict[str, int] = {}


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def python_branches(source: str) -> list[tuple[int, str]]:
    """(line, what) of every kind branch in Python ``source``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            found = set().union(*(_literals(side) for side in (node.left, *node.comparators))) & KIND_STRINGS
            out += [(node.lineno, f"== {k!r}") for k in sorted(found)]
        elif isinstance(node, ast.Match):
            for case in node.cases:
                for p in ast.walk(case.pattern):
                    if isinstance(p, ast.MatchValue):
                        out += [(p.lineno, f"case {k!r}") for k in sorted(_literals(p.value) & KIND_STRINGS)]
        elif isinstance(node, ast.Call):
            fn = _name(node.func)
            if fn == "isinstance" and len(node.args) == 2:
                classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                out += [(node.lineno, f"isinstance {c}") for c in map(_name, classes) if c in KIND_CLASSES]
            elif fn in ("startswith", "endswith") and node.args:
                out += [(node.lineno, f"{fn} {k!r}") for k in sorted(_literals(node.args[0])) if k in KIND_STRINGS]
            elif fn in KIND_PREDICATES:
                out += [(node.lineno, f"{fn}()")]
    return sorted(out)


def js_branches(source: str) -> list[tuple[int, str]]:
    """(line, what) of every ``x.kind === "..."`` comparison in JavaScript ``source``."""
    return [(source.count("\n", 0, m.start()) + 1, f"kind === {m.group(1) or m.group(2)!r}")
            for m in JS_BRANCH.finditer(source)]


def kind_branches() -> dict[str, list[tuple[int, str]]]:
    """Every kind branch outside the kind packages, per file relative to the repository."""
    files = [*(ROOT / "probegen").rglob("*.py"), *(ROOT / "diagnostics").rglob("*.py"), ROOT / "cli.py",
             *(ROOT / "commands").rglob("*.py"), *(ROOT / "probegen").rglob("*.js"), *(ROOT / "diagnostics").rglob("*.js")]
    out = {}
    for f in sorted(files):
        rel = f.relative_to(ROOT).as_posix()
        if rel.startswith(KIND_PACKAGES):
            continue
        text = f.read_text(encoding="utf-8")
        found = js_branches(text) if f.suffix == ".js" else python_branches(text)
        found = [(line, what) for line, what in found
                 if not any((rel, k) in NOT_KINDS for k in re.findall(r"'(\w+)'", what))]
        if found:
            out[rel] = found
    return out


def test_kind_branches_only_go_down():
    found = kind_branches()
    grown = {f: b for f, b in found.items() if len(b) > BASELINE.get(f, 0)}
    assert not grown, "kind branches outside the kind packages grew (ask the kind through its capabilities):\n" + "\n".join(
        f"{f}:{line}: {what}" for f, b in grown.items() for line, what in b)
    lower = {f: (n, len(found.get(f, []))) for f, n in BASELINE.items() if len(found.get(f, [])) < n}
    assert not lower, f"fewer kind branches than BASELINE says: lower it to the new counts {lower}"


def test_the_check_sees_every_form_of_kind_branch():
    src = ("def f(task, view, name):\n"
           "    if isinstance(task, (Coda21Task, Settings)):\n        return 1\n"
           "    if name.startswith('wsd'):\n        return 2\n"
           "    if is_group(view):\n        return 3\n"
           "    return task.kind in ('mc', 'align') or name == 'other'\n")
    assert python_branches(src) == [(2, "isinstance Coda21Task"), (4, "startswith 'wsd'"), (6, "is_group()"),
                                    (8, "== 'align'"), (8, "== 'mc'")]
    assert js_branches('if (it.kind === "mc") a();\nvar x = "group" !== it.kind;\n') == [
        (1, "kind === 'mc'"), (2, "kind === 'group'")]
