"""OpenTelemetry logs (OTLP/HTTP, JSON or protobuf) from Claude Code and Codex -> the
trace lines of each tool call, per session.

Claude Code exports ``claude_code.tool_result`` (``session.id``, ``tool_use_id``,
``tool_name``, ``tool_input`` as JSON text, ``success``): the input only, so its runs
are fidelity ``inputs`` (each call's own window is credited; file level is exact).
Codex exports ``codex.tool_result`` (``conversation.id``, ``call_id``, ``tool_name``,
``arguments``, ``output``): the output the model saw, so its runs are fidelity ``full``
and are written as the rollout lines Codex itself writes. Other events are ignored.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streameval.traces.ingest import payload
from streameval.traces.ingest.claude_lines import tool_call_lines, usage_line
from streameval.traces.ingest.keys import usage_key
from streameval.traces.ingest.spool import Entry, valid_name


class OtlpError(ValueError):
    """The body is not an OTLP logs export request; ``reason`` is the counter's label."""

    def __init__(self, message: str, reason: str = "not_otlp"):
        super().__init__(message)
        self.reason = reason


@dataclass
class PushedRun:
    """Entries for one run from one request (each tool call keyed by its call id), and
    what the source can tell."""

    source: str            # "claude-otel" | "codex-otel"
    session_id: str
    agent: str
    fidelity: str          # "full" | "inputs"
    entries: list[Entry] = field(default_factory=list)
    instance_id: str | None = None

    @property
    def lines(self) -> list[bytes]:
        return [ln for e in self.entries for ln in e.lines]


