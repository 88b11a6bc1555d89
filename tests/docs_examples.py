"""The documentation's examples, extracted and checked against the real code (issue 39 §3).

Every fenced block of README.md and docs/**/*.md is found with its file and line. Shell blocks
(```bash, ```sh, ```shell, ```console, and ```text or unlabelled fences with a line that runs
``probegen``) are split into commands, and each command is checked without running it:

- ``probegen ...`` (also ``.venv/bin/probegen``, ``python -m probegen``, ``torchrun ... -m probegen``):
  the subcommand chain is resolved on the real click group and ``make_context`` parses the
  arguments, so an unknown or renamed option, an unknown or missing subcommand, a bad choice or a
  missing required option is a problem. Placeholders (``N``, ``RUN``, ``DIR``, ``<out>``,
  ``KEY=VALUE``) stand for any value: where one fails a type check, a valid value is put in its
  place. Usage synopses are understood: ``[--opt X]`` is checked as if given, ``a|b|c`` is checked
  once per alternative, ``X ...`` is a repetition, and a trailing ``...`` elides the rest (so a
  missing argument is not a problem there).
- ``make TARGET``: the target exists in the Makefile.
- ``python bench/X.py --opt`` and ``bench/X.sh``: the script exists, and each option is in the
  script's ``--help`` (argparse scripts only, run once each) or in its source.
- anything else (``vllm``, ``lm_eval``, ``export``, ``for``...) is another program: not checked.

Python blocks are compiled, then (tests/test_docs_examples.py) run in a scratch folder unless marked.
YAML and TOML blocks are parsed.

A block is marked by an HTML comment on the last non-blank line before its fence (invisible when
rendered, so the page shows a note beside it)::

    <!-- docs-test: tour -->                 the README's five-minute tour: run as pasted
    <!-- docs-test: skip needs-gpu -->       parsed/checked, never run (also needs-hub,
                                             needs-server, slow)
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
#: the reasons a block may give for being checked but not run
SKIP_REASONS = {
    "needs-gpu": "needs a CUDA GPU (or several)",
    "needs-hub": "downloads a model from the Hugging Face hub",
    "needs-server": "needs a running model server (vLLM, an API key)",
    "slow": "minutes or more on a laptop's CPU",
}
SHELL_LANGS = {"bash", "sh", "shell", "console", "shell-session", "zsh"}
PYTHON_LANGS = {"python", "py", "python3", "pycon"}
PLAIN_LANGS = {"", "text", "txt", "plain", "plaintext"}
# a line that runs probegen: `probegen ...`, `$ probegen`, `.venv/bin/probegen`, `python -m probegen`
COMMAND_LINE = re.compile(r"^\s*(\$\s+)?((\S*/)?probegen\s|.*\s-m\s+probegen\s)", re.M)
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
# words that stand for a value in a synopsis: N, M2, RUN_DIR, FILE.html, KEY=VALUE, <out>, $VAR, {1..4}
PLACEHOLDER = re.compile(r"^(<[^>]+>.*|.*<[^>]+>.*|[A-Z][A-Z0-9_]*(\.[a-z]+)?|[A-Z][A-Z0-9_]*=[A-Z][A-Z0-9_]*"
                         r"|.*\$\{?\w+\}?.*|.*\{[^}]*\}.*|.*\*.*)$")
SHELL_KEYWORDS = {"do", "then", "else", "elif", "!", "time", "exec", "nohup"}


@dataclass
class Block:
    """One fenced block: where it is, its language, its text and its docs-test marker."""

    path: str  # relative to the repository
    line: int  # the opening fence's line (1-based)
    lang: str
    text: str
    marker: str | None = None  # the marker comment's text after "docs-test:", if any

    @property
    def id(self) -> str:
        """``file:line``, the block's test id."""
        return f"{self.path}:{self.line}"

    @property
    def kind(self) -> str:
        """``shell``, ``python``, ``yaml``, ``toml`` or ``other``."""
        if self.lang in SHELL_LANGS:
            return "shell"
        if self.lang in PYTHON_LANGS:
            return "python"
        if self.lang in ("yaml", "yml"):
            return "yaml"
        if self.lang == "toml":
            return "toml"
        if self.lang in PLAIN_LANGS and COMMAND_LINE.search(self.text):
            return "shell"  # a synopsis or a session in a plain block: its probegen commands are checked
        return "other"

    @property
    def skip_reason(self) -> str | None:
        """The skip reason (a key of SKIP_REASONS) when the block is marked ``skip REASON``."""
        if self.marker and self.marker.split()[0] == "skip":
            parts = self.marker.split()
            return parts[1] if len(parts) > 1 else ""
        return None

    def marker_problem(self) -> str | None:
        """Why the marker is not one this checker knows (a typo must not silently skip a block)."""
        if self.marker is None or self.marker == "tour":
            return None
        reason = self.skip_reason
        if reason is None:
            return f"unknown docs-test marker {self.marker!r} (known: tour, skip {'|'.join(SKIP_REASONS)})"
        if reason not in SKIP_REASONS:
            return f"unknown skip reason {reason!r} (known: {', '.join(SKIP_REASONS)})"
        return None


