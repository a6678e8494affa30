"""OpenHands' IPython tool (``run_ipython``): a Python cell, run in the agent's kernel.

The cell is parsed, never run (``shell.python.script_files``): files it writes are edits
whose text we do not know, through ``open(p, "w")`` or the file skills
(``edit_file_by_replace``, ``insert_content_at_line``, ``append_file``, ``create_file``).
What it showed is its output: the skills print a window of a file,
``[File: /abs/path (N lines total)]`` then ``(K more lines above)`` and ``12|text``
lines, which credits those lines like any numbered output.
"""

from __future__ import annotations

from streameval.model import Edit, ToolCall
from streameval.reading.editor import EditorResult
from streameval.reading.output.numbered import FILE_WINDOW, PIPE_LINE, numbered_read
from streameval.reading.shell.python import script_files

__all__ = ["ipython_call"]



def ipython_call(call: ToolCall, failed: bool) -> EditorResult:
    code = call.input.get("code") if isinstance(call.input, dict) else None
    res = EditorResult(category="run")
    if not isinstance(code, str) or failed or call.interrupted:
        return res
    reads, writes = script_files(code)
    res.edits.extend(Edit(p) for p in writes)
    if writes:
        res.category = "edit"
    elif reads:
        res.category = "read"
    out = call.output if isinstance(call.output, str) else ""
    headers = list(FILE_WINDOW.finditer(out))
    for k, header in enumerate(headers):
        end = headers[k + 1].start() if k + 1 < len(headers) else len(out)
        found = PIPE_LINE.findall(out, header.end(), end)
        numbers = [int(n) for n, _ in found if int(n) > 0]
        lines = [t for n, t in found if int(n) > 0]
        if numbers:
            res.reads.append(numbered_read(header.group(1).strip(), numbers, lines))
    return res