def decode(body: bytes | bytearray, content_type: str) -> list[tuple[dict, dict]]:
    """(resource attributes, log record attributes) of every log record in the body."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/x-protobuf":
        data = _from_protobuf(body)
    elif media == "application/json":
        try:
            data = payload.loads(body)
        except payload.PayloadError as exc:
            raise OtlpError(str(exc), exc.reason) from None
    else:
        raise OtlpError(f"unsupported Content-Type {content_type!r}; send application/json "
                        "or application/x-protobuf", "content_type")
    if not isinstance(data, dict) or not isinstance(data.get("resourceLogs", []), list):
        raise OtlpError("expected an ExportLogsServiceRequest with resourceLogs")
    out = []
    for rl in data.get("resourceLogs") or []:
        if not isinstance(rl, dict):
            continue
        resource = _attributes((rl.get("resource") or {}).get("attributes"))
        for sl in rl.get("scopeLogs") or []:
            if not isinstance(sl, dict):
                continue
            for record in sl.get("logRecords") or []:
                if isinstance(record, dict):
                    attrs = _attributes(record.get("attributes"))
                    body_value = _value(record.get("body"))
                    if isinstance(body_value, str):
                        attrs.setdefault("_body", body_value)
                    out.append((resource, attrs))
    return out


def _from_protobuf(body: bytes) -> dict:
    try:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    except ImportError:   # pragma: no cover - a dependency of the package
        raise OtlpError("protobuf OTLP needs opentelemetry-proto installed") from None
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(bytes(body))
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise OtlpError(f"not an OTLP protobuf message: {exc}") from None
    data = MessageToDict(request)
    del request
    try:
        payload.check_depth(data)
    except payload.PayloadError as exc:
        raise OtlpError(str(exc), exc.reason) from None
    return data


def _attributes(items: Any) -> dict:
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _value(item.get("value"))
    return out


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a plain value (int values arrive as strings in JSON)."""
    if not isinstance(v, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in v:
        return [_value(x) for x in (v["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in v:
        return _attributes((v["kvlistValue"] or {}).get("values"))
    return None


def _json_object(text: Any) -> dict:
    """A tool input given as JSON text; {} when it is none (PayloadError when it nests
    deeper than the payload limit)."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        return {}
    try:
        value = payload.loads(text)
    except payload.PayloadError as exc:
        if exc.reason == "too_deep":
            raise
        return {}
    return value if isinstance(value, dict) else {}


#: the tool result events used, and the attributes naming their session and call
_EVENTS = {"tool_result": ("claude-otel", "session.id", "tool_use_id"),
           "claude_code.tool_result": ("claude-otel", "session.id", "tool_use_id"),
           "codex.tool_result": ("codex-otel", "conversation.id", "call_id")}


def runs(records: list[tuple[dict, dict]], rejected: Counter | None = None) -> list[PushedRun]:
    """The tool calls of the records, grouped by session (order kept). A tool result
    that cannot be stored (no session or call id, an invalid session id, an input
    nested too deep) is counted in ``rejected`` by reason, never dropped unsaid."""
    rejected = rejected if rejected is not None else Counter()
    by_key: dict[tuple[str, str], PushedRun] = {}
    for resource, attrs in records:
        event = attrs.get("event.name") or attrs.get("_body")
        usage = _usage_entry(event, attrs)
        if usage is not None:   # tokens and cost: claude_code.api_request, codex.sse_event
            source, sid, entry = usage
            if not valid_name(sid):
                rejected["invalid_session_id"] += 1
                continue
            _run_for(by_key, source, sid, _instance_of(resource)).entries.append(entry)
            continue
        if event not in _EVENTS:
            continue
        source, sid_key, call_key = _EVENTS[event]
        sid, call_id = attrs.get(sid_key), attrs.get(call_key)
        if not isinstance(sid, str) or not isinstance(call_id, str) or not call_id:
            rejected["missing_id"] += 1
            continue
        if not valid_name(sid):
            rejected["invalid_session_id"] += 1
            continue
        try:
            lines = _call_lines(source, sid, call_id, attrs)
        except payload.PayloadError as exc:
            rejected[exc.reason] += 1
            continue
        _run_for(by_key, source, sid, _instance_of(resource)).entries.append(Entry(call_id, lines))
    return list(by_key.values())


def _instance_of(resource: dict) -> str | None:
    instance = resource.get("streameval.instance_id")
    return instance if isinstance(instance, str) else None


def _run_for(by_key: dict[tuple[str, str], PushedRun], source: str, sid: str,
             instance: str | None) -> PushedRun:
    run = by_key.get((source, sid))
    if run is None:
        run = by_key[(source, sid)] = (
            PushedRun(source, sid, "claude-code", "inputs", instance_id=instance)
            if source == "claude-otel" else
            PushedRun(source, sid, "codex", "full", instance_id=instance))
    return run


def _usage_entry(event: object, attrs: dict) -> tuple[str, str, Entry] | None:
    """A usage event as (source, session, entry), keyed by the record itself (a retry
    sends the same attributes), the key kept in the line it writes; else None."""
    if event in ("api_request", "claude_code.api_request"):
        sid = attrs.get("session.id")
        if isinstance(sid, str):
            key = usage_key(attrs)
            return "claude-otel", sid, Entry(key, [claude_usage_line(sid, attrs, key)])
    elif event == "codex.sse_event":
        sid = attrs.get("conversation.id")
        # Codex 0.169 sends each completion twice: with its token counts, and without
        if isinstance(sid, str) and attrs.get("event.kind") == "response.completed" \
                and "input_token_count" in attrs:
            key = usage_key(attrs)
            return "codex-otel", sid, Entry(key, codex_usage_lines(sid, attrs, key))
    return None


def _call_lines(source: str, sid: str, call_id: str, attrs: dict) -> list[bytes]:
    if source == "codex-otel":
        return codex_call_lines(attrs, call_id)
    tool_input = _json_object(attrs.get("tool_input") or attrs.get("tool_parameters"))
    return tool_call_lines(sid, None, call_id, str(attrs.get("tool_name") or ""), tool_input,
                           None, is_error=str(attrs.get("success")) == "false",
                           timestamp=attrs.get("event.timestamp"))


def codex_call_lines(attrs: dict, call_id: str) -> list[bytes]:
    """A Codex tool call as the two rollout lines Codex writes for it."""
    ts = attrs.get("event.timestamp")
    name = str(attrs.get("tool_name") or "")
    arguments = attrs.get("arguments")
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    output = attrs.get("output")
    output = output if isinstance(output, str) else ""
    if _json_object(arguments) or arguments.strip() in ("", "{}"):
        call = {"type": "function_call", "name": name, "call_id": call_id, "arguments": arguments}
        answer = {"type": "function_call_output", "call_id": call_id, "output": output}
    else:   # a freeform tool (apply_patch): its input is the text itself
        call = {"type": "custom_tool_call", "name": name, "call_id": call_id, "input": arguments}
        answer = {"type": "custom_tool_call_output", "call_id": call_id, "output": output}
    return [json.dumps({"timestamp": ts, "type": "response_item", "payload": p}).encode()
            for p in (call, answer)]


# --------------------------------------------------------------------------- usage


def _count(v: Any) -> int:
    """A token count from an OTLP attribute (ints arrive as strings in JSON, and
    Claude Code sends some as strings): a non-negative int, else 0."""
    try:
        n = int(v)
    except (TypeError, ValueError):
        return 0
    return n if n >= 0 else 0


def claude_usage_line(session_id: str, attrs: dict, key: str) -> bytes:
    """Claude Code's ``claude_code.api_request`` (one API request: ``model``,
    ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cache_creation_tokens``,
    ``cost_usd``) as a usage line of the run's transcript, its message id made of ``key``
    (``keys.usage_key``): a batch the exporter sends twice is stored, and counted, once."""
    try:
        cost = float(attrs["cost_usd"]) if attrs.get("cost_usd") is not None else None
    except (TypeError, ValueError):
        cost = None
    usage = {"input_tokens": _count(attrs.get("input_tokens")),
             "output_tokens": _count(attrs.get("output_tokens")),
             "cache_read_input_tokens": _count(attrs.get("cache_read_tokens")),
             "cache_creation_input_tokens": _count(attrs.get("cache_creation_tokens"))}
    model = attrs.get("model") if isinstance(attrs.get("model"), str) else None
    return usage_line(session_id, "claude_code.api_request", usage, model=model, cost_usd=cost,
                      request_id=key, timestamp=attrs.get("event.timestamp"))


def codex_usage_lines(session_id: str, attrs: dict, key: str) -> list[bytes]:
    """Codex's ``codex.sse_event`` of a completed response (``input_token_count`` with
    the cached ones in it, ``cached_token_count``, ``output_token_count``, ``model``) as
    rollout lines: the session (its id), the model (``turn_context``), and the response's
    tokens (a ``token_count`` with ``last_token_usage`` only, marked ``usageSource``: an
    increment, where Codex's own lines carry run totals)."""
    ts = attrs.get("event.timestamp")
    out = [{"timestamp": ts, "type": "session_meta", "payload": {"id": session_id}}]
    if isinstance(attrs.get("model"), str):
        out.append({"timestamp": ts, "type": "turn_context", "payload": {"model": attrs["model"]}})
    last = {"input_tokens": _count(attrs.get("input_token_count")),
            "cached_input_tokens": _count(attrs.get("cached_token_count")),
            "output_tokens": _count(attrs.get("output_token_count")),
            "reasoning_output_tokens": _count(attrs.get("reasoning_token_count"))}
    out.append({"timestamp": ts, "type": "event_msg", "payload": {
        "type": "token_count", "info": {"last_token_usage": last},
        "usageSource": "codex.sse_event", "usageKey": key}})
    return [json.dumps(o).encode() for o in out]
