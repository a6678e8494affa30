from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/gitrepo.py, fixture_paths.py

from claude_run import make_setup  # noqa: E402
from fixture_paths import GOLD_PARQUET, REAL  # noqa: E402

from streameval.runs.resources import load_resources  # noqa: E402


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    return REAL


@pytest.fixture(scope="session")
def gold_parquet() -> Path:
    return GOLD_PARQUET


# Timings are measured in benchmarks/, never asserted: no per-example deadline, so a
# slow or loaded CI machine cannot turn a correct property test red.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("streameval", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("streameval")


@pytest.fixture(autouse=True, scope="session")
def _own_config_home(tmp_path_factory):
    """``watch --ingest`` makes a token file in the user's config folder when told of
    none: the tests' watchers, in-process or not, make theirs in a folder of the run's."""
    import os

    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config-home")))
    mp.delenv("STREAMEVAL_INGEST_TOKEN", raising=False)
    yield os.environ["XDG_CONFIG_HOME"]
    mp.undo()


@pytest.fixture
def env(tmp_path):
    """(setup, runs directory, resources) over a fresh two-file git repo."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    res = load_resources(str(s.gold), None, str(s.repo))
    return s, runs, res
