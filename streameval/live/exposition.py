"""``/metrics``: the exposition text of ``RunsCollector``, rendered incrementally, served
on the protected lane.

Each run's samples are kept as text, one string per family, and made again only when
the run moved since the last scrape (``exporter.Exported``): a scrape of 1,000
finished runs joins strings, it does not rebuild 50,000 samples. The bytes are the
ones prometheus_client's encoders write (text 0.0.4 or OpenMetrics, names escaped with
a scheme that leaves legal names as they are; a test compares them); anything else
(``name[]`` filters, the dots escaping) takes the library's own path.

Scrapes arriving together share one render per format (single flight), on the
protected lane's threads, so a burst of scrapes costs one render.
"""

from __future__ import annotations

import asyncio
import gzip
import math
from collections.abc import Callable
from typing import Any

from streameval.live import fleet
from streameval.live.asgi import PROTECTED, App, Refused, Request, Response
from streameval.live.exporter import RUN_FAMILIES, Exported, RunsCollector, _Families, _help
from streameval.live.fleet import FLEET_FAMILIES, GROUP_LABELS, FleetNumbers

#: gzip level of a compressed scrape: 1 is ~5x faster than 9 on megabytes of text
#: and within ~25% of its size (the body crosses a network once)
GZIP_LEVEL = 1
_INDEX = {name: i for i, (name, _k, _e) in enumerate(RUN_FAMILIES)}
_EXTRAS = [extra for _n, _k, extra in RUN_FAMILIES]


def run_text(run: Exported) -> tuple[str, ...]:
    """The run's samples as exposition lines, one string per family (made once; made
    again after the cap left the run out and let its text go)."""
    text = run.text   # read once: another scrape may let it go meanwhile
    if text is not None:
        return text
    from prometheus_client.utils import floatToGoString

    esc = [_escape_value(v) for v in run.base]
    parts: list[list[str]] = [[] for _ in RUN_FAMILIES]
    templates: dict[tuple[str, ...], tuple[list[str], list[int]]] = {}
    inf = math.inf
    for name, extra, value in run.rows:
        i = _INDEX[name]
        names = _EXTRAS[i]
        tmpl = templates.get(names)
        if tmpl is None:
            tmpl = templates[names] = _template(names, esc)
        segs, idx = tmpl
        if not idx:
            labels = segs[0]
        elif len(idx) == 1:
            labels = segs[0] + _escape_value(extra[idx[0]]) + segs[1]
        else:
            labels = "".join(seg + (_escape_value(extra[j]) if k < len(idx) else "")
                             for k, (seg, j) in enumerate(zip(segs, [*idx, -1])))
        v = float(value)
        # floatToGoString only differs from repr for NaN, infinities and >= 1e6
        text = repr(v) if -inf < v < 1e6 else floatToGoString(v)
        sample = name + "_total" if RUN_FAMILIES[i][1] == "counter" else name
        parts[i].append(f"{sample}{{{labels}}} {text}\n")
    text = tuple("".join(p) for p in parts)
    run.text = text
    return text


def prerender(run) -> None:
    """A run whose record was just written (the table lock held): its series rendered
    now, by the watcher, so the scrapes that follow only join strings."""
    from streameval.live.exporter import _signature, export

    if run.exported is None or run.exported.sig != _signature(run):
        run.exported = export(run)
    run_text(run.exported)


def render(collector: RunsCollector, encoder: Callable[[Any], bytes], openmetrics: bool) -> bytes:
    """The bytes ``encoder(registry)`` would give for a registry holding only
    ``collector``; the process-wide families go through ``encoder`` itself."""
    runs, fleet_now, process = collector._gather()
    texts = [run_text(run) for run in runs]
    out: list[str] = []
    for i, (name, kind, _extra) in enumerate(RUN_FAMILIES):
        out.append(_header(name, kind, _help(name, kind), openmetrics))
        out.extend(t[i] for t in texts)
    out.append(fleet_text(fleet_now, openmetrics))
    return "".join(out).encode("utf-8") + encoder(_Families(process))


def fleet_text(numbers: FleetNumbers, openmetrics: bool) -> str:
    """The labelled fleet families as the encoders write them (up to ~5,000 samples:
    written here, at a fifth of the encoders' cost)."""
    out: list[str] = []
    escaped: dict[str, str] = {}   # a label set's values recur in every family
    for name, extra in FLEET_FAMILIES:
        out.append(_header(name, "gauge", fleet.HELP[name], openmetrics))
        # labels sorted by name, as the encoders write them
        names = (*GROUP_LABELS, extra)
        order = sorted(range(len(names)), key=names.__getitem__)
        head = [f'{"{" if k == 0 else ","}{names[i]}="' for k, i in enumerate(order)]
        for values, value in numbers.samples[name]:
            parts = [name]
            for h, i in zip(head, order):
                v = values[i]
                e = escaped.get(v)
                if e is None:
                    e = escaped[v] = _escape_value(v)
                parts += (h, e, '"')
            parts += ("} ", _value(value), "\n")
            out.append("".join(parts))
    return "".join(out)


def _header(name: str, kind: str, doc: str, openmetrics: bool) -> str:
    header = name if openmetrics else (name + "_total" if kind == "counter" else name)
    doc = doc.replace("\\", r"\\").replace("\n", r"\n")
    if openmetrics:
        doc = doc.replace('"', r'\"')
    return f"# HELP {header} {doc}\n# TYPE {header} {kind}\n"


