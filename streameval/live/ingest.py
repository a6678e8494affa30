"""The ingest routes on the watcher's HTTP server (``watch --ingest``), on its ingest lane.

- ``POST /v1/runs/{run_id}/lines[?offset=N]``: raw trace lines of any supported format;
  with ``offset`` (the shipper sends it) the run's trace is the client's file byte for
  byte, and a retry is stored once;
- ``POST /v1/hooks/claude``: Claude Code HTTP hook payloads (``PreToolUse`` answers
  carry the steering deny, ``PostToolUse`` and its failure add the call, keyed by
  tool_use id and event);
- ``POST /v1/logs``: OTLP/HTTP logs, JSON or protobuf, from Claude Code and Codex (each
  tool result keyed by its call id).

``?instance_id=`` (or the OTLP resource attribute ``streameval.instance_id``) names the
ContextBench instance. Every answer is JSON (an OTLP protobuf answer is the empty
response message); every refusal a clear 4xx or 503, counted. A 200 means stored and
fsync'd (``traces.ingest.spool``). Nothing from a payload is executed: it becomes trace
lines in the spool, scored by the watcher.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from streameval.live import heap
from streameval.live.asgi import INGEST, App, Refused, Request, Response
from streameval.live.scorewait import SCORE_WAIT, ScoreWaits
from streameval.traces.ingest import claude_lines, otlp, payload, transcript
from streameval.traces.ingest.keys import SESSION_END, hook_call_key
from streameval.traces.ingest.spool import NAME_RULE, Entry, Spool, SpoolError, valid_name
from streameval.untrusted import LogThrottle

log = logging.getLogger(__name__)

#: seconds after a session's last hook its transcript is read once more (``settle``)
SETTLE = 1.0
#: sessions remembered for that at most (the oldest are forgotten first)
SETTLING_MAX = 10_000
#: the spool folder inside the watched directory (its files are traces like any other)
SPOOL_NAME = "ingest"
#: a body this big is decoded by at most ``HEAVY_AT_ONCE`` threads at a time: decoded,
#: 8 MiB of OTLP JSON is some 40 MB of objects, and eight at once would be 320 MB. One:
#: decoding holds the interpreter lock, so a second decode at once ran no sooner and
#: only added its 40 MB to the peak. And only ``HEAVY_READ`` of them are read at once
#: (one decoded, the next arriving): the others wait unread, their bytes in the
#: clients' sockets, not in ours (eight bodies of 8 MiB admitted at once held 63 MB
#: while seven waited to be decoded); a body's deadline starts when it is read
HEAVY = 1 << 20
HEAVY_AT_ONCE = 1
HEAVY_READ = 2


#: the body types each route takes. None of them is one a web page may send to another
#: origin without asking first (CORS's simple types: text/plain, forms), so a page
#: cannot push through a visitor's browser, token or not (OWASP's advice for JSON APIs)
MEDIA_TYPES = {"claude": ("application/json",),
               "logs": ("application/json", "application/x-protobuf"),
               "lines": ("application/x-ndjson",)}
#: what ``Sec-Fetch-Site`` may say: the request is not a web page's of another origin
#: (another port of 127.0.0.1 is ``same-site``: another origin all the same)
SAME_ORIGIN = ("same-origin", "none")


#: a hook body up to this size is decoded on the event loop, and answered there when
#: storing it needs no disk (``Spool.append(io=False)``); decoding holds the interpreter
#: lock wherever it runs, and a thread's round trip costs more than a small decode
INLINE_MAX = 64 << 10


@dataclass
class _HookPlan:
    """A decoded hook: what it is, and the entries it stores."""

    hook: dict
    sid: str
    event: str
    entries: list[Entry]
    meta: dict


@contextmanager
def _refusals():
    """The spool's and the payload checks' errors, as the HTTP answers they are."""
    try:
        yield
    except SpoolError as exc:
        extra = {"offset": exc.offset} if exc.offset is not None else {}
        raise Refused(exc.status, str(exc), "spool", **extra) from None
    except payload.PayloadError as exc:
        raise Refused(400, f"payload {exc}", exc.reason) from None


def _meta(request: Request) -> dict:
    """The run's labels given in the query string."""
    query = request.query
    return {k: query[k] for k in ("instance_id", "agent", "model") if k in query}


