"""One Host rule for every path, from the address really bound (issue 27).

f53415f checked ``Host`` on the page and its API only, and only when ``--host`` was
spelt as an address ``ipaddress`` knows: ``/metrics`` answered ``Host: evil.example``
with every run id and model (DNS rebinding reads it), ``--host 127.1`` turned the check
off everywhere, and of two ``Host`` headers the last one won.
"""

from __future__ import annotations

import socket

import pytest
from claude_run import watcher
from served import Served

from streameval.live.hosts import HostRule, host_name, is_loopback
from streameval.live.pages import mount_live_page
from streameval.live.server import serve


@pytest.fixture
def w(env, tmp_path):
    _s, runs, res = env
    return watcher(runs, res, tmp_path)


def _get(port: int, path: str, *hosts: str, method: str = "GET", body: bytes = b"",
         at: str = "127.0.0.1") -> int:
    """The status of a request carrying exactly the ``Host`` headers given."""
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"Host: {h}\r\n" for h in hosts)
    head += f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body)}\r\n" \
            "Connection: close\r\n\r\n"
    with socket.create_connection((at, port), timeout=30) as sock:
        sock.sendall(head.encode() + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.1", "localhost"])
def test_a_foreign_host_is_refused_on_every_path_of_a_loopback_bind(w, bind):
    """/metrics, the page and /v1 alike, however --host spelt loopback."""
    srv = Served(w)
    srv.server.close()
    srv.server, _reg, port = serve(w.table, bind, 0, ingest=srv.app)
    at = srv.server._sock.getsockname()[0]   # localhost may be ::1
    mount_live_page(srv.server.app, w)
    try:
        for path in ("/metrics", "/", "/api/runs"):
            assert _get(port, path, "evil.example", at=at) == 403, path
            assert _get(port, path, f"rebind.attacker.test:{port}", at=at) == 403, path
        assert _get(port, "/v1/runs/r1/lines", "evil.example", method="POST",
                    body=b'{"a": 1}\n', at=at) == 403
        assert not (w.cfg.root / "ingest" / "lines" / "r1").exists()
        for host in (f"127.0.0.1:{port}", "127.1", f"localhost:{port}", "LOCALHOST", "[::1]",
                     f"[::1]:{port}", "127.9.9.9"):
            assert _get(port, "/metrics", host, at=at) == 200, host
        assert _get(port, "/metrics", at=at) == 200   # no Host: not a browser's request
    finally:
        srv.close()
    assert w.table.stats.http_refused["host"] == 7


def test_two_host_headers_are_a_400(w):
    """f53415f took the last of two Host headers."""
    srv = Served(w)
    try:
        assert _get(srv.port, "/metrics", "evil.example", "127.0.0.1") == 400
        assert _get(srv.port, "/metrics", "127.0.0.1", "127.0.0.1") == 400
    finally:
        srv.close()
    assert w.table.stats.http_refused["duplicate_host"] == 2


def test_the_rule_is_the_address_bound():
    def rule(family, address):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind(address)
            return HostRule.of(sock).loopback_only

    assert rule(socket.AF_INET, ("127.0.0.1", 0)) is True
    assert rule(socket.AF_INET, ("0.0.0.0", 0)) is False
    assert rule(socket.AF_INET6, ("::1", 0)) is True
    assert rule(socket.AF_UNIX, "") is False   # behind the front, which checked


@pytest.mark.parametrize("name, loopback", [
    ("localhost", True), ("localhost.", True), ("LocalHost", True), ("127.0.0.1", True),
    ("127.1", True), ("127.255.0.9", True), ("0x7f.1", True), ("2130706433", True),
    ("[::1]", True), ("::1", True), ("[::ffff:127.0.0.1]", True),
    ("evil.example", False), ("localhost.evil.example", False), ("128.0.0.1", False),
    ("0.0.0.0", False), ("127.0.0.1 evil", False), ("", False), ("[::2]", False),
])
def test_loopback_names(name, loopback):
    assert is_loopback(name) is loopback


def test_the_port_is_not_part_of_the_name():
    assert host_name("127.0.0.1:9108") == "127.0.0.1"
    assert host_name("[::1]:9108") == "[::1]"
    assert host_name("localhost") == "localhost"
    assert host_name("localhost:") == "localhost"   # an empty port (RFC 3986)


@pytest.mark.parametrize("header", ["[::1]evil.example", "[::1]:evil", "localhost:evil.example",
                                    "127.0.0.1:\u00b2"])
def test_a_name_with_more_than_a_port_behind_it_is_no_loopback_name(header):
    """102ce86 cut ``[::1]evil.example`` to ``[::1]`` (and ``localhost:x`` to
    ``localhost``): a header no browser sends, but no loopback name either."""
    assert not is_loopback(host_name(header))
