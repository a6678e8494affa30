"""The tool vocabulary (``streameval/tools.py``): one table says what a tool name means.

The drift cases are the ones the old parallel tables disagreed on (issue 15): the reader
and the categories must read a tool name the same way, in any case.
"""

from __future__ import annotations

import pytest

from streameval.model import CATEGORIES, ToolCall
from streameval.reading.categories import categorize
from streameval.reading.infer import infer
from streameval.tools import (
    EDITOR_TOOLS,
    SHELL_TOOLS,
    SHOWS_NO_CODE,
    SWE_AGENT_COMMANDS,
    TOOLS,
    category_of,
    kind_of,
    script_at,
    wrapped_script,
)

KINDS = {"shell", "editor", "claude_read", "grep", "glob", "ls", "claude_edit", "file_change",
         "apply_patch", "ipython", "gemini_read", "gemini_read_many", "gemini_ls", "gemini_grep",
         "gemini_edit", "other"}

#: the tools that truly are ``other``: they show no repository code and change none.
#: A tool added with category ``other`` must be added here on purpose.
TRULY_OTHER = {"todowrite", "todoread", "todo_list", "task", "tasklist", "agent", "update_plan",
               "think", "webfetch", "websearch", "web_search", "exitplanmode", "bashoutput",
               "killbash", "killshell", "finish", "submit", "recall", "message", "browse",
               "read_mcp_resource", "listmcpresourcestool", "readmcpresourcetool", "view_image",
               # Claude Code's deferred-tool search; Gemini CLI's web, memory and plan tools
               "toolsearch", "google_web_search", "web_fetch", "save_memory", "write_todos",
               "read_thread_terminal"}


def call(tool: str, **inp: object) -> ToolCall:
    return ToolCall(call_id="c1", tool=tool, input=dict(inp))


def test_every_entry_has_a_known_kind_and_category() -> None:
    for name, tool in TOOLS.items():
        assert name == name.lower()
        assert tool.kind in KINDS, name
        if tool.category is None:   # the input decides: a shell command, an editor command
            assert tool.kind in ("shell", "editor"), name
        else:
            assert tool.category in CATEGORIES, name


def test_every_known_tool_has_a_category_other_than_other() -> None:
    """Only the explicit list is ``other``; every other known tool counts as something."""
    others = {name for name, tool in TOOLS.items() if tool.category == "other"}
    assert others == TRULY_OTHER
    assert SHOWS_NO_CODE == TRULY_OTHER
    for name in TOOLS.keys() - TRULY_OTHER:
        assert TOOLS[name].category != "other", name


def test_the_derived_sets_come_from_the_table() -> None:
    assert SHELL_TOOLS == {n for n, t in TOOLS.items() if t.kind == "shell"}
    assert EDITOR_TOOLS == {n for n, t in TOOLS.items() if t.kind == "editor"}
    assert {"bash", "exec_command", "run_shell_command", "execute_bash"} <= SHELL_TOOLS
    assert SWE_AGENT_COMMANDS == {"open", "goto", "scroll_up", "scroll_down", "search_file",
                                  "search_dir", "find_file", "filemap", "create", "edit",
                                  "submit"}


@pytest.mark.parametrize("name", sorted(n for n, t in TOOLS.items() if t.category is not None))
def test_reader_and_categories_agree_on_every_tool_in_any_case(name: str) -> None:
    """What the table says is what ``categorize`` and the reader give, whatever the case."""
    expected = TOOLS[name].category
    for spelled in (name, name.upper(), name.title()):
        assert categorize(call(spelled)) == expected, spelled
        assert infer(call(spelled)).category == expected, spelled


# --------------------------------------------------------------------------- drift cases


def test_ipython_cell_tools_are_one_entry() -> None:
    """Drift: ``categorize`` gave ``other`` for ``execute_ipython_cell``, ``run`` for
    ``run_ipython``; both are OpenHands' IPython tool."""
    for name in ("execute_ipython_cell", "run_ipython", "ipython"):
        assert kind_of(name, {}) == "ipython"
        assert categorize(call(name, code="x = 1")) == "run"
        assert infer(call(name, code="x = 1")).category == "run"


def test_notebookread_in_any_case_is_a_read() -> None:
    """Drift: ``categorize`` gave ``read`` for ``NotebookRead``, ``other`` for
    ``notebookread``."""
    for name in ("NotebookRead", "notebookread", "NOTEBOOKREAD"):
        assert kind_of(name, {}) == "claude_read"
        assert categorize(call(name)) == "read"


def test_swe_agent_filemap_is_a_search_everywhere() -> None:
    """Drift: SWE-agent's command reader called ``filemap`` a search, ``categorize`` other."""
    sweagent = call("filemap", command="filemap /testbed/a.py")
    assert kind_of("filemap", sweagent.input) == "sweagent"
    assert infer(sweagent).category == categorize(sweagent) == "search"
    assert categorize(call("filemap")) == "search"


def test_an_editor_command_line_is_categorized_by_its_command() -> None:
    """Drift: the reader parsed ``view /f`` given as one command line (a view: read),
    ``categorize`` read only a ``command`` field that is exactly ``view`` (edit)."""
    viewed = call("str_replace_editor", command="view /testbed/a.py --view_range 1 5")
    assert infer(viewed).category == categorize(viewed) == "read"
    edited = call("str_replace_editor", command="create /testbed/b.py --file_text x")
    assert infer(edited).category == categorize(edited) == "edit"
    # OpenHands' read takes a path and no command: a view
    assert categorize(call("read", path="/workspace/a.c")) == "read"


def test_input_dependent_kinds_are_kept() -> None:
    assert kind_of("edit", {"path": "/w/a.c", "command": "str_replace"}) == "editor"
    assert kind_of("Edit", {"file_path": "/w/a.c"}) == "claude_edit"
    assert kind_of("edit", {"command": "edit 3:4\nx\nend_of_edit"}) == "sweagent"
    assert kind_of("open", {"command": "open a.py 20"}) == "sweagent"
    assert kind_of("open", {}) == "other" and category_of("open") == "read"
    assert kind_of("mcp__server__read_file", {}) == "other"
    assert category_of("mcp__server__read_file") == "other"


def test_script_at_is_the_one_rule_for_bash_c() -> None:
    assert script_at(["bash", "-lc", "ls"]) == 2
    assert script_at(["bash", "-e", "-c", "ls"]) == 3
    assert script_at(["bash", "x.sh", "-c", "ls"]) is None   # runs x.sh
    assert script_at(["bash", "-c"]) is None
    assert wrapped_script(["/bin/sh", "-c", "pytest"]) == "pytest"
    assert wrapped_script(["python", "-c", "print(1)"]) is None


@pytest.mark.parametrize("tool", ["ToolSearch", "read_thread_terminal", "google_web_search",
                                  "write_todos"])
def test_built_in_tools_that_show_no_code_are_never_unknown(tool: str) -> None:
    """Claude Code 2.1's ``ToolSearch`` (it finds deferred tools, e.g.
    ``select:WebSearch,WebFetch``), Codex Desktop's terminal panel, Gemini CLI's web and
    plan tools: known, category ``other``, nothing read, no ``unknown_tool``."""
    inf = infer(call(tool, query="select:WebSearch,WebFetch", max_results=2))
    assert inf.category == "other" and inf.reads == [] and inf.problems == []
