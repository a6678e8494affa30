"""The HTTP server against hostile and heavy clients, over real sockets (issue 18).

Every test here is a failure the load and fault campaign on 648f216 found: slow clients
holding every handler, a smuggling-shaped body stored as trace lines, JSON nested too
deep answered 500, bodies without a budget, a hook wait holding a thread. Timings are
never asserted; a hang guard (the socket timeout) is the only clock.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from claude_run import wait_until
from served import SPOOL_NAME, Limits, Served


@pytest.fixture
def w(env, tmp_path):
    from claude_run import watcher

    _s, runs, res = env
    return watcher(runs, res, tmp_path)


def _slow(port: int, first: bytes, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    sock.sendall(first)
    return sock


def test_slow_clients_cannot_starve_metrics_or_pushes(w):
    """200 connections dribbling their headers (and 64 more, one per handler of the old
    server, dribbling a body): every scrape and every push is answered meanwhile, no
    thread is spent on them, and each is cut off at its deadline and counted."""
    srv = Served(w, limits=Limits(header_timeout=1.5, body_grace=1.5))
    before = threading.active_count()
    # from other addresses than the scraper's (one address may hold 256 connections)
    socks = [_slow(srv.port, b"POST /v1/runs/x/lines HTTP/1.1\r\nHost: 127.0.0.1\r\n", "127.0.0.2")
             for _ in range(200)]
    socks += [_slow(srv.port, b"POST /v1/runs/x/lines HTTP/1.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100\r\n\r\n{",
                    "127.0.0.3") for _ in range(64)]
    try:
        for i in range(5):
            assert "streameval_sessions" in srv.metrics(timeout=10)
            assert srv.post(f"/v1/runs/ok-{i}/lines", b'{"a": 1}\n')[0] == 200
            for sock in socks[:200]:
                sock.sendall(b"X")   # a byte now and then keeps no connection alive
        assert threading.active_count() - before <= 12   # the lanes' pools, not a thread each
        answers = [sock.recv(200) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert sum(a.startswith(b"HTTP/1.1 408") for a in answers) == 264
    refused = w.table.stats.http_refused
    assert refused["header_timeout"] == 200 and refused["body_timeout"] == 64
    text = srv.metrics()
    assert 'streameval_http_refused_total{reason="header_timeout"} 200.0' in text
    srv.close()


def _classified(srv: Served, client: str, n: int) -> None:
    wait_until(lambda: srv.server.app.guard.by_client[client] >= n, what=f"{n} pushes held")


def test_256_slow_pushes_from_loopback_cannot_starve_metrics_or_the_page(w):
    """f53415f counted every connection of 127.0.0.1 against one limit of 256: 256 slow
    clients there made every /metrics probe from 127.0.0.1 a 503 or a reset. The limit
    is the pushes' only; /metrics and the page keep their slots."""
    from streameval.live.pages import mount_live_page

    srv = Served(w, limits=Limits(header_timeout=120))   # a hang guard: they stay slow
    mount_live_page(srv.server.app, w)
    slow = [_slow(srv.port, b"POST /v1/runs/slow/lines HTTP/1.1\r\nHost: 127.0.0.1\r\nX")
            for _ in range(256)]
    try:
        _classified(srv, "127.0.0.1", 256)
        for _ in range(20):
            assert "streameval_sessions" in srv.metrics(timeout=30)
        for path in ("/", "/api/runs"):
            assert srv.raw(f"GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n".encode()) \
                .startswith(b"HTTP/1.1 200"), path
        # pushes from 127.0.0.1 are past its limit; another address pushes
        over = srv.raw(b"POST /v1/runs/r/lines HTTP/1.1\r\nContent-Length: 9\r\n\r\n{\"a\": 1}\n")
        assert over.startswith(b"HTTP/1.1 503") and b"retry-after" in over.lower()
        ok = srv.raw(b"POST /v1/runs/r/lines HTTP/1.1\r\nContent-Type: application/x-ndjson\r\n"
                     b"Content-Length: 9\r\nConnection: close\r\n\r\n{\"a\": 1}\n",
                     source="127.0.0.2")
        assert ok.startswith(b"HTTP/1.1 200"), ok[:200]
    finally:
        for sock in slow:
            sock.close()
    assert w.table.stats.http_refused["per_client_limit"] == 1
    srv.close()


