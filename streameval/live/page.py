"""The page's routes on the metrics port: the HTML shell, its static assets, the JSON API.

``/`` (the fleet) and ``/runs/<id>`` (one run) answer the same HTML shell; its scripts
read ``/api/runs`` and ``/api/runs/<id>`` (docs/page.md, "The API"). A run whose id is a
dot segment (``.``, ``..``) cannot be named in a path (browsers resolve it away), so
``/runs?id=<id>`` and ``/api/run?id=<id>`` name any run by a query. Every answer:

- is read-only: GET and HEAD, anything else is a 405;
- carries a strict Content-Security-Policy (``report.page_html.CSP_LIVE``: no inline
  script, nothing from another origin, Trusted Types), ``nosniff``, no referrer, and
  may not be framed;
- on a loopback bind, is given only to requests whose ``Host`` is a loopback name, so
  a web site cannot read the page through DNS rebinding (the server's rule for every
  path, ``live.hosts``);
- is built on the page's own threads (``PAGE_LANE``): however slow a page request, a
  ``/metrics`` scrape never waits behind it (the routes sit on the protected lane,
  beside ``/metrics``, and none of the ingest limits apply to them).

A source gives the data: ``LivePages`` for a watcher's runs, ``report.page_records`` for
``streameval view``. Both answer ``fleet(since)`` and ``run(id, calls_from)``.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import orjson

from streameval.live.asgi import PROTECTED, App, Refused, Request, Response
from streameval.report.page_html import CSP_LIVE, shell
from streameval.web import asset

__all__ = ["PAGE_LANE", "PageRoutes", "PageSource"]

#: the threads page answers are built on (two, apart from the scrapes' two)
PAGE_LANE = "page"

SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP_LIVE.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class PageSource(Protocol):
    def fleet(self, since: str | None) -> dict[str, Any]:
        """The fleet answer: rows changed since the generation ``since`` (``gen`` is
        its ETag)."""

    def run(self, run_id: str, calls_from: int) -> tuple[str, Any] | None:
        """(ETag, a function building the run's answer), or None for no such run."""


class PageRoutes:
    """The page's handlers over ``source``; ``mount`` puts them on an ``App``."""

    def __init__(self, source: PageSource):
        self.source = source
        self._shell = shell()
        self.app: App | None = None

    def mount(self, app: App) -> None:
        self.app = app
        for path in ("/", "/runs"):
            app.route(path, self.index, lane=PROTECTED)
        app.route("/runs/", self.index, lane=PROTECTED, prefix=True)
        app.route("/static/", self.static, lane=PROTECTED, prefix=True)
        app.route("/favicon.ico", self.no_icon, lane=PROTECTED)
        app.route("/api/runs", self.api_fleet, lane=PROTECTED)
        app.route("/api/runs/", self.api_run, lane=PROTECTED, prefix=True)
        app.route("/api/run", self.api_run_query, lane=PROTECTED)

    # ------------------------------------------------------------------ checks
    def _check(self, request: Request) -> None:
        if request.method not in ("GET", "HEAD"):
            raise Refused(405, f"the page is read-only: use GET, not {request.method}", "method",
                          [(b"allow", b"GET, HEAD")])

    @staticmethod
    def _answer(body: bytes, ctype: str, etag: str | None = None, status: int = 200,
                cache: bytes = b"no-cache") -> Response:
        headers = [*SECURITY_HEADERS, (b"cache-control", cache)]
        if etag is not None:
            headers.append((b"etag", etag.encode()))
        return Response(status, body, ctype, headers)

    def _not_modified(self, request: Request, etag: str) -> Response | None:
        if etag in (t.strip() for t in request.header("if-none-match").split(",")):
            return self._answer(b"", "application/json", etag, 304)
        return None

    # ------------------------------------------------------------------ handlers
    async def index(self, request: Request) -> Response:
        self._check(request)
        return self._answer(self._shell, "text/html; charset=utf-8")

    async def no_icon(self, request: Request) -> Response:
        """Browsers ask for one; an empty answer, not a 404 in the console."""
        self._check(request)
        return self._answer(b"", "image/x-icon", status=204)

    async def static(self, request: Request) -> Response:
        self._check(request)
        name = request.path[len("/static/"):]
        try:
            data, ctype = asset(name)
        except KeyError:
            raise Refused(404, "no such asset", "not_found") from None
        etag = '"' + hashlib.sha1(data).hexdigest()[:16] + '"'
        return self._not_modified(request, etag) or self._answer(data, ctype, etag)

    async def api_fleet(self, request: Request) -> Response:
        self._check(request)
        answer = await self._run(self.source.fleet, request.query.get("since"))
        etag = f'"{answer["gen"]}"'
        hit = self._not_modified(request, etag)
        if hit is not None:
            return hit
        body = await self._run(orjson.dumps, answer)
        return self._answer(body, "application/json", etag)

    async def api_run(self, request: Request) -> Response:
        self._check(request)
        return await self._run_answer(request, request.path[len("/api/runs/"):])

    async def api_run_query(self, request: Request) -> Response:
        """``/api/run?id=ID``: any id, ``.`` and ``..`` included."""
        self._check(request)
        run_id = request.query.get("id")
        if run_id is None:
            raise Refused(400, "name the run: /api/run?id=RUN_ID", "bad_query")
        return await self._run_answer(request, run_id)

    async def _run_answer(self, request: Request, run_id: str) -> Response:
        try:
            calls_from = max(0, int(request.query.get("calls_from", "0")))
        except ValueError:
            raise Refused(400, "calls_from is not a number", "bad_query") from None
        found = await self._run(self.source.run, run_id, calls_from)
        if found is None:   # the page says this where the run would be
            raise Refused(404, f"no run {run_id!r} here: the fleet page (/) lists the runs "
                          "there are; a watcher keeps a finished run for --keep-finished "
                          "only", "not_found", run=run_id)
        etag, build = found
        hit = self._not_modified(request, etag)
        if hit is not None:
            return hit
        body = await self._run(lambda: orjson.dumps(build()))
        return self._answer(body, "application/json", etag)

    async def _run(self, fn, *args):
        assert self.app is not None, "mount() first"
        return await self.app.run(PAGE_LANE, fn, *args)
