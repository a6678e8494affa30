"""The package entry: a small declared API, and an import that stays cheap."""

import subprocess
import sys

import pytest
from fixture_paths import EXAMPLES

import streameval
from streameval import config


def test_public_api_is_declared_and_resolves():
    assert sorted(streameval.__all__) == ["GoldInstance", "InstanceState", "IntervalSet", "Step",
                                          "evaluate_trace", "load_gold"]
    for name in streameval.__all__:
        assert getattr(streameval, name) is not None
    with pytest.raises(AttributeError):
        streameval.no_such_thing  # noqa: B018


def test_import_loads_no_grammar_pyarrow_or_prometheus_client():
    code = ("import sys, streameval; heavy = [m for m in ('tree_sitter', 'pyarrow', "
            "'prometheus_client', 'watchfiles', 'anyio') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_line_loads_no_numpy_until_a_comparison_runs():
    """Every command's options are built at start: compare's must not load numpy or scipy."""
    code = ("import sys; from streameval.commands.main import build_parser; build_parser(); "
            "print([m for m in ('numpy', 'scipy', 'pyarrow') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_replay_loads_neither_the_watcher_nor_its_server():
    """A plain replay builds only its own options: the watcher, uvicorn and the page were a
    third of a short replay's time (benchmarks/bench_versions.py)."""
    code = ("import sys, contextlib, io; from streameval.commands.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['replay', '--help'])\n"
            "print([m for m in ('uvicorn', 'streameval.live.watch', 'streameval.playback.reenact',"
            " 'streameval.live.page') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unified_predictions_are_scored_without_the_shell_reading(tmp_path):
    """Stated contexts are never read from tool output: a replay of unified predictions
    builds no StepBuilder and imports none of reading's shell (bench_versions: the whole
    process of a short replay)."""
    ex = EXAMPLES
    out = tmp_path / "u.jsonl"
    code = ("import sys; from streameval.commands.main import main\n"
            f"code = main(['replay', {str(ex / 'predictions.jsonl')!r}, '--gold', "
            f"{str(ex / 'gold.jsonl')!r}, '--repo', {str(ex / 'repo')!r}, '--quiet', "
            f"'--out', {str(out)!r}])\n"
            "print(code, [m for m in ('streameval.reading.steps', 'streameval.reading.shell',"
            " 'streameval.reading.toolmap') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0 []", done.stderr
    assert out.read_text().count("\n") >= 1 and '"final"' in out.read_text()


def test_port_and_host_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("STREAMEVAL_PORT", raising=False)
    monkeypatch.delenv("STREAMEVAL_HOST", raising=False)
    assert (config.host(), config.port()) == ("127.0.0.1", 9108)
    monkeypatch.setenv("STREAMEVAL_PORT", "9200")
    monkeypatch.setenv("STREAMEVAL_HOST", "0.0.0.0")
    assert (config.host(), config.port()) == ("0.0.0.0", 9200)
    monkeypatch.setenv("STREAMEVAL_PORT", "http")
    with pytest.raises(SystemExit, match="not a port number"):
        config.port()
