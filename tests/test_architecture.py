"""The house (docs/architecture.md): rooms import downwards only, no cycle, small modules.

Every ``import`` statement of the package counts, at module level or inside a function,
and under ``TYPE_CHECKING`` too: an import hidden in a function is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "streameval"

#: room -> its floor; a module may import its own room and the floors below, and rooms on
#: one floor do not import each other (``traces`` and ``sources`` know nothing of each other)
FLOORS: dict[str, int] = {
    "vocabulary": 0, "web": 0,
    "traces": 1, "sources": 1,
    "reading": 2,
    "scoring": 3,
    "runs": 4,
    "report": 5,
    "live": 6,
    "playback": 7,
    "commands": 8,
}
#: the modules of the shared vocabulary, at the package's top level
VOCABULARY = {"__init__", "model", "errors", "config", "sane", "fileio", "tools", "version", "intervals",
              "untrusted"}


def modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        if rel.parts[0] == "examples":
            continue
        parts = ["streameval", *rel.with_suffix("").parts]
        if parts[-1] == "__init__" and len(parts) > 2:
            parts.pop()
        out[".".join(parts)] = path
    return out


def room_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 2 and parts[1] not in FLOORS:
        name = parts[1]
        if name == "__main__":
            return "commands"
        assert name in VOCABULARY, f"{module}: a top-level module outside the vocabulary"
        return "vocabulary"
    return parts[1]


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text())
    pkg = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
            # ``from pkg import module`` depends on the module, not on pkg's __init__
            subs = [f"{base}.{a.name}" for a in node.names]
            names = [s for s in subs if s in known] or [base]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module and name.startswith("streameval."):
                found.add(name)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports_of(m, p, set(mods)) for m, p in mods.items()}


def test_every_module_is_in_a_room():
    rooms = {room_of(m) for m in modules()}
    assert rooms <= set(FLOORS), rooms - set(FLOORS)


def test_no_import_runs_back_up(graph):
    wrong = []
    for mod, deps in graph.items():
        room = room_of(mod)
        for dep in deps:
            other = room_of(dep)
            if other != room and FLOORS[other] >= FLOORS[room]:
                wrong.append(f"{mod} ({room}) imports {dep} ({other})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle(graph):
    """Tarjan's strongly connected components: any with two modules is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_no_module_is_over_600_lines():
    big = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > 600}
    assert not big, big


def test_the_checker_sees_an_upward_import(tmp_path):
    """The rule can fail: a scoring module importing live is caught."""
    path = tmp_path / "x.py"
    path.write_text("def f():\n    from streameval.live.watch import Watcher\n")
    deps = imports_of("streameval.scoring.x", path, {"streameval.live.watch"})
    assert deps == {"streameval.live.watch"}
    assert FLOORS[room_of("streameval.live.watch")] > FLOORS[room_of("streameval.scoring.x")]
