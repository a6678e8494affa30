"""Pushed runs from the real CLIs: Claude Code through HTTP hooks and through its
OpenTelemetry logs, Codex through its ``[otel]`` exporter, all pointed at a watcher with
``--ingest``. Each pushed run is scored by the same engine as a trace file; its numbers
are compared with replaying the run's own trace (the transcript or rollout the CLI wrote
at the same time), at the fidelity the source carries. A steering deny reaches the real
Claude Code: the scripted model sees the reason in its next request.
"""

from __future__ import annotations

import json

import pytest
from clis import BASE_PATH, CLAUDE_CODE, CODEX, claude, codex, missing
from push import PushWatcher
from scenario import (
    EXPECTED,
    INSTANCE,
    expected_for,
    inspected,
    make_setup,
    replayed,
    run_cli,
    shown_by_call,
)
from scripted_model import Call, Say, ScriptedModel
from test_real_claude_code import PLAN as CLAUDE_PLAN
from test_real_claude_code import turns as claude_turns
from test_real_codex import turns as codex_turns

from streameval.runs.evaluate import evaluate_trace

pytestmark = pytest.mark.agents

GRANULARITIES = ("file", "symbol", "span", "line")


def _claude_env(setup, model, pw: PushWatcher) -> dict:
    """Claude Code's environment; the pushes' token from the file the watcher made, as
    a user gives it (``export STREAMEVAL_INGEST_TOKEN=$(cat FILE)``)."""
    return {"PATH": BASE_PATH, "HOME": str(setup.home), "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "scripted", "IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "STREAMEVAL_INGEST_TOKEN": pw.token_file.read_text().strip()}


def _hooks_settings(setup, url: str) -> None:
    """The settings of docs/ingest.md: each hook sends the token from the environment
    (Claude Code fills a header's ``$VAR`` only for the variables ``allowedEnvVars``
    names)."""
    hook = [{"hooks": [{"type": "http", "url": f"{url}/v1/hooks/claude?instance_id={INSTANCE}",
                        "timeout": 30,
                        "headers": {"Authorization": "Bearer $STREAMEVAL_INGEST_TOKEN"},
                        "allowedEnvVars": ["STREAMEVAL_INGEST_TOKEN"]}]}]
    settings = {"hooks": {event: hook for event in
                          ("PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop",
                           "SessionEnd")}}
    (setup.home / ".claude").mkdir(parents=True, exist_ok=True)
    (setup.home / ".claude" / "settings.json").write_text(json.dumps(settings))


def _claude_argv() -> list[str]:
    return [str(claude()), "-p", "Fix the module.", "--output-format", "stream-json", "--verbose",
            "--permission-mode", "bypassPermissions"]


def _numbers(rec: dict) -> dict:
    return {"num_steps": rec["num_steps"], "edits": rec["edits"],
            **{g: (rec["final"][g]["coverage"], rec["final"][g]["precision"]) for g in GRANULARITIES}}


def _transcript(setup):
    (session,) = sorted((setup.home / ".claude" / "projects").glob("*/*.jsonl"))
    return session


# ------------------------------------------------------------------ Claude Code hooks


@pytest.fixture(scope="module")
def hooks_run(tmp_path_factory):
    why = missing(claude(), "Claude Code", CLAUDE_CODE)
    if why:
        pytest.fail(why)
    setup = make_setup(tmp_path_factory.mktemp("claude-hooks"))
    with PushWatcher(setup) as pw, ScriptedModel(claude_turns(setup.repo)) as model:
        # Claude Code's transcripts under this test's HOME: where the hook's
        # transcript_path may be read (the watcher's default is its own ~/.claude/projects)
        pw.app.transcript_roots = [setup.home / ".claude" / "projects"]
        _hooks_settings(setup, pw.url)
        run = run_cli(_claude_argv(), _claude_env(setup, model, pw), setup.repo, setup,
                      kill_when="time.sleep(30)", watch=False)
        records = pw.finish()
        traces = pw.traces("claude-hooks")
        counts = dict(pw.w.table.stats.ingest_requests)
    return setup, run, records, traces, counts


def test_hooks_feed_a_live_run_scored_as_the_transcript(hooks_run):
    setup, run, records, traces, counts = hooks_run
    assert run.stdout, run.stderr[-2000:]
    (trace,) = traces
    (live,) = records
    assert live["instance_id"] == INSTANCE and live["fidelity"] == "full"
    assert live["agent"] == "claude-code"
    # the live record is the replay of the pushed trace file, byte for byte in numbers
    (pushed,) = evaluate_trace(trace, setup.resources(), root=setup.runs)
    assert {k: v for k, v in live.items() if k not in ("ended_at", "end_reason")} == \
        {k: v for k, v in pushed.items() if k not in ("ended_at", "end_reason")}
    # and the same numbers as the transcript Claude Code wrote itself
    own = replayed(_transcript(setup), setup)
    assert _numbers(live) == _numbers(own), (_numbers(live), _numbers(own))
    assert counts.get(("claude", 200), 0) >= 2 * (len(CLAUDE_PLAN) - 1)
    assert not any(status >= 400 for (_route, status) in counts)


