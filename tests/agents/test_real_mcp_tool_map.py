"""A context engine over MCP, through the real Claude Code, credited by a tool map.

Claude Code starts ``mcp_context_server`` (a stdio MCP server of one tool, ``read_file``)
and the scripted model calls it as ``mcp__ctx__read_file``. Without a tool map the call
is a tool streameval does not know and credits nothing; with ``examples/tool-map.toml``
its output is read like ``cat``'s, and the record counts reads per tool.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clis import BASE_PATH, CLAUDE_CODE, claude, missing
from scenario import INSTANCE, inspected, make_setup, run_cli, shown_by_call
from scripted_model import Call, Say, ScriptedModel

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

pytestmark = pytest.mark.agents

HERE = Path(__file__).resolve().parent
TOOL_MAP = HERE.parents[1] / "examples" / "tool-map.toml"


@pytest.fixture(scope="module")
def mcp_run(tmp_path_factory):
    why = missing(claude(), "Claude Code", CLAUDE_CODE)
    if why:
        pytest.fail(why)
    tmp = tmp_path_factory.mktemp("mcp")
    setup = make_setup(tmp)
    trace = setup.run_dir / "trace.jsonl"
    turns = [Call("mcp__ctx__read_file", {"path": "pkg/mod.py", "start_line": 30, "end_line": 40}),
             Call("Read", {"file_path": f"{setup.repo}/pkg/mod.py", "offset": 8, "limit": 5}),
             Say("Done.")]
    servers = {"mcpServers": {"ctx": {"command": "python3",
                                      "args": [str(HERE / "mcp_context_server.py"),
                                               str(setup.repo)]}}}
    with ScriptedModel(turns) as model:
        env = {"PATH": BASE_PATH, "HOME": str(setup.home), "ANTHROPIC_BASE_URL": model.url,
               "ANTHROPIC_API_KEY": "scripted", "IS_SANDBOX": "1"}
        run = run_cli([str(claude()), "-p", "Look.", "--output-format", "stream-json", "--verbose",
                       "--permission-mode", "bypassPermissions", "--mcp-config", json.dumps(servers)],
                      env, setup.repo, setup, stdout_trace=trace, watch=False)
    assert '"mcp__ctx__read_file"' in "".join(run.stdout), run.stderr[-2000:]
    return setup, trace, tmp


def test_without_a_tool_map_the_mcp_read_credits_nothing(mcp_run):
    setup, trace, tmp = mcp_run
    assert shown_by_call(inspected(trace, setup, tmp)) == [{"pkg/mod.py": set(range(8, 13))}]


def test_the_tool_map_credits_what_the_mcp_tool_showed(mcp_run):
    setup, trace, _ = mcp_run
    res = load_resources(str(setup.gold), None, str(setup.repo), str(TOOL_MAP))
    (record,) = evaluate_trace(trace, res, instance=INSTANCE)
    assert record["num_steps"] == 2
    assert record["reads_by_tool"] == {"Read": 1, "mcp__ctx__read_file": 1}
    # 30-40 by the server (11 lines of text), 8-12 by Read: 16 distinct base lines
    assert record["final"]["line"]["pred_size"] == 16
    assert record["shown_lines"] == {"aligned": 16, "agent_written": 0, "unaligned": 0}
