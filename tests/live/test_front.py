"""``watch --ingest``: the front in a process of its own (``--front process``, the
default).

The real command line: hooks pushed to the front become records equal to replay of
the spooled trace; the session's next PreToolUse is denied once a policy stopped the
run (the watcher tells the front what it scored, across processes); /metrics (joined
in the front from the watcher's pieces) and the page (passed on to the watcher) carry
the front's counters; a front killed with SIGKILL is started again on the same port,
its counters going on; and the front dies with the watcher. With one worker and with
two (``--workers 2``: the front and the workers are the supervisor's children).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest
from claude_run import APP, bearer, make_setup, wait_until

from streameval.live.ingest import SPOOL_NAME
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.scoring.record import record_line

POLICY = '[[policy]]\nname = "budget"\nkind = "max_steps"\nlimit = 1\naction = "file"\n'


class Watch:
    def __init__(self, tmp_path, extra: tuple[str, ...] = ("--ingest-token-file", "token"),
                 env: dict | None = None, workers: int = 1):
        self.s = s = make_setup(tmp_path)
        self.runs = tmp_path / "runs"
        self.runs.mkdir()
        self.out = tmp_path / "out.jsonl"
        self.log = tmp_path / "watch.log"
        policy = tmp_path / "abort.toml"
        policy.write_text(POLICY)
        cmd = [sys.executable, "-m", "streameval", "watch", str(self.runs), "--gold", str(s.gold),
               "--repo", str(s.repo), "--port", "0", "--out", str(self.out), "--ingest",
               "--abort-config", str(policy), "--idle-timeout", "30",
               "--patch-grace", "0", "--workers", str(workers), *extra]
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=tmp_path, env=env)
        wait_until(lambda: b"serving metrics on" in self.log.read_bytes()
                   or self.proc.poll() is not None, what="watch to start")
        assert self.proc.poll() is None, self.log.read_text()[-2000:]
        self.port = int(self.log.read_text().split("http://127.0.0.1:")[1].split("/")[0])
        wait_until(lambda: b"need the bearer token in" in self.log.read_bytes(), what="the token")
        #: the token file's header: what an agent told of the file sends
        self.auth = bearer(tmp_path / extra[extra.index("--ingest-token-file") + 1]) \
            if "--ingest-token-file" in extra else {}

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def hook(self, event: str, call: str, headers: dict | None = None, session: str = "s1",
             **more) -> dict:
        body = {"session_id": session, "hook_event_name": event, "tool_name": "Read",
                "tool_use_id": call, "cwd": "/workspace/demo", "tool_input": {}, **more}
        req = urllib.request.Request(self.url(f"/v1/hooks/claude?instance_id={self.s.instance}"),
                                     json.dumps(body).encode(),
                                     {"Content-Type": "application/json", **self.auth,
                                      **(headers or {})})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200
            return json.loads(r.read())

    def read_call(self, call: str, session: str = "s1") -> dict:
        return self.hook("PostToolUse", call, session=session,
                         tool_input={"file_path": "/workspace/demo/src/app.py"},
                         tool_response={"type": "text", "file": {"content": APP.rstrip("\n"),
                                                                 "startLine": 1}})

    def get(self, path: str) -> tuple[int, bytes]:
        with urllib.request.urlopen(self.url(path), timeout=10) as r:
            return r.status, r.read()

    def front_pid(self) -> int:
        children = []   # a front started again is the child of the thread that saw it die
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{task}/children") as fh:
                    children += fh.read().split()
            except OSError:
                pass
        fronts = []
        for c in children:
            try:
                with open(f"/proc/{c}/cmdline", "rb") as fh:
                    if b"streameval.live.front" in fh.read():
                        fronts.append(int(c))
            except OSError:
                pass   # a child (git) that just ended
        [pid] = fronts
        return pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)


@pytest.fixture(params=[1, 2], ids=["one-worker", "two-workers"])
def watch(tmp_path, request):
    """A watch of one worker (its front its child), and of two (the supervisor's)."""
    w = Watch(tmp_path, workers=request.param)
    yield w
    w.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_hooks_through_the_front_are_scored_steered_and_served(watch):
    # runs scored first, so that what follows is not timed on a cold process (a
    # PreToolUse waits at most 2 s for the watcher): eight, as a run's worker follows from
    # its trace file's inode, so that each of two workers has one but in 1 case of 128
    # (one alone left t1's worker cold: its first run parses the gold's files, over 2 s
    # while two CI runs shared 2 cores)
    for k in range(8):
        assert watch.read_call(f"w{k}", session=f"warm{k}") == {}
    wait_until(lambda: all(f'run_id="warm{k}"' in watch.get("/metrics")[1].decode()
                           for k in range(8)), what="a warm watcher")
    assert watch.hook("PreToolUse", "t1") == {}
    assert watch.read_call("t1") == {}
    # the watcher scores t1 in its own process; the front's next PreToolUse waits for
    # it and carries the deny of the policy it tripped
    answer = watch.hook("PreToolUse", "t2")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "policy budget" in answer["permissionDecisionReason"]
    assert watch.hook("SessionEnd", "end") == {}
    wait_until(lambda: watch.out.exists() and watch.out.read_bytes().endswith(b"\n"), what="record")
    status, text = watch.get("/metrics")          # from the watcher's pieces
    assert status == 200
    wait_until(lambda: 'streameval_ingest_requests_total{route="claude",status="200"} 12.0'
               in watch.get("/metrics")[1].decode(), what="the front's counters")
    assert watch.get("/")[0] == 200               # the page
    runs = json.loads(watch.get("/api/runs")[1])
    assert '"s1"' in json.dumps(runs)
    watch.stop()
    pushed = watch.runs / SPOOL_NAME / "claude-hooks" / "s1" / "trace.jsonl"
    res = load_resources(str(watch.s.gold), None, str(watch.s.repo))
    [last] = [line for line in watch.out.read_bytes().splitlines() if b'"s1"' in line]
    assert last + b"\n" == record_line(evaluate_trace(pushed, res, root=watch.runs)[0])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_front_is_started_again_on_the_same_port(watch):
    assert watch.read_call("t1") == {}
    wait_until(lambda: 'streameval_ingest_requests_total{route="claude",status="200"} 1.0'
               in watch.get("/metrics")[1].decode(), what="the front's counters")
    first = watch.front_pid()
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: _other_front(watch, first), what="a new front")
    assert watch.read_call("t2") == {}          # the same port, the same spool
    # the counters go on from where the dead front left them
    wait_until(lambda: 'streameval_ingest_requests_total{route="claude",status="200"} 2.0'
               in watch.get("/metrics")[1].decode(), what="counters going on")
    pushed = watch.runs / SPOOL_NAME / "claude-hooks" / "s1" / "trace.jsonl"
    assert len(pushed.read_bytes().splitlines()) == 4   # two calls, each stored once
    assert "starting it again" in watch.log.read_text()


