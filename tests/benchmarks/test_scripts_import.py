"""The benchmarks and scripts name only what the package still has.

They run outside CI (they need fetched repositories, or minutes), so a move inside the
package could break them unnoticed: the house move did, for ``bench_live.py``. Every
``streameval`` name they import, at the top or inside a function, must resolve.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*ROOT.joinpath("benchmarks").rglob("*.py"), *ROOT.joinpath("scripts").rglob("*.py")])


def _imports(path: Path) -> list[tuple[int, str, str | None]]:
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("streameval"):
            out += [(node.lineno, node.module, a.name) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names if a.name.startswith("streameval")]
    return out


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_streameval_name_a_script_imports_exists(path):
    missing = []
    for lineno, module, name in _imports(path):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"line {lineno}: {module} ({exc})")
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {lineno}: {module}.{name}")
    assert not missing, missing


def test_the_scripts_are_found():
    assert any(p.name == "bench_live.py" for p in SCRIPTS) and len(SCRIPTS) > 20
