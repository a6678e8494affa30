"""Re-derive the golden summaries of the Claude/Codex fixtures WITHOUT streameval.

Written separately from the adapters, from the trace formats as read by eye
(see README.claude-codex.md here), with the stdlib ``json`` module only. Run it to (re)write
``<fixture>.json``; the golden test then checks that the adapters agree with it.

    python tests/traces/formats/expected/derive_expected.py
"""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parents[1] / "fixtures" / "real"
FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


def short(tool_input: dict) -> str:
    return json.dumps(tool_input, sort_keys=True, ensure_ascii=False)[:80]


def lines(path: Path):
    for raw in path.read_bytes().split(b"\n"):
        if raw.strip():
            yield json.loads(raw)


def summary(calls, increments, final, run_info, run_ends):
    return {
        "tool_calls": dict(sorted(Counter(c["tool"] for c in calls).items())),
        "sidechain": sum(c.get("sidechain", False) for c in calls),
        "errors": sum(c["is_error"] for c in calls),
        "unanswered": sum(c["answered"] is False for c in calls),
        "first_calls": [[c["tool"], short(c["input"])] for c in calls[:5]],
        "usage_increments": dict(zip(FIELDS, increments)),
        "usage_final": final,
        "bad_lines": {},
        "run_info": run_info,
        "run_ends": run_ends,
    }


# ---------------------------------------------------------------- claude


def claude_lines(path: Path):
    """The transcript's lines, with each sub-agent message a parent session echoes in a
    ``progress`` line (``data.type == "agent_progress"``, Code 2.1) in its place as a
    sidechain line of its own; and whether the file is a sub-agent's own transcript (its
    first user/assistant line is a sidechain line with an ``agentId``): then its
    sidechain calls are the run's own."""
    own = None
    for o in lines(path):
        if o.get("type") == "progress" and (o.get("data") or {}).get("type") == "agent_progress":
            inner = dict(o["data"]["message"])
            inner.pop("sessionId", None)
            inner["isSidechain"] = True
            if inner.get("type") in ("assistant", "user"):
                yield inner, False
            continue
        if own is None and o.get("type") in ("user", "assistant"):
            own = o.get("isSidechain") is True and isinstance(o.get("agentId"), str)
        yield o, bool(own)


def claude(path: Path) -> dict:
    uses, calls, per_message, final, run_info, run_ends = {}, [], {}, None, 0, []
    seen_session = None
    for o, own in claude_lines(path):
        t = o.get("type")
        msg = o.get("message") if isinstance(o.get("message"), dict) else {}
        if t == "system" and o.get("subtype") == "init":
            run_info += 1
        elif t == "result":
            u = o["usage"]
            final = {"input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"],
                     "cache_read_tokens": u["cache_read_input_tokens"],
                     "cache_creation_tokens": u["cache_creation_input_tokens"],
                     "cost_usd": o["total_cost_usd"]}
            run_ends.append(o["subtype"])
        elif t == "assistant":
            if "sessionId" in o and o["sessionId"] != seen_session and (
                    seen_session is None or not o.get("isSidechain")):
                seen_session = o["sessionId"]
                run_info += 1
            u = msg["usage"]
            now = (u["input_tokens"], u["output_tokens"], u.get("cache_read_input_tokens", 0),
                   u.get("cache_creation_input_tokens", 0))
            old = per_message.get(msg["id"], (0, 0, 0, 0))
            per_message[msg["id"]] = tuple(max(a, b) for a, b in zip(old, now))
            for block in msg["content"]:
                if block["type"] == "tool_use":
                    side = (o.get("isSidechain") is True and not own) \
                        or o.get("parent_tool_use_id") is not None
                    uses[block["id"]] = {"tool": block["name"], "input": block["input"],
                                         "sidechain": side}
        elif t == "user" and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if block.get("type") == "tool_result":
                    call = dict(uses.pop(block["tool_use_id"]))
                    call["is_error"] = block.get("is_error") is True
                    call["answered"] = True
                    calls.append(call)
    for call in uses.values():
        calls.append({**call, "is_error": False, "answered": False})
    increments = [sum(v[i] for v in per_message.values()) for i in range(4)]
    return summary(calls, increments, final, run_info, run_ends)


# ---------------------------------------------------------------- codex


def script(command) -> str:
    """``bash -lc X`` (also ``/bin/bash -lc X``, Codex 0.169) is X."""
    argv = command if isinstance(command, list) else shlex.split(command)
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in ("bash", "zsh", "sh") \
            and argv[1] in ("-lc", "-c"):
        return argv[2]
    return shlex.join(command) if isinstance(command, list) else command


