"""What makes a pushed entry the same entry when it is pushed again (docs/ingest.md).

A client that got no answer retries, and the spool must store the retry once. Each
route has a natural key that the trace lines written for it keep, so the keys of a run
can be read back from its trace after a restart, with no second file to keep in step:

- a hook's tool call: ``<event>:<tool_use_id>`` (``PostToolUse`` or
  ``PostToolUseFailure``; the answer line says which by its ``is_error``);
  ``SessionEnd`` once per run;
- an OTLP ``tool_result`` record: its call id (``tool_use_id``, ``call_id``), which the
  CLI writes once per call; the record's (time, sequence) names the same record, but the
  call id is what the trace keeps;
- an OTLP usage record (``claude_code.api_request``, ``codex.sse_event``): its request
  id or sequence number, else a digest of its attributes (a retry sends the same ones),
  kept in the usage line's message id (Claude) or ``usageKey`` (Codex);
- raw lines: no key, the client's byte ``offset`` (``Spool.append_at``).
"""

from __future__ import annotations

import hashlib

import orjson

SESSION_END = "SessionEnd"
#: the message id prefix of a pushed usage line (``claude_lines.usage_line``)
USAGE_ID = "push-usage-"


def usage_key(attrs: dict) -> str:
    """The key of an OTLP usage record: what names its request, else its attributes."""
    named = attrs.get("request_id") or attrs.get("event.sequence")
    if named is not None:
        return f"usage:{named}"
    digest = hashlib.sha1(orjson.dumps(attrs, option=orjson.OPT_SORT_KEYS, default=str))
    return f"usage:{digest.hexdigest()[:20]}"


def hook_call_key(event: str, call_id: str) -> str:
    return f"{event}:{call_id}"


def key_of_line(source: str, line: bytes) -> str | None:
    """The key of the entry whose last line is ``line`` (a line the spool wrote), or None."""
    if b'"usageSource"' in line:
        return _usage_key_of(_object(line))
    if source in ("claude-hooks", "claude-otel"):
        if b'"tool_result"' not in line and b'"result"' not in line:
            return None
        obj = _object(line)
        if obj is None:
            return None
        if obj.get("type") == "result":
            return SESSION_END
        content = (obj.get("message") or {}).get("content") if obj.get("type") == "user" else None
        if not isinstance(content, list) or not content or not isinstance(content[0], dict):
            return None
        call_id = content[0].get("tool_use_id")
        if not isinstance(call_id, str):
            return None
        if source == "claude-otel":
            return call_id
        return hook_call_key("PostToolUseFailure" if content[0].get("is_error") else "PostToolUse",
                             call_id)
    if source == "codex-otel":
        if b"_output" not in line:
            return None
        obj = _object(line)
        payload = obj.get("payload") if obj is not None else None
        if isinstance(payload, dict) and str(payload.get("type", "")).endswith("_output"):
            call_id = payload.get("call_id")
            return call_id if isinstance(call_id, str) else None
    return None


def _usage_key_of(obj: dict | None) -> str | None:
    if obj is None:
        return None
    payload = obj.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("usageKey"), str):
        return payload["usageKey"]   # Codex's token_count line
    mid = (obj.get("message") or {}).get("id")
    if isinstance(mid, str) and mid.startswith(USAGE_ID):
        return mid[len(USAGE_ID):]    # Claude's usage line
    return None


def _object(line: bytes) -> dict | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
