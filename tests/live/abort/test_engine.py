"""Early-abort policies and actions over a real watcher, real traces and real repos."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from claude_run import Claude, append, policy, reads, trace_in
from fixture_paths import ROOT

from streameval.live.abort.engine import (
    ABORT_NAME,
    KINDS,
    AbortConfigError,
    AbortEngine,
    attach,
    format_policy,
    load_policies,
    parse_policies,
)
from streameval.live.watch import WatchConfig, Watcher

# ---------------------------------------------------------------------- helpers


def start(runs: Path, res, toml: str, dry_run: bool = False) -> tuple[Watcher, AbortEngine]:
    cfg = WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0, rescan_interval=3600)
    w = Watcher(cfg, res)
    engine = attach(w, AbortEngine(parse_policies(toml, "test.toml"), dry_run=dry_run))
    return w, engine


def claude_trace(runs: Path, s, *specs: tuple[str, int, int], result: bool = False) -> Path:
    """Run ``r1``'s trace: Claude's init, one Read per (path, first, last), maybe its result."""
    trace = trace_in(runs, s)
    c = Claude()
    append(trace, c.init(), *reads(c, *specs), *([c.result()] if result else []))
    return trace


def run_once(w: Watcher):
    w.scan()
    w.poll_all()
    (run,) = w.table.runs.values()
    return run


def decisions(engine: AbortEngine, policy: str | None = None) -> list:
    return [d for d in engine.decisions if policy is None or d.policy == policy]


# ---------------------------------------------------------------------- policies


def test_max_steps_fires_at_the_exact_step_even_inside_one_batch(env):
    s, runs, res = env
    trace = claude_trace(runs, s, *[("src/util.py", 20 + i, 21 + i) for i in range(6)])
    w, engine = start(runs, res, policy("steps", "max_steps", limit=3))
    run = run_once(w)  # all six steps arrive in one batch
    (d,) = decisions(engine)
    assert (d.policy, d.step, d.value, d.outcome) == ("steps", 3, 3.0, "written")
    abort = json.loads((trace.parent / ABORT_NAME).read_text())
    assert abort["policy"] == "steps" and abort["run_id"] == "r1" and abort["step"] == 3
    assert run.aborted == {"steps": "file"}
    assert w.table.stats.aborts[("steps", "file")] == 1


def test_stagnation_counts_steps_since_gold_coverage_last_grew(env):
    s, runs, res = env
    # step 1 reads init_ctx lines 4-9 (all the line-level gold, docs/metrics.md §3), step 2
    # add_ctx util.py 1-2 (span and file gold); then five non-gold re-reads
    claude_trace(runs, s, ("src/app.py", 4, 9), ("src/util.py", 1, 2),
                 *[("src/util.py", 20, 25)] * 5)
    w, engine = start(runs, res, policy("stuck", "stagnation", steps=3, granularity="span")
                      + policy("stuck-line", "stagnation", steps=3, granularity="line")
                      + policy("stuck-file", "stagnation", steps=4, granularity="file"))
    run_once(w)
    (d,) = decisions(engine, "stuck")
    assert d.step == 5 and d.value == 3.0 and "since step 2" in d.reason
    # line coverage was complete at step 1: nothing left to find, never stuck
    assert decisions(engine, "stuck-line") == []
    # both gold files were read by step 2: file coverage is complete, never stuck
    assert decisions(engine, "stuck-file") == []


def test_stagnation_does_not_fire_while_coverage_keeps_growing(env):
    s, runs, res = env
    claude_trace(runs, s, *[("src/app.py", i, i) for i in range(4, 10)])
    w, engine = start(runs, res, policy("stuck", "stagnation", steps=2))
    run_once(w)
    assert decisions(engine) == []


def test_lines_and_bytes_budgets(env):
    s, runs, res = env
    claude_trace(runs, s, ("src/app.py", 1, 10), ("src/app.py", 11, 30))
    w, engine = start(runs, res, policy("lines", "max_lines", limit=25)
                      + policy("bytes", "max_bytes", limit=1))
    run_once(w)
    (lines,) = decisions(engine, "lines")
    (b,) = decisions(engine, "bytes")
    assert (lines.step, lines.value) == (2, 30.0)
    assert b.step == 1 and b.value > 1


def test_redundancy_waits_for_after_steps(env):
    s, runs, res = env
    claude_trace(runs, s, ("src/app.py", 1, 10), ("src/app.py", 1, 10), ("src/app.py", 1, 10))
    w, engine = start(runs, res, policy("redundant", "redundancy", above=0.4, after_steps=3))
    run_once(w)
    (d,) = decisions(engine)
    # step 2 already has redundancy 0.5, but the policy waits until step 3 (2/3 redundant)
    assert d.step == 3 and d.value == pytest.approx(1 - 10 / 30)


def test_precision_below_at_the_chosen_granularity(env):
    s, runs, res = env
    claude_trace(runs, s, ("src/util.py", 10, 30), ("src/util.py", 1, 2))
    w, engine = start(runs, res, policy("imprecise", "precision", below=0.1, after_steps=1)
                      + policy("imprecise-file", "precision", below=0.5, granularity="file"))
    run_once(w)
    (d,) = decisions(engine)  # line precision 0 at step 1; file precision is 1.0
    assert d.policy == "imprecise" and d.step == 1 and d.value == 0.0


def test_token_and_cost_budgets(env):
    s, runs, res = env
    claude_trace(runs, s, *[("src/util.py", 20, 21)] * 4, result=True)
    w, engine = start(runs, res, policy("tokens", "tokens", limit=40, kinds=["input", "output"])
                      + policy("cost", "cost", limit_usd=0.005))
    run_once(w)
    (t,) = decisions(engine, "tokens")
    assert t.step == 3 and t.value == 45.0  # 10 + 5 tokens per message
    (cost,) = decisions(engine, "cost")  # the cost arrives with the final result line
    assert cost.value == pytest.approx(0.01) and cost.cost_usd == pytest.approx(0.01)


#: app.py 1-10, util.py 1-5, app.py 1-10 twice, app.py 11-20, app.py 1-10: six steps
#: showing 10, 5, 10, 10, 10, 10 lines, 25 of them distinct; the last new file is read at
#: step 2; the Read of app.py 1-10 is made at calls 1, 3, 4 and 6
SIGNAL_RUN = (("src/app.py", 1, 10), ("src/util.py", 1, 5), ("src/app.py", 1, 10),
              ("src/app.py", 1, 10), ("src/app.py", 11, 20), ("src/app.py", 1, 10))


def test_no_new_files_counts_steps_since_a_file_was_first_read(env):
    s, runs, res = env
    claude_trace(runs, s, *SIGNAL_RUN)
    w, engine = start(runs, res, policy("stale", "no_new_files", steps=3))
    run_once(w)
    (d,) = decisions(engine)
    assert (d.step, d.value) == (5, 3.0)   # steps 3, 4, 5 read no file not read before
    assert "3 steps without reading a file not read before" in d.reason


def test_repeats_trips_when_one_call_has_been_made_n_times(env):
    s, runs, res = env
    claude_trace(runs, s, *SIGNAL_RUN)
    w, engine = start(runs, res, policy("again", "repeats", times=3))
    run_once(w)
    (d,) = decisions(engine)
    assert (d.step, d.value) == (4, 3.0)   # the third Read of app.py 1-10 is call 4


def test_reread_share_waits_for_after_steps(env):
    """After step k the share is 1 - distinct/shown: 0, 0, 1-15/25, 1-15/35, 1-25/45,
    1-25/55. Above 0.5 from step 4 (0.571), but not at step 5 (0.444): with
    after_steps = 5 the policy trips at step 6 (0.545)."""
    s, runs, res = env
    claude_trace(runs, s, *SIGNAL_RUN)
    w, engine = start(runs, res, policy("seen", "reread_share", above=0.5, after_steps=5)
                      + policy("seen-early", "reread_share", above=0.5))
    run_once(w)
    (d,) = decisions(engine, "seen")
    assert d.step == 6 and d.value == pytest.approx(1 - 25 / 55)
    (early,) = decisions(engine, "seen-early")
    assert early.step == 4 and early.value == pytest.approx(1 - 15 / 35)


def test_gold_free_kinds_judge_a_run_without_gold(env):
    """A run no gold row names is a run (docs/metrics.md §5b): steps, files and repeats
    are counted; reread_share needs the repository's lines and never trips."""
    s, runs, res = env
    trace = trace_in(runs, s, instance_id="nobody__nothing-1")
    c = Claude()
    append(trace, c.init(), *reads(c, *SIGNAL_RUN))
    w, engine = start(runs, res, policy("stale", "no_new_files", steps=3)
                      + policy("again", "repeats", times=3)
                      + policy("seen", "reread_share", above=0.1))
    run = run_once(w)
    assert run.session.gold is None
    assert {(d.policy, d.step) for d in engine.decisions} == {("stale", 5), ("again", 4)}


