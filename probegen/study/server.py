"""``probegen study serve``: a small Flask app, one page per annotator behind a secret URL token.

Routes: ``GET /a/<token>`` (the page), ``GET /api/<token>/state`` (the annotator's items and answers
so far) and ``POST /api/<token>/answer`` (stored and fsynced before the response). API errors are JSON
``{"error": ...}`` (403 unknown token or item, 400 malformed body, 409 changed answer, 500 a bug); a
browser gets a readable page that echoes nothing. The app never reads ``gold.jsonl``, and no log line
carries a token (:class:`RedactTokens`).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .store import AnswerError, AnswerLog, Study, load_study, study_writer
from .views import guide_key, instructions

if TYPE_CHECKING:
    from flask import Flask, Request, Response
    from flask.typing import ResponseReturnValue

STATIC = Path(__file__).with_name("static")
_TOKEN_IN_PATH = re.compile(r"(/a/|/api/)[^/\s?#'\"]+", re.IGNORECASE)


class RedactTokens(logging.Filter):
    """Replaces the token of every ``/a/<token>`` and ``/api/<token>`` in a log record (werkzeug's, Flask's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = _TOKEN_IN_PATH.sub(r"\1<token>", record.getMessage())
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = msg, ()
        if record.exc_text:
            record.exc_text = _TOKEN_IN_PATH.sub(r"\1<token>", record.exc_text)
        return True


_REDACT = RedactTokens()


def create_app(study: Study | str | Path) -> Flask:
    """The Flask app serving ``study`` (a Study or its directory)."""
    from flask import Flask, jsonify, request, send_from_directory

    study = study if isinstance(study, Study) else load_study(study)
    log = AnswerLog(study)
    tokens = study.tokens()
    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")
    for logger in (logging.getLogger("werkzeug"), app.logger):
        logger.addFilter(_REDACT)  # idempotent
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024
    # the default JSON provider has sort_keys; Flask types app.json as the base class
    app.json.sort_keys = False  # type: ignore[attr-defined]

    def annotator_of(token: str) -> str | None:
        found = None
        for aid, tok in tokens.items():  # constant-time comparisons: the token is the only secret
            if hmac.compare_digest(tok.encode(), token.encode()):
                found = aid
        return found

    app.after_request(_security_headers)

    @app.get("/")
    def root() -> str:
        return ("<!doctype html><title>probegen study</title>"
                "<p>Open the link you were given (it ends in your token).</p>")

    @app.get("/a/<token>")
    def page(token: str) -> ResponseReturnValue:
        if annotator_of(token) is None:
            return _fail("unknown annotator token", 403, page=True)
        return send_from_directory(STATIC, "index.html")

    @app.get("/api/<token>/state")
    def state(token: str) -> ResponseReturnValue:
        if (aid := annotator_of(token)) is None:
            return _fail("unknown annotator token", 403)
        return jsonify(annotator_state(study, log, aid))

    @app.post("/api/<token>/answer")
    def answer(token: str) -> ResponseReturnValue:
        if (aid := annotator_of(token)) is None:
            return _fail("unknown annotator token", 403)
        return _store_answer(study, log, aid, parse_body(request))

    _json_errors(app)
    return app


def _store_answer(study: Study, log: AnswerLog, aid: str, body: Any) -> ResponseReturnValue:
    """The response to one answer POSTed by annotator ``aid`` (stored and fsynced before a 200)."""
    from flask import jsonify

    if not isinstance(body, dict) or "item" not in body or "answer" not in body:
        return _fail('body must be a JSON object {"item": ..., "answer": ..., "guess": ...}', 400)
    elapsed = body.get("elapsed_ms")
    extra: dict[str, Any] = {
        "received": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "elapsed_ms": int(elapsed) if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool)
        and 0 <= elapsed < 1e9 else None,
        "source": "web",
    }
    try:
        record, stored = log.submit(aid, body["item"], body["answer"], body.get("guess"), require_guess=True,
                                    extra=extra)
    except AnswerError as e:
        return _fail(str(e), e.status)
    return jsonify({"ok": True, "stored": stored, "item": record["item"],
                    "answered": len(log.answered[aid]), "total": len(study.annotators[aid]["items"])})


def _security_headers(resp: Response) -> Response:
    """No caching, no sniffing, no referrer (the token is in the URL), nothing from elsewhere."""
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["Content-Security-Policy"] = "default-src 'self'; style-src 'self'; script-src 'self'"
    return resp


# What a person sees instead of an error (by status); nothing from the request is echoed
ERROR_PAGES = {
    403: ("This link does not work",
          "The study does not know this link. Open the whole link you were given (it ends in your personal code); "
          "if it still does not work, ask the person running the study for your link."),
    404: ("Page not found",
          "There is no page at this address. Open the whole link you were given (it ends in your personal code)."),
}
_OTHER_ERROR = ("Something went wrong",
                "The page cannot be shown. Try again in a moment, or ask the person running the study.")


