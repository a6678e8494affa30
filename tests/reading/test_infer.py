"""infer: one ToolCall -> what it showed and changed (docs/metrics.md §6), no repo."""

from __future__ import annotations

import pytest
from shown_runs import runs_of

from streameval.errors import Reason
from streameval.model import Edit, Read, ToolCall
from streameval.reading import native
from streameval.reading.infer import infer
from streameval.reading.native import structured_hunks
from streameval.reading.output.numbered import numbered_runs, parse_numbered
from streameval.reading.shell import settle
from streameval.tools import parse_editor_command


def call(tool, inp, output=None, **kw) -> ToolCall:
    return ToolCall(call_id="c1", tool=tool, input=inp, output=output, **kw)


def grep_content_reads(output: str, path: str | None) -> list[Read]:
    inp = {"pattern": "x", "output_mode": "content", **({"path": path} if path else {})}
    return native.claude_grep(call("Grep", inp, output=output)).reads


def numbered(start: int, end: int, sep: str = "→") -> str:
    return "\n".join(f"{n:6d}{sep}code {n}" for n in range(start, end + 1))


# --------------------------------------------------------------------------- Claude Read


def test_claude_read_offset_is_the_first_line_shown():
    inf = infer(call("Read", {"file_path": "/r/a.py", "offset": 45, "limit": 20}))
    assert inf.reads == [Read("/r/a.py", 45, 64)]
    assert inf.category == "read"


def test_claude_read_without_limit_asks_for_2000_lines():
    assert infer(call("Read", {"file_path": "a.py"})).reads == [Read("a.py", 1, 2000)]


def test_claude_read_structured_result_wins_over_the_request():
    c = call("Read", {"file_path": "/r/a.py"}, output=numbered(1, 120),
             structured={"type": "text", "file": {"filePath": "/r/a.py", "startLine": 1,
                                                  "numLines": 120, "totalLines": 120}})
    assert infer(c).reads == [Read("/r/a.py", 1, 120)]


def test_claude_read_numbered_output_wins_when_no_structured_result():
    c = call("Read", {"file_path": "/r/a.py", "offset": 500, "limit": 400},
             output=numbered(500, 512) + "\n\n<system-reminder>\n1. not a line\n</system-reminder>")
    assert infer(c).reads == [Read("/r/a.py", 500, 512)]


def test_claude_read_of_an_empty_file_is_a_file_without_lines():
    c = call("Read", {"file_path": "e.py"},
             output="<system-reminder>Warning: the file exists but the contents are empty."
                    "</system-reminder>")
    assert infer(c).reads == [Read("e.py", listing=True)]


@pytest.mark.parametrize("output,is_error", [
    ("<tool_use_error>File does not exist.</tool_use_error>", True),
    ("File does not exist.", False),
    ("EISDIR: illegal operation on a directory, read", True),
    ("<tool_use_error>File has not been read yet.</tool_use_error>", False),
])
def test_claude_read_error_reads_nothing(output, is_error):
    inf = infer(call("Read", {"file_path": "/r/a.py"}, output=output, is_error=is_error))
    assert inf.reads == [] and inf.failed


def test_notebook_read_is_the_whole_file():
    assert infer(call("NotebookRead", {"notebook_path": "n.ipynb"})).reads == [Read("n.ipynb")]


def test_numbered_runs_splits_at_gaps():
    out = "header\n     1\tA\n     2\tB\n    10\tC\n    11\tD\n"
    assert numbered_runs(parse_numbered(out).numbers) == [(1, 2), (10, 11)]
    assert parse_numbered("    12 text").numbers == []
    assert parse_numbered("    12 text", "loose").numbers == [12]
    # SWE-agent's abbreviated view: an elision marker shows no line
    assert parse_numbered("   101 x\n   102 ... eliding lines 102-108 ...\n   109 y",
                          "loose").numbers == [101, 109]


# --------------------------------------------------------------------------- Grep / Glob / LS