def _stream_result(stdout) -> dict:
    lines = stdout.splitlines() if isinstance(stdout, str) else stdout
    objs = [x if isinstance(x, dict) else json.loads(x) for x in lines
            if isinstance(x, dict) or str(x).startswith("{")]
    (result,) = [o for o in objs if o.get("type") == "result"]
    return result


def test_hooks_take_the_runs_tokens_from_its_transcript(hooks_run):
    """Hook payloads carry no usage; the transcript they name does: the pushed run's
    tokens are the transcript's, and it states no cost, so the record states none. The
    run is killed in its last call (no Stop, no SessionEnd): that call's PreToolUse
    read the transcript after the response asking for it was written."""
    setup, run, records, traces, counts = hooks_run
    (live,) = records
    own = replayed(_transcript(setup), setup)
    assert live["tokens"] == own["tokens"] and sum(own["tokens"].values()) > 0
    assert live["tokens_source"] == "transcript"
    assert live["cost_usd"] is None and own["cost_usd"] is None
    assert live["model"] == own["model"] != "unknown"


# ------------------------------------------------------------------ steering


def test_a_steering_deny_reaches_claude_code_and_its_model(tmp_path):
    """Policy: at most 2 steps. The call after the second read is denied by the next
    PreToolUse answer; the scripted model's next request carries the reason."""
    why = missing(claude(), "Claude Code", CLAUDE_CODE)
    if why:
        pytest.fail(why)
    setup = make_setup(tmp_path)
    mod = f"{setup.repo}/pkg/mod.py"
    plan = [Call("Read", {"file_path": mod, "offset": 1, "limit": 5}),
            Call("Bash", {"command": "sed -n '30,40p' pkg/mod.py", "description": "s"}),
            Call("Bash", {"command": "cat pkg/util.py", "description": "c"}),
            Say("Stopping.")]
    toml = '[[policy]]\nname = "budget"\nkind = "max_steps"\nlimit = 2\naction = "file"\n'
    with PushWatcher(setup, abort_toml=toml) as pw, ScriptedModel(plan) as model:
        _hooks_settings(setup, pw.url)
        run = run_cli(_claude_argv(), _claude_env(setup, model, pw), setup.repo, setup,
                      watch=False)
        records = pw.finish()
    assert run.returncode == 0, run.stderr[-2000:]
    (rec,) = records
    assert rec["num_steps"] == 2                      # the third call never ran
    sent = json.dumps(model.requests)
    assert "streameval stopped this run (policy budget)" in sent
    decisions = [d.outcome for d in pw.engine.decisions]
    assert decisions == ["written"]


# ------------------------------------------------------------------ Claude Code OTLP


