"""The tool vocabulary: which tool names mean what, stated once for every agent.

Agents name the same few kinds of tool differently: a shell is ``Bash`` (Claude Code),
``shell``/``exec_command``/``command_execution`` (Codex), ``bash`` (mini-swe-agent,
SWE-agent), ``run``/``execute_bash`` (OpenHands), ``run_shell_command`` (Gemini CLI).
Every room of ``reading`` asks this module, so one table (``TOOLS``) decides what a name
means: how its calls are read (its kind) and how they are counted (its category,
docs/metrics.md §7). A tool name is compared without regard to case. Only two rules look
at a call's input as well (``kind_of``): OpenHands' ``read``/``edit`` with a ``path``, and
SWE-agent 0.x commands given as a command line.

A shell command may arrive as one string or as an argv list, and often wrapped in
``bash -lc '<script>'``; ``command_text`` gives the script the agent wrote. The rule for
"this argv runs a script string" (``wrapped_script``) is the one the shell parser also
uses for nested ``bash -c``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any, NamedTuple

__all__ = ["Tool", "TOOLS", "tool_named", "category_of", "kind_of", "SHELL_TOOLS", "EDITOR_TOOLS",
           "EDITOR_COMMANDS", "SWE_AGENT_COMMANDS", "SHOWS_NO_CODE", "SHELL_PROGRAMS",
           "command_text", "is_script_flag", "script_at", "wrapped_script",
           "parse_editor_command", "split_words", "as_int"]


class Tool(NamedTuple):
    """What a tool name means: how the reader reads its calls, and their category.

    ``kind``: ``shell``, ``editor``, ``claude_read``, ``grep``, ``glob``, ``ls``,
    ``claude_edit``, ``file_change``, ``apply_patch``, ``ipython``, ``gemini_*`` or ``other`` (the
    reader does not read it; its category still counts). ``category``: one of
    ``model.CATEGORIES``, or None where the call's input decides (a shell command, an
    editor's sub-command). ``sweagent``: SWE-agent 0.x runs a command of this name in its
    shell (``open f 273``, ``edit 10:12``); a call whose command line starts with the
    name is read as that command (kind ``sweagent``).
    """

    kind: str
    category: str | None
    sweagent: bool = False


#: (kind, category, names): every tool name streameval knows, once. Names are compared
#: without regard to case, so ``Read`` and ``read`` are one entry.
_GROUPS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    # the input decides: the shell command, the editor's sub-command (view is a read)
    ("shell", None, ("bash", "shell", "command_execution", "run", "execute_bash",
                     "exec_command", "local_shell", "local_shell_call", "terminal", "cmd_run",
                     "run_command", "run_shell_command", "exec", "run_terminal_cmd",
                     "container.exec", "execute_command", "shell_command")),
    # Anthropic-style text editors (SWE-agent, OpenHands, Claude's API tool):
    # ``{command: view|create|str_replace|insert|undo_edit, path, ...}``
    ("editor", None, ("str_replace_editor", "str_replace_based_edit_tool", "editor",
                      "file_editor", "text_editor")),
    # tools the reader reads
    ("claude_read", "read", ("read", "notebookread")),
    ("grep", "search", ("grep",)),
    ("glob", "search", ("glob",)),
    ("ls", "search", ("ls",)),
    ("claude_edit", "edit", ("edit", "multiedit", "write", "notebookedit")),
    ("file_change", "edit", ("file_change",)),
    ("apply_patch", "edit", ("apply_patch",)),
    ("ipython", "run", ("run_ipython", "ipython", "execute_ipython_cell")),
    # Gemini CLI's file tools (``reading.gemini``)
    ("gemini_read", "read", ("read_file",)),
    ("gemini_read_many", "read", ("read_many_files",)),
    ("gemini_ls", "search", ("list_directory",)),
    ("gemini_grep", "search", ("search_file_content",)),
    ("gemini_edit", "edit", ("write_file", "replace")),
    # tools known by their category only (SWE-agent 0.x commands and other agents' tools)
    ("other", "read", ("view", "readfile", "open", "goto", "scroll_up",
                       "scroll_down", "view_file", "cat_file")),
    ("other", "search", ("find_file", "search_dir", "search_file", "filemap", "list_dir",
                         "list_files", "search_files", "codebase_search",
                         "file_search", "find")),
    ("other", "edit", ("str_replace", "create", "insert", "edit_file", "undo_edit")),
    # tools that show no repository code and change none: planning, sub-agents, the web,
    # background shells' output, MCP resources, the end of a run. Some look like reads
    # by name (``todoread``, ``websearch``); they are no unknown tool.
    ("other", "other", ("todowrite", "todoread", "todo_list", "task", "tasklist", "agent",
                        "update_plan", "think", "webfetch", "websearch", "web_search",
                        "exitplanmode", "bashoutput", "killbash", "killshell", "finish",
                        "submit", "recall", "message", "browse", "read_mcp_resource",
                        "listmcpresourcestool", "readmcpresourcetool", "view_image",
                        # Claude Code's search for deferred tools (2.1): finds tools, not code
                        "toolsearch",
                        # Gemini CLI: the web, its memory file, its plan
                        "google_web_search", "web_fetch", "save_memory", "write_todos",
                        # Codex Desktop: the app's terminal panel of the thread (what the
                        # user's terminal shows, not a file)
                        "read_thread_terminal")),
)
#: SWE-agent 0.x's own commands, run in its shell (``open f 273``, ``edit 10:12``...)
_SWE_AGENT = frozenset({"open", "goto", "scroll_up", "scroll_down", "search_file",
                        "search_dir", "find_file", "filemap", "create", "edit", "submit"})


def _table() -> dict[str, Tool]:
    table: dict[str, Tool] = {}
    for kind, category, names in _GROUPS:
        for name in names:
            assert name == name.lower() and name not in table, name
            table[name] = Tool(kind, category, name in _SWE_AGENT)
    assert _SWE_AGENT <= table.keys(), _SWE_AGENT - table.keys()
    return table


#: lower-case tool name -> what it means, for every agent
TOOLS: dict[str, Tool] = _table()
#: tools whose input is a shell command
SHELL_TOOLS = frozenset(n for n, t in TOOLS.items() if t.kind == "shell")
EDITOR_TOOLS = frozenset(n for n, t in TOOLS.items() if t.kind == "editor")
SWE_AGENT_COMMANDS = frozenset(n for n, t in TOOLS.items() if t.sweagent)
#: tools known to show no repository code (a name that looks like a read is no unknown tool)
SHOWS_NO_CODE = frozenset(n for n, t in TOOLS.items() if t.category == "other")
#: editors that also run as a command in the agent's shell (SWE-agent's tool bundle,
#: Claude's API tool): ``str_replace_editor view /f``
EDITOR_COMMANDS = ("str_replace_editor", "str_replace_based_edit_tool")

#: programs that run a script given after a ``-c`` flag
SHELL_PROGRAMS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SCRIPT_FLAG = re.compile(r"-[a-zA-Z]*c[a-zA-Z]*")


def tool_named(tool: str) -> Tool | None:
    """The table's entry for a tool name (any case, blanks around it ignored)."""
    return TOOLS.get(tool.strip().lower())


