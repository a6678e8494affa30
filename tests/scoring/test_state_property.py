"""InstanceState against the naive reference, on random runs over a real git repo.

Any sequence of steps -- files that are not in the repo, overlapping, reversed, zero or
negative ranges, ranges past the end of a file, empty steps, steps naming symbols, an
optional stated final context -- must give exactly the numbers of
``reference_metrics.record`` (floats compared with ==: both divide the same integers and
sum per-step coverage in step order).
"""

from __future__ import annotations

import json

import pytest
import reference_metrics as ref
from gitrepo import make_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.model import GRANULARITIES, Step
from streameval.scoring.state import InstanceState
from streameval.sources.gold import GoldInstance, GoldSpan
from streameval.sources.repo import GitRepo
from streameval.sources.symbols import SymbolIndex

# ---------------------------------------------------------------- the repository
# The base commit is the second one; old.py exists only in the first.

PY = """\
import os


class Outer:
    x = 1

    def method(self):
        def inner():
            return 1
        return inner()


async def fetch(url):
    return url


def helper(a, b):
    return a + b
"""

JS = """\
function top(a) {
  return a + 1;
}

class Widget {
  render() {
    const cb = (x) => x * 2;
    return cb(1);
  }
}

const arrow = (y) => {
  return y;
};
"""

GO = """\
package main

type Point struct {
\tX int
}

func (p Point) Norm() int {
\treturn p.X
}

func main() {
\t_ = Point{X: 1}.Norm()
}
"""

NO_TRAILING_NEWLINE = "def last():\n    return 0"

FIRST = {
    "pkg/mod.py": "def placeholder():\n    pass\n",
    "old.py": "def gone():\n    pass\n",
    "README.md": "# demo\n",
}

BASE = {
    "pkg/mod.py": PY,
    "web/app.js": JS,
    "cmd/main.go": GO,
    "empty.py": "",
    "notrail.py": NO_TRAILING_NEWLINE,
    "old.py": None,
}

#: files of the repository at the base commit, with their bytes
CONTENTS: dict[str, bytes] = {
    "README.md": b"# demo\n",
    "pkg/mod.py": PY.encode(),
    "web/app.js": JS.encode(),
    "cmd/main.go": GO.encode(),
    "empty.py": b"",
    "notrail.py": NO_TRAILING_NEWLINE.encode(),
}

#: paths that are not files at the base commit (missing, deleted, a directory)
NOT_FILES = ("missing.py", "old.py", "pkg")

# ---------------------------------------------------------------- strategies

PATHS = sorted(CONTENTS) + list(NOT_FILES)
NAMES = ["Outer", "method", "inner", "fetch", "helper", "top", "Widget", "render", "cb",
         "arrow", "Point", "Norm", "main", "last", "Outer.method", "a.b.inner", "nope",
         "", " ", "x."]

ranges = st.tuples(st.integers(-2, 22), st.integers(-2, 22))
# half the draws hit the two files richest in nested definitions, so gold and steps meet
paths = st.one_of(st.sampled_from(["pkg/mod.py", "web/app.js"]), st.sampled_from(PATHS))
steps = st.builds(
    Step,
    files=st.lists(paths, max_size=3).map(tuple),
    spans=st.dictionaries(paths, st.lists(ranges, max_size=3), max_size=3),
    symbols=st.one_of(st.none(), st.just({}),
                      st.dictionaries(paths, st.lists(st.sampled_from(NAMES), max_size=3),
                                      max_size=2)),
)
gold_items = st.lists(st.tuples(paths, st.integers(-1, 22), st.integers(-1, 22)), max_size=4)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """One real git repo for the module; the base commit is its second commit."""
    root = tmp_path_factory.mktemp("state-prop-repo")
    shas = make_repo(root, FIRST, BASE)
    git_repo = GitRepo(root)
    view = git_repo.at(shas[-1])
    # the reference reads CONTENTS: it must be exactly the repo at the base commit
    assert view.files() == frozenset(CONTENTS)
    assert all(view.read(p) == data for p, data in CONTENTS.items())
    yield view, SymbolIndex()
    git_repo.close()


@settings(max_examples=500, deadline=None)
@given(init=gold_items, add=gold_items, run=st.lists(steps, max_size=7),
       final=st.one_of(st.none(), steps), with_symbols=st.booleans(),
       resume_at=st.integers(0, 7))
def test_record_equals_reference(repo, init, add, run, final, with_symbols, resume_at):
    view, index = repo
    symbols = index if with_symbols else None
    gold = GoldInstance("inst-1", init_ctx=[GoldSpan(*g) for g in init],
                        add_ctx=[GoldSpan(*g) for g in add])
    state = InstanceState(gold, view, symbols)
    for t, step in enumerate(run):
        if t == resume_at:  # a watcher restarted from a checkpoint must not notice
            saved = json.loads(json.dumps(state.to_dict()))
            state = InstanceState.from_dict(saved, gold, view, symbols)
        state.add_step(step)
    if final is not None:
        state.set_final_context(final)

    symbols_of = (lambda p: index.for_file(view, p)) if with_symbols else None
    expected = ref.record("inst-1", init, add, run, CONTENTS, symbols_of, final)
    got = state.record()
    assert got == expected
    assert list(got) == ["instance_id", "num_steps", "final", "trajectory"]
    assert list(got["trajectory"]) == ["steps", "auc_coverage", "redundancy"]

    snap = state.snapshot()
    assert snap.num_steps == len(run)
    for g in GRANULARITIES:
        n = snap.granularities[g]
        assert (n.coverage, n.precision, n.intersection, n.gold_size, n.pred_size,
                n.f1) == tuple(expected["final"][g].values())
        assert n.auc_coverage == expected["trajectory"]["auc_coverage"][g]
        assert n.redundancy == expected["trajectory"]["redundancy"][g]


@settings(max_examples=200, deadline=None)
@given(init=gold_items, run=st.lists(steps, min_size=1, max_size=6))
def test_add_step_returns_the_trajectory_point(repo, init, run):
    """What add_step returns after step t is the reference's coverage after step t."""
    view, index = repo
    gold = GoldInstance("inst-2", init_ctx=[GoldSpan(*g) for g in init])
    state = InstanceState(gold, view, index)
    returned = [state.add_step(step) for step in run]
    expected = ref.record("inst-2", init, [], run, CONTENTS,
                          lambda p: index.for_file(view, p))
    assert returned == [s["coverage"] for s in expected["trajectory"]["steps"]]
    assert state.last_step_coverage == returned[-1]
