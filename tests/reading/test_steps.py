"""StepBuilder: tool calls -> Steps with repo paths and base-commit lines (docs/metrics.md §6).

Each edit kind is followed by a read *after* the edit: the read's current line numbers
must come back as the base-commit lines the agent really saw.
"""

from __future__ import annotations

import pytest
from gitrepo import make_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streameval.errors import Reason
from streameval.model import Step, ToolCall
from streameval.reading.steps import StepBuilder
from streameval.sources.repo import GitRepo

A50 = "".join(f"line {i}\n" for i in range(1, 51))
B120 = "".join(f"b{i}\n" for i in range(1, 121))
T = "/testbed"


@pytest.fixture
def builder(tmp_path) -> StepBuilder:
    root = tmp_path / "repo"
    sha = make_repo(root, {"src/a.py": A50, "src/b.py": B120, "docs/empty.txt": "",
                           "AGENTS.md": "rules\n", "latin.txt": b"caf\xe9\nx\ny\nz\n"})[0]
    return StepBuilder(GitRepo(root).at(sha), roots=[T])


_ids = iter(range(1, 10**6))


def call(tool, inp, output=None, cwd=T, **kw) -> ToolCall:
    n = next(_ids)
    return ToolCall(call_id=f"c{n}", tool=tool, input=inp, output=output, cwd=cwd,
                    started_at=float(n), **kw)


def read(path, offset=None, limit=None) -> ToolCall:
    inp = {"file_path": path}
    if offset is not None:
        inp["offset"] = offset
    if limit is not None:
        inp["limit"] = limit
    return call("Read", inp)


def spans(b: StepBuilder, c: ToolCall) -> dict[str, list[tuple[int, int]]]:
    out = b.consume(c)
    assert out.step is not None, out
    return out.step.spans


INSERT_3_AT_10 = ("line 10\n", "line 10\nnew a\nnew b\nnew c\n")


def _check_insert_3_at_10(b: StepBuilder) -> None:
    """After 3 lines inserted after line 10 of the 50-line file (53 lines now)."""
    assert spans(b, read(f"{T}/src/a.py", 20, 5)) == {"src/a.py": [(17, 21)]}
    assert spans(b, read(f"{T}/src/a.py", 9, 7)) == {"src/a.py": [(9, 12)]}
    out = b.consume(read(f"{T}/src/a.py", 11, 3))         # only the agent's own lines
    assert out.step == Step(files=("src/a.py",), spans={}, call_id=out.step.call_id,
                            timestamp=out.step.timestamp)
    assert spans(b, read(f"{T}/src/a.py")) == {"src/a.py": [(1, 50)]}


# --------------------------------------------------------------------------- edit kinds


def test_claude_edit_then_read(builder):
    old, new = INSERT_3_AT_10
    out = builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": old,
                                        "new_string": new}, output="The file ... updated."))
    assert out.step is None and out.edits == ["src/a.py"] and out.category == "edit"
    _check_insert_3_at_10(builder)


def test_claude_edit_with_structured_patch_then_read(builder):
    patch = [{"oldStart": 8, "oldLines": 6, "newStart": 8, "newLines": 9,
              "lines": [" line 8", " line 9", " line 10", "+new a", "+new b", "+new c",
                        " line 11", " line 12", " line 13"]}]
    builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": "line 10\n",
                                  "new_string": INSERT_3_AT_10[1]},
                         structured={"structuredPatch": patch}))
    _check_insert_3_at_10(builder)


def test_structured_patch_alone_when_the_text_is_not_found(builder):
    patch = [{"oldStart": 10, "oldLines": 1, "newStart": 10, "newLines": 4,
              "lines": [" line 10", "+new a", "+new b", "+new c"]}]
    out = builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": "zzz",
                                        "new_string": "q"}, structured={"structuredPatch": patch}))
    assert out.problems == []
    _check_insert_3_at_10(builder)


