"""Regenerate the two extra example runs used by ``streameval abort-backtest``.

Both are scripted Claude Code sessions (``--output-format stream-json``) over
``examples/repo`` for instance ``example__inventory-1``; every tool result is what
the tool really shows for the repo, so the numbers can be checked by hand:

- ``runaway-1``: an agent that never finds the bug. It keeps re-reading the same
  non-gold files (README, stock.py, cart.js) for 30 steps and gives up with no patch.
  Every sensible policy should stop it; nothing is lost by doing so.
- ``late-find-1``: an agent that wanders through stock.py and cart.js for 10 steps,
  then finds ``bulk_discount``, reads the gold, fixes it (``patch.diff``). A tight
  stagnation policy would stop it wrongly: the backtest's "wrongful stop" example.

    python examples/backtest/make_backtest_runs.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent / "repo"
WORKSPACE = "/workspace/inventory"
MODEL = "claude-sonnet-4-5-20250929"
INSTANCE = "example__inventory-1"


def _id(prefix: str, *parts: object) -> str:
    return prefix + hashlib.sha1("/".join(map(str, (prefix, *parts))).encode()).hexdigest()[:24]


def numbered(rel: str, start: int = 1, count: int = 2000) -> str:
    lines = (REPO / rel).read_text().splitlines()[start - 1:start - 1 + count]
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(lines, start))


class Session:
    """Writes consecutive tool calls of one run as stream-json lines."""

    def __init__(self, name: str):
        self.name = name
        self.session = _id("", name)[:8] + "-0000-4000-8000-" + _id("", name, "s")[:12]
        self.lines: list[dict] = []
        self.n = 0
        self.tokens = {"input_tokens": 0, "output_tokens": 0,
                       "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        self.lines.append({"type": "system", "subtype": "init", "cwd": WORKSPACE,
                           "session_id": self.session, "tools": ["Bash", "Glob", "Grep", "Read", "Edit"],
                           "mcp_servers": [], "model": MODEL, "permissionMode": "bypassPermissions",
                           "apiKeySource": "none", "uuid": _id("u", name, 0)})

    def call(self, tool: str, tool_input: dict, result: str) -> None:
        self.n += 1
        tid = _id("toolu_", self.name, self.n)
        usage = {"input_tokens": 4, "cache_creation_input_tokens": 300,
                 "cache_read_input_tokens": 15000 + 400 * self.n, "output_tokens": 80}
        for k, v in usage.items():
            self.tokens[k] += v
        self.lines.append({"type": "assistant", "message": {
            "model": MODEL, "id": _id("msg_", self.name, self.n), "type": "message",
            "role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": tool,
                                              "input": tool_input}],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": usage},
            "parent_tool_use_id": None, "session_id": self.session,
            "uuid": _id("u", self.name, self.n, "a")})
        self.lines.append({"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": result}]},
            "parent_tool_use_id": None, "session_id": self.session,
            "uuid": _id("u", self.name, self.n, "u")})

    def read(self, rel: str, offset: int | None = None, limit: int | None = None) -> None:
        args: dict = {"file_path": f"{WORKSPACE}/{rel}"}
        if offset is not None:
            args["offset"] = offset
        if limit is not None:
            args["limit"] = limit
        self.call("Read", args, numbered(rel, offset or 1, limit or 2000))

    def edit(self, rel: str, old: str, new: str) -> None:
        self.call("Edit", {"file_path": f"{WORKSPACE}/{rel}", "old_string": old, "new_string": new},
                  f"The file {WORKSPACE}/{rel} has been updated.")

    def finish(self, text: str, cost: float) -> None:
        self.lines.append({"type": "result", "subtype": "success", "is_error": False,
                           "num_turns": self.n + 1, "result": text, "session_id": self.session,
                           "total_cost_usd": cost, "usage": dict(self.tokens),
                           "uuid": _id("u", self.name, "end")})

    def save(self, patch: str | None) -> None:
        d = HERE / self.name
        d.mkdir(exist_ok=True)
        (d / "trace.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n"
                                               for x in self.lines))
        (d / "meta.json").write_text(json.dumps({
            "instance_id": INSTANCE, "run_id": self.name, "agent": "claude-code",
            "model": MODEL}, indent=2) + "\n")
        p = d / "patch.diff"
        if patch is not None:
            p.write_text(patch)
        elif p.exists():
            p.unlink()


def runaway() -> None:
    s = Session("runaway-1")
    cycle = [("README.md", None, None), ("inventory/stock.py", None, None),
             ("web/cart.js", None, None), ("inventory/stock.py", 40, 30),
             ("inventory/__init__.py", None, None), ("web/cart.js", 20, 30)]
    for i in range(30):
        s.read(*cycle[i % len(cycle)])
    s.finish("I could not find where the discount is computed.", 0.61)
    s.save(None)


def late_find() -> None:
    s = Session("late-find-1")
    wander = [("README.md", None, None), ("inventory/stock.py", 1, 40),
              ("inventory/stock.py", 41, 40), ("web/cart.js", None, None),
              ("inventory/__init__.py", None, None), ("inventory/stock.py", 20, 20),
              ("web/cart.js", 1, 25), ("inventory/stock.py", 50, 13),
              ("web/cart.js", 26, 31), ("README.md", None, None)]
    for spec in wander:
        s.read(*spec)
    s.read("inventory/billing.py")
    s.read("tests/test_billing.py")
    s.edit("inventory/billing.py", "    if quantity > BULK_THRESHOLD:",
           "    if quantity >= BULK_THRESHOLD:")
    s.finish("Fixed the bulk discount threshold.", 0.27)
    patch = (HERE.parent / "runs" / "example-run-1" / "patch.diff").read_text()
    billing_only = patch.split("diff --git a/tests/")[0]
    s.save(billing_only)


if __name__ == "__main__":
    runaway()
    late_find()
