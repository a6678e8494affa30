"""A tiny MCP server (stdio, JSON-RPC 2.0 lines) that a real agent CLI starts: one tool,
``read_file {path, start_line, end_line}``, which prints those lines of a file under the
root it was started with. It stands for the context engines users plug in over MCP.

    python mcp_context_server.py ROOT
"""

import json
import sys
from pathlib import Path

TOOL = {
    "name": "read_file",
    "description": "Show lines start_line..end_line (1-based) of a file of the repository.",
    "inputSchema": {"type": "object", "properties": {
        "path": {"type": "string"}, "start_line": {"type": "integer"},
        "end_line": {"type": "integer"}}, "required": ["path"]},
}


def answer(root: Path, req: dict):
    method = req.get("method")
    if method == "initialize":
        version = req.get("params", {}).get("protocolVersion", "2025-06-18")
        return {"protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "ctx", "version": "1.0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        args = req.get("params", {}).get("arguments", {})
        path = (root / args.get("path", "")).resolve()
        if root not in path.parents or not path.is_file():
            return {"content": [{"type": "text", "text": "no such file"}], "isError": True}
        lines = path.read_text().splitlines()
        a, b = int(args.get("start_line", 1)), int(args.get("end_line", len(lines)))
        return {"content": [{"type": "text", "text": "\n".join(lines[a - 1:b])}]}
    if method == "ping":
        return {}
    return None


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        if "id" not in req:
            continue              # a notification
        result = answer(root, req)
        reply = {"jsonrpc": "2.0", "id": req["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"no method {req.get('method')}"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
