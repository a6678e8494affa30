"""A watcher's HTTP server with the ingest routes on a free port, and the ways the
tests talk to it: JSON posts, raw bytes on a socket, scrapes."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.request

from streameval.live.guard import Limits
from streameval.live.ingest import SPOOL_NAME, ingest_routes  # noqa: F401 (the tests' too)
from streameval.live.server import serve


class Served:
    def __init__(self, watcher, token=None, max_runs=1000, max_body=None, limits=None,
                 scored=False):
        self.w = watcher
        limits = limits or (Limits(max_body=max_body) if max_body else None)
        self.app = ingest_routes(watcher, token, max_runs)
        if not scored:
            # driven by hand (no watcher loop): nothing would ever be scored to wait for
            self.app.processed = None
        self.server, _reg, self.port = serve(watcher.table, "127.0.0.1", 0, ingest=self.app,
                                             limits=limits)

    def post(self, path: str, body: bytes, ctype=None, headers=None,
             timeout=10) -> tuple[int, dict | bytes]:
        """POST ``body``; its type by default the route's own (lines: NDJSON, else JSON)."""
        if ctype is None:
            ctype = "application/x-ndjson" if "/lines" in path else "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("POST", path, body=body, headers={"Content-Type": ctype, **(headers or {})})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        try:
            return resp.status, json.loads(data) if data else {}
        except ValueError:
            return resp.status, data

    def raw(self, data: bytes, timeout=10, source="127.0.0.1") -> bytes:
        """``data`` sent as is; what comes back until the server closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout,
                                      source_address=(source, 0)) as sock:
            sock.sendall(data)
            out = b""
            while True:
                try:
                    chunk = sock.recv(65536)
                except (ConnectionResetError, TimeoutError):
                    break
                if not chunk:
                    break
                out += chunk
            return out

    def metrics(self, timeout=10) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=timeout) as r:
            return r.read().decode()

    def close(self):
        self.server.close()
