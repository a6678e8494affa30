"""``--otlp-*``: the options ``watch`` and ``replay`` share to send scores out as
OpenTelemetry evaluations (docs/otel.md), and the emitter they ask for.

Stated once here so both commands' ``--help`` say the same; the SDK is imported only
when ``--otlp-endpoint`` is given (``streameval[otel]``).
"""

from __future__ import annotations

import argparse
import logging
import sys

from streameval.commands.options import positive_float
from streameval.errors import UsageError
from streameval.report.otel import (
    PROTOCOLS,
    SIGNALS,
    EvaluationEmitter,
    OtelUnavailable,
    parse_header,
)

log = logging.getLogger(__name__)


def _header(text: str) -> tuple[str, str]:
    try:
        return parse_header(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _signals(text: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in names if s not in SIGNALS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: name traces and/or logs, comma-separated")
    return names


def add_otlp(p: argparse.ArgumentParser, live: bool = False) -> None:
    """The options; ``live`` adds ``--otlp-live`` (watch: running runs' scores too)."""
    p.add_argument("--otlp-endpoint", metavar="URL",
                   help="send each finished run's scores as OpenTelemetry "
                        "gen_ai.evaluation.result events on a streameval.evaluate span to "
                        "this OTLP/HTTP base URL (/v1/traces, /v1/logs are added; "
                        "docs/otel.md; needs streameval[otel])")
    p.add_argument("--otlp-header", action="append", type=_header, default=[],
                   metavar="KEY=VALUE",
                   help="header on every OTLP request, repeatable; for a secret (auth) use "
                        "OTEL_EXPORTER_OTLP_HEADERS instead: a command line is read by every "
                        "user of the machine (ps -ef)")
    p.add_argument("--otlp-protocol", choices=PROTOCOLS, default="http/protobuf",
                   help="OTLP/HTTP encoding")
    p.add_argument("--otlp-signals", type=_signals, default=("traces",), metavar="LIST",
                   help="traces (span events) and/or logs (event log records in the span's "
                        "trace), comma-separated (default: traces)")
    if live:
        p.add_argument("--otlp-live", type=positive_float, default=None, metavar="SECONDS",
                       help="also send a running run's scores when they changed, at most "
                            "every SECONDS")


def emitter(args: argparse.Namespace) -> EvaluationEmitter | None:
    """The emitter the options ask for, or None without ``--otlp-endpoint``; UsageError
    when the ``otel`` extra is missing or the URL is not http(s)."""
    url = getattr(args, "otlp_endpoint", None)
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--otlp-endpoint {url!r}: an http:// or https:// URL")
    if args.otlp_header:
        log.warning("--otlp-header puts its value on the command line, where every user of "
                    "this machine can read it (ps -ef); pass a secret header in "
                    "OTEL_EXPORTER_OTLP_HEADERS (docs/otel.md)")
    try:
        return EvaluationEmitter(url, dict(args.otlp_header), args.otlp_protocol,
                                 args.otlp_signals)
    except OtelUnavailable as exc:
        raise UsageError(str(exc)) from None


def close(em: EvaluationEmitter | None, command: str) -> None:
    """Flush what is queued; a backend that did not take it is said, not hidden."""
    if em is None:
        return
    ok = em.close()
    if not ok or em.failed:
        print(f"streameval {command}: {em.failed} OTLP export(s) to {em.endpoint} failed "
              f"({em.sent} evaluation(s) emitted); see the log above", file=sys.stderr)
    else:
        log.info("%d evaluation(s) sent to %s", em.sent, em.endpoint)
