"""The ground-truth harness (benchmarks/truth) on a repository and trajectory made here.

A hand-made mini-swe-agent trajectory over a git repository this test creates, where
what each call showed is known by construction: a ``sed -n`` window, a ``cat``, an edit
by ``sed -i``, a numbered read across the edited line, an insert by a Python heredoc
script, a chained read over two files, a long output cut by the harness, a ``$``-anchored
grep the tags change, a recorded output that is not what the command prints, and a
program the agent's machine did not have. The harness must find the right base lines per call, and the right reasons for the rest.

The replaying tests need bubblewrap (``bwrap``, Debian's ``bubblewrap``): skipped cleanly
without it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from gitrepo import make_repo

from streameval.model import ToolCall
from streameval.reading.steps import CallOutcome, ResolvedRead
from streameval.sources.basetext import BaseTexts
from streameval.traces.formats.miniswe import MiniSweAdapter

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from truth.layout import lay_out  # noqa: E402
from truth.replay import CallTruth, Replayer  # noqa: E402
from truth.runner import RunSpec, replay_run  # noqa: E402
from truth.sandbox import Sandbox, available  # noqa: E402
from truth.score import BaseLines, score_call  # noqa: E402
from truth.tags import Origin  # noqa: E402

_WHY = available()
needs_bwrap = pytest.mark.skipif(_WHY is not None, reason=f"needs bubblewrap: {_WHY}")

A_LINES = ["import os", "", "def f(x):", "    return x", "", "def g(y):", "    return y",
           "x = 1", "y = 2", "# end"]
A = "".join(ln + "\n" for ln in A_LINES)
B = "alpha\nbeta\ngamma\n"
BIG_LINES = [f"row {i:04d} " + "." * 60 for i in range(1, 301)]
BIG = "".join(ln + "\n" for ln in BIG_LINES)
SCRIPT = ("cat <<'EOF' > fix.py\n"
          "p = 'pkg/a.py'\n"
          "lines = open(p).readlines()\n"
          "lines[5:5] = ['NEW1\\n', 'NEW2\\n']\n"
          "open(p, 'w').writelines(lines)\n"
          "EOF\n"
          "python3 fix.py")


def _lines(text_lines: list[str], a: int, b: int) -> str:
    return "".join(ln + "\n" for ln in text_lines[a - 1:b])


#: after the sed -i: line 3 is the agent's; after the script: two lines after line 5
A_EDITED = A_LINES[:2] + ["changed = 3"] + A_LINES[3:]
A_SCRIPTED = A_EDITED[:5] + ["NEW1", "NEW2"] + A_EDITED[5:]

#: (command, what it printed (None: the true output), expected status, expected truth)
PLAN: list[tuple[str, str | None, str, dict[str, set[int]] | None]] = [
    ("sed -n '2,4p' pkg/a.py", _lines(A_LINES, 2, 4), "checkable", {"pkg/a.py": {2, 3, 4}}),
    ("cat pkg/b.py", B, "checkable", {"pkg/b.py": {1, 2, 3}}),
    ("sed -i '3s/.*/changed = 3/' pkg/a.py", "", "not read-only: sed -i", None),
    ("nl -ba pkg/a.py | sed -n '2,4p'",
     "".join(f"{n:6d}\t{A_EDITED[n - 1]}\n" for n in (2, 3, 4)), "checkable",
     {"pkg/a.py": {2, 4}}),
    (SCRIPT, "", "not read-only: shell: here-document or process substitution", None),
    ("sed -n '5,8p' pkg/a.py", _lines(A_SCRIPTED, 5, 8), "checkable", {"pkg/a.py": {5, 6}}),
    ("cd /testbed && sed -n '9,10p' pkg/a.py && echo --- && head -n 2 pkg/b.py",
     _lines(A_SCRIPTED, 9, 10) + "---\n" + "alpha\nbeta\n", "checkable",
     {"pkg/a.py": {7, 8}, "pkg/b.py": {1, 2}}),
    ("cat pkg/big.txt", None, "checkable", None),   # cut by the harness: checked below
    ("grep -n 'y = 2$' pkg/a.py", "11:y = 2\n", "tags changed the output", None),
    ("cat pkg/b.py", "alpha\nBETA\ngamma\n", "output differs from the trace", None),
    # the agent's machine had no tac: ours must not have one either, or c.txt would fill
    ("tac pkg/b.py > pkg/c.txt", "bash: line 1: tac: command not found\n",
     "not read-only: redirect to a file", None),
    ("cat pkg/c.txt", "", "checkable", {}),
]
#: agent's own lines shown, per call index (1-based)
AGENT_LINES = {4: 1, 6: 2}


def _observation(out: str) -> str:
    if len(out) < 10000:
        return f"<returncode>0</returncode>\n<output>\n{out}</output>"
    return ("<returncode>0</returncode>\n<warning>\ntoo long\n</warning>\n"
            f"<output_head>\n{out[:5000]}\n</output_head>\n<elided_chars>\n"
            f"{len(out) - 10000} characters elided\n</elided_chars>\n"
            f"<output_tail>\n{out[-5000:]}\n</output_tail>")


def _trajectory() -> dict:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for command, printed, _, _ in PLAN:
        messages.append({"role": "assistant",
                         "content": f"THOUGHT: go\n\n```bash\n{command}\n```"})
        messages.append({"role": "user",
                         "content": _observation(BIG if printed is None else printed)})
    return {"info": {"exit_status": "Submitted", "submission": "",
                     "config": {"environment": {"cwd": "/testbed"}}},
            "messages": messages, "trajectory_format": "mini-swe-agent-1"}


def _events(doc: dict) -> list:
    adapter = MiniSweAdapter()
    for n, line in enumerate(json.dumps(doc, indent=1).encode().split(b"\n"), 1):
        adapter.feed(line, n)
    return list(adapter.close())


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[list[CallTruth], Path, str]:
    root = tmp_path_factory.mktemp("truth")
    sha = make_repo(root / "repo", {"pkg/a.py": A, "pkg/b.py": B, "pkg/big.txt": BIG})[0]
    layout = lay_out(root / "repo" / ".git", sha, root / "work")
    (root / "tmp").mkdir()
    (root / "home").mkdir()
    objects = (layout.plain / ".git/objects/info/alternates").read_text().strip()
    replayer = Replayer(layout, Sandbox("/testbed", root / "tmp", root / "home",
                                        ro_binds=(objects,), timeout=20), "miniswe")
    calls = [e for e in _events(_trajectory()) if isinstance(e, ToolCall)]
    return [replayer.step(k, c) for k, c in enumerate(calls, 1)], root / "repo", sha


def _truth(t: CallTruth) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for o in t.origins:
        if o.line is not None:
            out.setdefault(o.path, set()).add(o.line)
    return out


@needs_bwrap
def test_every_call_has_its_status(replayed):
    truths, _, _ = replayed
    assert [t.status for t in truths] == [status for _, _, status, _ in PLAN]


@needs_bwrap
def test_checkable_calls_show_the_base_lines_known_by_construction(replayed):
    truths, _, _ = replayed
    for k, (t, (command, _, _, expected)) in enumerate(zip(truths, PLAN), 1):
        if expected is not None:
            assert _truth(t) == expected, (k, command)
            agent = sum(1 for o in t.origins if o.line is None)
            assert agent == AGENT_LINES.get(k, 0), (k, command)


@needs_bwrap
def test_the_base_lines_still_in_a_file_are_known(replayed):
    truths, _, _ = replayed
    assert truths[0].present == {"pkg/a.py": set(range(1, 11))}
    assert truths[3].present == {"pkg/a.py": set(range(1, 11)) - {3}}   # after the sed -i


@needs_bwrap
def test_a_harness_cut_shows_the_head_and_tail_lines_whole(replayed):
    truths, _, _ = replayed
    cut = truths[7]
    assert cut.match == "cut"
    # 5,000 characters at each end: the lines they touch, the edge ones only in part
    width = len(BIG_LINES[0]) + 1
    head_last = (5000 - 1) // width + 1
    tail_first = (len(BIG) - 5000) // width + 1
    assert 1 < head_last < tail_first < len(BIG_LINES)
    assert _truth(cut) == {"pkg/big.txt": set(range(1, head_last + 1))
                           | set(range(tail_first, len(BIG_LINES) + 1))}
    assert {o.line for o in cut.cut_edges} == {head_last, tail_first}
    assert {o.line for o in cut.hidden} == set(range(head_last + 1, tail_first))


@needs_bwrap
def test_the_end_to_end_run_scores_every_read_call(replayed, tmp_path):
    _, repo, sha = replayed
    spec = RunSpec("demo", "demo", "miniswe", _events(_trajectory()), repo / ".git", sha,
                   "/testbed")
    tally, records = replay_run(spec, tmp_path / "work", 20.0, BaseTexts(), {})
    by_call = {r["call"]: r for r in records}
    assert by_call[1]["truth"] == {"pkg/a.py": "2-4"}
    assert by_call[7]["truth"] == {"pkg/a.py": "7-8", "pkg/b.py": "1-2"}
    assert tally.c["checkable"] == sum(1 for r in records if r["status"] == "checkable")
    assert tally.not_checkable["output differs from the trace"] == 1
    assert not (tmp_path / "work").exists()     # the copies are removed


def _outcome(*reads: tuple[str, list[tuple[int, int]]]) -> CallOutcome:
    return CallOutcome("read", reads=[ResolvedRead(p, p, [], base, False) for p, base in reads])


def test_false_credits_and_misses_are_classed(tmp_path):
    sha = make_repo(tmp_path / "r", {"a.py": "x\n\ny\nx\nz\n", "b.py": "q\n"})[0]
    from streameval.sources.repo import GitRepo

    with GitRepo(tmp_path / "r") as repo:
        base = BaseLines(repo.at(sha))
        truth = CallTruth(1, "c", "bash", "cmd", "shell", "checkable",
                          origins=[Origin("a.py", 1), Origin("a.py", 2), Origin("a.py", None)],
                          texts=["x", "", "z"])
        sc = score_call(truth, _outcome(("a.py", [(4, 5)]), ("b.py", [(1, 1)])), base)
        # 4 ("x") is line 1's twin, 5 ("z") the agent's line's text, b.py never shown here
        assert sc.false == Counter({"wrong place: displaced among identical base lines": 1,
                                    "wrong place: the agent's line, taken for a base line "
                                    "elsewhere": 1,
                                    "wrong file": 1})
        truth.present = {"a.py": {1, 2, 3, 4}}     # the agent rewrote line 5
        again = score_call(truth, _outcome(("a.py", [(1, 2), (5, 5)])), base)
        assert again.false == Counter({"wrong place: the agent's line, re-created in place": 1})
        assert sc.missed == Counter({"repeated line": 1, "blank line": 1})
        assert not sc.exact
        nothing = CallTruth(2, "c", "bash", "cmd", "shell", "checkable")
        assert score_call(nothing, _outcome(("a.py", [(3, 3)])), base).false == \
            Counter({"never shown": 1})
        exact = score_call(truth, _outcome(("a.py", [(1, 2)])), base)
        assert exact.exact and not exact.false and not exact.missed
