"""A scripted model server: the real agent CLIs talk to it instead of a model provider.

It speaks the three wire protocols the agents use:

- Anthropic Messages (``POST /v1/messages``, streamed or not; ``count_tokens``): Claude Code;
- OpenAI Responses (``POST /v1/responses``, streamed): Codex;
- OpenAI Chat Completions (``POST /v1/chat/completions``): mini-swe-agent through litellm,
  with tool calls (tool mode) or with the action in the text (text mode).

A script is a list of turns, each a ``Call`` (one tool call) or ``Say`` (text, ending the
run, or carrying a text-mode action). The server is stateless: the turn it plays next is
the number of model turns already in the conversation it is sent, so retries and side
requests never skip a step. Side requests (titles, summaries: a request without tools)
get a short harmless text. Every request is kept in ``requests`` for the tests to look
at (a steering test reads the reason an agent was given).

Nothing here runs what the agent asks: the agent's own tools do, in the test's repository.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Call", "Say", "ScriptedModel"]

Turn = Any   # Call | Say


@dataclass(frozen=True)
class Call:
    """One tool call: ``name`` as the agent offers the tool, ``input`` its arguments.
    ``text`` goes before it in the same turn."""

    name: str
    input: dict[str, Any]
    text: str = ""


@dataclass(frozen=True)
class Say:
    """A turn of text only: the run's last turn, or a text-mode action block."""

    text: str


@dataclass
class ScriptedModel:
    turns: list[Call | Say]
    host: str = "127.0.0.1"
    requests: list[dict] = field(default_factory=list)
    #: turn index -> something to do before that turn is answered (an edit made outside
    #: the agent, as an editor or another process would)
    before: dict[int, Callable[[], None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((self.host, 0), _Handler)
        self._server.daemon_threads = True
        self._server.model = self   # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def turn_for(self, req: dict, dialect: str) -> Turn:
        if not _main_loop(req, dialect):
            return Say("Scripted session")
        k = _count(req)
        with self._lock:
            action = self.before.pop(k, None)
        if action is not None:
            action()
        return self.turns[k] if k < len(self.turns) else Say("Done.")

    def record(self, path: str, body: dict) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": body})

    def main_requests(self, dialect: str) -> list[dict]:
        """The requests of the agent's own loop (with tools), in order."""
        with self._lock:
            return [r["body"] for r in self.requests if _main_loop(r["body"], dialect)]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:
        self._reply(200, b"", "application/json")

    def do_GET(self) -> None:
        body = {"object": "list", "data": [], "models": []} \
            if self.path.rstrip("/").endswith("/models") else {}
        self._reply(200, json.dumps(body).encode(), "application/json")

    def do_POST(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            req = {}
        model: ScriptedModel = self.server.model   # type: ignore[attr-defined]
        model.record(self.path, req)
        path = self.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            self._reply(200, b'{"input_tokens": 100}', "application/json")
        elif path.endswith("/messages"):
            turn = model.turn_for(req, "anthropic")
            self._answer(req, _anthropic(turn, req), named=True)
        elif path.endswith("/responses"):
            self._answer(req, _responses(model.turn_for(req, "responses"), req), named=True,
                         always_stream=True)
        elif path.endswith("/chat/completions"):
            self._answer(req, _chat(model.turn_for(req, "chat"), req), named=False)
        else:
            self._reply(404, json.dumps({"error": {"message": f"no endpoint {path}"}}).encode(),
                        "application/json")

    def _answer(self, req: dict, answer: tuple[dict, list[tuple[str, Any]]], named: bool,
                always_stream: bool = False) -> None:
        whole, events = answer
        if not (req.get("stream") or always_stream):
            self._reply(200, json.dumps(whole).encode(), "application/json")
            return
        text = "".join((f"event: {name}\n" if named else "")
                       + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                       for name, data in events)
        self._reply(200, text.encode(), "text/event-stream")

    def _reply(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)


# ------------------------------------------------------------------ the three protocols


def _anthropic(turn: Turn, req: dict) -> tuple[dict, list[tuple[str, Any]]]:
    n = _count(req)
    content: list[dict] = []
    if isinstance(turn, Call):
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        content.append({"type": "tool_use", "id": f"toolu_{n:04d}", "name": turn.name,
                        "input": turn.input})
        stop = "tool_use"
    else:
        content.append({"type": "text", "text": turn.text})
        stop = "end_turn"
    msg = {"id": f"msg_{n:04d}", "type": "message", "role": "assistant",
           "model": req.get("model", "scripted"), "content": [], "stop_reason": None,
           "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}}
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": msg})]
    for i, block in enumerate(content):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": i,
                                            "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": i,
                                            "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": i})]
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 20}}),
               ("message_stop", {"type": "message_stop"})]
    return {**msg, "content": content, "stop_reason": stop}, events


