"""Python run inside a shell command: which files the script reads and which it writes.

Agents edit files with scripts of their own (``python - <<'EOF' ... open(p, 'w') ...``,
``python -c``, ``cat > fix.py <<EOF`` then ``python fix.py``) and print files with them.
The script is *parsed* with ``ast`` (never run) and its file accesses with literal paths
are found: ``open(p, mode)``, ``Path(p).read_text()``/``write_text()``, a name bound to
such a literal first (``p = "a.py"; open(p, "w")``), and OpenHands' file skills in its
IPython cells (``open_file(p)`` reads; ``edit_file_by_replace(p, ...)``,
``insert_content_at_line``, ``append_file``, ``create_file`` write). A write is an edit
whose text we do not know (the next read of the file shows what it became); a single
file read is text the output may show. Code that does not parse falls back to a plain
scan for ``open("...", "w")``.
"""

from __future__ import annotations

import ast
import re

__all__ = ["script_files"]

_OPEN = re.compile(r"""open\(\s*(['"])([^'"\n]+)\1\s*(?:,\s*(?:mode\s*=\s*)?(['"])([rwaxbt+]+)\3)?""")
_WRITE_MODES = set("wax+")
_PATH_CALLS = {"Path", "PurePath", "PosixPath"}


_FILE_CALLS = ("open(", "_text(", "_bytes(", "_file(", "_line(", "_file_by_replace(")
#: OpenHands agent skills (``openhands.runtime.plugins.agent_skills``): name -> writes?
_SKILLS = {"open_file": False, "edit_file_by_replace": True, "insert_content_at_line": True,
           "append_file": True, "create_file": True}
_SKILL_PATH_ARGS = ("path", "file_name", "filename")


def script_files(code: str) -> tuple[list[str], list[str]]:
    """(files read, files written) by literal path, in order of appearance."""
    if not any(mark in code for mark in _FILE_CALLS):
        return [], []   # no file access a literal path could name: nothing to parse
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _scan(code)
    assigns: list[ast.Assign] = []
    calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            assigns.append(node)
        elif isinstance(node, ast.Call):
            calls.append(node)
    names: dict[str, str] = {}
    for node in assigns:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            lit = _literal(node.value, names)
            if lit is not None:
                names[node.targets[0].id] = lit
    reads: dict[str, None] = {}
    writes: dict[str, None] = {}
    for node in calls:
        found = _access(node, names)
        if found is not None:
            path, write = found
            (writes if write else reads)[path] = None
    return list(reads), list(writes)


def _literal(node: ast.AST, names: dict[str, str]) -> str | None:
    """A string literal, a name bound to one, or ``Path("lit")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Call) and _callee(node) in _PATH_CALLS and len(node.args) == 1:
        return _literal(node.args[0], names)
    return None


def _callee(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _access(node: ast.Call, names: dict[str, str]) -> tuple[str, bool] | None:
    """(path, is_write) of one call that opens a file by a literal path."""
    name = _callee(node)
    method = isinstance(node.func, ast.Attribute)
    if name == "open":
        # open(p, mode) / io.open(p, mode), or Path(p).open(mode)
        on_path = method and _literal(node.func.value, names) is not None
        args = node.args if on_path else node.args[1:]
        path = _literal(node.func.value, names) if on_path else (
            _literal(node.args[0], names) if node.args else None)
        if path is None:
            return None
        mode = args[0] if args else next(
            (k.value for k in node.keywords if k.arg == "mode"), None)
        text = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "r"
        return path, bool(set(text) & _WRITE_MODES)
    if name in ("read_text", "read_bytes", "write_text", "write_bytes") and method:
        path = _literal(node.func.value, names)
        return None if path is None else (path, name.startswith("write"))
    if name in _SKILLS and not method:
        arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in _SKILL_PATH_ARGS), None)
        path = _literal(arg, names) if arg is not None else None
        return None if path is None else (path, _SKILLS[name])
    return None


def _scan(code: str) -> tuple[list[str], list[str]]:
    reads: dict[str, None] = {}
    writes: dict[str, None] = {}
    for m in _OPEN.finditer(code):
        mode = m.group(4) or "r"
        (writes if set(mode) & _WRITE_MODES else reads)[m.group(2)] = None
    return list(reads), list(writes)