def test_multiedit_then_read(builder):
    builder.consume(call("MultiEdit", {"file_path": f"{T}/src/a.py", "edits": [
        {"old_string": "line 10\n", "new_string": "line 10\nnew a\n"},
        {"old_string": "new a\n", "new_string": "new a\nnew b\nnew c\n"}]}))
    _check_insert_3_at_10(builder)


def test_write_then_read(builder):
    lines = A50.splitlines(keepends=True)
    content = "".join(lines[:10]) + "new a\nnew b\nnew c\n" + "".join(lines[10:])
    builder.consume(call("Write", {"file_path": f"{T}/src/a.py", "content": content}))
    _check_insert_3_at_10(builder)


def test_apply_patch_through_the_shell_then_read(builder):
    patch = ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/a.py\n@@\n"
             " line 9\n line 10\n+new a\n+new b\n+new c\n line 11\n*** End Patch\nPATCH")
    out = builder.consume(call("shell", {"command": ["bash", "-lc", patch]}, output="Success."))
    assert out.edits == ["src/a.py"] and out.category == "edit"
    _check_insert_3_at_10(builder)


def test_sed_in_place_is_run_on_the_current_text(builder):
    out = builder.consume(call("Bash", {"command": "sed -i '/line 5$/d' src/a.py"}))
    assert out.edits == ["src/a.py"] and out.step is None
    assert builder.edits.uncertain_files() == []
    assert spans(builder, read(f"{T}/src/a.py", 20, 5)) == {"src/a.py": [(21, 25)]}


def test_str_replace_editor_str_replace_then_view(builder):
    old, new = INSERT_3_AT_10
    builder.consume(call("str_replace_editor", {"command": "str_replace",
                                                "path": f"{T}/src/a.py", "old_str": old,
                                                "new_str": new}))
    _check_insert_3_at_10(builder)
    view = call("str_replace_editor", {"command": "view", "path": f"{T}/src/a.py",
                                       "view_range": [20, 24]},
                output="Here's the result of running `cat -n` on /testbed/src/a.py:\n" +
                "\n".join(f"{n:6d}\tline {n - 3}" for n in range(20, 25)))
    assert spans(builder, view) == {"src/a.py": [(17, 21)]}


def test_str_replace_editor_insert_then_read(builder):
    builder.consume(call("str_replace_editor", {"command": "insert", "path": f"{T}/src/a.py",
                                                "insert_line": 10,
                                                "new_str": "new a\nnew b\nnew c"}))
    _check_insert_3_at_10(builder)


def test_str_replace_editor_create_over_an_existing_file(builder):
    lines = A50.splitlines(keepends=True)
    text = "".join(lines[:10]) + "new a\nnew b\nnew c\n" + "".join(lines[10:])
    builder.consume(call("str_replace_editor", {"command": "create", "path": f"{T}/src/a.py",
                                                "file_text": text}))
    _check_insert_3_at_10(builder)


def test_created_new_file_is_not_a_repo_file(builder):
    out = builder.consume(call("Write", {"file_path": f"{T}/src/brand_new.py", "content": "x\n"}))
    assert out.edits == [] and out.step is None and out.problems == []
    assert sum(builder.paths.counts.values()) == 0
    out = builder.consume(read(f"{T}/src/brand_new.py"))
    assert out.step is None


def test_failed_edit_is_not_applied(builder):
    out = builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": "line 10\n",
                                        "new_string": "x\ny\n"},
                               output="<tool_use_error>File has not been read yet.</tool_use_error>",
                               is_error=True))
    assert out.edits == []
    assert spans(builder, read(f"{T}/src/a.py", 20, 5)) == {"src/a.py": [(20, 24)]}


def test_edit_not_located_is_a_counted_problem(builder):
    out = builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": "nope",
                                        "new_string": "x"}))
    assert [p[0] for p in out.problems] == [Reason.EDIT_NOT_LOCATED]


def test_provisional_patch_passthrough(builder):
    builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": "line 7\n",
                                  "new_string": ""}))
    patch = builder.provisional_patch()
    assert "--- a/src/a.py" in patch and "-line 7" in patch