def _value(v: float) -> str:
    """A sample's value as the encoders write it."""
    v = float(v)
    if -math.inf < v < 1e6:   # floatToGoString only differs from repr for NaN, inf, >= 1e6
        return repr(v)
    from prometheus_client.utils import floatToGoString

    return floatToGoString(v)


def _template(extra: tuple[str, ...], esc: list[str]) -> tuple[list[str], list[int]]:
    """One run's label string for a family, cut where the extra labels' values go.

    Labels are written sorted by name (as prometheus_client writes them); ``segs``
    are the fixed pieces and ``idx`` the index into the extra values of each gap.
    """
    from streameval.live.exporter import RUN_LABELS

    names = [*RUN_LABELS, *extra]
    segs: list[str] = []
    idx: list[int] = []
    acc = ""
    nb = len(RUN_LABELS)
    for pos, (name, i) in enumerate(sorted((n, i) for i, n in enumerate(names))):
        sep = "," if pos else ""
        if i < nb:
            acc += f'{sep}{name}="{esc[i]}"'
        else:
            segs.append(f'{acc}{sep}{name}="')
            idx.append(i - nb)
            acc = '"'
    segs.append(acc)
    return segs, idx


def _escape_value(v: str) -> str:
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _fast_encoding(encoder) -> bool | None:
    """None when ``encoder`` may rename metrics; else True for OpenMetrics."""
    from prometheus_client import exposition, openmetrics

    func = getattr(encoder, "func", encoder)
    escaping = getattr(encoder, "keywords", {}).get("escaping", openmetrics.exposition.UNDERSCORES)
    if escaping == openmetrics.exposition.DOTS:   # the only scheme that rewrites legal names
        return None
    if func is openmetrics.exposition.generate_latest:
        return True
    if func is exposition.generate_latest:
        return False
    return None


class Only:
    """A registry's samples named by a scrape's ``name[]`` filters. The library's own
    restricted registry finds a collector by the names it describes, and ours describe
    none: a filtered scrape came back empty."""

    def __init__(self, registry, names: list[str]):
        self.registry = registry
        self.names = set(names)

    def collect(self):
        from prometheus_client.metrics_core import Metric

        for family in self.registry.collect():
            samples = [s for s in family.samples if s.name in self.names]
            if samples:
                only = Metric(family.name, family.documentation, family.type, family.unit)
                only.samples = samples
                yield only


def encoder_for(om: bool):
    """The encoder ``_fast_encoding`` names by ``om`` (OpenMetrics, or text 0.0.4)."""
    from prometheus_client import exposition, openmetrics

    return openmetrics.exposition.generate_latest if om else exposition.generate_latest


async def shared(flights: dict, key: Any, start: Callable[[], Any]) -> Any:
    """``await start()`` once for the callers arriving while it runs (single flight):
    a burst of scrapes costs one render."""
    flight = flights.get(key)
    if flight is None:
        flight = flights[key] = asyncio.ensure_future(start())
        flight.add_done_callback(lambda _f: flights.pop(key, None))
    return await asyncio.shield(flight)


def allowed(request: Request) -> Response | None:
    """The answer to an OPTIONS, or None for a GET or HEAD (else 405), as
    prometheus_client answers them."""
    if request.method == "OPTIONS":
        return Response(200, b"", "text/plain", [(b"allow", b"OPTIONS,GET")])
    if request.method not in ("GET", "HEAD"):
        raise Refused(405, f"use GET, not {request.method}", "method",
                      [(b"allow", b"OPTIONS,GET")])
    return None


async def encoded(app: App, request: Request, output: bytes, content_type: str) -> Response:
    """A scrape's answer, gzipped when the client takes it."""
    from prometheus_client.exposition import gzip_accepted

    headers = []
    if gzip_accepted(request.header("accept-encoding")):
        output = await app.run(PROTECTED, gzip.compress, output, GZIP_LEVEL)
        headers.append((b"content-encoding", b"gzip"))
    return Response(200, output, content_type, headers)


class MetricsRoute:
    """The ``/metrics`` handler: GET (and OPTIONS) as prometheus_client answers them."""

    def __init__(self, app: App, registry, collector: RunsCollector | None = None):
        self.app = app
        self.registry = registry
        self.collector = collector
        self._flights: dict[Any, asyncio.Future] = {}

    async def __call__(self, request: Request) -> Response:
        early = allowed(request)
        if early is not None:
            return early
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(request.header("accept"))
        names = request.query_all("name[]")
        output = await self._render(encoder, names)
        return await encoded(self.app, request, output, content_type)

    async def _render(self, encoder, names: list[str]) -> bytes:
        om = _fast_encoding(encoder)
        if names or om is None or self.collector is None:
            registry = Only(self.registry, names) if names else self.registry
            return await self.app.run(PROTECTED, encoder, registry)
        key = (getattr(encoder, "func", encoder), tuple(sorted(getattr(encoder, "keywords", {}).items())))
        # one render per format for the scrapes arriving meanwhile
        return await shared(self._flights, key,
                            lambda: self.app.run(PROTECTED, render, self.collector, encoder, om))