def test_wall_time_without_trace_timestamps_uses_time_since_first_seen(env):
    s, runs, res = env
    trace = claude_trace(runs, s, ("src/util.py", 20, 21))
    w, engine = start(runs, res, policy("slow", "wall_time", seconds=60))
    run = run_once(w)
    w.tick(now=run.first_seen + 30)
    assert decisions(engine) == []
    w.tick(now=run.first_seen + 61)
    (d,) = decisions(engine)
    assert d.value == pytest.approx(61.0) and (trace.parent / ABORT_NAME).exists()


def test_each_policy_fires_once_per_run_even_after_the_trace_restarts(env):
    s, runs, res = env
    trace = trace_in(runs, s)
    c = Claude()
    append(trace, c.init(), *reads(c, ("src/util.py", 20, 21), ("src/util.py", 20, 21)))
    w, engine = start(runs, res, policy("steps", "max_steps", limit=1))
    run_once(w)
    append(trace, *reads(c, ("src/util.py", 22, 23)))
    w.changed(trace)
    w.tick()
    trace.write_bytes(b"")  # truncated: the run is scored again from byte 0
    w.changed(trace)
    append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
    w.changed(trace)
    assert len(decisions(engine)) == 1
    assert w.table.stats.aborts[("steps", "file")] == 1
    (run,) = w.table.runs.values()
    assert run.aborted == {"steps": "file"}