def _other_front(watch: Watch, first: int) -> bool:
    try:
        return watch.front_pid() != first and watch.get("/metrics")[0] == 200
    except (ValueError, OSError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_front_dies_with_the_watcher(watch):
    front = watch.front_pid()
    watch.proc.send_signal(signal.SIGKILL)
    watch.proc.wait(10)
    wait_until(lambda: not os.path.exists(f"/proc/{front}") or _zombie(front), what="the front to end")
    wait_until(lambda: _refused(watch.port), what="the port to be free")


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _front_knows(w: Watch, secret: bytes) -> bytes:
    pid = w.front_pid()
    with open(f"/proc/{pid}/cmdline", "rb") as fh, open(f"/proc/{pid}/environ", "rb") as env:
        return secret in fh.read() + env.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_token_is_made_when_none_is_given_and_only_its_file_is_said(tmp_path):
    """``--ingest`` alone: a token is made in a file only its user may read; the log
    says where it is, never what it is; a push without it is a 401."""
    import stat
    import urllib.error

    w = Watch(tmp_path)
    try:
        token_file = tmp_path / "token"
        token = token_file.read_text().strip()
        assert len(token) >= 40 and stat.S_IMODE(token_file.stat().st_mode) == 0o600
        text = w.log.read_text()
        assert f"need the bearer token in {token_file} (made now)" in text
        assert token not in text
        with pytest.raises(urllib.error.HTTPError) as err:
            w.hook("PreToolUse", "t1", headers={"Authorization": "Bearer wrong"})
        assert err.value.code == 401
        err.value.close()
        assert w.hook("PreToolUse", "t1") == {}
        assert not _front_knows(w, token.encode())
    finally:
        w.stop()
    (tmp_path / "again").mkdir()
    again = Watch(tmp_path / "again", ("--ingest-token-file", str(token_file)))   # kept
    try:
        assert again.auth == w.auth and "(made now)" not in again.log.read_text()
    finally:
        again.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_token_of_the_environment_is_not_in_the_fronts_environment(tmp_path):
    """f53415f started the front with the watcher's environment, token and all, though
    its comment said the token reached it on the link only."""
    import os

    w = Watch(tmp_path, (), env={**os.environ, "STREAMEVAL_INGEST_TOKEN": "s3cret-env-token",
                                 "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=s3cret-otel"})
    try:
        assert "need the bearer token in $STREAMEVAL_INGEST_TOKEN" in w.log.read_text()
        assert w.hook("PreToolUse", "t1", headers={"Authorization": "Bearer s3cret-env-token"}) == {}
        assert not _front_knows(w, b"s3cret-env-token") and not _front_knows(w, b"s3cret-otel")
    finally:
        w.stop()


def test_a_literal_token_warns(tmp_path):
    w = Watch(tmp_path, ("--ingest-token", "s3cret-literal"))
    try:
        assert "warning: --ingest-token puts the token on the command line" in w.log.read_text()
        assert w.hook("PreToolUse", "t1", headers={"Authorization": "Bearer s3cret-literal"}) == {}
        assert not _front_knows(w, b"s3cret-literal")
    finally:
        w.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_front_that_keeps_dying_closes_the_port(watch):
    """After MAX_STARTS starts within a minute the watcher gives up, and closes the
    port: clients are refused at once, not left waiting in the listen queue."""
    from streameval.live.link import FrontProcess

    for _ in range(FrontProcess.MAX_STARTS):
        pid = watch.front_pid()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda pid=pid: _refused(watch.port) or _other_front(watch, pid),
                   what="a new front or a closed port")
    wait_until(lambda: _refused(watch.port), what="the port closed")
    assert "the port is closed" in watch.log.read_text()
    assert watch.proc.poll() is None            # the watcher itself goes on