@dataclass
class Command:
    """One simple shell command of a block: its source line and its words."""

    line: int
    text: str
    argv: list[str] = field(default_factory=list)


def doc_files(root: Path = REPO) -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    return files + sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else files


def extract_blocks(path: Path, root: Path = REPO) -> list[Block]:
    """The fenced blocks of one Markdown file, each with the line of its opening fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        rel = str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        rel = str(path)
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
        lang = info.split()[0].lower().strip("{}.") if info else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = FENCE.match(lines[j])
            if close and close["fence"][0] == fence[0] and len(close["fence"]) >= len(fence) and not close["info"].strip():
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j].lstrip())
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mk = MARKER.match(lines[k]) if k >= 0 else None
        blocks.append(Block(rel, i + 1, lang, "\n".join(body) + "\n", mk.group(1) if mk else None))
        i = j + 1
    return blocks


def all_blocks(root: Path = REPO) -> list[Block]:
    """Every fenced block of the README and the docs."""
    return [b for f in doc_files(root) for b in extract_blocks(f, root)]


# ---------------------------------------------------------------------------------------- shell


def _logical_lines(block: Block) -> Iterator[tuple[int, str]]:
    """(line number, text) of each command line: continuations joined, console prompts handled
    (in a block with ``$ `` prompts only the prompted lines are commands; the rest is output)."""
    raw = block.text.splitlines()
    prompted = any(ln.lstrip().startswith("$ ") for ln in raw)
    buf, start = "", 0
    for n, ln in enumerate(raw, start=block.line + 1):
        s = ln.strip()
        if not buf:
            if prompted:
                if not s.startswith("$ "):
                    continue
                s = s[2:].strip()
            if not s or s.startswith("#"):
                continue
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        yield start, buf + s
        buf = ""
    if buf:
        yield start, buf


def _split_commands(line: str) -> list[str]:
    """A line cut into simple commands at ``&&``, ``||``, ``;``, ``&`` and spaced pipes, outside
    quotes and ``$(...)``; a ``#`` that starts a word ends the line. An unspaced ``a|b`` stays one
    word: in a synopsis it lists alternatives."""
    out, cur, quote, depth, i = [], "", "", 0, 0
    while i < len(line):
        c = line[i]
        if quote:
            cur += c
            if c == "\\" and quote == '"' and i + 1 < len(line):
                cur += line[i + 1]
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote, cur = c, cur + c
        elif c == "$" and line[i + 1:i + 2] == "(":
            depth, cur, i = depth + 1, cur + "$(", i + 1
        elif depth and c == ")":
            depth, cur = depth - 1, cur + c
        elif depth:
            cur += c
        elif c == "#" and (not cur or cur[-1].isspace()):
            break
        elif line.startswith(("&&", "||"), i):
            out, cur, i = out + [cur], "", i + 1
        elif c in ";&":
            out, cur = out + [cur], ""
        elif c == "|" and (not cur or cur[-1].isspace() or line[i + 1:i + 2] in ("", " ", "\t")):
            out, cur = out + [cur], ""
        else:
            cur += c
        i += 1
    return [c.strip() for c in out + [cur] if c.strip()]


def shell_commands(block: Block) -> list[Command]:
    """The simple commands of a shell block, with their words (shlex) and source line."""
    cmds = []
    for n, line in _logical_lines(block):
        for text in _split_commands(line):
            try:
                argv = shlex.split(text)
            except ValueError as e:
                cmds.append(Command(n, text, []))  # unbalanced quotes: reported by check_command
                cmds[-1].argv = ["<unparsable>", str(e)]
                continue
            if argv and re.match(r"^[A-Za-z_]\w*=\$\(", argv[0]):
                continue  # `x=$(other programs)`: a captured subshell
            while argv and (argv[0] in SHELL_KEYWORDS or re.match(r"^[A-Za-z_]\w*=", argv[0])):
                argv = argv[1:]  # `do cmd`, `VAR=1 cmd`
            if argv:
                cmds.append(Command(n, text, argv))
    return cmds


def classify(argv: list[str]) -> tuple[str, list[str], str]:
    """(kind, arguments, program): kind is ``probegen``, ``make``, ``script`` or ``external``."""
    prog = argv[0]
    base = prog.rsplit("/", 1)[-1]
    if base == "srun" and len(argv) > 1:  # SLURM: srun [its options] torchrun ...
        rest = [a for a in argv[1:] if not a.startswith("-")]
        if rest:
            return classify(argv[argv.index(rest[0]):])
    if base == "probegen":
        return "probegen", argv[1:], prog
    if base in ("torchrun", "python", "python3") or re.fullmatch(r"python3(\.\d+)?", base):
        if "-m" in argv:
            i = argv.index("-m")
            if i + 1 < len(argv) and argv[i + 1] == "probegen":
                return "probegen", argv[i + 2:], prog
            return "external", argv[1:], f"{prog} -m {argv[i + 1] if i + 1 < len(argv) else ''}"
        scripts = [a for a in argv[1:] if a.endswith(".py")]
        if base != "torchrun" and scripts:
            i = argv.index(scripts[0])
            return "script", argv[i + 1:], scripts[0]
        return "external", argv[1:], prog
    if base == "make":
        return "make", argv[1:], prog
    if prog.endswith((".sh", ".py")) and "/" in prog:
        return "script", argv[1:], prog
    return "external", argv[1:], prog


def _synopsis_variants(args: list[str]) -> tuple[list[list[str]], bool]:
    """Usage-synopsis words made concrete: brackets dropped, ``X ...`` repetitions dropped, and one
    variant per alternative of each ``a|b|c`` word (the others at their first). Also whether a
    trailing ``...`` elides the rest of the command."""
    words, depth = [], 0
    for w in args:
        while w.startswith("[") and not w.startswith("[]"):
            w, depth = w[1:], depth + 1
        while depth and w.endswith("]"):
            w, depth = w[:-1], depth - 1
        if w:
            words.append(w)
    elided = bool(words) and words[-1] == "..."
    words = [w for w in words if w != "..."]
    base = [w.split("|")[0] if "|" in w and "|" not in (w[0], w[-1]) else w for w in words]
    variants = [base]
    for i, w in enumerate(words):
        if "|" in w and "|" not in (w[0], w[-1]):
            for alt in w.split("|")[1:]:
                variants.append(base[:i] + [alt] + base[i + 1:])
    return variants, elided


def _cli():
    from probegen.commands.cli import cli

    return cli


def _sample_values(param, ctx) -> list[str]:
    """Values that ``param`` accepts, to stand in for a placeholder."""
    import click

    cands = list(getattr(param.type, "choices", ()) or ())
    if isinstance(param.type, click.Path):
        cands.append(tempfile.gettempdir())
    cands += ["1", "3", "0.5", "0", "x", "rotations", tempfile.gettempdir()]
    ok = []
    for c in cands:
        try:
            param.type.convert(str(c), param, ctx)
            ok.append(str(c))
        except Exception:
            continue
    return ok


def _value_index(args: list[str], param) -> list[int]:
    """Indices of the words that gave ``param`` (an option) its value(s)."""
    names = set(getattr(param, "opts", ())) | set(getattr(param, "secondary_opts", ()))
    out = []
    for i, w in enumerate(args):
        if w in names and i + 1 < len(args):
            out.append(i + 1)
        elif "=" in w and w.split("=", 1)[0] in names:
            out.append(i)
    return out


def parse_probegen(args: list[str], elided: bool = False) -> str | None:
    """Parse ``probegen ARGS`` on the real click CLI without running it: None if click accepts it,
    else click's message (unknown option or command, bad value, missing required parameter).
    Placeholders that fail a type check are replaced by an accepted value and the parse retried."""
    import click

    args = list(args)
    for _ in range(len(args) + 2):
        try:
            _parse_once(args)
            return None
        except click.exceptions.Exit:
            return None  # --help, --version
        except click.MissingParameter as e:
            if elided:
                return None
            return e.format_message()
        except click.BadParameter as e:
            param = e.param
            idx = _value_index(args, param) if param is not None and param.param_type_name == "option" else []
            if param is not None and param.param_type_name == "argument":
                idx = [i for i, w in enumerate(args) if PLACEHOLDER.match(w) and not w.startswith("-")]
            is_path = param is not None and isinstance(param.type, click.Path)
            bad = [i for i in idx if is_path or PLACEHOLDER.match(args[i].split("=", 1)[-1])]
            values = _sample_values(param, None) if param is not None else []
            if not bad or not values:
                return e.format_message()
            for i in bad:
                args[i] = f"{args[i].split('=', 1)[0]}={values[0]}" if args[i].startswith("-") else values[0]
        except click.UsageError as e:
            missing = isinstance(e, click.exceptions.NoArgsIsHelpError) or e.format_message() == "Missing command."
            if missing and elided:
                return None
            if missing and e.ctx is not None and isinstance(e.ctx.command, click.Group):
                return f"Missing command (one of: {', '.join(e.ctx.command.list_commands(e.ctx))})."
            return e.format_message()
    return "placeholders could not be resolved"


def _parse_once(args: list[str]) -> None:
    """One parse: the group chain resolved, then ``make_context`` on the leaf command."""
    import click

    cmd, name, parent, rest = _cli(), "probegen", None, list(args)
    while True:
        ctx = cmd.make_context(name, rest, parent=parent)
        if not isinstance(cmd, click.Group):
            return
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            if cmd.invoke_without_command:
                return
            raise click.UsageError("Missing command.", ctx)
        name, cmd, rest = cmd.resolve_command(ctx, rest)
        if cmd is None:
            raise click.UsageError(f"No such command {name!r}.", ctx)
        parent = ctx


@functools.lru_cache(maxsize=None)
def make_targets(makefile: Path = REPO / "Makefile") -> frozenset[str]:
    """The targets a Makefile declares (rules and .PHONY names)."""
    text = makefile.read_text(encoding="utf-8") if makefile.is_file() else ""
    targets = set()
    for ln in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_./%$()-][^:=\s]*(?:\s+[^:=\s]+)*)\s*::?(?!=)", ln)
        if m and not ln.startswith("\t"):
            targets.update(m.group(1).split())
    return frozenset(targets)


@functools.lru_cache(maxsize=None)
def script_help(path: Path) -> str:
    """An argparse script's ``--help`` text (run once, with the venv's Python), or '' if it has no
    argparse parser or its help fails."""
    src = path.read_text(encoding="utf-8")
    if "ArgumentParser(" not in src or ".py" != path.suffix:
        return ""
    r = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120,
                       cwd=REPO)
    return r.stdout if r.returncode == 0 else ""


def check_script(prog: str, args: list[str], root: Path = REPO) -> list[str]:
    """A ``bench/X.py`` or ``X.sh`` command: the file exists (and a shell script is executable),
    and every ``--option`` it is given is in its ``--help`` or, quoted, in its source."""
    path = (root / prog).resolve()
    if not path.is_file():
        return [f"script {prog} does not exist"]
    if path.suffix == ".sh" and not prog.startswith(("bash ", "sh ")) and not path.stat().st_mode & 0o111:
        return [f"script {prog} is not executable"]
    problems = []
    src = path.read_text(encoding="utf-8")
    opts = [a.split("=", 1)[0] for a in args if a.startswith("--") and a != "--"]
    helptext = script_help(path) if opts else ""
    for o in opts:
        if not re.search(rf"{re.escape(o)}\b", helptext) and f'"{o}"' not in src and f"'{o}'" not in src \
                and not re.search(rf"(^|\s){re.escape(o)}\)", src, re.M):  # a shell script's case arm
            problems.append(f"{prog} has no option {o}")
    return problems


def check_command(cmd: Command, root: Path = REPO) -> list[str]:
    """The problems of one command (empty if it checks out or is another program's)."""
    if cmd.argv[:1] == ["<unparsable>"]:
        return [f"cannot split into words: {cmd.argv[1]}"]
    kind, args, prog = classify(cmd.argv)
    if kind == "probegen":
        variants, elided = _synopsis_variants(args)
        problems = []
        for v in variants:
            msg = parse_probegen(v, elided)
            if msg:
                problems.append(f"probegen {' '.join(v)}: {msg}")
        return problems
    if kind == "make":
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        return [f"make: no target {t!r} in the Makefile" for t in targets if t not in make_targets(root / "Makefile")]
    if kind == "script":
        return check_script(prog, args, root)
    return []


def check_shell_block(block: Block, root: Path = REPO) -> list[str]:
    """Every problem of a shell block, as ``file:line: command: why``."""
    out = []
    for cmd in shell_commands(block):
        for p in check_command(cmd, root):
            out.append(f"{block.path}:{cmd.line}: {p}")
    return out


def probegen_commands(block: Block) -> list[Command]:
    """The block's ``probegen`` commands (what the tour test checks the outputs of)."""
    return [c for c in shell_commands(block) if c.argv[:1] != ["<unparsable>"] and classify(c.argv)[0] == "probegen"]


def python_source(block: Block) -> str:
    """A Python block's code: the text itself, or for an interactive session (``>>> `` prompts) its
    prompted lines without the prompts (the printed results are not compared)."""
    lines = block.text.splitlines()
    if not any(ln.startswith(">>>") for ln in lines):
        return block.text
    code = [ln[4:] for ln in lines if ln.startswith((">>> ", "... ")) or ln in (">>>", "...")]
    return "\n".join(code) + "\n"


def check_block(block: Block, root: Path = REPO) -> list[str]:
    """The problems of any block that can be checked without running it: the marker, shell
    commands parsed on the CLI, Python compiled, YAML/TOML parsed."""
    problems = [f"{block.id}: {p}" for p in [block.marker_problem()] if p]
    if block.kind == "shell":
        problems += check_shell_block(block, root)
    elif block.kind == "python":
        try:
            compile(python_source(block), block.id, "exec")
        except SyntaxError as e:
            problems.append(f"{block.path}:{block.line + (e.lineno or 0)}: Python does not compile: {e.msg}")
    elif block.kind == "yaml":
        import yaml

        try:
            yaml.safe_load(block.text)
        except yaml.YAMLError as e:
            problems.append(f"{block.id}: YAML does not parse: {e}")
    elif block.kind == "toml":
        import tomllib

        try:
            tomllib.loads(block.text)
        except tomllib.TOMLDecodeError as e:
            problems.append(f"{block.id}: TOML does not parse: {e}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """``python tests/docs_examples.py [FILE.md ...]``: print every problem, exit 1 if any."""
    files = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or doc_files()
    n, problems = 0, []
    for f in files:
        for b in extract_blocks(f):
            if b.kind != "other":
                n += 1
                problems += check_block(b)
    for p in problems:
        print(p)
    print(f"{n} blocks checked, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
