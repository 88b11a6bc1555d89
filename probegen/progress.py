"""Progress bars that read well on a terminal and in a log file.

On a terminal this is tqdm's usual bar, redrawn in place. When stderr is a file or a pipe (a
Slurm log, CI, ``2> run.log``), tqdm's carriage-return redraws would pile up into one endless
line; there each update becomes its own line, at most one every ``LOG_INTERVAL`` seconds, and the
final state is always written.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, TextIO

#: seconds between two progress lines in a log (a terminal redraws as often as tqdm likes)
LOG_INTERVAL = 30.0


class _LogLines:
    """A file-like stream for tqdm that turns each ``\\r`` redraw into one plain line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, s: str) -> int:
        text = s.replace("\r", "").strip("\n")
        if text.strip():  # tqdm clears a bar by writing blanks: nothing to log
            self.stream.write(text.rstrip() + "\n")
        return len(s)

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(iterable: Iterable[Any] | None = None, *, desc: str, unit: str, total: int | None = None,
                 disable: bool = False) -> Any:
    """A tqdm bar on stderr: in place on a terminal, one line per update (every
    ``LOG_INTERVAL`` s, and at the end) in a log.

    >>> import io, contextlib
    >>> log = io.StringIO()
    >>> with contextlib.redirect_stderr(log):
    ...     for _ in progress_bar(range(3), desc="demo", unit="item"):
    ...         pass
    >>> "\\r" in log.getvalue(), log.getvalue().splitlines()[-1].startswith("demo: 100%")
    (False, True)
    """
    from tqdm import tqdm

    stream = sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    if tty:
        return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream, dynamic_ncols=True, leave=False, disable=disable)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=_LogLines(stream), ncols=100, leave=True,
                mininterval=LOG_INTERVAL, disable=disable)