# --------------------------------------------------------------------------- reads


def test_read_default_2000_lines_is_clamped_to_the_file(builder):
    out = builder.consume(read(f"{T}/src/b.py"))
    assert out.step.spans == {"src/b.py": [(1, 120)]}
    assert out.step.files == ("src/b.py",)
    assert out.reads[0].current == [(1, 120)]
    assert out.category == "read"
    assert out.step.call_id.startswith("c") and out.step.timestamp is not None


def test_read_offset_limit(builder):
    assert spans(builder, read("src/b.py", 45, 20)) == {"src/b.py": [(45, 64)]}
    assert spans(builder, read("src/b.py", 110, 50)) == {"src/b.py": [(110, 120)]}


def test_read_error_is_not_a_step(builder):
    out = builder.consume(call("Read", {"file_path": f"{T}/src/b.py"},
                               output="<tool_use_error>File does not exist.</tool_use_error>",
                               is_error=True))
    assert out.step is None and out.reads == []


def test_read_of_an_empty_file_is_a_file_without_lines(builder):
    out = builder.consume(read(f"{T}/docs/empty.txt"))
    assert out.step.files == ("docs/empty.txt",) and out.step.spans == {}


def test_read_past_the_end_reads_nothing_and_counts_a_bad_range(builder):
    """docs/metrics.md §6: an offset past EOF shows no line of the file: no step, no read."""
    out = builder.consume(read(f"{T}/src/a.py", 500, 10))
    assert out.step is None and out.reads == []
    assert [p[0] for p in out.problems] == [Reason.BAD_LINE_RANGE]


def test_tail_and_negative_start(builder):
    out = builder.consume(call("Bash", {"command": "tail -n 5 src/b.py"}))
    assert out.step.spans == {"src/b.py": [(116, 120)]}


def test_grep_content_with_numbers_and_context(builder):
    out = ("src/a.py-9-line 9\nsrc/a.py:10:line 10\nsrc/a.py-11-line 11\n--\n"
           "src/b.py:3:b3\n")
    c = call("Grep", {"pattern": "x", "output_mode": "content", "-n": True, "-A": 1, "-B": 1},
             output=out)
    result = builder.consume(c)
    assert result.step.spans == {"src/a.py": [(9, 11)], "src/b.py": [(3, 3)]}
    assert result.category == "search"


def test_grep_shell_output_after_an_edit_maps_back(builder):
    builder.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": INSERT_3_AT_10[0],
                                  "new_string": INSERT_3_AT_10[1]}))
    c = call("Bash", {"command": "grep -n 'line 2' src/a.py"},
             output="2:line 2\n12:new b\n23:line 20\n")   # current numbers
    assert spans(builder, c) == {"src/a.py": [(2, 2), (20, 20)]}


def test_files_with_matches_is_file_level(builder):
    c = call("Grep", {"pattern": "x"}, output="Found 2 files\nsrc/a.py\nsrc/b.py")
    out = builder.consume(c)
    assert out.step.files == ("src/a.py", "src/b.py") and out.step.spans == {}
    assert all(r.listing for r in out.reads)


def test_cd_then_cat(builder):
    out = builder.consume(call("Bash", {"command": "cd src && cat -n b.py"}))
    assert out.step.spans == {"src/b.py": [(1, 120)]}
    assert out.reads[0].repo_path == "src/b.py"


def test_testbed_and_workspace_prefixes_resolve_by_suffix(builder):
    c = call("Read", {"file_path": "/workspace/proj__proj__1.0/src/b.py", "limit": 3},
             cwd="/workspace/proj__proj__1.0")
    assert spans(builder, c) == {"src/b.py": [(1, 3)]}


def test_paths_outside_the_repo_are_ignored_and_counted(builder):
    out = builder.consume(call("Bash", {"command": "cat /etc/passwd ../x"}))
    assert out.step is None
    reasons = [p[0] for p in out.problems]
    assert reasons.count(Reason.PATH_OUTSIDE_REPO) == 2
    assert builder.paths.counts[Reason.PATH_OUTSIDE_REPO] == 2


