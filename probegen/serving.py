"""Run a local HTTP server until Ctrl-C or SIGTERM, on a bounded path.

The handlers are installed explicitly (a background server, ``cmd &`` or ``nohup``, inherits SIGINT
*ignored*, so waiting for ``KeyboardInterrupt`` never ends it); a helper thread stops the loop and a
watchdog ends the process if that takes over ``grace`` seconds; a second signal ends it at once.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

#: seconds a stop may take before the process is ended without further clean-up
GRACE_S = 10.0


def serve_until_signal(server: Any, grace: float = GRACE_S) -> int:
    """Serve ``server`` (a ``socketserver``/werkzeug server) until SIGINT or SIGTERM; the signal number.

    Must run in the main thread (Python delivers signals there). The previous handlers are
    restored on return. The caller maps the signal to its exit (Ctrl-C: 130).
    """
    if threading.current_thread() is not threading.main_thread():  # embedded in a thread: its owner stops it
        try:
            server.serve_forever(poll_interval=0.2)
        finally:
            server.server_close()
        return signal.SIGINT
    received: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if received:  # asked twice: stop now
            os._exit(128 + signum)
        received.append(signum)
        threading.Thread(target=server.shutdown, name="probegen-stop", daemon=True).start()
        watchdog = threading.Timer(grace, os._exit, args=(128 + signum,))
        watchdog.daemon = True
        watchdog.start()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        server.server_close()
    return received[0] if received else signal.SIGINT
