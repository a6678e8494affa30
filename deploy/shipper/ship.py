#!/usr/bin/env python3
"""Ship a trace file to a watcher started with --ingest: follow the file as the agent
writes it and POST each batch of whole lines to /v1/runs/RUN_ID/lines. Standard
library only, so it runs in any sandbox image with Python 3.

    ship.py TRACE RUN_ID --url http://watcher:9108 [--instance ID] [--token T]

The token may also come from STREAMEVAL_INGEST_TOKEN. It stops when the file has not
grown for --idle seconds (default 300) or on SIGTERM, after sending what is left.
"""
import argparse
import os
import signal
import time
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
a = p.parse_args()
query = "?" + urllib.parse.urlencode({"instance_id": a.instance}) if a.instance else ""
url = f"{a.url.rstrip('/')}/v1/runs/{urllib.parse.quote(a.run_id, safe='')}/lines{query}"
headers = {"Content-Type": "application/x-ndjson",
           **({"Authorization": f"Bearer {a.token}"} if a.token else {})}
stop = False
signal.signal(signal.SIGTERM, lambda *_: globals().update(stop=True))


def send(body: bytes) -> None:
    for attempt in range(5):   # the watcher may be restarting: retry, then give up loudly
        try:
            urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=30).read()
            return
        except OSError as exc:
            print(f"ship: {exc}; retrying", flush=True)
            time.sleep(2 ** attempt)
    raise SystemExit(f"ship: could not deliver to {url}")


offset, pending, quiet_since = 0, b"", time.monotonic()
while True:
    try:
        with open(a.trace, "rb") as fh:
            fh.seek(offset)
            data = fh.read(a.batch)
    except FileNotFoundError:
        data = b""
    offset += len(data)
    pending += data
    whole, _, pending = pending.rpartition(b"\n")
    if whole:
        send(whole + b"\n")
        quiet_since = time.monotonic()
    elif stop or time.monotonic() - quiet_since > a.idle:
        if pending.strip():
            send(pending)   # a last line the agent never ended
        break
    else:
        time.sleep(0.2)