def test_grep_content_multi_file_with_context_lines():
    out = ("src/a-b.py-9-    ctx before\n"
           "src/a-b.py:10:    match\n"
           "src/a-b.py-11-    ctx after\n"
           "--\n"
           "lib/c.py:3:other\n")
    c = call("Grep", {"pattern": "m", "output_mode": "content", "-n": True, "-A": 1, "-B": 1},
             output=out)
    inf = infer(c)
    assert inf.reads == [Read("src/a-b.py", 9, 11), Read("lib/c.py", 3, 3)]
    assert inf.category == "search"


def test_grep_content_single_file_numbers_belong_to_the_path():
    out = ("70-    // Check\n71-    try {\n75:        const fork = 1;\n76-    x\n--\n"
           "90:  again\n\n[Showing results with pagination = limit: 20, offset: 0]")
    c = call("Grep", {"pattern": "x", "path": "src/solve.mjs", "output_mode": "content",
                      "-n": True, "-B": 5, "-A": 1}, output=out)
    assert runs_of(infer(c).reads) == [Read("src/solve.mjs", 70, 71),
                                       Read("src/solve.mjs", 75, 76),
                                       Read("src/solve.mjs", 90, 90)]
    assert len(infer(c).reads) == 1          # one read of the file, its numbers scattered


def test_grep_single_file_line_that_looks_like_a_path_match():
    out = "12:    x = 'a:3:b'\n13-    y = 1\n20:    z = 'q:7:r'\n"
    assert runs_of(grep_content_reads(out, "pkg/m.py")) == [Read("pkg/m.py", 12, 13),
                                                            Read("pkg/m.py", 20, 20)]


def test_grep_content_without_numbers_keeps_the_text_for_alignment():
    reads = grep_content_reads("src/a.py:def f():\nsrc/b.py:  f()\n", None)
    assert reads == [Read("src/a.py"), Read("src/b.py")]
    assert reads[0].shown.lines == ("def f():",) and reads[0].shown.gaps
    assert reads[1].shown.lines == ("  f()",) and reads[1].shown.numbers is None


def test_grep_files_with_matches_is_file_level():
    out = "Found 2 files limit: 20, offset: 0\nsrc/a.py\nsrc/b.py"
    inf = infer(call("Grep", {"pattern": "x", "output_mode": "files_with_matches"}, output=out))
    assert inf.reads == [Read("src/a.py", listing=True), Read("src/b.py", listing=True)]
    # the default mode is files_with_matches; structured filenames are preferred
    inf = infer(call("Grep", {"pattern": "x"}, output="Found 1 file\nignored.py",
                     structured={"mode": "files_with_matches", "filenames": ["/r/z.py"]}))
    assert inf.reads == [Read("/r/z.py", listing=True)]


def test_grep_no_matches_and_count_mode():
    assert infer(call("Grep", {"pattern": "x"}, output="No files found")).reads == []
    c = call("Grep", {"pattern": "x", "output_mode": "count"}, output="a.py:3\nb/c.py:1")
    assert infer(c).reads == [Read("a.py", listing=True), Read("b/c.py", listing=True)]


def test_glob_and_ls_are_listings():
    inf = infer(call("Glob", {"pattern": "**/*.py"}, output="/r/a.py\n/r/b/c.py"))
    assert inf.reads == [Read("/r/a.py", listing=True), Read("/r/b/c.py", listing=True)]
    tree = "- /r/\n  - a.py\n  - pkg/\n    - m.py\n  - z.txt\n"
    assert infer(call("LS", {"path": "/r"}, output=tree)).reads == [
        Read("/r/a.py", listing=True), Read("/r/pkg/m.py", listing=True),
        Read("/r/z.txt", listing=True)]


# --------------------------------------------------------------------------- Claude edits


