#!/usr/bin/env python3
"""Symbol definitions: streameval's against the public evaluator's, file by file.

    python scripts/grammar_parity.py [--oracle-python /tmp/oracle-venv/bin/python]
        [--oracle-src /tmp/oracle-src/Context-Bench] [--json OUT]

For every source file (an extension the rule book maps to a language) in the worktrees
of the runnable instances that ``bash ../shared/oracle/setup.sh`` prepared, the
evaluator's own extractor (``contextbench.extractors.treesitter.extract_defs``, in the
oracle's interpreter with its tree-sitter 0.20 and tree-sitter-languages 1.10.2) and
streameval's ``symbols.parse_definitions`` under each grammar set are compared as sets of
``(kind, start_byte, end_byte)``. The report lists the files that differ, per grammar
set, with the definitions only one side has. A script, not a test: it needs the oracle.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from oracle_parity import gold_rows, runnable, worktree  # noqa: E402

from streameval.sources.symbols import _EXTENSIONS, parse_definitions  # noqa: E402

_ORACLE_SIDE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from contextbench.extractors.treesitter import extract_defs, extract_named_defs
out = {}
for path in sys.stdin.read().split("\0"):
    if path:
        try:
            out[path] = [sorted(list(d) for d in set(extract_defs(path))),
                         sorted([k, s, e, n] for k, n, s, e in extract_named_defs(path))]
        except Exception as exc:
            out[path] = "error: %s" % (exc,)
json.dump(out, sys.stdout)
"""


def source_files(root: Path) -> list[Path]:
    """Every file whose lower-cased extension has a symbol language, as the evaluator
    looks them up (``.git`` skipped)."""
    found = []
    for p in sorted(root.rglob("*")):
        if ".git" in p.parts or not p.is_file() or p.is_symlink():
            continue
        if p.suffix.lower() in _EXTENSIONS:
            found.append(p)
    return found


def oracle_defs(python: str, src: str, files: list[Path]) -> dict[str, object]:
    with tempfile.TemporaryFile() as fh:
        fh.write("\0".join(map(str, files)).encode())
        fh.seek(0)
        done = subprocess.run([python, "-c", _ORACLE_SIDE, src], stdin=fh,
                              capture_output=True, check=True)
    return json.loads(done.stdout)


def ours(path: Path, grammars: str) -> list:
    """(definitions, named definitions) in the evaluator's shapes."""
    data = path.read_bytes()
    defs = set(parse_definitions(path.name, data, grammars=grammars).definitions)
    return [sorted([d.kind, d.start_byte, d.end_byte + 1] for d in defs),
            sorted([d.kind, d.start_byte, d.end_byte + 1, d.name] for d in defs if d.name)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle-python", default="/tmp/oracle-venv/bin/python")
    ap.add_argument("--oracle-src", default="/tmp/oracle-src/Context-Bench")
    ap.add_argument("--json", type=Path, help="write the differing files here")
    a = ap.parse_args()
    rows = gold_rows()
    seen: set[Path] = set()
    files: list[Path] = []
    for name in runnable():
        wt = worktree(rows[name]) if name in rows else None
        if wt is None or wt in seen:
            continue
        seen.add(wt)
        files += source_files(wt)
    print(f"{len(seen)} worktrees, {len(files)} source files", flush=True)
    theirs = oracle_defs(a.oracle_python, a.oracle_src, files)
    report: dict[str, dict] = {}
    for grammars in ("contextbench", "official"):
        differ, names = {}, 0
        for f in files:
            expected = theirs.get(str(f))
            got = ours(f, grammars)
            if isinstance(expected, list) and expected[0] == got[0]:
                names += expected[1] != got[1]   # same definitions, other names
            if isinstance(expected, str) or expected[0] != got[0]:
                e = {tuple(x) for x in expected[0]} if isinstance(expected, list) else set()
                g = {tuple(x) for x in got[0]}
                differ[str(f)] = {"evaluator_only": sorted(e - g), "streameval_only": sorted(g - e),
                                  "evaluator_error": expected if isinstance(expected, str) else None}
        by_ext = Counter(Path(f).suffix.lower() for f in differ)
        print(f"{grammars:>12}: {len(files) - len(differ)} of {len(files)} files identical; "
              f"{len(differ)} differ {dict(sorted(by_ext.items()))}; of the identical ones, "
              f"{names} name a definition otherwise")
        for f, d in sorted(differ.items()):
            print(f"    {f}: evaluator only {d['evaluator_only'][:3]}"
                  f"{'...' if len(d['evaluator_only']) > 3 else ''}; streameval only "
                  f"{d['streameval_only'][:3]}{'...' if len(d['streameval_only']) > 3 else ''}"
                  + (f" ({d['evaluator_error']})" if d["evaluator_error"] else ""))
        report[grammars] = differ
    if a.json:
        a.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