def test_a_full_server_gives_the_slot_of_the_longest_waiting_connection(w):
    """Every slot held by clients that never finish their request line: a scrape takes
    the slot of the one that waited longest (it is answered 503), and pushes never take
    the slots kept for /metrics and the page."""
    srv = Served(w, limits=Limits(max_connections=16, protected_connections=4,
                                  header_timeout=120))
    waiting = [_slow(srv.port, b"GET /metr") for _ in range(16)]
    try:
        wait_until(lambda: srv.server.app.guard.connections == 16, what="every slot held")
        assert "streameval_sessions" in srv.metrics(timeout=30)
        assert waiting[0].recv(100).startswith(b"HTTP/1.1 503")   # the longest waiting
    finally:
        for sock in waiting:
            sock.close()
    wait_until(lambda: srv.server.app.guard.connections == 0, what="the slots given back")
    pushes = [_slow(srv.port, b"POST /v1/runs/x/lines HTTP/1.1\r\nHost: 127.0.0.1\r\nX",
                    f"127.0.0.{2 + k % 4}") for k in range(12)]
    try:
        wait_until(lambda: srv.server.app.guard.ingest == 12, what="the pushes' slots held")
        over = srv.raw(b"POST /v1/runs/y/lines HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", source="127.0.0.9")
        assert over.startswith(b"HTTP/1.1 503")
        assert "streameval_sessions" in srv.metrics(timeout=30)
    finally:
        for sock in pushes:
            sock.close()
    srv.close()


def test_transfer_encoding_with_content_length_is_refused_and_never_stored(w):
    """The request-smuggling shape: 648f216 stored the chunk-size lines as trace lines."""
    srv = Served(w)
    body = b'5\r\n{"a":\r\n3\r\n 1}\r\n0\r\n\r\n'
    req = (b"POST /v1/runs/smuggle/lines HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
           b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" % len(body)) + body
    assert srv.raw(req).startswith(b"HTTP/1.1 400")
    srv.close()
    assert not (w.cfg.root / SPOOL_NAME / "lines" / "smuggle").exists()
    assert w.table.stats.http_refused["bad_framing"] == 1


@pytest.mark.parametrize("body", [
    b"[" * 100_000,
    json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_use_id": "t1",
                "tool_name": "Read", "tool_input": "X"}).replace('"X"', "[" * 5000 + "]" * 5000).encode(),
    json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_use_id": "t1",
                "tool_name": "Read", "tool_input": "X"}).replace('"X"', '{"a":' * 200 + "1" + "}" * 200).encode(),
], ids=["brackets", "input-5000-deep", "input-200-deep"])
def test_json_nested_too_deep_is_a_counted_400(w, body):
    """648f216 answered 500 with a RecursionError traceback, uncounted."""
    srv = Served(w)
    status, answer = srv.post("/v1/hooks/claude", body)
    assert status == 400 and "depth" in answer["error"]
    assert w.table.stats.http_refused["too_deep"] == 1
    assert w.table.stats.ingest_requests[("claude", 400)] == 1
    srv.close()


def test_bodies_past_the_in_flight_budget_get_503_with_retry_after(w):
    srv = Served(w, limits=Limits(inflight_bytes=3 << 20, max_body=2 << 20))
    head = b"POST /v1/runs/big/lines HTTP/1.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\nx" % (1 << 20)
    holds = [_slow(srv.port, head, source) for source in ("127.0.0.2", "127.0.0.3")]
    try:
        time.sleep(0.2)   # both bodies are admitted: 2 MiB of 3 held
        req = b"POST /v1/runs/two/lines HTTP/1.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\ny" % (3 << 19)
        answer = srv.raw(req)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer.lower()
        assert srv.post("/v1/runs/small/lines", b'{"a": 1}\n')[0] == 200   # within the budget
    finally:
        for sock in holds:
            sock.close()
    assert w.table.stats.http_refused["busy"] == 1
    assert not (w.cfg.root / SPOOL_NAME / "lines" / "two").exists()
    srv.close()