def test_non_utf8_base_file(builder):
    assert spans(builder, read(f"{T}/latin.txt")) == {"latin.txt": [(1, 4)]}
    builder.consume(call("Edit", {"file_path": f"{T}/latin.txt", "old_string": "x\n",
                                  "new_string": "x\nadded\n"}))
    assert spans(builder, read(f"{T}/latin.txt", 3, 3)) == {"latin.txt": [(3, 4)]}


def test_one_call_showing_several_files_is_one_step(builder):
    out = builder.consume(call("Bash", {"command": "head -n 3 src/a.py src/b.py"}))
    assert out.step.files == ("src/a.py", "src/b.py")
    assert out.step.spans == {"src/a.py": [(1, 3)], "src/b.py": [(1, 3)]}


def test_context_files_are_reported(builder):
    out = builder.consume(read(f"{T}/AGENTS.md"))
    assert out.context_files == ["AGENTS.md"] and out.step.files == ("AGENTS.md",)
    out = builder.consume(call("Read", {"file_path": "/root/.claude/CLAUDE.md"}, cwd=T))
    assert out.context_files == ["/root/.claude/CLAUDE.md"] and out.step is None


def test_test_runs_and_unknown_tools_are_not_steps(builder):
    out = builder.consume(call("Bash", {"command": "python -m pytest -q tests"},
                               output="1 passed"))
    assert out.step is None and out.category == "test"
    out = builder.consume(call("TodoWrite", {"todos": []}))
    assert out.step is None and out.category == "other"


def test_cwd_is_remembered_when_a_call_has_none(builder):
    builder.consume(call("Bash", {"command": "true"}, cwd=f"{T}/src"))
    out = builder.consume(call("Bash", {"command": "cat b.py"}, cwd=None))
    assert out.step.files == ("src/b.py",)


def test_without_a_repo_steps_carry_display_paths():
    b = StepBuilder(None, roots=[T])
    out = b.consume(call("Read", {"file_path": f"{T}/src/a.py", "offset": 3, "limit": 4}))
    assert out.step.files == ("src/a.py",) and out.step.spans == {"src/a.py": [(3, 6)]}
    out = b.consume(call("Edit", {"file_path": f"{T}/src/a.py", "old_string": "a",
                                  "new_string": "b"}))
    assert out.edits == ["src/a.py"] and out.problems == []


# --------------------------------------------------------------------------- a real session


def _shown_lines(output: str) -> dict[int, str]:
    import re
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^ *(\d+)→(.*)$", output, re.M)}