def test_claude_edit_with_structured_patch_keeps_only_changed_lines():
    patch = [{"oldStart": 64, "oldLines": 7, "newStart": 64, "newLines": 8,
              "lines": ["  a", "  b", "  c", "-old", "+new1", "+new2", "  d", "  e", "  f"]}]
    c = call("Edit", {"file_path": "/r/a.tsx", "old_string": "old", "new_string": "new1\nnew2"},
             output="The file /r/a.tsx has been updated.",
             structured={"filePath": "/r/a.tsx", "structuredPatch": patch})
    inf = infer(c)
    assert inf.edits == [Edit("/r/a.tsx", old="old", new="new1\nnew2", hunks=((67, 1, 67, 2),),
                              hunk_text=(("new1", "new2"),))]
    assert inf.reads == [] and inf.category == "edit"


def test_structured_hunks_split_at_inner_context_and_pure_insertions():
    patch = [{"oldStart": 10, "oldLines": 5, "newStart": 10, "newLines": 6,
              "lines": [" a", "-b", " c", "+n", " d", " e"]}]
    # b deleted at old 11; n inserted after old line 12, as new line 12
    # (unified convention: a side with 0 lines names the line before the change)
    assert structured_hunks(patch) == (
        ((11, 1, 10, 0), (12, 0, 12, 1)), ((), ("n",)))
    assert structured_hunks("nope") == (None, None)


def test_multiedit_write_and_notebook_edit():
    inf = infer(call("MultiEdit", {"file_path": "f.py", "edits": [
        {"old_string": "a", "new_string": "b"},
        {"old_string": "c", "new_string": "d", "replace_all": True}]}))
    assert inf.edits == [Edit("f.py", old="a", new="b"), Edit("f.py", old="c", new="d",
                                                             replace_all=True)]
    assert infer(call("Write", {"file_path": "n.py", "content": "x\n"})).edits == [
        Edit("n.py", content="x\n")]
    assert infer(call("NotebookEdit", {"notebook_path": "n.ipynb"})).edits == [Edit("n.ipynb")]


def test_rejected_or_failed_edit_changes_nothing():
    c = call("Edit", {"file_path": "/tmp/w", "old_string": "a", "new_string": "b"},
             output="The user doesn't want to proceed with this tool use.", is_error=True)
    assert infer(c).edits == []


def test_codex_file_change_is_an_unknown_edit():
    inf = infer(call("file_change", {"changes": [{"path": "/w/a.py", "kind": "add"}]}))
    assert inf.edits == [Edit("/w/a.py")] and inf.category == "edit"


# --------------------------------------------------------------------------- editors


def test_str_replace_editor_view_uses_the_lines_shown():
    out = "Here's the result of running `cat -n` on /testbed/x.py:\n" + numbered(140, 151, "\t")
    c = call("str_replace_editor", {"command": "view", "path": "/testbed/x.py",
                                    "view_range": [140, 151]}, output=out)
    assert infer(c).reads == [Read("/testbed/x.py", 140, 151)]


def test_abbreviated_view_counts_only_the_lines_shown():
    out = ("<NOTE>This file is too large to display entirely.</NOTE>\n"
           "     1 import a\n     2 import b\n    40 def f():\n    41     ...\n")
    c = call("str_replace_editor", {"command": "view", "path": "/testbed/big.py"}, output=out)
    assert runs_of(infer(c).reads) == [Read("/testbed/big.py", 1, 2),
                                       Read("/testbed/big.py", 40, 41)]


def test_editor_view_without_output_uses_the_range():
    c = call("str_replace_editor", {"command": "view", "path": "/t/x.py", "view_range": [730, -1]})
    assert infer(c).reads == [Read("/t/x.py", 730, None)]
    c = call("read", {"path": "/w/p.c", "start": 0, "end": -1, "view_range": [650, 700]})
    assert infer(c).reads == [Read("/w/p.c", 650, 700)]
    assert infer(call("read", {"path": "/w/p.c", "start": 0, "end": -1})).reads == [
        Read("/w/p.c", None, None)]


def test_editor_usage_error_reads_nothing():
    out = ("usage: str_replace_editor [-h] [--file_text FILE_TEXT]\n"
           "str_replace_editor: error: unrecognized arguments: [1060, 1220]\n")
    c = call("str_replace_editor", {"command": "view", "path": "/testbed/x.py"}, output=out)
    assert infer(c).reads == []