def _responses(turn: Turn, req: dict) -> tuple[dict, list[tuple[str, Any]]]:
    n = _count(req)
    items: list[dict] = []
    if isinstance(turn, Call):
        if turn.text:
            items.append(_message_item(f"msg_{n}", turn.text))
        if turn.name == "apply_patch" and "input" in turn.input:   # Codex's freeform tool
            items.append({"type": "custom_tool_call", "id": f"ctc_{n}", "call_id": f"call_{n:04d}",
                          "name": "apply_patch", "input": turn.input["input"],
                          "status": "completed"})
        else:
            items.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n:04d}",
                          "name": turn.name, "arguments": json.dumps(turn.input),
                          "status": "completed"})
    else:
        items.append(_message_item(f"msg_{n}", turn.text))
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 120}
    base = {"id": f"resp_{n:04d}", "object": "response", "created_at": 0,
            "status": "in_progress", "model": req.get("model", "scripted"), "output": []}
    events: list[tuple[str, Any]] = [("response.created", {"type": "response.created",
                                                           "response": base})]
    for i, item in enumerate(items):
        events += [("response.output_item.added", {"type": "response.output_item.added",
                                                   "output_index": i, "item": item}),
                   ("response.output_item.done", {"type": "response.output_item.done",
                                                  "output_index": i, "item": item})]
    done = {**base, "status": "completed", "output": items, "usage": usage}
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return done, events


def _chat(turn: Turn, req: dict) -> tuple[dict, list[tuple[str, Any]]]:
    n = _count(req)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if isinstance(turn, Call) and req.get("tools"):
        message["content"] = turn.text or None
        message["tool_calls"] = [{"id": f"call_{n:04d}", "type": "function",
                                  "function": {"name": turn.name,
                                               "arguments": json.dumps(turn.input)}}]
        finish = "tool_calls"
    else:
        message["content"] = turn.text
    body = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": req.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
    delta = {k: v for k, v in message.items() if v is not None}
    if "tool_calls" in delta:
        delta["tool_calls"] = [{**tc, "index": 0} for tc in delta["tool_calls"]]
    chunk = {**body, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return body, [("", chunk), ("", "[DONE]")]


def _main_loop(req: dict, dialect: str) -> bool:
    """A request of the agent's loop, as opposed to a side request (a title, a summary):
    it offers tools. mini-swe-agent makes no side requests; in text mode it offers no
    tools either, so every chat request is its loop."""
    return dialect == "chat" or bool(req.get("tools"))


def _count(req: dict) -> int:
    """Model turns already in the conversation."""
    if "messages" in req:
        return sum(1 for m in req["messages"] if isinstance(m, dict) and m.get("role") == "assistant")
    items = req.get("input")
    if isinstance(items, list):
        return sum(1 for it in items if isinstance(it, dict) and it.get("type") in
                   ("function_call", "custom_tool_call", "local_shell_call"))
    return 0


def _message_item(item_id: str, text: str) -> dict:
    return {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
