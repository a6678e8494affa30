"""A non-editable install stands on its own: the wheel ships the example run, and
``streameval demo`` plays it from there (docs/getting-started.md)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from streameval.web import names as web_assets

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # offline: the build backend (setuptools>=77, a dev dependency) is already here
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(ROOT)], check=True, capture_output=True)
    (whl,) = out.glob("streameval-*.whl")
    return whl


def test_wheel_ships_the_example_and_the_licence(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for need in ("streameval/examples/gold.jsonl",
                 "streameval/examples/runs/example-run-1/trace.jsonl",
                 "streameval/examples/repo/inventory/billing.py"):
        assert need in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    # the page works from a wheel, offline
    assert {f"streameval/web/{a}" for a in web_assets()} <= names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "License-Expression: MIT" in text


def test_demo_runs_from_the_unpacked_wheel(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    out = tmp_path / "records.jsonl"
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); import streameval; "
            f"assert streameval.__file__.startswith({str(site)!r}), streameval.__file__; "
            "from streameval.commands.main import main; sys.exit(main())")
    proc = subprocess.run(
        [sys.executable, "-c", code, "demo", "--port", "0", "--speed", "1000",
         "--linger", "0", "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "final: example-run-1: 14 steps" in proc.stdout
    record = orjson.loads(out.read_bytes().splitlines()[-1])
    assert record["final"]["line"]["coverage"] == 1.0
