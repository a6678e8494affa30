#!/usr/bin/env python3
"""Ship a trace file to a watcher started with --ingest: follow the file as the agent
writes it and POST each batch of whole lines to /v1/runs/RUN_ID/lines?offset=N, N being
the batch's byte offset in the file. Standard library only, so it runs in any sandbox
image with Python 3.

    ship.py TRACE RUN_ID --url http://watcher:9108 [--instance ID] [--token T]

The offset makes every send idempotent: a batch the watcher stored but whose answer
was lost is sent again and acknowledged, never stored twice; a watcher that holds
less than the shipper thought (it answers 409 with the offset it holds) gets the file
again from there. The token may also come from STREAMEVAL_INGEST_TOKEN. It stops when
the file has not grown for --idle seconds (default 300) or on SIGTERM, after sending
what is left (a last line the agent never ended is sent ended).
"""
import argparse
import json
import os
import signal
import time
import urllib.error
import urllib.parse
import urllib.request

p = argparse.ArgumentParser()
p.add_argument("trace")
p.add_argument("run_id")
p.add_argument("--url", required=True)
p.add_argument("--instance")
p.add_argument("--token", default=os.environ.get("STREAMEVAL_INGEST_TOKEN"))
p.add_argument("--idle", type=float, default=300.0)
p.add_argument("--batch", type=int, default=1 << 20)
p.add_argument("--tries", type=int, default=8, help="attempts per batch before giving up")
a = p.parse_args()
query = {"instance_id": a.instance} if a.instance else {}
base = f"{a.url.rstrip('/')}/v1/runs/{urllib.parse.quote(a.run_id, safe='')}/lines"
headers = {"Content-Type": "application/x-ndjson",
           **({"Authorization": f"Bearer {a.token}"} if a.token else {})}
stop = False
signal.signal(signal.SIGTERM, lambda *_: globals().update(stop=True))


def send(offset: int, body: bytes) -> int:
    """POST ``body`` as the bytes at ``offset``; the offset the watcher now holds."""
    url = f"{base}?{urllib.parse.urlencode({**query, 'offset': offset})}"
    for attempt in range(a.tries):   # the watcher may be restarting or busy: retry
        wait = min(2 ** attempt, 30)
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=30) as r:
                return int(json.loads(r.read())["offset"])
        except urllib.error.HTTPError as exc:
            answer = exc.read()
            if exc.code == 409:   # it holds another length: go on from what it holds
                return int(json.loads(answer)["offset"])
            if exc.code not in (408, 429, 500, 502, 503, 504):
                raise SystemExit(f"ship: {url}: {exc.code} {answer[:200]!r}") from None
            wait = float(exc.headers.get("Retry-After") or wait)
            print(f"ship: {exc.code}; retrying in {wait:.0f} s", flush=True)
        except (OSError, ValueError, KeyError) as exc:
            print(f"ship: {exc}; retrying in {wait:.0f} s", flush=True)
        time.sleep(wait)
    raise SystemExit(f"ship: could not deliver to {url}")


def read(offset: int, n: int) -> bytes:
    try:
        with open(a.trace, "rb") as fh:
            fh.seek(offset)
            return fh.read(n)
    except FileNotFoundError:
        return b""


offset, quiet_since = 0, time.monotonic()   # offset: bytes the watcher holds
while True:
    n = a.batch
    data = read(offset, n)
    while len(data) == n and b"\n" not in data:   # one line longer than a batch
        n *= 2
        data = read(offset, n)
    whole = data[: data.rfind(b"\n") + 1]
    if whole:
        offset = send(offset, whole)
        quiet_since = time.monotonic()
    elif stop or time.monotonic() - quiet_since > a.idle:
        if data.strip():
            send(offset, data + b"\n")   # a last line the agent never ended
        break
    else:
        time.sleep(0.2)