def test_editor_directory_view_lists_files():
    out = ("Here's the files and directories up to 2 levels deep in /testbed, excluding hidden "
           "items:\n/testbed\n/testbed/setup.py\n/testbed/pkg\n/testbed/pkg/a.py\n")
    reads = infer(call("str_replace_editor", {"command": "view", "path": "/testbed"},
                       output=out)).reads
    assert Read("/testbed/pkg/a.py", listing=True) in reads and all(r.listing for r in reads)


def test_editor_edits():
    base = {"path": "/t/x.py"}
    assert infer(call("str_replace_editor", {**base, "command": "str_replace", "old_str": "a",
                                             "new_str": "b"})).edits == [
        Edit("/t/x.py", old="a", new="b")]
    assert infer(call("str_replace_editor", {**base, "command": "insert", "insert_line": "3",
                                             "new_str": "z"})).edits == [
        Edit("/t/x.py", insert_line=3, new="z")]
    assert infer(call("str_replace_editor", {**base, "command": "create",
                                             "file_text": "q\n"})).edits == [
        Edit("/t/x.py", content="q\n")]
    assert infer(call("str_replace_editor", {**base, "command": "undo_edit"})).edits == [
        Edit("/t/x.py")]


def test_openhands_edit_error_changes_nothing():
    c = call("edit", {"path": "/w/p.c", "command": "str_replace", "old_str": "x", "new_str": "y"},
             output="ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim")
    inf = infer(c)
    assert inf.edits == [] and inf.category == "edit"


def test_editor_command_line_is_parsed_when_it_comes_through_bash():
    assert parse_editor_command("str_replace_editor view /t/a.py --view_range 3 9") == {
        "command": "view", "path": "/t/a.py", "view_range": [3, 9], "old_str": None,
        "new_str": None, "file_text": None, "insert_line": None}
    # one parser: `--view_range=3 9` is the same call
    assert parse_editor_command("str_replace_editor view /t/a.py --view_range=3 9")[
        "view_range"] == [3, 9]
    out = "Here's the result of running `cat -n` on /t/a.py:\n" + numbered(3, 9, "\t")
    inf = infer(call("bash", {"command": "str_replace_editor view /t/a.py --view_range 3 9"},
                     output=out))
    assert inf.reads == [Read("/t/a.py", 3, 9)] and inf.category == "read"


# --------------------------------------------------------------------------- shell


def test_shell_cd_then_cat_reads_the_joined_path():
    inf = infer(call("Bash", {"command": "cd sub && cat -n f.py"}, output="     1\tx", cwd="/r"))
    assert inf.reads == [Read("sub/f.py", 1, 1)]   # relative to the call's cwd, after the cd
    assert inf.category == "read"


def test_codex_argv_command_and_failed_shell_call():
    inf = infer(call("shell", {"command": ["bash", "-lc", "sed -n '1,40p' src/x.py"]}))
    assert inf.reads == [Read("src/x.py", 1, 40)]
    # a failed command is not all-or-nothing: what it printed decides (here text shared
    # with pytest's, so lines matching nothing there are nobody's writing)
    failed = infer(call("Bash", {"command": "cat a.py && pytest"}, output="boom", is_error=True))
    # two printers share the output: split once the step builder knows the files (here
    # none: where cat's lines end is unknown, so each finds its own by their look)
    assert failed.reads == [] and len(failed.pending) == 1
    reads = settle(failed.pending[0], None)
    assert [r.path for r in reads] == ["a.py"] and reads[0].shown.loose
    assert not failed.failed


def test_apply_patch_tool_gives_edits():
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-old\n+new\n*** End Patch"
    inf = infer(call("apply_patch", {"input": patch}))
    assert [e.path for e in inf.edits] == ["a.py"] and inf.category == "edit"


# --------------------------------------------------------------------------- unknown tools