@pytest.mark.parametrize("protocol", ["http/json", "http/protobuf"])
def test_claude_code_otlp_logs_feed_a_run_at_inputs_fidelity(tmp_path, protocol):
    """Claude Code's tool_result events carry each call's input, not its output: files
    are exact; lines are each call's own window (a Read's offset/limit, a command's
    window), so a search, which has none, credits its file only. Checked call by call
    against the transcript Claude Code wrote of the same run."""
    why = missing(claude(), "Claude Code", CLAUDE_CODE)
    if why:
        pytest.fail(why)
    setup = make_setup(tmp_path)
    mod = f"{setup.repo}/pkg/mod.py"
    plan = [Call("Read", {"file_path": mod, "offset": 1, "limit": 12}),
            Call("Bash", {"command": "sed -n '30,40p' pkg/mod.py", "description": "s"}),
            Call("Bash", {"command": "cat pkg/util.py", "description": "c"}),
            Call("Bash", {"command": "grep -n 'return None' pkg/mod.py", "description": "g"}),
            Say("Done.")]
    with PushWatcher(setup) as pw, ScriptedModel(plan) as model:
        env = {**_claude_env(setup, model, pw), "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
               "OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "none",
               "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
               "OTEL_EXPORTER_OTLP_ENDPOINT": pw.url, "OTEL_LOG_TOOL_DETAILS": "1",
               "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {pw.token}",
               "OTEL_LOGS_EXPORT_INTERVAL": "200",
               "OTEL_RESOURCE_ATTRIBUTES": f"streameval.instance_id={INSTANCE}"}
        run = run_cli(_claude_argv(), env, setup.repo, setup, watch=False)
        records = pw.finish()
    assert run.returncode == 0, run.stderr[-2000:]
    (live,) = records
    assert live["fidelity"] == "inputs" and live["instance_id"] == INSTANCE
    own = replayed(_transcript(setup), setup)
    assert live["final"]["file"] == own["final"]["file"]       # files: exact
    assert live["num_steps"] == own["num_steps"] == 4
    # lines, call by call: the three windowed calls are credited what they showed; the
    # grep (no window in its input) is credited its file only, not the 8 lines it printed
    (pushed,) = pw.traces("claude-otel")
    by_call = shown_by_call(inspected(pushed, setup, tmp_path))
    mine = shown_by_call(inspected(_transcript(setup), setup, tmp_path))
    # with inputs only, a window is credited as asked: blank line 30, which Claude Code's
    # Bash tool trimmed from sed's output (the transcript shows it was never shown), too
    assert by_call[1] == EXPECTED["sed_window"] and mine[1] == expected_for("claude-code")["sed_window"]
    assert [by_call[0], by_call[2]] == [mine[0], mine[2]]
    assert mine[3] == {"pkg/mod.py": {7 + 7 * i for i in range(8)}}
    assert len(by_call) == 3        # the grep credits no line at this fidelity
    assert live["final"]["line"]["coverage"] < own["final"]["line"]["coverage"]
    # tokens and cost from its api_request events: the transcript's tokens, and the
    # cost Claude Code itself reports for the run (stream-json's result line)
    assert live["tokens_source"] == "claude_code.api_request"
    assert live["tokens"] == own["tokens"] and sum(own["tokens"].values()) > 0
    result = _stream_result(run.stdout)
    assert abs(live["cost_usd"] - result["total_cost_usd"]) < 1e-9
    assert live["model"] == own["model"]


# ------------------------------------------------------------------ Codex OTLP


@pytest.mark.parametrize("protocol", ["json", "binary"])
def test_codex_otel_feeds_a_run_scored_as_its_rollout(tmp_path, protocol):
    why = missing(codex(), "Codex", CODEX)
    if why:
        pytest.fail(why)
    setup = make_setup(tmp_path)
    with PushWatcher(setup) as pw, ScriptedModel(codex_turns()) as model:
        # the two ways docs/ingest.md gives: the token in config.toml's headers, or in
        # the exporter's environment
        token = pw.token_file.read_text().strip()
        headers = f', headers = {{ "Authorization" = "Bearer {token}" }}' \
            if protocol == "json" else ""
        env_headers = {"OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {token}"} \
            if protocol == "binary" else {}
        (setup.home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            f'name = "scripted"\nbase_url = "{model.url}/v1"\n'
            'env_key = "SCRIPTED_KEY"\nwire_api = "responses"\n'
            "[otel]\nlog_user_prompt = false\n"
            # the endpoint is used as given: the query names the instance
            f'exporter = {{ otlp-http = {{ endpoint = "{pw.url}/v1/logs?instance_id={INSTANCE}", '
            f'protocol = "{protocol}"{headers} }} }}\n')
        env = {"PATH": BASE_PATH, "HOME": str(setup.home), "CODEX_HOME": str(setup.home),
               "SCRIPTED_KEY": "scripted", **env_headers}
        run = run_cli([str(codex()), "exec", "--json", "--skip-git-repo-check",
                       "--dangerously-bypass-approvals-and-sandbox", "-C", str(setup.repo),
                       "Fix the module."], env, setup.repo, setup, kill_when="time.sleep(30)",
                      watch=False)
        records = pw.finish()
    assert run.stdout, run.stderr[-2000:]
    (live,) = records
    assert live["fidelity"] == "full" and live["agent"] == "codex"
    (rollout,) = sorted((setup.home / "sessions").rglob("rollout-*.jsonl"))
    own = replayed(rollout, setup)
    assert _numbers(live) == _numbers(own), (_numbers(live), _numbers(own))
    # its tokens come from sse_event responses: exactly what the model served (each
    # response of the scripted model uses 100 input and 20 output tokens). The rollout
    # says one response less: Codex is killed in its last call, before it writes that
    # response's token_count line, while the OTLP event of the response went out
    served = [r for r in model.requests if r["path"].endswith("/responses")]
    assert live["tokens_source"] == "codex.sse_event" and live["model"] == "gpt-5.5"
    assert live["tokens"]["input"] == 100 * len(served)
    assert live["tokens"]["output"] == 20 * len(served)
    assert own["tokens"]["input"] in (100 * len(served), 100 * (len(served) - 1))