def test_real_claude_session_replay_matches_what_the_agent_was_shown(real_fixtures, tmp_path):
    """The jnarowski session edits NavUser.tsx and AppSidebar.tsx, then reads them again.

    The repo is rebuilt from the session's own first full reads (the base text). Every
    line a later Read showed must then map to a base line with the same text, or to
    nothing when the agent wrote it: the replay of Edit/structuredPatch is exact.
    """
    from streameval.traces.formats.claude import ClaudeAdapter

    path = real_fixtures / "claude-session" / \
        "claude-session__jnarowski__agentcmd__full-session-four.jsonl"
    adapter = ClaudeAdapter()
    events = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            events.extend(adapter.feed(line.rstrip(b"\n"), n))
    calls = [e for e in events + adapter.close() if isinstance(e, ToolCall)]
    root = "/Users/jnarowski/Dev/sourceborn/src/agent-workflows-monorepo-v2"
    base: dict[str, str] = {}
    for c in calls:
        f = (c.structured or {}).get("file") if c.tool == "Read" else None
        rel = c.input["file_path"][len(root) + 1:] if f else None
        if f and rel not in base and f["startLine"] == 1 and f["numLines"] == f["totalLines"]:
            shown = _shown_lines(c.output)
            base[rel] = "".join(shown[k] + "\n" for k in range(1, len(shown) + 1))
    assert "apps/app/src/client/components/NavUser.tsx" in base
    sha = make_repo(tmp_path / "repo", base)[0]
    view = GitRepo(tmp_path / "repo").at(sha)
    builder = StepBuilder(view, roots=[root])
    base_lines = {p: t.split("\n") for p, t in base.items()}
    checked = agent_lines = whole_edited = 0
    for c in calls:
        out = builder.consume(c)
        if c.tool != "Read" or out.step is None:
            continue
        repo = out.step.files[0]
        shown = _shown_lines(c.output)
        f = c.structured["file"]
        if repo in builder.edits.edited_files() and f["startLine"] == 1 and \
                f["numLines"] == f["totalLines"]:   # a whole edited file: same text
            whole_edited += 1
            assert builder.edits.current_text(repo) == \
                "".join(shown[k] + "\n" for k in range(1, len(shown) + 1))
        for n, text in shown.items():
            mapped = builder.edits.to_base(repo, n, n)
            if mapped:
                assert base_lines[repo][mapped[0][0] - 1] == text, (repo, n, mapped)
                checked += 1
            else:
                agent_lines += 1
    assert checked > 400 and agent_lines > 10 and whole_edited == 1
    assert set(builder.edits.edited_files()) == {"apps/app/src/client/components/NavUser.tsx",
                                                 "apps/app/src/client/components/AppSidebar.tsx"}
    assert builder.edits.last_problem is None


def test_real_openhands_run_replay_matches_what_the_agent_was_shown(real_fixtures, tmp_path):
    """ponyc-4588: match.c is viewed, edited by ``insert``/``str_replace`` many times
    (most replacements fail) and viewed again. The base is rebuilt from the first view
    (lines 1-582, clipped by OpenHands); every later view must map back to base lines
    with the same text, or to nothing for lines the agent inserted."""
    import re

    from streameval.model import RunInfo
    from streameval.traces.formats.openhands import OpenHandsAdapter

    path = real_fixtures / "openhands" / \
        "openhands__nunu0404__Python_OpenHands__multi_swe_bench-examples-output.jsonl"
    adapter = OpenHandsAdapter()
    events = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            events.extend(adapter.feed(line.rstrip(b"\n"), n))
    events += adapter.close()
    starts = [i for i, e in enumerate(events) if isinstance(e, RunInfo)]
    run = [e for e in events[starts[2]:] if isinstance(e, ToolCall)]
    root = "/workspace/ponylang__ponyc__0.1"
    rel = "src/libponyc/expr/match.c"

    def shown(output: str) -> dict[int, str]:
        return {int(m.group(1)): m.group(2) for m in re.finditer(r"^ *(\d+)\t(.*)$", output, re.M)}

    first = next(c for c in run if c.tool == "read" and c.input["path"].endswith(rel))
    lines = shown(first.output)
    sha = make_repo(tmp_path / "repo", {rel: "".join(lines[k] + "\n" for k in sorted(lines))})[0]
    builder = StepBuilder(GitRepo(tmp_path / "repo").at(sha), roots=[root])
    inserted = checked = 0
    for c in run:
        out = builder.consume(c)
        if c.tool != "read" or out.step is None or out.step.files != (rel,):
            continue
        for n, text in shown(c.output).items():
            mapped = builder.edits.to_base(rel, n, n)
            if mapped:
                assert lines[mapped[0][0]] == text, (n, mapped)
                checked += 1
            else:
                inserted += 1
    assert checked > 150 and inserted == 1   # the last view shows the one inserted line
    assert builder.edits.edited_files() == [rel]


# --------------------------------------------------------------------------- robustness

_TOOLS = ["Read", "Grep", "Glob", "LS", "Edit", "MultiEdit", "Write", "NotebookEdit",
          "NotebookRead", "Bash", "shell", "bash", "run", "read", "edit", "str_replace_editor",
          "file_change", "apply_patch", "Task", "open_thing", "", "command_execution"]