def test_the_front_forgets_what_the_watcher_let_go():
    from pathlib import Path

    from streameval.live.front import _Scored

    scored = _Scored()
    scored.take({"scored": {"/r/a/trace.jsonl": [120, "stopped (policy budget)"],
                            "/r/b/trace.jsonl": [40, None]}})
    a, b = Path("/r/a/trace.jsonl"), Path("/r/b/trace.jsonl")
    assert (scored.processed(a), scored.reason(a)) == (120, "stopped (policy budget)")
    assert (scored.processed(b), scored.reason(b)) == (40, None)
    scored.take({"scored": {}, "gone": ["/r/a/trace.jsonl"]})
    assert (scored.processed(a), scored.reason(a)) == (-1, None)
    assert scored.processed(b) == 40


def test_the_fronts_counts_are_added_to_the_watchers_own():
    # the watcher's own server counts into the same counters (a 405 on the page)
    from collections import Counter
    from types import SimpleNamespace

    from streameval.live.link import COUNTERS, Link

    stats = SimpleNamespace(**{name: Counter() for name in COUNTERS})
    link = Link.__new__(Link)
    link.watcher = SimpleNamespace(table=SimpleNamespace(stats=stats))
    link._last = {name: Counter() for name in COUNTERS}
    stats.http_refused["method"] = 1                                  # the watcher's own
    link._count({"http_refused": [["method", 2]], "ingest_requests": [[["claude", 200], 5]]})
    link._count({"http_refused": [["method", 3]], "ingest_requests": [[["claude", 200], 7]]})
    assert stats.http_refused["method"] == 4 and stats.ingest_requests[("claude", 200)] == 7
    for last in link._last.values():                                  # a front started again
        last.clear()
    link._count({"ingest_requests": [[["claude", 200], 1]]})
    assert stats.ingest_requests[("claude", 200)] == 8


def test_slow_bodies_sent_to_the_page_cannot_starve_metrics(tmp_path):
    """102ce86 read the body of any request the front passed on to the watcher (the page
    lane, where no per-client limit applies): one client holding every slot with
    ``POST /`` and a body that never comes made every scrape a 503. The page is
    read-only: such requests are answered at once, their bodies unread, and closed."""
    from streameval.live.asgi import PROTECTED, App
    from streameval.live.guard import Limits
    from streameval.live.server import HttpServer
    from streameval.live.upstream import Upstream

    app = App(Limits(max_connections=16, protected_connections=4, header_timeout=120,
                     body_grace=120))   # a hang guard: a body read would be waited for
    app.route("/metrics", _plain)
    app.route("/", Upstream(str(tmp_path / "no-watcher.sock")), lane=PROTECTED, prefix=True)
    server = HttpServer(app, "127.0.0.1", 0)
    held = []
    try:
        for k in range(16):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            method = "POST" if k % 2 else "GET"
            sock.sendall(f"{method} /runs/x HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         "Content-Length: 1\r\n\r\n".encode())
            held.append(sock)
        answers = [_until_closed(sock) for sock in held]
        assert all(a.startswith(b"HTTP/1.1 405" if k % 2 else b"HTTP/1.1 413")
                   for k, a in enumerate(answers)), [a[:40] for a in answers]
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=30) as r:
            assert r.status == 200
    finally:
        for sock in held:
            sock.close()
        server.close()
    assert app.refused["method"] == 8 and app.refused["too_large"] == 8


async def _plain(_request):
    from streameval.live.asgi import Response

    return Response(200, b"ok\n", "text/plain")


def _until_closed(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out
