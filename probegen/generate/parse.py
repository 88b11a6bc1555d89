"""Strict parsers of a chat model's answers: text -> the chosen option per row, or what is wrong.

Every parser returns a :class:`Parsed` (per row the option index or None, and the one-line ``error`` the
retry shows, None when complete and valid) and never raises. Markdown emphasis and bullets are ignored.

- Matching (CoDA21): a pair is ``N: L`` (also ``N - L``, ``N) L``, ``N -> L``, ``Context N``,
  ``Definition L``, ``(L)``, several pairs on a line, a pair followed by text). An upper-case letter
  must stand alone (``1: A man sat`` is not A); a lower-case one only when it is all the line says.
  A pair-like line with no readable letter (an echoed context, ``1: C or D``), a number or letter out
  of range, two letters for a number, or one letter for two numbers (both rows None) is invalid;
  missing numbers leave None and are named.
- Choice (multiple choice, WSD): exactly one letter named as the answer (the whole answer, an answer
  phrase, a line starting with it); two letters, one out of range or none is invalid. With the option
  ``texts``, a letter followed by another option's text is invalid, and an answer without a letter may
  give exactly one option's text.
- Yes-no: ``yes`` (option 0) or ``no`` (option 1) as the first word or in an answer phrase; both or
  neither is invalid.

>>> parse_matching("1: B\\n2: A", 2)
Parsed(answer=(1, 0), error=None)
>>> parse_matching("1: B\\n2: B", 3).error
'letter B is given to both 1 and 2; no letter for 3'
>>> parse_choice("The answer is (C).", 4).answer
(2,)
>>> parse_yes_no("No, they differ.").answer
(1,)
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import ProbegenError
from .prompts import ASKS, letters


@dataclass(frozen=True)
class Parsed:
    """One parsed answer: per row the chosen option index (0-based) or None, and what is wrong (None if nothing)."""

    answer: tuple[int | None, ...]
    error: str | None

    @property
    def valid(self) -> bool:
        """The answer is complete and valid (``error`` is None)."""
        return self.error is None


# ---- shared text handling ---------------------------------------------------------------------------
_MARKUP = re.compile(r"\*\*|__|`+|\*(?=\S)|(?<=\S)\*")
_BULLET = re.compile(r"^\s*(?:[-*+•>#]+\s+|#+)")
_DASH = "\\-\u2013\u2014\u2212"  # hyphen (escaped: it goes inside [...]), en dash, em dash, minus sign
_ARROW = r"(?:->|-->|=>|→|⇒|=)"


def _clean(text: str) -> list[str]:
    """Lines of ``text`` without markdown emphasis, list bullets or runs of spaces, Unicode-normalised (NFKC)."""
    text = unicodedata.normalize("NFKC", text if isinstance(text, str) else "")
    # zero-width and direction marks (Unicode category Cf) would split "1:\u200bB" into no pair
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    # one space between words keeps the patterns below linear
    return [" ".join(_BULLET.sub("", _MARKUP.sub("", line)).split()) for line in text.splitlines()]


def _index(label: str, n: int) -> int | None:
    """The 0-based index of option ``label`` among ``n``, or None if it names no option."""
    labels = letters(min(n, 702))  # a label read is one or two letters: ZZ is the 702nd
    return labels.index(label.upper()) if label.upper() in labels else None


def _join(items: Sequence[object]) -> str:
    names = [str(x) for x in items]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ---- matching -----------------------------------------------------------------------------------------
_NUM_WORD = r"(?i:(?:context|sentence|text|row|number|no\.?|#)\s*)?"
_LET_WORDS = r"(?:definition|option|letter|answer|choice)"
_LET_WORD = rf"(?i:{_LET_WORDS}\s*[:{_DASH}]?\s*)?"
_SEP = rf"(?:\s*(?:{_ARROW}|[:)\].]|[{_DASH}]+>?)\s*|\s+(?=(?i:{_LET_WORDS})\b))"
_END = r"(?![A-Za-z0-9])"


def _number(digits: str) -> int:
    """A row number; a very long one (int() refuses over 4300 digits) is just out of range."""
    return int(digits) if len(digits) <= 9 else 10**9


def _matching_line(line: str, n: int) -> tuple[list[tuple[int, str]], bool]:
    """The (number, label) pairs one line gives, and whether it is pair-like but unreadable."""
    upper = r"[A-Z]{1,2}" if n > 26 else r"[A-Z]"
    pair = rf"{_NUM_WORD}(\d+){_SEP}{_LET_WORD}\(?({upper})\)?{_END}"
    # one or more pairs alone on the line: "1: B", "1: B, 2: A, 3: C"
    if re.fullmatch(rf"(?:{pair}\s*[,;]?\s*)+\.?", line):
        return [(_number(num), lab) for num, lab in re.findall(pair, line)], False
    # a lower-case letter only when it is all the line says: "1: c"
    m = re.fullmatch(rf"{_NUM_WORD}(\d+){_SEP}{_LET_WORD}\(?([a-z]{{1,2}})\)?\s*\.?", line)
    if m and (n > 26 or len(m.group(2)) == 1):
        return [(_number(m.group(1)), m.group(2))], False
    # one pair then text: "1: C. a device ...", "1: C (a device)"; not "1: C or D"
    m = re.match(rf"{pair}(?=\s*[.):,;(\[\"'{_DASH}])(.*)$", line)
    if m and not re.match(rf"\s*(?:,|/|\bor\b|\band\b|&)\s*\(?{upper}\)?{_END}", m.group(3)):
        return [(_number(m.group(1)), m.group(2))], False
    # pair-like: starts like a numbered item ("1. He sat on the ...") but gives no readable letter
    numbered = re.match(rf"{_NUM_WORD}\d+\s*(?:{_ARROW}|[:)\].]|[{_DASH}])", line)
    return [], numbered is not None


def parse_matching(text: str, k: int, n_options: int | None = None) -> Parsed:
    """Read a matching of ``k`` numbered rows to ``n_options`` lettered options (default ``k``).

    >>> parse_matching("Here is the matching:\\n1: C\\n2: A\\n3: B", 3)
    Parsed(answer=(2, 0, 1), error=None)
    >>> parse_matching("1: C\\n3: A", 3)
    Parsed(answer=(2, None, 0), error='no letter for 2')
    >>> parse_matching("1: D\\n2: A", 2).error
    'letter D is not an option (A to B); no letter for 1'
    """
    try:
        k = max(int(k), 0)
        n = k if n_options is None else max(int(n_options), 0)
        lines = [line for line in _clean(text) if line]
    except Exception:  # noqa: BLE001 - a parser never raises
        return Parsed((None,) * max(k if isinstance(k, int) else 0, 0), "the answer could not be read")
    r = _Reading()
    for line in lines:
        pairs, pair_like = _matching_line(line, n)
        if pair_like:
            r.unreadable.append(line)
        for num, lab in pairs:
            idx = _index(lab, n)
            if not 1 <= num <= k:
                r.out_of_range.add(num)
            elif idx is None:
                r.bad_letters.add(lab.upper())
            else:
                r.given[num - 1].add(idx)
    return _matching_result(r, k, n, bool(lines))


@dataclass
class _Reading:
    """What the lines of a matching answer said."""

    given: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))  # row -> option indices
    out_of_range: set[int] = field(default_factory=set)
    bad_letters: set[str] = field(default_factory=set)
    unreadable: list[str] = field(default_factory=list)


def _matching_result(r: _Reading, k: int, n: int, said_something: bool) -> Parsed:
    """The answer (one-to-one pairs only) and the one-line error of a read matching."""
    answer: list[int | None] = [None] * k
    by_letter: dict[int, list[int]] = defaultdict(list)
    for row in sorted(r.given):
        if len(r.given[row]) == 1:
            by_letter[next(iter(r.given[row]))].append(row)
    for i, rows in by_letter.items():
        if len(rows) == 1:
            answer[rows[0]] = i
    if not k:
        return Parsed((), None)
    if not (r.given or r.out_of_range or r.bad_letters or r.unreadable):
        return Parsed(tuple(answer),
                      "no line of the form 'number: letter' found" if said_something else "the answer is empty")
    labels = letters(n)
    problems = []
    if r.unreadable:
        shown = r.unreadable[0] if len(r.unreadable[0]) <= 40 else r.unreadable[0][:37] + "..."
        more = f" (and {len(r.unreadable) - 1} more)" if len(r.unreadable) > 1 else ""
        problems.append(f"line {shown!r}{more} is not in the form 'number: letter'")
    if r.out_of_range:
        problems.append(f"{_plural('number', sorted(r.out_of_range))} out of range (1 to {k})")
    if r.bad_letters:
        bad = sorted(r.bad_letters, key=lambda x: (len(x), x))
        problems.append(f"{_plural('letter', bad)} not an option (A to {labels[-1] if labels else 'none'})")
    for row in sorted(r.given):
        if len(r.given[row]) > 1:
            problems.append(f"number {row + 1} has several letters "
                            f"({_join([labels[i] for i in sorted(r.given[row])])})")
    for i, rows in sorted(by_letter.items()):
        if len(rows) > 1:
            problems.append(f"letter {labels[i]} is given to "
                            f"{'both ' if len(rows) == 2 else ''}{_join([x + 1 for x in rows])}")
    missing = [x + 1 for x in range(k) if x not in r.given]
    if missing:
        problems.append(f"no letter for {_join(missing)}")
    return Parsed(tuple(answer), "; ".join(problems) or None)


def _plural(noun: str, items: Sequence[object]) -> str:
    """``number 7 is`` / ``numbers 7 and 9 are``."""
    return f"{noun} {items[0]} is" if len(items) == 1 else f"{noun}s {_join(items)} are"


# ---- choice ---------------------------------------------------------------------------------------------
_ANSWER_PHRASE = (
    r"(?i:\banswer\b(?:\s+to\s+(?:this|the)\s+question)?(?:\s+(?:is|would\s+be))?"
    r"|\b(?:correct|right|best)\s+(?:option|choice|letter)(?:\s+is)?"
    r"|\bi\s+(?:would\s+)?(?:choose|pick|select)|\bi'd\s+(?:choose|pick|select))"
)
_TWO = r"\s*(?:,|/|&|(?i:\bor\b|\band\b))\s*[(\[]?([A-Z]{1,2})[)\]]?(?![A-Za-z0-9])"


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def parse_choice(text: str, n: int, texts: Sequence[str] | None = None) -> Parsed:
    """Read the one option letter (of ``n``) that ``text`` names as its answer; ``texts`` (the
    option texts, optional) also lets an answer that gives no letter name one option by its text.

    >>> parse_choice("B", 3), parse_choice("Answer: (a)", 3).answer
    (Parsed(answer=(1,), error=None), (0,))
    >>> parse_choice("A or B", 3).error
    'the answer names two letters (A and B): give one'
    >>> parse_choice("a stone", 2, texts=["a stone", "an apple"]).answer
    (0,)
    """
    try:
        n = max(int(n), 0)
        return _choice([line for line in _clean(text) if line], n, texts)
    except Exception:  # noqa: BLE001 - a parser never raises
        return Parsed((None,), "the answer could not be read")


def _pick(found: Sequence[str], n: int) -> Parsed | None:
    """The answer if ``found`` names exactly one letter, an error if several or one out of range, else None."""
    distinct = sorted({f.upper() for f in found}, key=lambda x: (len(x), x))
    if not distinct:
        return None
    if len(distinct) > 1:
        return Parsed((None,),
                      f"the answer names {'two' if len(distinct) == 2 else 'several'} letters ({_join(distinct)}): "
                      "give one")
    i = _index(distinct[0], n)
    if i is None:
        labels = letters(n)
        return Parsed((None,), f"letter {distinct[0]} is not an option (A to {labels[-1] if labels else 'none'})")
    return Parsed((i,), None)


def _other_option(said: str, chosen: int, texts: Sequence[str]) -> int | None:
    """The option whose text follows the letter of another (``B. <text of option C>``: C), or None; as
    prefixes, so an answer cut off by the token limit counts; a text no option's is no conflict.
    """
    said = _norm(said)
    if not said:
        return None

    def same(t: str) -> bool:
        t = _norm(t)
        # prefixes only from 8 characters on: shorter, a few words of explanation could match
        return bool(t) and (t == said or len(said) >= 8 and (t.startswith(said) or said.startswith(t)))

    if chosen < len(texts) and same(texts[chosen]):
        return None
    return next((j for j, t in enumerate(texts) if j != chosen and same(t)), None)


def _choice(lines: list[str], n: int, texts: Sequence[str] | None) -> Parsed:
    if not lines:
        return Parsed((None,), "the answer is empty")
    labels = letters(n)
    any_case = r"[A-Za-z]{1,2}" if n > 26 else r"[A-Za-z]"
    upper = r"[A-Z]{1,2}" if n > 26 else r"[A-Z]"
    end = r"(?![A-Za-z0-9'])"
    body = " ".join(lines)
    # 1. the whole answer is a letter (lower case too: nothing else could be meant)
    m = re.fullmatch(rf"(?:{_ANSWER_PHRASE}\s*[:{_DASH}]?\s*)?[(\[]?\s*({any_case})\s*[)\]]?\s*[.):!]?", body)
    if m:
        return _pick([m.group(1)], n)  # type: ignore[return-value]  # one letter found: _pick gives None only for none
    # 2. answer phrases anywhere: "Answer: B", "the correct answer is (C)"; a lower-case letter
    # only before punctuation ("the answer is a good one" names no letter)
    found = []
    for m in re.finditer(rf"{_ANSWER_PHRASE}\s*[:{_DASH}]?\s*(?i:(?:option|letter|choice)\s+)?"
                         rf"[(\[]?({any_case})[)\]]?{end}", body):
        lab, rest = m.group(1), body[m.end():]
        two = re.match(_TWO, rest)
        if two and two.group(1) != lab.upper():
            return Parsed((None,), f"the answer names two letters ({lab.upper()} and {two.group(1)}): give one")
        if lab.isupper() or re.match(r"\s*(?:[.)!:,;]|$)", rest):
            found.append(lab)
    got = _pick(found, n)
    if got is not None:
        return got
    # 3. lines that start with a letter: "B", "B. text of option B", "(B) ...", "B - ..."
    led: list[tuple[str, str]] = []
    for line in lines:
        m = re.match(rf"[(\[]?({upper})[)\]]?{end}(.*)$", line)
        if not m:
            continue
        lab, rest = m.group(1), m.group(2)
        two = re.match(_TWO, rest)
        if two and two.group(1) != lab:
            return Parsed((None,), f"the answer names two letters ({lab} and {two.group(1)}): give one")
        if re.match(rf"\s*$|\s*[.):]|\s+[{_DASH}]\s", rest) or line.startswith(("(", "[")):
            led.append((lab, re.sub(rf"^\s*[.):{_DASH}]*\s*", "", rest)))
    got = _pick([lab for lab, _ in led], n)
    if got is not None and got.valid and texts and len({lab for lab, _ in led}) == 1:
        other = _other_option(led[0][1], got.answer[0], texts[:n])  # type: ignore[arg-type]  # valid: an index
        if other is not None:
            return Parsed((None,),
                          f"the answer gives letter {led[0][0]} with the text of option {labels[other]}: give one")
    if got is not None:
        return got
    # 4. no letter at all: the text of exactly one option
    if texts:
        first, whole = _norm(lines[0]), _norm(body)
        norm = [_norm(t) for t in texts[:n]]
        exact = [j for j, t in enumerate(norm) if t and t == first]
        if len(exact) == 1:
            return Parsed((exact[0],), None)
        hits = [j for j, t in enumerate(norm) if t and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", whole)]
        if len(hits) == 1:
            return Parsed((hits[0],), None)
        if len(hits) > 1:
            return Parsed((None,), "the answer gives the text of several options "
                                   f"({_join([labels[j] for j in hits])}): give one letter")
    return Parsed((None,), f"no option letter (A to {labels[-1] if labels else 'none'}) found")


# ---- yes-no ---------------------------------------------------------------------------------------------
def parse_yes_no(text: str) -> Parsed:
    """Read ``yes`` (option 0) or ``no`` (option 1) as the answer.

    >>> parse_yes_no("**Yes**."), parse_yes_no("Yes or no").error
    (Parsed(answer=(0,), error=None), 'the answer says both yes and no: give one')
    """
    try:
        lines = [line for line in _clean(text) if line]
    except Exception:  # noqa: BLE001 - a parser never raises
        lines = []
    if not lines:
        return Parsed((None,), "the answer is empty")
    said: set[str] = set()
    lead = r"^[\s\"'(\[¡¿.,:;!?-]*(?:(?:final\s+)?answer\s*[:\-]\s*)?(yes|no)\b"
    for line in lines:
        m = re.match(lead, line, flags=re.I)
        if m:
            said.add(m.group(1).lower())
            if other := re.match(r"\s*(?:/|,|\bor\b|\band\b|&)\s*(yes|no)\b", line[m.end():], flags=re.I):
                said.add(other.group(1).lower())
    body = " ".join(lines)
    said |= {w.lower() for w in re.findall(r"\banswer\b(?:\s+is)?\s*[:\-]?\s*[\"'(]?(yes|no)\b", body, flags=re.I)}
    if len(said) == 1:
        return Parsed((0 if "yes" in said else 1,), None)
    if said:
        return Parsed((None,), "the answer says both yes and no: give one")
    return Parsed((None,), "no yes or no found at the start of the answer")


# ---- dispatch -------------------------------------------------------------------------------------------
_PARSERS: dict[str, Callable[[str, int, int, Sequence[str] | None], Parsed]] = {
    "matching": lambda text, rows, options, texts: parse_matching(text, rows, options),
    "choice": lambda text, rows, options, texts: parse_choice(text, options, texts),
    "sense": lambda text, rows, options, texts: parse_choice(text, options, texts),  # WSD: a letter, as choice
    "yes-no": lambda text, rows, options, texts: parse_yes_no(text),
}


def parse(ask: str, text: str, rows: int, options: int, texts: Sequence[str] | None = None) -> Parsed:
    """Parse ``text`` as the answer to an ``ask`` question (``texts``: choice's option texts); an unknown
    ``ask`` is an error, any text is not.

    >>> parse("matching", "1: A", 1, 1), parse("choice", "C", 1, 3).answer, parse("yes-no", "no", 1, 2).answer
    (Parsed(answer=(0,), error=None), (2,), (1,))
    """
    if ask in _PARSERS:
        return _PARSERS[ask](text, rows, options, texts)
    raise ProbegenError(f"unknown question kind {ask!r}: use one of {', '.join(ASKS)}")