def test_abort_counter_is_exported(env):
    from prometheus_client import CollectorRegistry

    from streameval.live.exporter import RunsCollector

    s, runs, res = env
    claude_trace(runs, s, ("src/util.py", 20, 21))
    w, _engine = start(runs, res, policy("steps", "max_steps", limit=1))
    run_once(w)
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    assert reg.get_sample_value("streameval_aborts_total",
                                {"policy": "steps", "action": "file"}) == 1.0


# ---------------------------------------------------------------------- actions


class _Hook(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook_server():
    handler = type("Hook", (_Hook,), {"received": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_port}/abort", handler.received
    server.shutdown()
    server.server_close()
    t.join()


def test_webhook_posts_the_decision(env, webhook_server):
    url, received = webhook_server
    s, runs, res = env
    trace = claude_trace(runs, s, ("src/util.py", 20, 21), ("src/util.py", 22, 23))
    w, engine = start(runs, res, f'[webhook]\nurl = "{url}"\n'
                      + policy("steps", "max_steps", action="webhook", limit=2))
    run_once(w)
    assert engine.webhook.flush(timeout=30)
    (body,) = received
    assert body["policy"] == "steps" and body["run_id"] == "r1" and body["step"] == 2
    assert engine.webhook.counts["sent"] == 1
    assert not (trace.parent / ABORT_NAME).exists()


def test_dead_webhook_is_retried_then_given_up_without_blocking(env):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s, runs, res = env
    claude_trace(runs, s, ("src/util.py", 20, 21))
    toml = (f'[webhook]\nurl = "http://127.0.0.1:{port}/x"\ntimeout = 2\nretries = 2\nbackoff = 0\n'
            + policy("steps", "max_steps", action="webhook", limit=1))
    w, engine = start(runs, res, toml)
    run_once(w)
    (d,) = decisions(engine)
    assert d.outcome == "queued"  # the check returned with the POST still to do
    assert engine.webhook.flush(timeout=60)
    assert engine.webhook.counts["attempts"] == 3 and engine.webhook.counts["gave_up"] == 1
    assert engine.webhook.results[-1]["ok"] is False
    engine.close()


def test_signal_terminates_the_agent_process(env):
    s, runs, res = env
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        trace = trace_in(runs, s, pid=child.pid)
        c = Claude()
        append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
        w, engine = start(runs, res, "allow_signals = true\n"
                          + policy("steps", "max_steps", action="signal", limit=1))
        run_once(w)
        (d,) = decisions(engine)
        assert d.outcome == "signalled"
        assert child.wait(timeout=30) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_signal_with_no_pid_is_logged_and_counted(env, caplog):
    s, runs, res = env
    claude_trace(runs, s, ("src/util.py", 20, 21))
    w, engine = start(runs, res, "allow_signals = true\n"
                      + policy("steps", "max_steps", action="signal", limit=1))
    run_once(w)
    (d,) = decisions(engine)
    assert d.outcome == "no_pid" and engine.outcomes["no_pid"] == 1
    assert w.table.stats.aborts[("steps", "signal")] == 1
    assert "no pid" in caplog.text


def test_dry_run_decides_but_does_not_act(env, webhook_server):
    url, received = webhook_server
    s, runs, res = env
    trace = claude_trace(runs, s, ("src/util.py", 20, 21))
    toml = (f'[webhook]\nurl = "{url}"\n' + policy("f", "max_steps", limit=1)
            + policy("h", "max_steps", action="webhook", limit=1))
    w, engine = start(runs, res, toml, dry_run=True)
    run_once(w)
    assert sorted(d.outcome for d in decisions(engine)) == ["dry_run", "dry_run"]
    assert engine.webhook.flush(timeout=5)
    assert received == [] and not (trace.parent / ABORT_NAME).exists()
    assert w.table.stats.aborts[("h", "webhook")] == 1


# ---------------------------------------------------------------------- configuration


@pytest.mark.parametrize("text, message", [
    ("[[policy]\nname = 1", "not valid TOML"),
    ('[[policy]]\nname = "a"\nkind = "steps"\nlimit = 1\n', "kind must be one of"),
    ('[[policy]]\nname = "a"\nkind = "max_steps"\n', "missing ['limit']"),
    ('[[policy]]\nname = "a"\nkind = "max_steps"\nlimit = 1\nlimt = 2\n', "unknown key(s) ['limt']"),
    ('[[policy]]\nname = "a"\nkind = "max_steps"\nlimit = "ten"\n', "limit must be a number"),
    ('[[policy]]\nname = "a"\nkind = "max_steps"\nlimit = 1\naction = "signal"\n', "allow_signals = true"),
    ('[[policy]]\nname = "a"\nkind = "max_steps"\nlimit = 1\naction = "webhook"\n', "needs a url"),
    ('[[policy]]\nname = "a"\nkind = "precision"\nbelow = 5\n', "ratio between 0 and 1"),
    ('[[policy]]\nname = "a"\nkind = "reread_share"\nabove = 1.5\n', "ratio between 0 and 1"),
    ('[[policy]]\nname = "a"\nkind = "repeats"\ntimes = 1\n', "times must be >= 2"),
    ('[[policy]]\nname = "a"\nkind = "no_new_files"\nsteps = 0\n', "steps must be >= 1"),
    ('[[policy]]\nname = "a"\nkind = "stagnation"\nsteps = 3\ngranularity = "word"\n', "granularity must be"),
    ('[[policy]]\nname = "a"\nkind = "max_steps"\nlimit = 1\n' * 2, "repeated: ['a']"),
    ("allow_signals = true\n", "no policies"),
])
def test_config_errors_say_what_and_where(tmp_path, text, message):
    path = tmp_path / "abort.toml"
    path.write_text(text)
    with pytest.raises(AbortConfigError) as err:
        load_policies(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(AbortConfigError, match="cannot read abort policies"):
        load_policies(tmp_path / "nope.toml")


def test_example_config_loads_and_covers_every_kind():
    cfg = load_policies(ROOT / "examples" / "abort.toml")
    assert {p.kind for p in cfg.policies} == set(KINDS)
    assert cfg.allow_signals is False


def test_webhook_4xx_is_not_retried(env):
    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(400)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Refuse)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        s, runs, res = env
        trace = trace_in(runs, s)
        c = Claude()
        append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
        toml = (f'[webhook]\nurl = "http://127.0.0.1:{server.server_port}/"\nretries = 3\nbackoff = 0\n'
                + policy("steps", "max_steps", action="webhook", limit=1))
        w, engine = start(runs, res, toml)
        run_once(w)
        assert engine.webhook.flush(timeout=30)
        assert engine.webhook.counts["attempts"] == 1 and engine.webhook.counts["gave_up"] == 1
        assert engine.webhook.results[-1]["error"] == "HTTP 400"
    finally:
        server.shutdown()
        server.server_close()
        t.join()


def test_full_webhook_queue_drops_and_counts():
    from streameval.live.abort.engine import WebhookConfig, WebhookSender

    sender = WebhookSender(WebhookConfig(url="http://127.0.0.1:9/", queue_size=1, retries=0))
    sender._stop.set()  # the worker takes nothing: the queue stays full
    sender._thread = threading.Thread(target=lambda: None)
    assert sender.submit("http://127.0.0.1:9/", {"policy": "a"}) is True
    assert sender.submit("http://127.0.0.1:9/", {"policy": "b"}) is False
    assert sender.counts["dropped"] == 1


def test_a_restarted_watcher_does_not_rewrite_the_abort_file(env):
    s, runs, res = env
    trace = claude_trace(runs, s, ("src/util.py", 20, 21), ("src/util.py", 22, 23))
    toml = policy("steps", "max_steps", limit=2)
    w, engine = start(runs, res, toml)
    run_once(w)
    first = (trace.parent / ABORT_NAME).read_text()
    w2, engine2 = start(runs, res, toml)  # a new process reads the trace from byte 0
    run_once(w2)
    (d,) = decisions(engine2)
    assert d.outcome == "exists" and (trace.parent / ABORT_NAME).read_text() == first
    assert len(json.loads(first)["decisions"]) == 1


def test_two_policies_share_one_abort_file(env):
    s, runs, res = env
    trace = claude_trace(runs, s, ("src/util.py", 20, 21), ("src/util.py", 20, 21))
    w, engine = start(runs, res, policy("steps", "max_steps", limit=1)
                      + policy("redundant", "redundancy", above=0.1))
    run_once(w)
    abort = json.loads((trace.parent / ABORT_NAME).read_text())
    assert abort["policy"] == "redundant" and abort["outcome"] == "written"
    assert [d["policy"] for d in abort["decisions"]] == ["steps", "redundant"]
    assert not list(trace.parent.glob("*.tmp"))


def test_watch_command_line_options_attach_the_engine(env, tmp_path):
    import argparse

    from streameval.commands import watch

    s, runs, res = env
    claude_trace(runs, s, ("src/util.py", 20, 21))
    cfg = tmp_path / "abort.toml"
    cfg.write_text(policy("steps", "max_steps", limit=1))
    p = argparse.ArgumentParser()
    watch.add_arguments(p)
    args = p.parse_args([str(runs), "--gold", str(s.gold), "--repo", str(s.repo),
                         "--abort-config", str(cfg), "--dry-run"])
    w = Watcher(watch.config_from_args(args), res)
    engine = watch._abort_engine(args, w)
    assert engine is not None and engine.dry_run
    run_once(w)
    assert [d.outcome for d in engine.decisions] == ["dry_run"]
    assert watch._abort_engine(p.parse_args([str(runs), "--gold", str(s.gold)]), w) is None
    cfg.write_text("[[policy]]\nkind = 'max_steps'\n")
    with pytest.raises(AbortConfigError, match="missing"):
        watch._abort_engine(args, w)


def test_multi_run_keys_map_back_to_their_trace_file(env):
    from streameval.live.abort.engine import trace_path_of

    s, runs, res = env
    trace = trace_in(runs, s)
    trace.write_bytes(b"")
    w, _engine = start(runs, res, policy("steps", "max_steps", limit=1))
    w.scan()
    assert trace_path_of(w, f"{trace}#2") == trace
    assert trace_path_of(w, str(trace)) == trace


def test_abort_file_appears_while_the_real_watch_loop_runs(env):
    import time

    import anyio
    from anyio.from_thread import start_blocking_portal

    from streameval.live.loop import run_watcher

    s, runs, res = env
    trace = trace_in(runs, s)
    c = Claude()
    append(trace, c.init())
    cfg = WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0, rescan_interval=1.0)
    w = Watcher(cfg, res)
    attach(w, AbortEngine(parse_policies(policy("steps", "max_steps", limit=3))))
    with start_blocking_portal() as portal:
        stop = portal.call(anyio.Event)
        future, _ = portal.start_task(run_watcher, w, stop)
        try:
            abort_file = trace.parent / ABORT_NAME
            deadline = time.monotonic() + 60  # a hang guard, not a speed assertion
            i = 0
            # the agent keeps working until it sees ABORT (as a harness would poll)
            while not abort_file.exists() and time.monotonic() < deadline:
                append(trace, *reads(c, ("src/util.py", 1 + i % 30, 1 + i % 30)))
                i += 1
                time.sleep(0.2)
            assert json.loads(abort_file.read_text())["step"] == 3
        finally:
            portal.call(stop.set)
            future.result(timeout=30)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_written_policy_reads_back_as_itself(kind):
    """``format_policy`` (what ``abort-backtest --tune`` writes) is ``parse_policies``'s
    inverse, for every kind, with its optional keys set away from their defaults."""
    required, optional = KINDS[kind]
    table = {"name": f"t-{kind}", "kind": kind, required[0]: 0.35 if kind in (
        "redundancy", "precision", "reread_share") else 12,
             "description": 'tuned "here"'}
    if "after_steps" in optional:
        table["after_steps"] = 20
    if "granularity" in optional:
        table["granularity"] = "span"
    if "kinds" in optional:
        table["kinds"] = ["input", "output"]
    text = "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    (p,) = parse_policies("[[policy]]\n" + text).policies
    (again,) = parse_policies(format_policy(p)).policies
    assert again == p