def codex_failed(output: str) -> bool:
    """A rollout call output: JSON with metadata.exit_code (older), the 0.169 exec_command
    header ("Process exited with code N" before "Output:"), or plain text."""
    try:
        return json.loads(output)["metadata"]["exit_code"] != 0
    except (ValueError, KeyError, TypeError):
        pass
    head = output.split("\nOutput:", 1)[0]
    for line in head.splitlines():
        if line.startswith("Process exited with code "):
            return line.split()[-1] != "0"
        if line.startswith("Exit code: "):
            return line.split()[-1] != "0"
    return output.startswith(("failed", "patch rejected"))


class _Codex:
    """One pass over a Codex trace (exec --json events or a rollout)."""

    def __init__(self) -> None:
        self.calls, self.opened, self.started = [], {}, {}
        self.increments, self.final, self.run_info, self.run_ends = [0, 0, 0, 0], None, 0, []

    def line(self, o: dict) -> None:
        t = o.get("type")
        if t in ("thread.started", "session_meta"):
            self.run_info += 1
        elif t == "turn_context" and o["payload"].get("model") and self.run_info == 1:
            self.run_info += 1  # the model becomes known once in this fixture
        elif t == "turn.completed":
            u = o["usage"]
            self.increments[0] += u["input_tokens"] - u["cached_input_tokens"]
            self.increments[1] += u["output_tokens"]
            self.increments[2] += u["cached_input_tokens"]
            self.run_ends.append("completed")
        elif t == "turn.failed":
            self.run_ends.append("failed")
        elif t in ("item.started", "item.completed"):
            self.item(t, o["item"])
        elif t == "response_item":
            self.response_item(o["payload"])
        elif t == "event_msg" and o["payload"]["type"] == "token_count" and o["payload"]["info"]:
            u = o["payload"]["info"]["total_token_usage"]
            self.final = {"input_tokens": u["input_tokens"] - u["cached_input_tokens"],
                          "output_tokens": u["output_tokens"],
                          "cache_read_tokens": u["cached_input_tokens"],
                          "cache_creation_tokens": 0, "cost_usd": None}

    def item(self, t: str, it: dict) -> None:
        if it["type"] == "command_execution" and t == "item.started":
            self.started[it["id"]] = it
        elif it["type"] == "command_execution":
            self.started.pop(it["id"], None)
            self.calls.append({"tool": "shell", "input": {"command": script(it["command"])},
                               "is_error": it["exit_code"] not in (0, None), "answered": True})
        elif it["type"] == "file_change" and t == "item.completed":
            self.calls.append({"tool": "file_change", "input": {"changes": it["changes"]},
                               "is_error": False, "answered": True})

    def response_item(self, p: dict) -> None:
        if p["type"] == "function_call":
            args = json.loads(p["arguments"])
            if "cmd" in args:            # exec_command (0.16x) names it cmd
                args["command"] = args.pop("cmd")
            if "command" in args:
                args["command"] = script(args["command"])
            self.opened[p["call_id"]] = {"tool": p["name"], "input": args}
        elif p["type"] == "custom_tool_call":
            self.opened[p["call_id"]] = {"tool": p["name"], "input": {"input": p["input"]}}
        elif p["type"] in ("function_call_output", "custom_tool_call_output"):
            call = dict(self.opened.pop(p["call_id"]))
            self.calls.append({**call, "is_error": codex_failed(p["output"]), "answered": True})

    def summary(self) -> dict:
        # calls never answered (the run was killed): exec items started, rollout calls opened
        for it in self.started.values():
            self.calls.append({"tool": "shell", "input": {"command": script(it["command"])},
                               "is_error": False, "answered": False})
        for call in self.opened.values():
            self.calls.append({**call, "is_error": False, "answered": False})
        return summary(self.calls, self.increments, self.final, self.run_info, self.run_ends)


def codex(path: Path) -> dict:
    reader = _Codex()
    for o in lines(path):
        reader.line(o)
    return reader.summary()


def main() -> int:
    for path in sorted(REAL.glob("claude-*/*.jsonl")) + sorted(REAL.glob("codex-*/*.jsonl")):
        derived = claude(path) if path.name.startswith("claude") else codex(path)
        out = HERE / f"{path.name}.json"
        out.write_text(json.dumps(derived, indent=1, ensure_ascii=False) + "\n")
        print(out.name, derived["tool_calls"], derived["run_ends"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
