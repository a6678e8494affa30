"""The tool vocabulary: which tool names mean what, stated once for every agent.

Agents name the same few kinds of tool differently: a shell is ``Bash`` (Claude Code),
``shell``/``exec_command``/``command_execution`` (Codex), ``bash`` (mini-swe-agent,
SWE-agent), ``run``/``execute_bash`` (OpenHands), ``run_shell_command`` (Gemini CLI).
Every room of ``reading`` asks this module, so one list decides, and a tool name is
compared without regard to case.

A shell command may arrive as one string or as an argv list, and often wrapped in
``bash -lc '<script>'``; ``command_text`` gives the script the agent wrote. The rule for
"this argv runs a script string" (``wrapped_script``) is the one the shell parser also
uses for nested ``bash -c``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any

__all__ = ["SHELL_PROGRAMS", "EDITOR_TOOLS", "SWE_AGENT_COMMANDS", "command_text", "kind_of",
           "is_script_flag", "wrapped_script"]

#: tools whose input is a shell command
SHELL_TOOLS = frozenset({
    "bash", "shell", "command_execution", "run", "execute_bash", "exec_command", "local_shell",
    "local_shell_call", "terminal", "cmd_run", "run_command", "run_shell_command", "exec",
    "run_terminal_cmd", "container.exec", "execute_command", "shell_command",
})
#: Anthropic-style text editors (SWE-agent, OpenHands, Claude's API tool):
#: ``{command: view|create|str_replace|insert|undo_edit, path, ...}``
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "editor",
                          "file_editor", "text_editor"})
#: SWE-agent 0.x's own commands, run in its shell (``open f 273``, ``edit 10:12``...)
SWE_AGENT_COMMANDS = frozenset({"open", "goto", "scroll_up", "scroll_down", "search_file",
                                "search_dir", "find_file", "create", "edit", "submit",
                                "filemap"})
#: tools whose names look like reads but show no repository code
NOT_READS = frozenset({"todoread", "websearch", "webfetch", "bashoutput", "read_mcp_resource",
                       "listmcpresourcestool", "readmcpresourcetool", "tasklist",
                       "web_search", "view_image"})

#: programs that run a script given after a ``-c`` flag
SHELL_PROGRAMS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SCRIPT_FLAG = re.compile(r"-[a-zA-Z]*c[a-zA-Z]*")

_KINDS: dict[str, str] = {}
for _kind, _names in {
    "claude_read": ("read", "notebookread"),
    "grep": ("grep",),
    "glob": ("glob",),
    "ls": ("ls",),
    "claude_edit": ("edit", "multiedit", "write", "notebookedit"),
    "file_change": ("file_change",),
    "apply_patch": ("apply_patch",),
    "ipython": ("run_ipython", "ipython", "execute_ipython_cell"),
}.items():
    for _n in _names:
        _KINDS[_n] = _kind


def kind_of(tool: str, tool_input: dict[str, Any]) -> str:
    """What a call is, for the reader: ``shell``, ``editor``, ``sweagent``,
    ``claude_read``, ``grep``, ``glob``, ``ls``, ``claude_edit``, ``file_change``,
    ``apply_patch``, ``ipython`` or ``other``.

    The same names mean different tools in different agents, so the input decides:
    OpenHands' ``read``/``edit`` (``oh_aci``) take a ``path`` where Claude's take a
    ``file_path``; SWE-agent 0.x's ``edit``/``open``... carry their whole command line.
    """
    low = tool.strip().lower()
    command = tool_input.get("command")
    if low in SWE_AGENT_COMMANDS and isinstance(command, str) \
            and command.strip().split(None, 1)[:1] == [low]:
        return "sweagent"   # SWE-agent 0.x: the tool's name starts its command line
    if low in ("read", "edit") and "path" in tool_input and "file_path" not in tool_input:
        return "editor"
    if low in EDITOR_TOOLS:
        return "editor"
    if low in SHELL_TOOLS:
        return "shell"
    return _KINDS.get(low, "other")


def is_script_flag(word: str) -> bool:
    """``-c``, ``-lc``, ``-ic``...: the next argument is a script."""
    return _SCRIPT_FLAG.fullmatch(word) is not None


def wrapped_script(argv: list[str]) -> str | None:
    """The script of ``bash -lc '<script>'`` (any shell, any flags before ``-c``), else None."""
    if len(argv) < 3 or posixpath.basename(argv[0]) not in SHELL_PROGRAMS:
        return None
    for i, word in enumerate(argv[1:-1], 1):
        if is_script_flag(word):
            return argv[i + 1]
        if not word.startswith("-"):
            return None
    return None


def command_text(value: Any) -> str | None:
    """The shell script a call ran: a string, or an argv list (Codex ``["bash", "-lc",
    X]``); one ``bash -c`` wrapper is taken off either form, since the script inside is
    what the agent wrote."""
    if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
        script = wrapped_script(value)
        return script if script is not None else shlex.join(value)
    if not isinstance(value, str):
        return None
    head = value.lstrip().split(" ", 1)[0]
    if posixpath.basename(head) in SHELL_PROGRAMS:
        try:
            script = wrapped_script(shlex.split(value))
        except ValueError:
            return value
        if script is not None:
            return script
    return value
