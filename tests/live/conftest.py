"""Shared by the live tests: a small real repo, its gold and a runs directory."""

from __future__ import annotations

import pytest
from claude_run import make_setup

from streameval.runs.resources import load_resources


@pytest.fixture
def env(tmp_path):
    """(setup, runs directory, resources) over a fresh two-file git repo."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    res = load_resources(str(s.gold), None, str(s.repo))
    return s, runs, res
