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
           "is_script_flag", "wrapped_script", "parse_editor_command", "split_words", "as_int"]

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


# --------------------------------------------------------------------------- editor command line

_EDITOR_OPTIONS = ("file_text", "view_range", "old_str", "new_str", "insert_line")


def split_words(text: str) -> tuple[list[str], str | None]:
    """Shell words of ``text`` (POSIX quoting), or a whitespace split and why not."""
    try:
        lexer = shlex.shlex(text, posix=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer), None
    except ValueError as exc:  # an unterminated quote
        return text.split(), f"could not split the command line: {exc}"


def as_int(word: Any) -> int | None:
    if isinstance(word, bool):
        return None
    if isinstance(word, int):
        return word
    try:
        return int(str(word).strip())
    except ValueError:
        return None


def parse_editor_command(action: str) -> dict[str, Any]:
    """``str_replace_editor <command> <path> [--option value...]`` -> the tool's input.

    Keys: command, path, view_range ([a, b] or None), old_str, new_str, file_text,
    insert_line (int or None); ``extra_args`` (words the tool's parser would reject)
    and ``parse_error`` only when there are any. ``--view_range=10 20`` and
    ``--view_range 10 20`` are the same.
    """
    words, error = split_words(action)
    out: dict[str, Any] = {"command": None, "path": None, "view_range": None, "old_str": None,
                           "new_str": None, "file_text": None, "insert_line": None}
    positional: list[str] = []
    extra: list[str] = []
    i = 1 if words and words[0] in EDITOR_TOOLS else 0
    while i < len(words):
        word = words[i]
        name, eq, inline = word[2:].partition("=") if word.startswith("--") else ("", "", "")
        if name in _EDITOR_OPTIONS:
            i = _take_option(out, name, inline if eq else None, words, i + 1, extra)
            continue
        (positional if len(positional) < 2 else extra).append(word)
        i += 1
    out["command"], out["path"] = (positional + [None, None])[:2]
    if extra:
        out["extra_args"] = extra
    if error:
        out["parse_error"] = error
    return out


def _take_option(out: dict, name: str, inline: str | None, words: list[str], i: int,
                 extra: list[str]) -> int:
    """Store option ``name``'s value(s) from ``words[i:]``; return the next index."""
    if name == "view_range":
        values = [inline] if inline is not None else []
        while len(values) < 2 and i < len(words):
            values.append(words[i])
            i += 1
        ints = [as_int(v) for v in values]
        if len(ints) == 2 and None not in ints:
            out["view_range"] = ints
        else:
            extra.extend(["--view_range", *values])
        return i
    if inline is None:
        if i >= len(words):
            extra.append("--" + name)
            return i
        inline, i = words[i], i + 1
    out[name] = as_int(inline) if name == "insert_line" else inline
    if name == "insert_line" and out[name] is None:
        extra.extend(["--insert_line", inline])
    return i
