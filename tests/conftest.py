from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/gitrepo.py


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared/ not found beside the checkout at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def real_fixtures(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / "real"


@pytest.fixture(scope="session")
def gold_parquet(shared_dir: Path) -> Path:
    return shared_dir / "data" / "contextbench" / "verified_test.parquet"


# Timings are measured in benchmarks/, never asserted: no per-example deadline, so a
# slow or loaded CI machine cannot turn a correct property test red.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("streameval", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("streameval")
