"""``/metrics`` served by the front process from what the watcher sends (``--front
process``, the default).

The watcher scores on one interpreter lock, and a scrape served in its process waits
for whatever holds it: a full garbage collection of 1,000 kept runs (median 192 ms,
every ~2.6 s at 150 runs a second: ``bench_soak.py --gc-log``), a long batch, the scoring thread's turn. In a
50,000-run soak scraped every second, 167 of 414 scrapes took over 100 ms, up to
406 ms (``bench_soak.py --impl new-thread``; benchmarks/README.md, "Ingest and soak").

So the watcher sends the pieces of a scrape and the front joins them (``Mirror``):

- each exported run's samples, the very strings the watcher's own route joins
  (``exposition.run_text``): sent once, then named by a number while they stay the same;
- the order of the exported runs (the per-run series cap chose them);
- the fleet families and the process-wide ones, in the format asked.

A scrape asks the watcher for what moved since its last answer and waits at most
``DEADLINE`` for it. A watcher busy past that is answered with the last pieces it sent
(at most about ``PUSH_EVERY`` old while anyone scrapes), and the scrape says how old
they are in ``streameval_metrics_age_seconds``: never older numbers without saying so.
While the watcher answers late, scrapes do not wait at all (its late answers serve the
scrapes after); one answer in time and they wait again. Pieces over ``STALE_AFTER``
old (no scrape for minutes), or none yet, are not served before the watcher had
``FIRST_WAIT`` to send new ones.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from streameval.live.asgi import PROTECTED, App, Refused, Request, Response
from streameval.live.exporter import RUN_FAMILIES, RunsCollector, _Families, _help

#: seconds a scrape waits for the watcher's fresh pieces before the last ones serve
DEADLINE = 0.02
#: seconds between the pieces the watcher sends unasked, while anyone scrapes
PUSH_EVERY = 1.0
#: seconds after the last scrape of a format that the watcher goes on sending it
PUSH_FOR = 120.0
#: seconds a front with no pieces yet waits for the first ones (then 504)
FIRST_WAIT = 30.0
#: pieces older than this (no scrape for minutes, so none sent) are not served before
#: the watcher was given ``FIRST_WAIT`` to send new ones
STALE_AFTER = 5.0
AGE = "streameval_metrics_age_seconds"


class Feed:
    """The watcher's end: a scrape's pieces, with only the run texts the front does not
    have yet. Called from one thread at a time (the link's metrics thread)."""

    def __init__(self, collector: RunsCollector):
        self.collector = collector
        self._sent: dict[int, tuple[str, ...]] = {}   # text's number -> the text (kept alive)
        self._front: object = None

    def pieces(self, om: bool, front: object) -> dict[str, Any]:
        """What the front ``front`` needs for a scrape in OpenMetrics (``om``) or text
        format; a new front (started again) is sent every text."""
        from streameval.live.exposition import encoder_for, fleet_text, run_text

        if front is not self._front:
            self._front, self._sent = front, {}
        runs, fleet_now, process = self.collector._gather()
        texts = [run_text(e) for e in runs]
        # the numbers are ids of live objects, kept alive by ``_sent`` while sent
        message = {"om": om, "at": time.monotonic(), "order": [id(t) for t in texts],
                   "texts": [[id(t), t] for t in texts if id(t) not in self._sent],
                   "fleet": fleet_text(fleet_now, om),
                   "process": encoder_for(om)(_Families(process)).decode("utf-8")}
        self._sent = {id(t): t for t in texts}   # once the whole message is made
        return message

    def forget(self) -> None:
        """The last pieces did not reach the front: send every text next time."""
        self._front, self._sent = None, {}


class Mirror:
    """The front's copy of the pieces, kept as bytes: a scrape (~7 MB for 1,000 runs)
    is then a join of bytes, not a join of strings and their encoding."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: dict[int, tuple[bytes, ...]] = {}   # the texts of both formats' orders
        #: om -> the order of its runs, its fleet and process families, and when the
        #: watcher made them: one moment per format, never two in one scrape
        self._pieces: dict[bool, tuple[list[int], bytes, bytes, float]] = {}
        self._headers = {om: [_header(name, kind, om).encode("utf-8") for name, kind, _e in RUN_FAMILIES]
                         for om in (False, True)}
        #: om -> (its pieces' version, the scrape's bytes before the age): a busy
        #: watcher's scrapes serve the same pieces, joined once
        self._made: dict[bool, tuple[int, bytes]] = {}
        self._version = 0

    def take(self, message: dict[str, Any], _worker: int | None = 0) -> None:
        texts = [(number, tuple(t.encode("utf-8") for t in text)) for number, text in message["texts"]]
        pieces = (message["order"], message["fleet"].encode("utf-8"),
                  message["process"].encode("utf-8"), message["at"])
        with self._lock:
            self._texts.update(texts)
            self._pieces[message["om"]] = pieces
            self._version += 1
            used = {n for order, *_rest in self._pieces.values() for n in order}
            if len(self._texts) > len(used):   # runs neither format exports any more
                self._texts = {n: t for n, t in self._texts.items() if n in used}

    def has(self, om: bool) -> bool:
        return om in self._pieces

    def age(self, om: bool) -> float:
        """Seconds since the watcher made the pieces of ``om`` (infinite: none yet)."""
        pieces = self._pieces.get(om)
        return time.monotonic() - pieces[3] if pieces is not None else math.inf

    def render(self, om: bool) -> bytes:
        """The scrape's bytes: what the watcher's own route would have served when it
        made the pieces, and their age."""
        with self._lock:
            order, fleet, process, at = self._pieces[om]
            version = self._version
            made = self._made.get(om)
            runs = [self._texts[n] for n in order] if made is None or made[0] != version else None
        if runs is not None:
            out: list[bytes] = []
            for header, family in zip(self._headers[om], zip(*runs) if runs else
                                      [()] * len(RUN_FAMILIES)):
                out.append(header)
                out.extend(family)
            out += (fleet, _header(AGE, "gauge", om).encode())
            made = (version, b"".join(out))
            with self._lock:
                self._made[om] = made
        # the monotonic clock is one for every process of the machine (Linux); the
        # wall clock may be stepped between the two processes' readings
        age = max(0.0, time.monotonic() - at)
        return b"".join((made[1], f"{AGE} {age!r}\n".encode(), process))


def _header(name: str, kind: str, om: bool) -> str:
    from streameval.live.exposition import _header as header

    return header(name, kind, _help(name, kind), om)


class MirrorRoute:
    """``/metrics`` in the front: asks the watcher (``ask``), waits at most
    ``DEADLINE``, serves the mirror. Scrapes of a format arriving together share one
    question and one render; a ``name[]`` filter or an unusual encoder goes to the
    watcher as before (``upstream``).

    With several workers (``join.Joined`` for the mirror), ``ask`` asks each linked
    worker and returns their numbers: a question is answered once all of them have."""

    def __init__(self, app: App, mirror: Mirror, ask: Callable[[dict], Any], upstream):
        self.app = app
        self.mirror = mirror
        self.ask = ask
        self.upstream = upstream
        self._loop: asyncio.AbstractEventLoop | None = None
        #: question -> (its future, its format, whether it waits for usable pieces)
        self._waiting: dict[int, tuple[asyncio.Future, bool, bool]] = {}
        self._flights: dict[bool, asyncio.Future] = {}
        self._asked = 0
        self._asked_at: dict[int, float] = {}
        #: question -> the workers whose answer it waits for
        self._pending: dict[int, set[int]] = {}
        #: the watcher answered its last question within ``DEADLINE``: worth waiting for
        self._keeping_up = True

    def answered(self, numbers: list[int], worker: int = 0) -> None:
        """Pieces of ``worker`` are in the mirror, answering these questions (or none:
        sent unasked). The front's main thread calls this."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._settle, numbers, worker)

    def _settle(self, numbers: list[int], worker: int = 0) -> None:
        now = self._loop.time()
        for n in numbers:
            pending = self._pending.get(n)
            if pending is not None:
                pending.discard(worker)
                if pending:
                    continue   # another worker's answer is still to come
                del self._pending[n]
            fut, _om, _long = self._waiting.pop(n, (None, None, None))
            if fut is not None and not fut.done():
                fut.set_result(None)
            at = self._asked_at.pop(n, None)
            if at is not None:
                self._keeping_up = now - at <= DEADLINE
        # a scrape waiting for usable pieces takes any (its own question may have been
        # asked of a front the watcher has not heard yet)
        for fut, om, long in list(self._waiting.values()):
            if long and not fut.done() and self.mirror.age(om) <= STALE_AFTER:
                fut.set_result(None)

    async def __call__(self, request: Request) -> Response:
        from prometheus_client.exposition import choose_encoder

        from streameval.live.exposition import _fast_encoding, allowed, encoded, shared

        early = allowed(request)
        if early is not None:
            return early
        encoder, content_type = choose_encoder(request.header("accept"))
        om = _fast_encoding(encoder)
        if request.query_all("name[]") or om is None:
            return await self.upstream(request)
        output = await shared(self._flights, om, lambda: self._scrape(om))
        return await encoded(self.app, request, output, content_type)

    async def _scrape(self, om: bool) -> bytes:
        self._loop = loop = asyncio.get_running_loop()
        self._asked += 1
        number = self._asked
        # pieces of a minute ago are not served before the watcher had its chance to
        # send new ones; recent ones are, at once when the watcher answered late last
        # time (busy: its answer serves the scrapes after), else after ``DEADLINE``
        long = self.mirror.age(om) > STALE_AFTER
        wait = FIRST_WAIT if long else DEADLINE if self._keeping_up else 0.0
        fut = loop.create_future()
        self._waiting[number] = (fut, om, long)
        self._asked_at[number] = loop.time()
        if len(self._asked_at) > 1000:   # questions a stopped watcher never answered
            self._pending.pop(next(iter(self._asked_at)), None)
            self._asked_at.pop(next(iter(self._asked_at)))
        try:
            # queued: never blocks on the watcher
            asked = self.ask({"scrape": number, "om": om})
            if asked is not None:
                self._pending[number] = set(asked)
            if wait:
                try:
                    await asyncio.wait_for(asyncio.shield(fut), wait)
                except asyncio.TimeoutError:
                    self._keeping_up = False   # busy: the last pieces serve, their age said
        finally:
            self._waiting.pop(number, None)
        if not self.mirror.has(om):
            raise Refused(504, "the watcher sent no metrics in time", "upstream")
        return await self.app.run(PROTECTED, self.mirror.render, om)