def _same_origin(request: Request) -> None:
    """403 for a request a web page of another origin made (its browser says so in
    ``Sec-Fetch-Site`` and ``Origin``); agents, hooks and exporters send neither."""
    site = request.header("sec-fetch-site").lower()
    if site and site not in SAME_ORIGIN:
        raise Refused(403, f"a push from a web page of another origin ({site[:40]}) is "
                           "refused", "cross_site")
    origin = request.header("origin")
    if origin and origin.lower() != f"http://{request.header('host').lower()}":
        raise Refused(403, f"a push from a web page of another origin ({origin[:80]!r}) is "
                           "refused", "cross_site")


def _media_type(route: str, request: Request) -> None:
    """415 unless the body's type is one of the route's own (``MEDIA_TYPES``)."""
    given = request.header("content-type")
    media = given.split(";", 1)[0].strip().lower()
    if media not in MEDIA_TYPES[route]:
        raise Refused(415, f"Content-Type {given[:80]!r}: this route takes "
                           f"{' or '.join(MEDIA_TYPES[route])}", "content_type")


@dataclass
class _Answer:
    """What storing a request gives: the response, and what to wait for before it."""

    response: Response
    wait: tuple[Path, int] | None = None
    #: the response made once the wait is over (what the watcher knows by then)
    then: Callable[[], Response] | None = None


_EMPTY = Response.json({})


