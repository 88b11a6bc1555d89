"""``probegen view --serve``: the same page on 127.0.0.1, its data fetched from ``/data.json`` instead
of inlined (for runs too big for one file); anything else is 404, and no request line is logged."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from ..errors import ProbegenError
from .page import assets, csp, embed_json, page_html


def make_server(model: dict[str, Any], host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server of the page and ``model`` (not yet serving); port 0 = a free one."""
    title = "probegen view: " + ", ".join(r.get("label", "") for r in model.get("runs", []))
    page = page_html(None, served=True, title=title).encode("utf-8")
    data = embed_json(model).encode("utf-8")
    script, style = assets()
    policy = csp(script, style, served=True)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            if path in ("/", "/index.html"):
                self._send(200, page, "text/html; charset=utf-8")
            elif path == "/data.json":
                self._send(200, data, "application/json; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", policy)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - no request log
            return

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as e:
        raise ProbegenError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    server.daemon_threads = True  # a hanging client never holds up the shutdown
    return server


def serve(model: dict[str, Any], host: str = "127.0.0.1", port: int = 8766, announce: Callable[[str], None] = print,
          ready: threading.Event | None = None) -> None:
    """Serve until Ctrl-C, then raise KeyboardInterrupt (the server is closed first)."""
    server = make_server(model, host, port)
    announce(f"serving the view of {len(model['runs'])} run(s) on http://{host}:{server.server_port}/ (Ctrl-C stops)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        announce(f"note: bound to {host}: anyone who can reach this address can read the runs")
    if ready is not None:
        ready.set()
    from ..serving import serve_until_signal

    serve_until_signal(server)  # Ctrl-C or SIGTERM, even where the shell started it with SIGINT ignored
    raise KeyboardInterrupt  # report it as an interruption (exit 130)
