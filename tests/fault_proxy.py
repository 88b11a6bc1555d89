"""A threaded HTTP proxy on 127.0.0.1 in front of a real server, for fault tests: it answers the next requests
to one route with statuses of its own, or strips the completions' log-probs.

``inject`` holds, for the next requests whose path ends with ``route`` in order, None (pass it on), a status
(answered with the message ``injected``) or a (status, message); ``hits`` counts those requests.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultProxy:
    """The proxy; ``base`` is its ``/v1`` address; ``strip`` drops the completions' log-probs."""

    def __init__(self, upstream: str, route: str = "/completions") -> None:
        self.up = upstream.split("//", 1)[1].split("/", 1)[0]
        self.route = route
        self.inject: list[int | tuple[int, str] | None] = []
        self.strip = False
        self.hits = 0
        proxy, lock = self, threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a) -> None:
                pass

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path.endswith(proxy.route):
                    with lock:
                        proxy.hits += 1
                        fault = proxy.inject.pop(0) if proxy.inject else None
                    if fault is not None:
                        status, message = fault if isinstance(fault, tuple) else (fault, "injected")
                        return self._answer(status, json.dumps({"error": {"message": message}}).encode())
                conn = http.client.HTTPConnection(proxy.up, timeout=300)
                conn.request(self.command, self.path, body=body or None,
                             headers={k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")})
                r = conn.getresponse()
                data = r.read()
                if proxy.strip and self.path.endswith("/completions") and r.status == 200:
                    doc = json.loads(data)
                    for ch in doc["choices"]:
                        ch["logprobs"] = None
                    data = json.dumps(doc).encode()
                self._answer(r.status, data)

            def _answer(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _relay

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                pass  # a client closing a kept-alive connection is no failure of the test

        self.server = Server(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