def test_big_bodies_wait_their_turn_unread(w):
    """Bodies of HEAVY bytes or more are read HEAVY_READ at a time: a third one, sent
    whole, is admitted but not read (its bytes stay in its socket) while two slow ones
    hold the turns, and is stored once one of them gives up."""
    from streameval.live.ingest import HEAVY, HEAVY_READ

    srv = Served(w, limits=Limits(max_body=4 * HEAVY))
    head = b"POST /v1/runs/slow/lines HTTP/1.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\nx" % HEAVY
    holds = [_slow(srv.port, head, f"127.0.0.{2 + k}") for k in range(HEAVY_READ)]
    trace = w.cfg.root / SPOOL_NAME / "lines" / "third" / "trace.jsonl"
    body = b'{"a": 1}\n' * (HEAVY // 9 + 1)
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(srv.post, "/v1/runs/third/lines", body, "application/x-ndjson", None, 60)
        wait_until(lambda: srv.app._big is not None and srv.app._big.locked(),
                   what="the turns taken")
        time.sleep(0.3)    # time enough to have been read and stored, were it read
        assert not trace.exists() and not answer.done()
        holds.pop().close()   # one slow body gives up: its turn goes to the third
        assert answer.result(timeout=60)[0] == 200
    assert trace.read_bytes() == body
    for sock in holds:
        sock.close()
    srv.close()


def test_oversized_headers_are_cut_off(w):
    srv = Served(w)
    answer = srv.raw(b"GET /metrics HTTP/1.1\r\nX-A: " + b"a" * (200 << 10) + b"\r\n\r\n")
    assert answer.split(b"\r\n")[0].split(b" ")[1] == b"431"
    srv.close()


def test_waits_for_scoring_cost_no_thread(w):
    """48 PreToolUse hooks waiting for a watcher that never scores the call stored
    before them: answered after the wait, with no thread per waiting hook (648f216 slept
    in one of 64 handler threads). The PostToolUse that stored the call did not wait."""
    srv = Served(w, scored=True)   # nothing drives the watcher: every wait is its 2 s
    post = {"session_id": "w1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_use_id": "t0", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a", "stderr": ""}}
    assert srv.post("/v1/hooks/claude", json.dumps(post).encode()) == (200, {})
    assert len(srv.app.waits) == 0
    before = threading.active_count()
    peak = [0]

    def pre(i):
        body = json.dumps({"session_id": "w1", "hook_event_name": "PreToolUse",
                           "tool_name": "Bash", "tool_use_id": f"t{i}",
                           "tool_input": {"command": "ls"}}).encode()
        return srv.post("/v1/hooks/claude", body, timeout=30)

    trace = w.cfg.root / SPOOL_NAME / "claude-hooks" / "w1" / "trace.jsonl"
    with ThreadPoolExecutor(48) as pool:
        futures = [pool.submit(pre, i) for i in range(1, 49)]
        waiting = 0
        while not any(f.done() for f in futures):   # every hook waiting, then answered
            # the 48 client threads are the test's; the server adds only its pools
            peak[0] = max(peak[0], threading.active_count() - before - 48)
            waiting = max(waiting, len(srv.app.waits))
            time.sleep(0.005)
        assert waiting == 48
        assert [f.result() for f in futures] == [(200, {})] * 48
    assert len(trace.read_bytes().splitlines()) == 2   # the one call; PreToolUse stores none
    assert peak[0] <= 12
    srv.close()


@pytest.mark.parametrize("headers", [
    b"X-A: " + b"a" * (70 << 10) + b"\r\n",                        # one of 70 KB, sent at once
    b"".join(b"X-%d: b\r\n" % i for i in range(10_000)),            # 10,000 small ones, ~90 KB
], ids=["one-70KB", "10000-small"])
def test_a_header_block_over_64_kib_is_refused_once_complete(w, headers):
    """f53415f counted header bytes only while they arrived unfinished: a block sent
    whole (one 70 KB header, or 10,000 small ones) was accepted."""
    srv = Served(w)
    answer = srv.raw(b"GET /metrics HTTP/1.1\r\n" + headers + b"\r\n")
    assert answer.split(b"\r\n")[0].split(b" ")[1] == b"431"
    # 64 KiB in all is still taken
    fits = b"X-A: " + b"a" * ((64 << 10) - 200) + b"\r\n"
    assert srv.raw(b"GET /metrics HTTP/1.1\r\n" + fits + b"Connection: close\r\n\r\n") \
        .startswith(b"HTTP/1.1 200")
    srv.close()
    assert w.table.stats.http_refused["header_too_large"] == 1


def test_every_answer_carries_nosniff_and_a_policy(w):
    """f53415f set them on the page's answers only: not on /metrics, the pushes'
    answers, error answers, nor what the connection guard writes."""
    srv = Served(w, limits=Limits(header_timeout=0.5))
    answers = {
        "metrics": srv.raw(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"),
        "not found": srv.raw(b"GET /nothing HTTP/1.1\r\nConnection: close\r\n\r\n"),
        "method": srv.raw(b"PUT /metrics HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        "push": srv.raw(b"POST /v1/runs/r/lines HTTP/1.1\r\nContent-Type: application/x-ndjson\r\n"
                        b"Content-Length: 9\r\nConnection: close\r\n\r\n{\"a\": 1}\n"),
        "push refused": srv.raw(b"POST /v1/runs/r/lines HTTP/1.1\r\nConnection: close\r\n\r\n"),
        "too large": srv.raw(b"GET /metrics HTTP/1.1\r\nX-A: " + b"a" * (70 << 10) + b"\r\n\r\n"),
        "slow": srv.raw(b"GET /metrics HTTP/1.1\r\n"),
        "bad framing": srv.raw(b"GET /metrics HTTP/1.1\r\nContent-Length: 1\r\n"
                               b"Transfer-Encoding: chunked\r\n\r\n"),
    }
    srv.close()
    statuses = {name: a.split(b" ", 2)[1] for name, a in answers.items()}
    assert statuses == {"metrics": b"200", "not found": b"404", "method": b"405", "push": b"200",
                        "push refused": b"415", "too large": b"431", "slow": b"408",
                        "bad framing": b"400"}
    for name, answer in answers.items():
        head = answer.split(b"\r\n\r\n", 1)[0].lower()
        assert b"\r\nx-content-type-options: nosniff\r\n" in head + b"\r\n", name
        assert b"\r\ncontent-security-policy: default-src 'none'" in head, name


# ---------------------------------------------------------------------- answers unread

BIG = b"x" * (8 << 20)   # what /metrics is at 1,000 runs (benchmarks/README.md)


def _big_server(limits: Limits):
    """A server whose ``/big`` answers 8 MB, and whose ``/metrics`` answers a line."""
    from streameval.live.asgi import App, Response
    from streameval.live.server import HttpServer

    async def big(_request):
        return Response(200, BIG, "text/plain")

    async def metrics(_request):
        return Response(200, b"streameval_sessions 0\n", "text/plain")

    app = App(limits)
    app.route("/big", big)
    app.route("/metrics", metrics)
    return app, HttpServer(app, "127.0.0.1", 0)


def _reads_nothing(port: int, request: bytes) -> socket.socket:
    sock = socket.socket()
    sock.settimeout(30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connecting: its window
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    return sock


def test_clients_that_read_nothing_keep_neither_sockets_nor_answers(w):
    """102ce86 closed a connection gently when its slot was taken or its keep-alive ran
    out: one whose client read nothing of an 8 MB answer kept its socket and the unsent
    megabytes for as long as the client chose (64 such clients: 280 MB, the slots long
    given to others). Now such a connection is aborted, its bytes dropped; a client
    that reads still gets every byte (answers are handed over a chunk at a time)."""
    app, server = _big_server(Limits(max_connections=4, protected_connections=1,
                                     header_timeout=120, send_timeout=120))
    live = server._server.server_state.connections   # uvicorn's: every connection not lost
    held = []
    try:
        for _ in range(12):
            sock = _reads_nothing(server.port, b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            held.append(sock)
            wait_until(lambda sock=sock: _answered(app, live, sock), what="its answer written")
        wait_until(lambda: len(live) <= 4, what="the connections given up to be gone")
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/big", timeout=30) as r:
            assert r.read() == BIG
    finally:
        for sock in held:
            sock.close()
        server.close()
    assert app.refused["connection_limit"] >= 8


def _answered(app, live, sock: socket.socket) -> bool:
    """The server's end of ``sock`` holds a slot and has its answer written, or waits
    for its client to read it."""
    port = sock.getsockname()[1]
    stalled = getattr(app.guard, "stalled", {})
    return any(p._admitted and (p._served or p in stalled) for p in list(live)
               if p.transport.get_extra_info("peername")[1] == port)


def test_a_client_that_reads_nothing_is_cut_off(w):
    app, server = _big_server(Limits(send_timeout=0.5, header_timeout=120))
    sock = _reads_nothing(server.port, b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    try:
        wait_until(lambda: app.refused["send_timeout"] == 1 and app.guard.connections == 0,
                   what="the connection cut off")
        assert not app.guard.stalled
    finally:
        sock.close()
        server.close()