def test_unknown_tools_are_counted_only_when_they_might_read():
    inf = infer(call("open_file_viewer", {"x": 1}))
    assert inf.problems and inf.problems[0][0] is Reason.UNKNOWN_TOOL and inf.reads == []
    inf = infer(call("TodoWrite", {"todos": []}))
    assert inf.problems == [] and inf.category == "other"
    assert infer(call("WebSearch", {"query": "x"})).problems == []


def test_bad_inputs_never_raise():
    for tool, inp in [("Read", {}), ("Read", {"file_path": 3}), ("Grep", {"output_mode": 5}),
                      ("str_replace_editor", {"command": "view"}), ("Bash", {"command": None}),
                      ("Edit", {"file_path": "a", "old_string": None}), ("shell", "not a dict")]:
        inf = infer(call(tool, inp, output="\x00\xff garbage"))
        assert inf.category in {"read", "search", "edit", "test", "git", "env", "build",
                                "quality", "run", "other"}


# --------------------------------------------------------------------------- real traces


def _claude_calls(path):
    from streameval.traces.formats.claude import ClaudeAdapter

    adapter = ClaudeAdapter()
    events = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            events.extend(adapter.feed(line.rstrip(b"\n"), n))
    events.extend(adapter.close())
    return [e for e in events if isinstance(e, ToolCall)]


def test_real_claude_session_read_offset_limit(real_fixtures):
    path = real_fixtures / "claude-session" / "claude-session__jnarowski__agentcmd__full-session-four.jsonl"
    calls = _claude_calls(path)
    reads = {c.call_id: infer(c) for c in calls if c.tool == "Read"}
    windows = [inf.reads for inf in reads.values() if inf.reads and inf.reads[0].start == 45]
    assert windows and windows[0][0].end == 64
    for c in calls:   # every call of a real session infers without a crash
        assert infer(c).category


def test_real_claude_stream_grep_content(real_fixtures):
    path = real_fixtures / "claude-stream" / \
        "claude-stream__link-assistant__hive-mind__issue-724-solution-draft-1.extracted.jsonl"
    calls = _claude_calls(path)
    ctx = [c for c in calls if c.tool == "Grep" and c.input.get("-A") == 5]
    assert ctx
    reads = infer(ctx[0]).reads
    assert reads[0].path == "src/solve.branch-errors.lib.mjs" and reads[0].start == 70
    edits = [infer(c) for c in calls if c.tool == "Edit"]
    assert edits and all(e.edits and e.edits[0].old for e in edits if not e.failed)


def test_real_sweagent_views(real_fixtures):
    from streameval.traces.formats.sweagent import SweAgentAdapter

    adapter = SweAgentAdapter()
    path = real_fixtures / "swe-agent-traj" / \
        "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.traj"
    events = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            events.extend(adapter.feed(line.rstrip(b"\n"), n))
    events.extend(adapter.close())
    calls = [e for e in events if isinstance(e, ToolCall)]
    shown = [r for c in calls for r in infer(c).reads if not r.listing]
    assert Read("/testbed/xarray/core/computation.py", 1060, 1220) in shown
    assert Read("/testbed/xarray/core/weighted.py", 140, 151) in shown
    # the four malformed "[1060, 1220]" views read nothing
    bad = [c for c in calls if c.output and c.output.startswith("usage: str_replace_editor")]
    assert len(bad) >= 4 and all(infer(c).reads == [] for c in bad)


def test_cat_with_elided_output_read_only_the_head_and_tail_shown():
    """mini-swe-agent cuts long outputs: `cat f` then showed a head and a tail only."""
    from streameval.model import Read, ToolCall
    from streameval.reading.infer import infer

    out = "l1\nl2\nl3\n[... 500 characters elided ...]\npartial\ny98\ny99\n"
    call = ToolCall(call_id="c", tool="bash", input={"command": "cat f.py"}, output=out,
                    structured={"elided_chars": 500})
    assert infer(call).reads == [Read("f.py", 1, 3), Read("f.py", -3, None)]
    whole = ToolCall(call_id="d", tool="bash", input={"command": "cat f.py"}, output="a\nb\n")
    assert infer(whole).reads == [Read("f.py", None, None)]