def _wants_page() -> bool:
    """True for a person's browser: not an API path, and JSON not preferred over HTML."""
    from flask import request

    acc = request.accept_mimetypes
    return not request.path.startswith("/api/") and acc["application/json"] <= acc["text/html"]


def error_page(status: int) -> str:
    """The readable HTML page of an error ``status`` (the study's stylesheet; no script).

    >>> "does not work" in error_page(403) and "<script" not in error_page(403)
    True
    """
    from html import escape

    title, text = ERROR_PAGES.get(status, _OTHER_ERROR)
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="referrer" '
            f'content="no-referrer"><title>{escape(title)}: probegen study</title><link rel="stylesheet" '
            'href="/static/study.css"></head><body><header><h1>Word meaning study</h1></header><main><section '
            f'id="error-page" class="task"><h2>{escape(title)}</h2><p>{escape(text)}</p><p class="hint">(error '
            f'{status})</p></section></main></body></html>\n')


def _fail(msg: str, status: int, page: bool = False) -> ResponseReturnValue:
    """An error response: JSON ``{"error": msg}``, or with ``page`` for a browser the readable page."""
    from flask import jsonify

    if page and _wants_page():
        return error_page(status), status, {"Content-Type": "text/html; charset=utf-8"}
    resp = jsonify({"error": msg})
    resp.status_code = status
    return resp


def _json_errors(app: Flask) -> None:
    """Every error, HTTP or a bug, answered as JSON, or to a browser off the API as the readable page."""
    from flask import request
    from werkzeug.exceptions import HTTPException

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> ResponseReturnValue:
        msgs = {404: "not found", 405: "method not allowed", 413: "request body too large"}
        return _fail(msgs.get(e.code or 500, (e.name or "error").lower()), e.code or 500, page=True)

    @app.errorhandler(Exception)
    def bug(e: Exception) -> ResponseReturnValue:  # handled here: Flask logs no traceback with the path (token)
        app.logger.error("internal error in %s %s: %s: %s", request.method, request.endpoint, type(e).__name__, e)
        return _fail("internal server error; the answer was not stored, try again", 500, page=True)


def parse_body(request: Request) -> Any:
    """The request's JSON body, or None if it is not JSON (wrong type, undecodable, nested too deeply)."""
    if not request.is_json:
        return None
    try:
        return json.loads(request.get_data(cache=False))
    except (ValueError, RecursionError):  # json raises RecursionError on "[[[[...", not ValueError
        return None


def annotator_state(study: Study, log: AnswerLog, aid: str) -> dict[str, Any]:
    """What the page needs: the annotator's items (views, no gold) and answers so far."""
    a = study.annotators[aid]
    cond = a["condition"]
    views = {uid: study.view(aid, uid) for uid in a["items"]}
    # each item names its guideline (what its page shows: a highlighted word or not, a group or not)
    items = [{"item": uid, **v, "guide": f"{guide_key(cond, v)}/{v['kind']}"} for uid, v in views.items()]
    guides = {it["guide"]: instructions(cond, views[it["item"]]) for it in items}
    return {
        "annotator": aid,
        "condition": cond,
        "instructions": dict(sorted(guides.items())),
        "guess": cond == "context",
        "items": items,
        "answered": {uid: {"answer": r["answer"], "guess": r.get("guess")} for uid, r in log.answered[aid].items()},
    }


def serve(study_dir: str | Path, host: str = "127.0.0.1", port: int = 8765,
          announce: Callable[[str], object] = print) -> None:
    """Run the app under the study's writer lock until Ctrl-C, then raise KeyboardInterrupt (server closed)."""
    from werkzeug.serving import make_server

    from ..errors import ProbegenError
    from ..serving import serve_until_signal

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no request log: the URLs carry tokens
    study = load_study(study_dir)
    with study_writer(study, "served"):
        app = create_app(study)  # reads the answers under the lock: nothing is written behind it
        try:
            _check_port(host, port)  # werkzeug would print its own message and exit on a busy port
            server = make_server(host, port, app, threaded=True)
        except OSError as e:
            raise ProbegenError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        announce(f"serving study {study.root} on http://{host}:{server.server_port}/ (Ctrl-C stops)")
        if host not in ("127.0.0.1", "localhost", "::1"):
            announce(f"note: bound to {host}: anyone who can reach this address and has a link can answer")
        for line in annotator_links(study, f"http://{host}:{server.server_port}"):
            announce(line)
        serve_until_signal(server)  # Ctrl-C or SIGTERM, even where the shell started it with SIGINT ignored
    # the CLI reports an interruption and exits 130, not 0
    raise KeyboardInterrupt


def _check_port(host: str, port: int) -> None:
    """Raise OSError if ``host:port`` cannot be bound (the socket is closed again at once)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))


def annotator_links(study: Study, base: str) -> list[str]:
    """One line per annotator: the link with its token, condition and progress."""
    from .store import first_answers

    out = []
    for aid, tok in study.tokens().items():
        a = study.annotators[aid]
        done = len(first_answers(study, aid))
        out.append(f"  {aid:<12} {base}/a/{tok}   ({a['condition']}, {done}/{len(a['items'])} answered)")
    return out
