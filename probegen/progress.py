"""Progress bars that read well on a terminal and in a log file.

On a terminal, tqdm's bar redrawn in place; when stderr is a file or a pipe, each update is its own
line, at most one every ``LOG_INTERVAL`` seconds across all bars, the final state always. The
interval is kept here: tqdm's monitor thread redraws after ``maxinterval`` whatever ``mininterval``.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Iterable, TextIO

#: seconds between two progress lines in a log (a terminal redraws as often as tqdm likes)
LOG_INTERVAL = 30.0

#: seconds between two redraws tqdm hands to a log stream, which keeps one every LOG_INTERVAL
_REDRAW = 1.0
#: the clock of the log's interval (a test replaces it)
_clock = time.monotonic
#: when the last progress line went to the log, by any bar (None: none yet)
_last_line: list[float | None] = [None]
_lock = threading.Lock()


class _LogLines:
    """A file-like stream for tqdm that turns ``\\r`` redraws into plain lines: one at most every
    ``LOG_INTERVAL`` seconds (shared by every bar), the bar's last state always."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.held: str | None = None  # the newest redraw not written yet (too soon after the last line)
        self.written: str | None = None

    def write(self, s: str) -> int:
        text = s.replace("\r", "").strip("\n").rstrip()
        final = "\n" in s  # the bar is done: its last state is written whatever the interval
        with _lock:
            if text.strip():  # tqdm clears a bar by writing blanks: nothing to log
                now = _clock()
                last = _last_line[0]
                if final or last is None or now - last >= LOG_INTERVAL:
                    self._line(text, now)
                else:
                    self.held = text
            elif final and self.held is not None:
                self._line(self.held, _clock())
        return len(s)

    def _line(self, text: str, now: float) -> None:
        self.held = None
        if text != self.written:
            self.stream.write(text + "\n")
            self.written = text
            _last_line[0] = now

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(iterable: Iterable[Any] | None = None, *, desc: str, unit: str, total: int | None = None,
                 disable: bool = False) -> Any:
    """A tqdm bar on stderr: in place on a terminal, one line per update (at most one every
    ``LOG_INTERVAL`` s, and the last one always) in a log.

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
        return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream, dynamic_ncols=True, leave=False,
                    disable=disable)
    # tqdm redraws every second at most (cheap: into _LogLines, not the log), _LogLines keeps one a
    # LOG_INTERVAL; left to tqdm, the interval is its monitor's (see the module doc)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=_LogLines(stream), ncols=100, leave=True,
                mininterval=_REDRAW, disable=disable)
