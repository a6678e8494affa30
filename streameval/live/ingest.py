"""The ingest endpoints on the watcher's HTTP server (``watch --ingest``).

- ``POST /v1/runs/{run_id}/lines``: raw trace lines of any supported format;
- ``POST /v1/hooks/claude``: Claude Code HTTP hook payloads (``PreToolUse`` answers
  carry the steering deny, ``PostToolUse`` and its failure add the call);
- ``POST /v1/logs``: OTLP/HTTP logs, JSON or protobuf, from Claude Code and Codex.

``?instance_id=`` (or the OTLP resource attribute ``streameval.instance_id``) names the
ContextBench instance. Every answer is JSON; every refusal a clear 4xx. Nothing from a
payload is executed: it becomes trace lines in the spool, scored by the watcher.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs

from streameval.traces.ingest import claude_lines, otlp
from streameval.traces.ingest.spool import Spool, SpoolError, valid_name

log = logging.getLogger(__name__)

#: bytes of one request body (an OTLP batch, a hook payload with a long tool output)
MAX_BODY = 8 << 20
#: seconds a PostToolUse answer waits for the watcher to have scored the call, so that
#: a policy it trips is known before the agent's next PreToolUse
SCORE_WAIT = 2.0
_STATUS = {200: "200 OK", 400: "400 Bad Request", 401: "401 Unauthorized", 404: "404 Not Found",
           405: "405 Method Not Allowed", 409: "409 Conflict", 411: "411 Length Required",
           413: "413 Content Too Large", 415: "415 Unsupported Media Type",
           429: "429 Too Many Requests"}


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class IngestApp:
    """WSGI app for the routes above; ``watcher_view`` answers what the watcher knows."""

    #: where a hook's ``transcript_path`` may be read (None: Claude Code's own folders,
    #: ``traces.ingest.transcript``)
    transcript_roots: list | None = None

    def __init__(self, spool: Spool, *, token: str | None = None,
                 processed: Callable[[Path], int] | None = None,
                 steer: Callable[[Path], str | None] | None = None,
                 max_body: int = MAX_BODY):
        self.spool = spool
        self.token = token
        self.processed = processed
        self.steer = steer
        self.max_body = max_body
        #: (route, status) -> requests (exported as streameval_ingest_requests_total)
        self.counts: Counter = Counter()

    def mount(self, metrics: Callable) -> Callable:
        """``metrics`` for every path but ``/v1/...``."""
        def app(environ, start_response):
            if environ.get("PATH_INFO", "").startswith("/v1/"):
                return self(environ, start_response)
            return metrics(environ, start_response)
        return app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        # a fixed set of label values, whatever path is asked for
        route = "lines" if path.endswith("/lines") else {
            "/v1/hooks/claude": "claude", "/v1/logs": "logs"}.get(path, "other")
        try:
            if environ.get("REQUEST_METHOD") != "POST":
                raise Refused(405, "use POST")
            self._authorize(environ)
            body = self._body(environ)
            status, payload, ctype = self._route(path, environ, body)
        except Refused as exc:
            status, payload, ctype = exc.status, {"error": str(exc)}, "application/json"
        except SpoolError as exc:
            status, payload, ctype = exc.status, {"error": str(exc)}, "application/json"
        self.counts[(route, status)] += 1
        if status >= 400:
            log.warning("ingest %s %s: %d %s", environ.get("REQUEST_METHOD"), path[:120], status,
                        payload.get("error") if isinstance(payload, dict) else "")
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        start_response(_STATUS.get(status, f"{status} Error"),
                       [("Content-Type", ctype), ("Content-Length", str(len(data)))])
        return [data]

    # ------------------------------------------------------------------ checks
    def _authorize(self, environ) -> None:
        if self.token is None:
            return
        given = environ.get("HTTP_AUTHORIZATION", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            raise Refused(401, "missing or wrong bearer token (Authorization: Bearer ...)")

    def _body(self, environ) -> bytes:
        length = environ.get("CONTENT_LENGTH")
        if not length:
            raise Refused(411, "Content-Length required")
        try:
            n = int(length)
        except ValueError:
            raise Refused(400, "Content-Length is not a number") from None
        if n < 0 or n > self.max_body:
            raise Refused(413, f"body of {n} bytes; the limit is {self.max_body}")
        body = environ["wsgi.input"].read(n)
        if len(body) != n:
            raise Refused(400, "body shorter than its Content-Length")
        return body

    # ------------------------------------------------------------------ routes
    def _route(self, path: str, environ, body: bytes):
        query = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        meta = {k: query[k] for k in ("instance_id", "agent", "model") if k in query}
        if path == "/v1/hooks/claude":
            return self._claude_hook(body, meta)
        if path == "/v1/logs":
            return self._otlp(body, environ.get("CONTENT_TYPE", ""), meta)
        parts = path.split("/")
        if len(parts) == 5 and parts[1:3] == ["v1", "runs"] and parts[4] == "lines":
            lines = body.split(b"\n")   # the spool checks the run id (400)
            self.spool.append("lines", parts[3], lines, {**meta, "fidelity": "full"})
            return 200, {"accepted": sum(1 for ln in lines if ln.strip())}, "application/json"
        raise Refused(404, f"no such endpoint {path[:80]!r}; see docs/ingest.md")

    def _claude_hook(self, body: bytes, meta: dict):
        try:
            hook = json.loads(body)
        except ValueError:
            raise Refused(400, "hook payload is not JSON") from None
        if not isinstance(hook, dict) or not isinstance(hook.get("session_id"), str) \
                or not isinstance(hook.get("hook_event_name"), str):
            raise Refused(400, "hook payload needs session_id and hook_event_name")
        sid, event = hook["session_id"], hook["hook_event_name"]
        if not valid_name(sid):
            raise Refused(400, "session_id must be 1-128 characters of letters, digits, '.', '_' or '-'")
        meta = {"agent": "claude-code", "fidelity": "full", **meta}
        cwd = hook.get("cwd") if isinstance(hook.get("cwd"), str) else None
        lines: list[bytes] = []
        if event in ("PostToolUse", "PostToolUseFailure"):
            call_id = hook.get("tool_use_id")
            tool = hook.get("tool_name")
            if not isinstance(call_id, str) or not isinstance(tool, str):
                raise Refused(400, f"{event} payload needs tool_use_id and tool_name")
            failed = event == "PostToolUseFailure"
            response = hook.get("error") if failed else hook.get("tool_response")
            lines = claude_lines.tool_call_lines(
                sid, cwd, call_id, tool, hook.get("tool_input"),
                claude_lines.shown_text(tool, response), structured=None if failed else response,
                is_error=failed)
        elif event == "SessionEnd":
            lines = [claude_lines.end_line(sid)]
        if event in ("PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"):
            # tokens: the hook carries none, its transcript (read only where allowed) does
            lines = claude_lines.transcript_usage_lines(hook, self.transcript_roots) + lines
        path = self.spool.append("claude-hooks", sid, lines, meta)
        if event == "PreToolUse":
            reason = self.steer(path) if self.steer is not None else None
            if reason:
                return 200, {"hookSpecificOutput": {
                    "hookEventName": "PreToolUse", "permissionDecision": "deny",
                    "permissionDecisionReason": reason}}, "application/json"
        elif lines:
            self._wait_scored(path)
        return 200, {}, "application/json"

    def _wait_scored(self, path: Path) -> None:
        if self.processed is None:
            return
        try:
            size = path.stat().st_size
        except OSError:
            return
        deadline = time.monotonic() + SCORE_WAIT
        while self.processed(path) < size and time.monotonic() < deadline:
            time.sleep(0.01)

    def _otlp(self, body: bytes, content_type: str, meta: dict):
        try:
            records = otlp.decode(body, content_type)
        except otlp.OtlpError as exc:
            status = 415 if "Content-Type" in str(exc) else 400
            raise Refused(status, str(exc)) from None
        for run in otlp.runs(records):
            if not valid_name(run.session_id):
                continue
            run_meta = {"agent": run.agent, "fidelity": run.fidelity, **meta}
            if run.instance_id and "instance_id" not in meta:
                run_meta["instance_id"] = run.instance_id
            self.spool.append(run.source, run.session_id, run.lines, run_meta)
        if "protobuf" in content_type:
            return 200, b"", "application/x-protobuf"   # an empty ExportLogsServiceResponse
        return 200, {}, "application/json"


#: the spool folder inside the watched directory (its files are traces like any other)
SPOOL_NAME = "ingest"


def ingest_app(watcher, token: str | None = None, max_runs: int = 1000, **kw) -> IngestApp:
    """The ingest app of ``watcher``: its spool under the watched directory, its
    answers from the watcher (scored up to where, steering), its counts exported."""
    app = IngestApp(Spool(watcher.cfg.root / SPOOL_NAME, max_runs), token=token,
                    processed=watcher.processed_up_to, steer=watcher.steer_reason, **kw)
    app.counts = watcher.table.stats.ingest_requests
    return app
