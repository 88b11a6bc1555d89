"""What the study-page tests share: Debian's Chromium through Playwright, and the study app on a
free loopback port in a thread of the test process."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.fixture
def browser():
    """A headless Chromium (skipped, saying why, where Debian's chromium is not installed)."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (`make install` installs it with apt-get; it could not be installed here)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


class ThreadServer:
    """The study app on a free loopback port, in a thread of the test process."""

    def __init__(self, study: Path) -> None:
        from werkzeug.serving import make_server

        from probegen.study.server import create_app

        self.srv = make_server("127.0.0.1", 0, create_app(study), threaded=True)
        self.base = f"http://127.0.0.1:{self.srv.server_port}"
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.srv.shutdown()
