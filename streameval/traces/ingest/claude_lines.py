"""Claude Code events from a push source -> lines of a Claude session transcript.

Hooks and OpenTelemetry events describe one tool call each; written as the two lines a
session transcript has for it (the ``tool_use`` and its ``tool_result``), they are read
by the Claude adapter like a transcript the agent wrote itself, so a pushed run and the
run's own transcript are scored by the same rules.

The ``tool_result`` text is what the model was shown, rebuilt from the hook's
structured ``tool_response``: a ``Read`` as Claude Code 2.1 numbers it (``N\\tline``),
a ``Bash`` its stdout then stderr. An OpenTelemetry ``tool_result`` carries the input
only: its ``content`` is ``null`` (nothing recorded of what was shown), and the call's
own window is credited (fidelity ``inputs``, docs/ingest.md).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import orjson

from streameval.traces.ingest import transcript
from streameval.traces.ingest.keys import USAGE_ID


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(value: Any) -> bytes:
    """``value`` as one JSON line: orjson (the hot path of every pushed call), the
    standard library for what orjson will not write (integers past 64 bits)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


def _base(session_id: str, cwd: str | None, timestamp: str | None) -> dict:
    line: dict[str, Any] = {"sessionId": session_id, "timestamp": timestamp or _now_iso(),
                            "isSidechain": False}
    if cwd:
        line["cwd"] = cwd
    return line


def tool_call_lines(session_id: str, cwd: str | None, call_id: str, tool: str, tool_input: Any,
                    shown: str | None, structured: Any = None, is_error: bool = False,
                    timestamp: str | None = None) -> list[bytes]:
    """The transcript lines of one finished call; ``shown`` None: not recorded."""
    use = {**_base(session_id, cwd, timestamp), "type": "assistant", "message": {
        "id": f"push-{call_id}", "role": "assistant", "content": [
            {"type": "tool_use", "id": call_id, "name": tool,
             "input": tool_input if isinstance(tool_input, dict) else {}}]}}
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": shown}
    if is_error:
        result["is_error"] = True
    answer: dict[str, Any] = {**_base(session_id, cwd, timestamp), "type": "user",
                              "message": {"role": "user", "content": [result]}}
    if isinstance(structured, dict):
        answer["toolUseResult"] = structured
    return [_dumps(use), _dumps(answer)]


def end_line(session_id: str) -> bytes:
    """The run is over (SessionEnd): a stream-json ``result`` ends it for the adapter."""
    return _dumps({"type": "result", "subtype": "success", "is_error": False,
                   "session_id": session_id})


def shown_text(tool: str, response: Any) -> str:
    """What a Claude Code tool showed the model, from its hook ``tool_response``."""
    if isinstance(response, str):
        return response
    if not isinstance(response, dict):
        return "" if response is None else json.dumps(response)
    file = response.get("file")
    if tool == "Read" and isinstance(file, dict) and isinstance(file.get("content"), str):
        start = file.get("startLine") if isinstance(file.get("startLine"), int) else 1
        lines = file["content"].split("\n")
        return "\n".join(f"{start + i}\t{line}" for i, line in enumerate(lines))
    if "stdout" in response or "stderr" in response:
        out, err = response.get("stdout") or "", response.get("stderr") or ""
        return f"{out}\n{err}".strip("\n") if err else str(out)
    if isinstance(response.get("content"), str):       # Grep, content mode
        return response["content"]
    names = response.get("filenames")
    if isinstance(names, list):                          # Glob, Grep files mode
        return "\n".join(str(n) for n in names)
    if isinstance(response.get("filePath"), str):        # Edit, Write, MultiEdit
        return f"The file {response['filePath']} has been updated."
    return json.dumps(response)


# --------------------------------------------------------------------------- usage

#: the token fields of an Anthropic ``usage`` object, in TOKEN_KINDS order
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
               "cache_creation_input_tokens")


def usage_line(session_id: str, source: str, usage: dict[str, int], *, model: str | None = None,
               cost_usd: float | None = None, cumulative: bool = False,
               request_id: str | None = None, timestamp: str | None = None) -> bytes:
    """A pushed run's tokens as a transcript line the Claude adapter reads: an assistant
    line with no content, its ``message.usage`` and ``model``, and ``usageSource`` (where
    the numbers came from, which the record states), ``costUSD`` and ``usageCumulative``
    (run totals, not one request's)."""
    message: dict[str, Any] = {"id": f"{USAGE_ID}{request_id}" if request_id else None,
                               "role": "assistant", "content": [],
                               "usage": {k: int(usage.get(k) or 0) for k in _USAGE_KEYS}}
    if message["id"] is None:
        del message["id"]
    if model:
        message["model"] = model
    line: dict[str, Any] = {**_base(session_id, None, timestamp), "type": "assistant",
                            "message": message, "usageSource": source}
    if cost_usd is not None:
        line["costUSD"] = cost_usd
    if cumulative:
        line["usageCumulative"] = True
    return _dumps(line)


def transcript_usage_lines(hook: dict, roots: list | None = None,
                           reader: transcript.UsageReader | None = None) -> list[bytes]:
    """The run's token totals from the hook's ``transcript_path`` (Claude Code on the
    watcher's machine), as one cumulative usage line; nothing when the path may not be
    read (``transcript``: what is refused and why) or holds no usage. ``reader`` keeps
    where each transcript was read to (the ingest routes own one)."""
    sid = hook.get("session_id")
    if not isinstance(sid, str):
        return []
    path = transcript.allowed(hook.get("transcript_path"), sid,
                              transcript.default_roots() if roots is None else roots)
    if path is None:
        return []
    found = (reader or transcript.UsageReader(max_files=1)).usage_of(path, sid)
    if found is None or not any(found[0].values()):
        return []
    usage, model = found
    return [usage_line(sid, "transcript", usage, model=model, cumulative=True)]
