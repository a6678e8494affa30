"""Regenerate ``runs/example-run-1/`` from the files of ``repo/``.

The example run is a scripted Claude Code session (``--output-format stream-json``):
every tool result in it is what the tool really shows for ``repo/`` (``Read`` with its
``     N→`` numbering, ``grep -n`` lines, ``sed -n`` ranges...), so the numbers streameval
computes from it can be checked by hand. Run this after changing ``repo/``:

    python examples/make_example_run.py
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE / "repo"
RUN = HERE / "runs" / "example-run-1"
WORKSPACE = "/workspace/inventory"
MODEL = "claude-sonnet-4-5-20250929"
SESSION = "3f6c2a0e-5b1d-4c8e-9a57-1e2f0c9d7b41"
FIX_OLD = "    if quantity > BULK_THRESHOLD:\n"
FIX_NEW = "    if quantity >= BULK_THRESHOLD:\n"
TEST_OLD = "def test_discount_above_threshold():\n    assert bulk_discount(12, 18.00) == 1.80\n"
TEST_NEW = TEST_OLD + ("\n\ndef test_discount_at_threshold():\n"
                       "    assert bulk_discount(10, 15.00) == 1.50\n")


def _id(prefix: str, n: int) -> str:
    return prefix + hashlib.sha1(f"{prefix}{n}".encode()).hexdigest()[:24]


class Files:
    """The workspace as the agent sees it: the repo, plus the edits made so far."""

    def __init__(self) -> None:
        self.text = {str(p.relative_to(REPO)): p.read_text()
                     for p in sorted(REPO.rglob("*")) if p.is_file()}

    def lines(self, rel: str) -> list[str]:
        return self.text[rel].splitlines()

    def numbered(self, rel: str, start: int = 1, count: int = 2000) -> str:
        lines = self.lines(rel)[start - 1:start - 1 + count]
        return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(lines, start))

    def grep_n(self, pattern: str, rels: list[str], prefix: bool = True) -> str:
        out = []
        for rel in rels:
            for n, line in enumerate(self.lines(rel), 1):
                if pattern in line:
                    out.append(f"{rel}:{n}:{line}" if prefix else f"{n}:{line}")
        return "\n".join(out)

    def edit(self, rel: str, old: str, new: str) -> str:
        """Apply an Edit; return Claude's "cat -n on a snippet" result text."""
        before = self.text[rel]
        assert before.count(old) == 1, (rel, old)
        at = before[:before.index(old)].count("\n") + 1
        self.text[rel] = before.replace(old, new)
        start = max(1, at - 4)
        count = new.count("\n") + 8
        return (f"The file {WORKSPACE}/{rel} has been updated. Here's the result of running "
                f"`cat -n` on a snippet of the edited file:\n" + self.numbered(rel, start, count))


def build() -> tuple[list[dict], str]:
    f = Files()
    py_files = sorted(p for p in f.text if p.endswith(".py"))
    calls: list[tuple[str, str, dict, str, bool]] = []  # (text, tool, input, result, is_error)

    def call(text: str, tool: str, inp: dict, result: str, is_error: bool = False) -> None:
        calls.append((text, tool, inp, result, is_error))

    call("I'll start by looking at the layout of the repository.", "Glob",
         {"pattern": "**/*.py"}, "\n".join(f"{WORKSPACE}/{p}" for p in py_files))
    call("", "Read", {"file_path": f"{WORKSPACE}/README.md"}, f.numbered("README.md"))
    call("The issue is about the bulk discount. Let me find where it is computed.", "Grep",
         {"pattern": "bulk_discount", "output_mode": "files_with_matches"},
         "Found 3 files limit: 20, offset: 0\n"
         "inventory/billing.py\ninventory/__init__.py\ntests/test_billing.py")
    call("", "Read", {"file_path": f"{WORKSPACE}/inventory/billing.py"},
         f.numbered("inventory/billing.py"))
    call("`bulk_discount` compares with `>`. Let me see every use of the threshold.", "Grep",
         {"pattern": "BULK_THRESHOLD", "output_mode": "content", "-n": True},
         f.grep_n("BULK_THRESHOLD", ["inventory/__init__.py", "inventory/billing.py",
                                     "web/cart.js"])
         + "\n\n[Showing results with pagination = limit: 20, offset: 0]")
    call("The JavaScript cart uses `>=`; let me look at it.", "Read",
         {"file_path": f"{WORKSPACE}/web/cart.js", "offset": 26, "limit": 10},
         f.numbered("web/cart.js", 26, 10))
    call("Now the existing tests.", "Read", {"file_path": f"{WORKSPACE}/tests/test_billing.py"},
         f.numbered("tests/test_billing.py"))
    call("Let me reproduce the bug.", "Bash",
         {"command": "cd /workspace/inventory && python -c \"from inventory import "
                     "bulk_discount; print(bulk_discount(10, 15.0))\"",
          "description": "Reproduce: 10 units should get the discount"}, "0.0")
    call("", "Bash", {"command": "python -m pytest -q tests/test_billing.py 2>&1 | tail -3",
                      "description": "Run the billing tests"},
         "....                                                                     [100%]\n"
         "4 passed in 0.05s")
    call("Let me check how invoices use the line discount.", "Bash",
         {"command": "grep -n \"discount\" inventory/billing.py",
          "description": "Find discount uses"},
         f.grep_n("discount", ["inventory/billing.py"], prefix=False))
    call("", "Bash", {"command": "sed -n '50,62p' inventory/stock.py",
                      "description": "Look at reservations"},
         "\n".join(f.lines("inventory/stock.py")[49:62]))
    call("", "Read", {"file_path": f"{WORKSPACE}/inventory/billing.py", "offset": 28,
                      "limit": 12}, f.numbered("inventory/billing.py", 28, 12))
    call("The fix: the discount applies from BULK_THRESHOLD units on, as documented.", "Edit",
         {"file_path": f"{WORKSPACE}/inventory/billing.py", "old_string": FIX_OLD.rstrip("\n"),
          "new_string": FIX_NEW.rstrip("\n")},
         f.edit("inventory/billing.py", FIX_OLD, FIX_NEW))
    call("Now a regression test for exactly 10 units.", "Edit",
         {"file_path": f"{WORKSPACE}/tests/test_billing.py", "old_string": TEST_OLD.rstrip("\n"),
          "new_string": TEST_NEW.rstrip("\n")},
         f.edit("tests/test_billing.py", TEST_OLD, TEST_NEW))
    call("", "Bash", {"command": "python -m pytest -q tests/test_billing.py 2>&1 | tail -3",
                      "description": "Run the billing tests"},
         ".....                                                                    [100%]\n"
         "5 passed in 0.05s")
    call("Let me check that nothing else relies on the old comparison.", "Grep",
         {"pattern": "quantity > ", "path": "inventory", "output_mode": "content", "-n": True},
         f.grep_n("quantity > ", ["inventory/billing.py", "inventory/stock.py"])
         + "\n\n[Showing results with pagination = limit: 20, offset: 0]")
    call("", "Bash", {"command": "cat inventory/__init__.py",
                      "description": "Check the public exports"}, f.text["inventory/__init__.py"]
         .rstrip("\n"))
    patch = make_patch(f)
    call("", "Bash", {"command": "git diff", "description": "Review the change"},
         patch.rstrip("\n"))
    return calls, patch