class IngestRoutes:
    """The routes above over a ``Spool``; ``processed``/``steer`` answer from the watcher."""

    #: where a hook's ``transcript_path`` may be read (None: Claude Code's own folders,
    #: ``traces.ingest.transcript``)
    transcript_roots: list | None = None

    def __init__(self, spool: Spool, *, token: str | None = None,
                 processed: Callable[[Path], int] | None = None,
                 steer: Callable[[Path], str | None] | None = None,
                 counts: Counter | None = None, rejected: Counter | None = None,
                 duplicates: Counter | None = None):
        self.spool = spool
        self.token = token
        self.steer = steer
        #: where each hook-connected run's transcript was read to (its tokens), and per
        #: session (transcript, last hook's time, totals stored): read once more after
        #: the hooks stop (``settle``), since Claude Code writes a response's usage after
        #: the hook of the call it asked for, and a run killed in that call sends no other
        self.transcripts = transcript.UsageReader()
        self._settling: OrderedDict[str, tuple[Path, float, tuple]] = OrderedDict()
        self._transcript_lock = threading.Lock()
        self.waits = ScoreWaits(processed) if processed is not None else None
        #: (route, status) -> requests (streameval_ingest_requests_total)
        self.counts: Counter = counts if counts is not None else Counter()
        #: (route, reason) -> entries answered but not stored
        self.rejected: Counter = rejected if rejected is not None else Counter()
        #: route -> entries already stored (retries)
        self.duplicates: Counter = duplicates if duplicates is not None else Counter()
        self.app: App | None = None
        #: big bodies read at once (``HEAVY_READ``); made on the server's loop
        self._big: asyncio.Semaphore | None = None
        self._heavy = threading.BoundedSemaphore(HEAVY_AT_ONCE)
        #: the log lines of refused requests (4xx), rate-limited
        self.refusals = LogThrottle(log, "refused requests")

    @property
    def processed(self) -> Callable[[Path], int] | None:
        return self.waits.processed if self.waits is not None else None

    @processed.setter
    def processed(self, fn: Callable[[Path], int] | None) -> None:
        self.waits = ScoreWaits(fn) if fn is not None else None

    def mount(self, app: App) -> None:
        """Serve every ``/v1/...`` path of ``app`` on its ingest lane."""
        self.app = app
        app.route("/v1/", self.handle, lane=INGEST, prefix=True)

    async def handle(self, request: Request) -> Response:
        path = request.path
        # a fixed set of label values, whatever path is asked for
        route = "lines" if path.endswith("/lines") else {
            "/v1/hooks/claude": "claude", "/v1/logs": "logs"}.get(path, "other")
        try:
            if request.method != "POST":
                raise Refused(405, "use POST", "method", [(b"allow", b"POST")])
            _same_origin(request)
            self._authorize(request)
            if route == "other":
                raise Refused(404, f"no such endpoint {path[:80]!r}; see docs/ingest.md", "not_found")
            _media_type(route, request)
            app = request.app
            length = request.content_length(app.limits.max_body)
            if length >= HEAVY:
                # admitted now (else 503), read when its turn comes
                app.budget.reserve(request, length)
                if self._big is None:
                    self._big = asyncio.Semaphore(HEAVY_READ)
                async with self._big:   # the others wait unread, in their sockets
                    answer = await self._stored(route, path, request, length)
            else:
                answer = await self._stored(route, path, request, length)
            if answer.wait is not None and self.waits is not None:
                await self.waits.wait(*answer.wait, SCORE_WAIT)
            if answer.then is not None:
                answer.response = answer.then()
        except Refused as exc:
            self._count(route, exc.status, request, str(exc))
            raise
        self._count(route, answer.response.status, request, "")
        return answer.response

    async def _stored(self, route: str, path: str, request: Request, length: int) -> _Answer:
        """The body read and stored; its bytes released from the in-flight budget."""
        app = request.app
        body = await request.body(length)
        if route == "claude" and length <= INLINE_MAX:
            with _refusals():
                plan = self._hook_plan(body, _meta(request))
                answer = self._hook_store(plan, io=False)
            if answer is None:
                answer = await app.run(INGEST, self._stored_hook, plan)
        else:
            answer = await app.run(INGEST, self._store, route, path, request, body)
        del body
        app.budget.release(request)   # stored: its bytes are no longer held
        return answer

    def _count(self, route: str, status: int, request: Request, error: str) -> None:
        self.counts[(route, status)] += 1
        if status >= 400 and status not in (503,):
            # anyone who reaches the port makes these: a few lines a period, the rest
            # counted; the path is escaped and cut by the log's formatter
            self.refusals.log(logging.WARNING, status, "ingest %s %s: %d %s", request.method,
                              request.path, status, error)

    def _authorize(self, request: Request) -> None:
        if self.token is None:
            return
        given = request.headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, f"Bearer {self.token}".encode()):
            raise Refused(401, "missing or wrong bearer token (Authorization: Bearer ...)",
                          "unauthorized")

    # ------------------------------------------------------------------ storing (ingest threads)
    def _store(self, route: str, path: str, request: Request, body: bytearray) -> _Answer:
        if len(body) < HEAVY:
            return self._store_now(route, path, request, body)
        with self._heavy:
            return self._store_now(route, path, request, body)

    def _store_now(self, route: str, path: str, request: Request, body: bytearray) -> _Answer:
        meta = _meta(request)
        with _refusals():
            if route == "claude":
                return self._stored_hook(self._hook_plan(body, meta))
            if route == "logs":
                return self._otlp(body, request.header("content-type"), meta)
            return self._lines(path, body, meta, request.query.get("offset"))

    def _stored_hook(self, plan: _HookPlan) -> _Answer:
        with _refusals():
            answer = self._hook_store(plan, io=True)
        assert answer is not None
        return answer

    def _lines(self, path: str, body: bytearray, meta: dict, offset: str | None) -> _Answer:
        parts = path.split("/")
        if len(parts) != 5 or parts[1:3] != ["v1", "runs"]:
            raise Refused(404, f"no such endpoint {path[:80]!r}; see docs/ingest.md", "not_found")
        meta = {**meta, "fidelity": "full"}
        if offset is None:
            stored = self.spool.append_raw(parts[3], body, meta)
            return _Answer(Response.json({"accepted": stored.accepted}))
        try:
            at = int(offset)
        except ValueError:
            raise Refused(400, f"offset {offset[:40]!r} is not a byte offset", "bad_offset") from None
        if at < 0:
            raise Refused(400, "offset must be 0 or more", "bad_offset")
        stored = self.spool.append_at(parts[3], at, body, meta)
        if stored.duplicates:
            self.duplicates["lines"] += 1
        return _Answer(Response.json({"accepted": stored.accepted, "offset": stored.offset}))

    def _hook_plan(self, body: bytearray, meta: dict) -> _HookPlan:
        """A hook payload decoded and checked, and the entries it stores (no disk)."""
        hook = payload.loads(body)
        if not isinstance(hook, dict) or not isinstance(hook.get("session_id"), str) \
                or not isinstance(hook.get("hook_event_name"), str):
            raise Refused(400, "hook payload needs session_id and hook_event_name", "bad_payload")
        sid, event = hook["session_id"], hook["hook_event_name"]
        if not valid_name(sid):
            raise Refused(400, f"session_id must be {NAME_RULE}", "bad_payload")
        meta = {"agent": "claude-code", "fidelity": "full", **meta}
        cwd = hook.get("cwd") if isinstance(hook.get("cwd"), str) else None
        entries: list[Entry] = []
        if event in ("PostToolUse", "PostToolUseFailure"):
            call_id, tool = hook.get("tool_use_id"), hook.get("tool_name")
            if not isinstance(call_id, str) or not call_id or not isinstance(tool, str):
                raise Refused(400, f"{event} payload needs tool_use_id and tool_name", "bad_payload")
            failed = event == "PostToolUseFailure"
            response = hook.get("error") if failed else hook.get("tool_response")
            entries.append(Entry(hook_call_key(event, call_id), claude_lines.tool_call_lines(
                sid, cwd, call_id, tool, hook.get("tool_input"),
                claude_lines.shown_text(tool, response), structured=None if failed else response,
                is_error=failed)))
        elif event == "SessionEnd":
            entries.append(Entry(SESSION_END, [claude_lines.end_line(sid)]))
        return _HookPlan(hook, sid, event, entries, meta)

    def _hook_store(self, plan: _HookPlan, io: bool) -> _Answer | None:
        """Store a planned hook and answer it; with ``io=False`` on the event loop, None
        when that needs the disk (a transcript to read, lines to write, a run to make)."""
        hook, sid, event, entries = plan.hook, plan.sid, plan.event, plan.entries
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"):
            # tokens: the hook carries none, its transcript (read only where allowed) does;
            # a run total, so storing one twice changes nothing (it has no key). PreToolUse
            # comes after the response that asked for the call is written: a run killed in
            # its last call still has that response's usage
            if isinstance(hook.get("transcript_path"), str):
                if not io:
                    return None
                usage = self._transcript_usage(hook)
                if usage:
                    entries = [Entry(None, usage), *entries]
        stored = self.spool.append("claude-hooks", sid, entries, plan.meta, io=io)
        if stored is None:
            return None
        if stored.duplicates:
            self.duplicates["claude"] += stored.duplicates
        if event == "SessionEnd":
            self.spool.end("claude-hooks", sid)
        if event == "PreToolUse":
            # the calls stored before this one scored first (at most SCORE_WAIT), then
            # the steering answer: a policy a call trips denies the very next call
            return _Answer(_EMPTY, (stored.path, stored.before) if stored.before > 0 else None,
                           then=lambda: self._pre_answer(stored.path))
        return _Answer(_EMPTY)

    def _pre_answer(self, path: Path) -> Response:
        reason = self.steer(path) if self.steer is not None else None
        if not reason:
            return _EMPTY
        return Response.json({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": reason}})

    def _transcript_usage(self, hook: dict) -> list[bytes]:
        """The cumulative usage line of the hook's transcript (read where allowed), and
        the session remembered for ``settle``."""
        sid = hook["session_id"]
        roots = transcript.default_roots() if self.transcript_roots is None else self.transcript_roots
        path = transcript.allowed(hook.get("transcript_path"), sid, roots)
        if path is None:
            return []
        with self._transcript_lock:
            found = self.transcripts.usage_of(path, sid)
            totals = tuple(found[0].values()) if found else ()
            self._settling[sid] = (path, time.monotonic(), totals)
            self._settling.move_to_end(sid)
            while len(self._settling) > SETTLING_MAX:
                self._settling.popitem(last=False)
        if found is None or not any(found[0].values()):
            return []
        return [claude_lines.usage_line(sid, "transcript", found[0], model=found[1],
                                        cumulative=True)]

    def settle(self, _watcher=None, _now: float | None = None) -> int:
        """Read the transcripts of sessions whose hooks went quiet ``SETTLE`` seconds ago
        once more, and store their totals where they grew; returns how many (the
        watcher's tick calls it, and the front's). The refusals suppressed in a period
        that is over are said."""
        self.refusals.flush()
        now = time.monotonic()
        with self._transcript_lock:
            due = [(sid, v) for sid, v in self._settling.items() if now - v[1] >= SETTLE]
            for sid, _v in due:
                del self._settling[sid]
            grown = []
            for sid, (path, _t, before) in due:
                found = self.transcripts.usage_of(path, sid)
                if found is not None and tuple(found[0].values()) != before:
                    grown.append((sid, found))
        for sid, (usage, model) in grown:
            line = claude_lines.usage_line(sid, "transcript", usage, model=model,
                                           cumulative=True)
            try:
                self.spool.append("claude-hooks", sid, [Entry(None, [line])], {})
            except SpoolError as exc:
                log.warning("ingest: the settled usage of run %s not stored: %s", sid, exc)
        return len(grown)

    def _otlp(self, body: bytearray, content_type: str, meta: dict) -> _Answer:
        try:
            records = otlp.decode(body, content_type)
        except otlp.OtlpError as exc:
            raise Refused(415 if exc.reason == "content_type" else 400, str(exc), exc.reason) from None
        rejected: Counter = Counter()
        for run in otlp.runs(records, rejected):
            run_meta = {"agent": run.agent, "fidelity": run.fidelity, **meta}
            if run.instance_id and "instance_id" not in meta:
                run_meta["instance_id"] = run.instance_id
            stored = self.spool.append(run.source, run.session_id, run.entries, run_meta)
            if stored.duplicates:
                self.duplicates["logs"] += stored.duplicates
        n_rejected = sum(rejected.values())
        for reason, n in rejected.items():
            self.rejected[("logs", reason)] += n
        if n_rejected:
            log.warning("ingest /v1/logs: %d record(s) not stored (%s)", n_rejected,
                        ", ".join(f"{r}: {n}" for r, n in sorted(rejected.items())))
        return _Answer(_otlp_answer(content_type, n_rejected, rejected))


def _otlp_answer(content_type: str, n_rejected: int, rejected: Counter) -> Response:
    """An ExportLogsServiceResponse: empty, or its ``partial_success`` naming the
    records not stored (OTLP's way to say so with a 200)."""
    message = ", ".join(f"{r}: {n}" for r, n in sorted(rejected.items()))
    if "protobuf" in content_type:
        if not n_rejected:
            return Response(200, b"", "application/x-protobuf")
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceResponse,
        )
        msg = ExportLogsServiceResponse()
        msg.partial_success.rejected_log_records = n_rejected
        msg.partial_success.error_message = message
        return Response(200, msg.SerializeToString(), "application/x-protobuf")
    if not n_rejected:
        return Response.json({})
    return Response.json({"partialSuccess": {"rejectedLogRecords": str(n_rejected),
                                             "errorMessage": message}})


def ingest_routes(watcher, token: str | None = None, max_runs: int = 1000) -> IngestRoutes:
    """The ingest routes of ``watcher``: its spool under the watched directory (runs
    open while pushed to within its idle timeout), its answers from the watcher (scored
    up to where, steering), its counts exported. The watcher tells the score waits
    after every batch. glibc's malloc is told to give big freed buffers back
    (``live.heap``): the bodies' buffers are what it would otherwise keep."""
    heap.fix_mmap_threshold()
    spool = Spool(watcher.cfg.root / SPOOL_NAME, max_runs, idle=watcher.cfg.idle_timeout)
    st = watcher.table.stats
    routes = IngestRoutes(spool, token=token, processed=watcher.processed_up_to,
                          steer=watcher.steer_reason, counts=st.ingest_requests,
                          rejected=st.ingest_rejected, duplicates=st.ingest_duplicates)
    watcher.listeners.append(lambda _w: routes.waits.notify() if routes.waits else None)
    watcher.tick_hooks.append(routes.settle)
    return routes
