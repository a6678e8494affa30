"""No script, doc or test points at a folder of the machine it was written on.

Nineteen places in ``benchmarks/``, ``docs/ingest.md`` and two tests defaulted to the
mirrors folder, the old checkout ``loadgen.py`` compared against or the shared folder,
as absolute paths that exist on one machine only (issue 32). Each is now an option or a
``STREAMEVAL_*`` variable read in ``streameval/config.py`` alone, with the layout stated
once (benchmarks/README.md, "Folders").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from fixture_paths import ROOT

#: the folders of the machine these files were written on that they named: its mirrors,
#: shared folder, checkouts and venvs, its clones (``/workspace/...``, ``/home/u/proj``
#: and the like are agents' folders in traces, which tests name on purpose)
MACHINE_FOLDERS = re.compile(r"/work/(?:\.mirror|shared|base|venv|wt|trace)\b|/tmp/repos\b")
TEXT = (".py", ".md", ".sh", ".toml", ".yml", ".yaml", ".tsv")


def _files(*tops: str):
    for top in tops:
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and path.suffix in TEXT and "fixtures" not in path.parts:
                yield path


def test_no_file_names_a_folder_of_the_machine_that_wrote_it():
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
             for p in _files("benchmarks", "docs", "tests", "scripts", "deploy", ".ci")
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace")
                                      .splitlines(), 1)
             if MACHINE_FOLDERS.search(line) and p.name != "test_folders.py"]
    assert found == []


def test_streameval_variables_are_read_in_config_alone():
    """``deploy/shipper/ship.py`` runs in an agent's sandbox without the package: it reads
    its token itself."""
    reads = re.compile(r"""(?:environ(?:\.get)?[(\[]|getenv\()\s*["']STREAMEVAL_""")
    found = [str(p.relative_to(ROOT)) for p in _files("streameval", "benchmarks", "tests",
                                                      "scripts")
             if reads.search(p.read_text(encoding="utf-8"))
             and p.name not in ("config.py", "test_folders.py")]
    assert found == []


@pytest.mark.parametrize("script, variables", [
    ("wild.py", "STREAMEVAL_MIRRORS"),
    ("compare_real.py", "STREAMEVAL_MIRRORS and STREAMEVAL_REPOS"),
])
def test_a_benchmark_given_no_folder_says_what_to_give(tmp_path, script, variables):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMEVAL_")}
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script),
                          *(["--out", str(tmp_path)] if script == "compare_real.py" else [])],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 2 and f"set {variables}" in run.stderr, run.stderr


def test_the_base_of_an_ingest_benchmark_is_given_not_assumed():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import loadgen
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    saved = os.environ.pop("STREAMEVAL_BASE", None)
    try:
        assert [i.name for i in loadgen.impls(None)] == ["new"]
        with pytest.raises(SystemExit, match="give --base DIR .* or set STREAMEVAL_BASE"):
            loadgen.impls("new,base")
    finally:
        if saved is not None:
            os.environ["STREAMEVAL_BASE"] = saved