def make_patch(f: Files) -> str:
    out = []
    for rel in sorted(f.text):
        before = (REPO / rel).read_text()
        if before == f.text[rel]:
            continue
        out.append(f"diff --git a/{rel} b/{rel}\n")
        out.extend(difflib.unified_diff(before.splitlines(True), f.text[rel].splitlines(True),
                                        f"a/{rel}", f"b/{rel}"))
    return "".join(out)


def _usage(n: int) -> dict:
    return {"input_tokens": 4, "cache_creation_input_tokens": 600 + 37 * n,
            "cache_read_input_tokens": 14200 + 910 * n, "output_tokens": 95 + 11 * (n % 7),
            "service_tier": "standard"}


def _assistant(n: int, blocks: list[dict]) -> dict:
    return {"type": "assistant",
            "message": {"model": MODEL, "id": _id("msg_01", n), "type": "message",
                        "role": "assistant", "content": blocks, "stop_reason": "tool_use",
                        "stop_sequence": None, "usage": _usage(n)},
            "parent_tool_use_id": None, "session_id": SESSION, "uuid": _uuid("a", n)}


def _uuid(kind: str, n: int) -> str:
    h = hashlib.sha1(f"{kind}{n}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def lines(calls: list[tuple[str, str, dict, str, bool]]) -> list[dict]:
    out: list[dict] = [{
        "type": "system", "subtype": "init", "cwd": WORKSPACE, "session_id": SESSION,
        "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite"],
        "mcp_servers": [], "model": MODEL, "permissionMode": "bypassPermissions",
        "apiKeySource": "none", "claude_code_version": "2.0.36", "output_style": "default",
        "uuid": _uuid("init", 0)}]
    for n, (text, tool, inp, result, is_error) in enumerate(calls):
        if text:
            out.append(_assistant(n, [{"type": "text", "text": text}]))
        tool_id = _id("toolu_01", n)
        out.append(_assistant(n, [{"type": "tool_use", "id": tool_id, "name": tool,
                                   "input": inp}]))
        out.append({"type": "user",
                    "message": {"role": "user", "content": [
                        {"tool_use_id": tool_id, "type": "tool_result", "content": result,
                         "is_error": is_error}]},
                    "parent_tool_use_id": None, "session_id": SESSION,
                    "uuid": _uuid("u", n)})
    out.append(_assistant(len(calls), [{"type": "text", "text": (
        "Fixed: `bulk_discount` now applies the bulk rate from `BULK_THRESHOLD` units on "
        "(`>=` instead of `>`), matching the documented rule and the web cart. Added "
        "`test_discount_at_threshold`; all 5 billing tests pass.")}]))
    out.append({
        "type": "result", "subtype": "success", "is_error": False, "duration_ms": 94215,
        "duration_api_ms": 81377, "num_turns": len(calls) + 1,
        "result": "Fixed the bulk discount threshold (>= instead of >) and added a test.",
        "session_id": SESSION, "total_cost_usd": 0.2184,
        "usage": {"input_tokens": 76, "cache_creation_input_tokens": 18342,
                  "cache_read_input_tokens": 412950, "output_tokens": 2964,
                  "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                  "service_tier": "standard"},
        "permission_denials": [], "uuid": _uuid("result", 0)})
    return out


def main() -> None:
    calls, patch = build()
    RUN.mkdir(parents=True, exist_ok=True)
    with open(RUN / "trace.jsonl", "w") as fh:
        for obj in lines(calls):
            fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    (RUN / "patch.diff").write_text(patch)
    (RUN / "meta.json").write_text(json.dumps(
        {"instance_id": "example__inventory-1", "run_id": "example-run-1",
         "agent": "claude-code", "model": MODEL}, indent=2) + "\n")
    print(f"wrote {RUN} ({len(calls)} tool calls)")


if __name__ == "__main__":
    main()
