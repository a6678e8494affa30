"""Where the tests' recorded inputs live: inside the repository, so a clone stands alone.

``fixtures/real`` holds traces written by real agents (provenance and licences in its
SOURCES.md); ``fixtures/data`` the ContextBench gold rows.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent   # the checkout
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
EXAMPLES = ROOT / "streameval" / "examples"
REAL = FIXTURES / "real"
PUSH = FIXTURES / "push"
GOLD_PARQUET = FIXTURES / "data" / "verified_test.parquet"
