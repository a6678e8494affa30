"""The first hour: every mistake a new user makes gets one line naming what is wrong and
exit code 2, never a traceback or a hang; ``--help`` is the same language everywhere."""

from __future__ import annotations

import re
import socket

import pytest
from fixture_paths import ROOT

from streameval.commands.main import COMMANDS, build_parser, main

EX = ROOT / "examples"
GOLD, REPO, PREDS = str(EX / "gold.jsonl"), str(EX / "repo"), str(EX / "predictions.jsonl")


@pytest.fixture
def taken_port():
    """A port some other program is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _one_line_usage_error(argv: list[str], capsys, needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err                    # one line
    assert "Traceback" not in err
    assert err.startswith(f"streameval {argv[0]}: ")
    assert re.search(needle, err), err


@pytest.mark.parametrize("argv", [
    ["demo", "--linger", "0"],
    ["watch", "{tmp}", "--gold", GOLD, "--repo", REPO],
    ["replay", str(EX / "runs"), "--live", "--gold", GOLD, "--repo", REPO, "--linger", "0"],
])
def test_a_port_in_use(argv, taken_port, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--port", str(taken_port)]
    _one_line_usage_error(argv, capsys, rf"127\.0\.0\.1:{taken_port}: .*in use.*--port")


@pytest.mark.parametrize("argv, needle", [
    (["demo", "--port", "70000"], r"--port: '70000' is not a port number"),
    (["demo", "--host", "no-such-host.invalid", "--port", "0", "--linger", "0"],
     r"no-such-host\.invalid.*check --host"),
    (["demo", "--speed", "0"], r"--speed: '0' is not a number > 0"),
    (["demo", "--speed", "nan"], r"--speed: 'nan' is not a number > 0"),
    (["replay", PREDS, "--gold", GOLD, "--repo", REPO, "--workers", "0"],
     r"--workers: '0' is not a whole number >= 1"),
    (["replay", PREDS, "--gold", GOLD, "--repos", "/no/such/dir"],
     r"--repos /no/such/dir: no such directory"),
    (["watch", "{tmp}", "--gold", "/no/such/gold.jsonl", "--repo", REPO, "--port", "0"],
     r"gold file not found: /no/such/gold\.jsonl"),
    (["watch", "{tmp}", "--gold", str(EX / "README.md"), "--repo", REPO, "--port", "0"],
     r"README\.md has no usable gold rows"),
    (["watch", "{tmp}", "--front", "thread", "--workers", "2"],
     r"--front thread serves and scores in one process"),
    (["replay", PREDS, "--gold", GOLD, "--repo", REPO, "--csv", "{tmp}/no/dir/r.csv"],
     r"cannot write .*r\.csv"),
    (["abort-backtest", str(EX / "abort.toml"), str(EX / "backtest"), "--gold", GOLD,
      "--repo", REPO, "--high-coverage", "2"], r"'2' is not a number from 0 to 1"),
    (["inspect", str(EX / "runs" / "example-run-1" / "trace.jsonl"), "--width", "-3"],
     r"--width: '-3' is not a whole number >= 1"),
])
def test_bad_settings(argv, needle, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    _one_line_usage_error(argv, capsys, needle)


def test_an_unreadable_gold_file(tmp_path, capsys):
    gold = tmp_path / "gold.parquet"
    gold.write_bytes(b"PAR1 not really parquet")
    _one_line_usage_error(["watch", str(tmp_path), "--gold", str(gold), "--repo", REPO,
                           "--port", "0"], capsys, rf"gold file {gold} cannot be read as parquet")


def test_help_speaks_one_language_and_shows_defaults():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "replay" in a.choices)
    metavars: dict[str, set[str]] = {}
    for name in COMMANDS:
        text = sub.choices[name].format_help()
        for opt, meta in re.findall(r"^\s+(--[\w-]+) ([A-Z/]+)\b", text, re.M):
            metavars.setdefault(opt, set()).add(meta)
    shared = {o: m for o, m in metavars.items()
              if o in ("--gold", "--repos", "--repo", "--tool-map", "--format", "--port",
                       "--host", "--out", "--instance", "--json")}
    assert all(len(m) == 1 for m in shared.values()), shared
    assert shared["--gold"] == {"PATH"} and shared["--repos"] == {"DIR"}
    watch = sub.choices["watch"].format_help()
    flat = " ".join(watch.split())
    assert "(default: 300.0)" in flat and "(default: 9108)" in flat


def test_own_decisions_are_logged_by_default_and_library_chatter_is_not():
    import logging

    from streameval.commands.options import setup_logging

    root = logging.getLogger()
    saved = (root.level, list(root.handlers), logging.getLogger("streameval").level)
    try:
        root.handlers.clear()
        setup_logging(verbose=False)
        assert logging.getLogger("streameval.live.abort.engine").isEnabledFor(logging.INFO)
        assert not logging.getLogger("watchfiles.main").isEnabledFor(logging.INFO)
        setup_logging(verbose=True)
        assert logging.getLogger("streameval.live.follow").isEnabledFor(logging.DEBUG)
        assert not logging.getLogger("watchfiles.main").isEnabledFor(logging.INFO)
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        logging.getLogger("streameval").setLevel(saved[2])


@pytest.mark.parametrize("argv, front", [
    ([], "process"),
    (["--front", "thread"], "thread"),
    (["--ingest-front", "thread"], "thread"),   # its name before it served /metrics too
])
def test_the_front_is_a_process_unless_told(argv, front):
    args = build_parser("watch").parse_args(["watch", "runs", *argv])
    assert args.front == front


def test_a_header_on_the_command_line_warns_that_every_user_can_read_it(caplog):
    """f53415f documented ``--otlp-header "Authorization=..."``: a secret in ``ps -ef``;
    OTEL_EXPORTER_OTLP_HEADERS, which the exporters read, was not documented."""
    import argparse
    import logging

    from streameval.commands import otlp_options

    args = argparse.Namespace(otlp_endpoint="http://127.0.0.1:1", otlp_protocol="http/json",
                              otlp_signals=("traces",), otlp_header=[("Authorization", "x")])
    with caplog.at_level(logging.WARNING):
        em = otlp_options.emitter(args)
    em.close(timeout_millis=100)
    assert any("OTEL_EXPORTER_OTLP_HEADERS" in r.getMessage() for r in caplog.records)


def test_workers_default_to_the_cores_available_at_most_eight(monkeypatch):
    """``watch --workers`` and ``replay --workers``: the cores this process may run on
    (its CPU affinity, as a container or taskset sets it), at most 8."""
    from streameval import config

    for cores, expected in ((1, 1), (2, 2), (64, 8)):
        monkeypatch.setattr(config.os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)),
                            raising=False)
        assert config.default_workers() == expected
    parser = build_parser()
    assert parser.parse_args(["replay", "x.jsonl"]).workers == config.default_workers()
    assert parser.parse_args(["watch", "dir"]).workers is None   # decided when run (--front)