def category_of(tool: str) -> str | None:
    """The category a tool's name gives its calls: ``other`` for a tool not in the
    table, None where the call's input decides (shells, editors)."""
    entry = tool_named(tool)
    return entry.category if entry is not None else "other"


def kind_of(tool: str, tool_input: dict[str, Any]) -> str:
    """What a call is, for the reader: a ``Tool.kind``, or ``sweagent``.

    The same names mean different tools in different agents, so the input decides:
    OpenHands' ``read``/``edit`` (``oh_aci``) take a ``path`` where Claude's take a
    ``file_path``; SWE-agent 0.x's ``edit``/``open``... carry their whole command line.
    """
    low = tool.strip().lower()
    entry = TOOLS.get(low)
    if entry is None:
        return "other"
    command = tool_input.get("command")
    if entry.sweagent and isinstance(command, str) \
            and command.strip().split(None, 1)[:1] == [low]:
        return "sweagent"   # SWE-agent 0.x: the tool's name starts its command line
    if low in ("read", "edit") and "path" in tool_input and "file_path" not in tool_input:
        return "editor"
    return entry.kind


def is_script_flag(word: str) -> bool:
    """``-c``, ``-lc``, ``-ic``...: the next argument is a script."""
    return _SCRIPT_FLAG.fullmatch(word) is not None


def script_at(argv: list[str]) -> int | None:
    """Where the script of a shell's argv is: the word after ``-c`` (or ``-lc``...) when
    only flags come before it (``bash -e -c 'x'``; ``bash x.sh -c`` runs a file), else
    None. The program itself is not checked: see ``wrapped_script``."""
    for i, word in enumerate(argv[1:-1], 1):
        if is_script_flag(word):
            return i + 1
        if not word.startswith("-"):
            return None
    return None


def wrapped_script(argv: list[str]) -> str | None:
    """The script of ``bash -lc '<script>'`` (any shell, any flags before ``-c``), else None."""
    if not argv or posixpath.basename(argv[0]) not in SHELL_PROGRAMS:
        return None
    at = script_at(argv)
    return argv[at] if at is not None else None


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