_KEYS = ["file_path", "path", "offset", "limit", "command", "old_string", "new_string",
         "replace_all", "content", "edits", "output_mode", "-n", "view_range", "old_str",
         "new_str", "insert_line", "file_text", "changes", "input", "start", "end"]
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True),
    st.sampled_from(["/testbed/src/a.py", "src/b.py", "../x", "/etc/passwd", "view",
                     "create", "insert", "str_replace", "content", "count", "line 10\n",
                     "cat src/a.py", "sed -n '5,9p' src/b.py", "[1, 5]", ""]),
    st.text(max_size=40), st.lists(st.integers(-3, 200), max_size=3),
    st.lists(st.dictionaries(st.sampled_from(["old_string", "new_string", "path", "kind"]),
                             st.text(max_size=10), max_size=3), max_size=3))
_OUTPUTS = st.one_of(st.none(), st.text(max_size=200), st.sampled_from([
    "     1→a\n     2→b", "src/a.py:3:x\nsrc/a.py-4-y", "3:x\n4-y", "Found 1 file\nsrc/a.py",
    "usage: str_replace_editor", "Here's the files and directories up to 2 levels deep in /t\n/t/a",
    "<tool_use_error>nope</tool_use_error>", "   700\tfar past the end"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_TOOLS), st.dictionaries(st.sampled_from(_KEYS), _VALUES,
                                                                   max_size=5),
                          _OUTPUTS, st.booleans()), min_size=1, max_size=6))
def test_random_calls_never_raise_and_steps_are_well_formed(builder, calls):
    for tool, inp, output, err in calls:
        out = builder.consume(call(tool, inp, output=output, is_error=err))
        assert out.category in {"read", "search", "edit", "test", "git", "env", "build",
                                "quality", "run", "other"}
        if out.step is not None:
            assert out.step.files and set(out.step.spans) <= set(out.step.files)
            for path, ranges in out.step.spans.items():
                n = len(builder.view.read(path).split(b"\n")) if builder.view.read(path) else 0
                assert all(1 <= a <= b <= max(n, 1) for a, b in ranges), (path, ranges)
        for reason, message in out.problems:
            assert isinstance(reason, Reason) and isinstance(message, str)


def test_git_checkout_puts_a_file_back_to_its_base_lines(tmp_path):
    """After `git checkout -- f` a read of f shows base lines again, and the
    provisional patch no longer holds the reverted edit."""
    from gitrepo import make_repo

    from streameval.model import ToolCall
    from streameval.reading.steps import StepBuilder
    from streameval.sources.repo import GitRepo

    text = "".join(f"line {i}\n" for i in range(1, 51))
    sha = make_repo(tmp_path / "r", {"a.py": text})[-1]
    view = GitRepo(tmp_path / "r").at(sha)
    b = StepBuilder(view, roots=["/testbed"])
    ins = ToolCall(call_id="1", tool="Edit", cwd="/testbed",
                   input={"file_path": "/testbed/a.py", "old_string": "line 10\n",
                          "new_string": "line 10\nnew a\nnew b\nnew c\n"})
    b.consume(ins)
    shifted = b.consume(ToolCall(call_id="2", tool="Bash", cwd="/testbed",
                                 input={"command": "sed -n '20,24p' a.py"},
                                 output="".join(f"line {i}\n" for i in range(17, 22))))
    assert shifted.step.spans == {"a.py": [(17, 21)]}
    assert "a.py" in b.provisional_patch()
    b.consume(ToolCall(call_id="3", tool="Bash", cwd="/testbed",
                       input={"command": "git checkout -- a.py"}, output=""))
    back = b.consume(ToolCall(call_id="4", tool="Bash", cwd="/testbed",
                              input={"command": "sed -n '20,24p' a.py"},
                              output="".join(f"line {i}\n" for i in range(20, 25))))
    assert back.step.spans == {"a.py": [(20, 24)]}
    assert b.provisional_patch() == ""
