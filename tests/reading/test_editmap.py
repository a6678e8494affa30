"""EditMap: replaying edits on real base-commit text and mapping lines back to the base."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import git, make_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streameval.errors import Reason
from streameval.model import Edit
from streameval.reading.editmap import EditMap, split_lines
from streameval.sources.repo import GitRepo

BASE50 = "".join(f"line {i}\n" for i in range(1, 51))


def _view(root: Path, files: dict[str, str | bytes]):
    sha = make_repo(root, files)[0]
    return GitRepo(root).at(sha)


@pytest.fixture
def view50(tmp_path):
    return _view(tmp_path / "repo", {"a.py": BASE50, "b.py": "x\ny\n", "empty.py": ""})


def test_split_lines_only_newline_ends_a_line():
    assert split_lines("a\nb") == ["a\n", "b"]
    assert split_lines("a\nb\n") == ["a\n", "b\n"]
    assert split_lines("a\rb\x0cc\n") == ["a\rb\x0cc\n"]
    assert split_lines("") == []


def test_unedited_file_maps_to_itself(view50):
    m = EditMap(view50)
    assert m.to_base("a.py", 3, 7) == [(3, 7)]
    assert m.num_lines("a.py") == 50
    assert m.num_lines("empty.py") == 0
    assert m.provisional_patch() == ""


def test_insert_three_lines_at_10_then_read_20_24(view50):
    m = EditMap(view50)
    assert m.apply("a.py", Edit("a.py", old="line 10\n", new="line 10\nnew a\nnew b\nnew c\n"))
    assert m.num_lines("a.py") == 53
    assert m.to_base("a.py", 20, 24) == [(17, 21)]
    # lines 11-13 are the agent's own: a read over them maps to nothing for them
    assert m.to_base("a.py", 9, 15) == [(9, 12)]
    assert m.to_base("a.py", 11, 13) == []
    assert m.deleted_base_lines() == {}


def test_context_lines_in_old_and_new_keep_their_identity(view50):
    m = EditMap(view50)
    old = "line 4\nline 5\nline 6\n"
    new = "line 4\nLINE FIVE\nline 6\n"
    assert m.apply("a.py", Edit("a.py", old=old, new=new))
    assert m.to_base("a.py", 4, 6) == [(4, 4), (6, 6)]
    assert m.deleted_base_lines() == {"a.py": [5]}


def test_partial_line_replacement_makes_the_line_agent_written(view50):
    m = EditMap(view50)
    assert m.apply("a.py", Edit("a.py", old="ne 7", new="NE SEVEN"))
    assert m.current_text("a.py").splitlines()[6] == "liNE SEVEN"
    assert m.to_base("a.py", 6, 8) == [(6, 6), (8, 8)]


def test_replace_all_and_first_occurrence(tmp_path):
    view = _view(tmp_path / "r", {"f.txt": "a\nx\nb\nx\nc\n"})
    m = EditMap(view)
    assert m.apply("f.txt", Edit("f.txt", old="x\n", new="y\ny\n"))          # first only
    assert m.current_text("f.txt") == "a\ny\ny\nb\nx\nc\n"
    assert m.to_base("f.txt", 1, 6) == [(1, 1), (3, 5)]
    assert m.apply("f.txt", Edit("f.txt", old="y\n", new="", replace_all=True))
    assert m.current_text("f.txt") == "a\nb\nx\nc\n"
    assert m.to_base("f.txt", 1, 4) == [(1, 1), (3, 5)]


def test_edit_not_located_is_reported_and_changes_nothing(view50):
    m = EditMap(view50)
    assert not m.apply("a.py", Edit("a.py", old="no such text", new="x"))
    assert m.last_problem[0] is Reason.EDIT_NOT_LOCATED
    assert m.to_base("a.py", 1, 50) == [(1, 50)]


def test_hunks_with_text_pick_the_occurrence_at_the_hunk(tmp_path):
    text = "".join(f"{'dup' if i in (3, 30) else f'l{i}'}\n" for i in range(1, 41))
    m = EditMap(_view(tmp_path / "r", {"f.py": text}))
    # the second "dup" (line 30) is the one the structured patch points at
    assert m.apply("f.py", Edit("f.py", old="dup\n", new="dup\nadded\n", hunks=((30, 0, 31, 1),)))
    assert m.current_text("f.py").splitlines()[30] == "added"
    assert m.to_base("f.py", 31, 31) == []
    assert m.to_base("f.py", 32, 41) == [(31, 40)]


def test_hunks_without_text_trust_their_numbers(view50):
    m = EditMap(view50)
    # lines 5-6 replaced by 4 lines; then 2 lines inserted after line 20 (current)
    assert m.apply("a.py", Edit("a.py", hunks=((5, 2, 5, 4),)))
    assert m.apply("a.py", Edit("a.py", hunks=((20, 0, 21, 2),)))
    assert m.num_lines("a.py") == 54
    assert m.to_base("a.py", 1, 10) == [(1, 4), (7, 8)]
    assert m.to_base("a.py", 21, 24) == [(19, 20)]
    assert m.deleted_base_lines() == {"a.py": [5, 6]}
    assert not m.apply("a.py", Edit("a.py", hunks=((100, 1, 100, 1),)))


def test_insert_line_and_write(view50):
    m = EditMap(view50)
    assert m.apply("a.py", Edit("a.py", insert_line=0, new="top1\ntop2"))
    assert m.to_base("a.py", 1, 4) == [(1, 2)]
    whole = m.current_text("a.py").replace("line 30\n", "")
    assert m.apply("a.py", Edit("a.py", content=whole))      # Write keeps unchanged lines
    assert m.to_base("a.py", 3, 51) == [(1, 29), (31, 50)]
    assert m.deleted_base_lines() == {"a.py": [30]}
    assert not m.apply("a.py", Edit("a.py", insert_line=500, new="x"))


def test_new_file_has_no_base_lines(view50):
    m = EditMap(view50)
    assert m.apply("new.py", Edit("new.py", content="a\nb\nc\n"))
    assert m.num_lines("new.py") == 3
    assert m.to_base("new.py", 1, 3) == []


def test_unknown_edit_keeps_identity_and_marks_uncertain(view50):
    m = EditMap(view50)
    assert m.apply("a.py", Edit("a.py"))           # e.g. sed -i
    assert m.uncertain_files() == ["a.py"]
    assert m.to_base("a.py", 10, 12) == [(10, 12)]


def test_non_utf8_base_file_never_crashes(tmp_path):
    data = b"caf\xe9\nline two\n\xff\xfe\nend\n"
    m = EditMap(_view(tmp_path / "r", {"latin.txt": data}))
    assert m.num_lines("latin.txt") == 4
    assert m.apply("latin.txt", Edit("latin.txt", old="line two\n", new="line 2\nextra\n"))
    assert m.to_base("latin.txt", 1, 5) == [(1, 1), (3, 4)]
    patch = m.provisional_patch()
    assert "-line two" in patch and "+extra" in patch


def test_provisional_patch_is_read_by_editloc(view50):
    editloc = pytest.importorskip("streameval.scoring.editloc")
    m = EditMap(view50)
    m.apply("a.py", Edit("a.py", old="line 12\nline 13\n", new="changed\n"))
    m.apply("b.py", Edit("b.py", old="y\n", new="z\n"))
    patch = m.provisional_patch()
    assert patch.startswith("--- a/a.py\n+++ b/a.py\n")
    assert editloc.deleted_lines(patch) == {"a.py": [12, 13], "b.py": [2]}
    assert m.deleted_base_lines() == {"a.py": [12, 13], "b.py": [2]}


def test_provisional_patch_applies_with_git(tmp_path):
    root = tmp_path / "r"
    view = _view(root, {"a.py": BASE50, "c.txt": "no newline at end"})
    m = EditMap(view)
    m.apply("a.py", Edit("a.py", old="line 3\nline 4\n", new="three\n"))
    m.apply("a.py", Edit("a.py", insert_line=0, new="first\n"))
    m.apply("a.py", Edit("a.py", old="line 50\n", new=""))
    m.apply("c.txt", Edit("c.txt", old="end", new="end!\nmore\n"))
    patch = m.provisional_patch()
    (tmp_path / "p.diff").write_text(patch)
    git(root, "apply", "--unidiff-zero", str(tmp_path / "p.diff"))
    assert (root / "a.py").read_text() == m.current_text("a.py")
    assert (root / "c.txt").read_text() == m.current_text("c.txt")


def test_many_edits_keep_runs_small(view50):
    """10,000 edits: the mapping stays a short list of runs, not a per-line array."""
    m = EditMap(view50)
    for k in range(10_000):
        assert m.apply("a.py", Edit("a.py", insert_line=25, new=f"x{k}\n"))
        assert m.apply("a.py", Edit("a.py", hunks=((26, 1, 26, 0),)))
    f = m._files["a.py"]
    assert len(f.runs) <= 3
    assert m.to_base("a.py", 1, 50) == [(1, 50)]


# --------------------------------------------------------------------------- property


@st.composite
def _scenario(draw):
    n = draw(st.integers(0, 30))
    ops = []
    size = n
    for k in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "context", "hunk", "write"]))
        if kind in ("delete", "replace", "context", "hunk") and size == 0:
            kind = "insert"
        if kind == "insert":
            at = draw(st.integers(0, size))
            cnt = draw(st.integers(1, 4))
            ops.append(("insert", at, 0, cnt, k))
            size += cnt
        elif kind == "write":
            keep = draw(st.lists(st.booleans(), min_size=size, max_size=size))
            ops.append(("write", keep, k))
            size = sum(keep) + 1
        else:
            a = draw(st.integers(0, size - 1))
            cnt = draw(st.integers(1, min(4, size - a)))
            new = 0 if kind == "delete" else draw(st.integers(1, 4))
            ops.append((kind, a, cnt, new, k))
            size += new - cnt
    reads = draw(st.lists(st.tuples(st.integers(1, max(size, 1)), st.integers(0, 6)),
                          max_size=6))
    return n, ops, reads


def _apply_op(m: EditMap, ids: list, text: list[str], op) -> None:
    """Apply ``op`` both to the EditMap (as some Edit form) and to the brute-force model."""
    if op[0] == "write":
        _, keep, k = op
        new_ids = [i for i, kp in zip(ids, keep) if kp] + [None]
        new_text = [t for t, kp in zip(text, keep) if kp] + [f"w{k}\n"]
        assert m.apply("f.txt", Edit("f.txt", content="".join(new_text)))
        ids[:], text[:] = new_ids, new_text
        return
    kind, a, cnt, new, k = op
    new_lines = [f"n{k}.{j}\n" for j in range(new)]
    if kind == "insert":
        edit = Edit("f.txt", insert_line=a, new="".join(new_lines))
    elif kind == "hunk":
        edit = Edit("f.txt", hunks=((a + 1, cnt, a + 1, new),))
    elif kind == "context":   # old/new with one unchanged context line on each side
        lo, hi = max(a - 1, 0), min(a + cnt + 1, len(text))
        old = "".join(text[lo:hi])
        edit = Edit("f.txt", old=old,
                    new="".join(text[lo:a]) + "".join(new_lines) + "".join(text[a + cnt:hi]))
    else:
        edit = Edit("f.txt", old="".join(text[a:a + cnt]), new="".join(new_lines))
    assert m.apply("f.txt", edit), (op, m.last_problem)
    ids[a:a + cnt] = [None] * len(new_lines)
    text[a:a + cnt] = new_lines
    if kind == "hunk":   # the map's placeholder text for lines a hunk gave no text for
        text[:] = split_lines(m.current_text("f.txt"))


def _apply_u0(base: list[str], patch: str) -> list[str]:
    """Apply a zero-context patch of one file (the property's independent check)."""
    out, taken = [], 0
    lines = [x for x in patch.split("\n") if not x.startswith("\\ ")]
    i = 2
    while i < len(lines) and lines[i].startswith("@@"):
        head = lines[i].split()
        old_start, old_n = (int(x) for x in head[1][1:].split(","))
        new_n = int(head[2].split(",")[1])
        first = old_start if old_n else old_start + 1     # 1-based first affected line
        out.extend(base[taken:first - 1])
        taken = first - 1 + old_n
        body = lines[i + 1:i + 1 + old_n + new_n]
        assert [b[1:] + "\n" for b in body[:old_n]] == [_nl(x) for x in base[first - 1:taken]]
        out.extend(b[1:] + "\n" for b in body[old_n:])
        i += 1 + old_n + new_n
    out.extend(base[taken:])
    return [_nl(x) for x in out]


def _nl(s: str) -> str:
    return s if s.endswith("\n") else s + "\n"


@pytest.fixture(scope="module")
def base_view(tmp_path_factory):
    """Real git repos, one per base length, shared by the property's examples."""
    cache: dict[int, object] = {}

    def get(n: int):
        if n not in cache:
            root = tmp_path_factory.mktemp(f"base{n}")
            cache[n] = _view(root, {"f.txt": "".join(f"base {i}\n" for i in range(1, n + 1))})
        return cache[n]
    return get


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=_scenario())
def test_to_base_matches_brute_force_line_identities(base_view, scenario):
    n, ops, reads = scenario
    m = EditMap(base_view(n))
    ids: list[int | None] = list(range(1, n + 1))
    text = [f"base {i}\n" for i in range(1, n + 1)]
    for op in ops:
        _apply_op(m, ids, text, op)
    assert m.num_lines("f.txt") == len(ids)
    assert m.current_text("f.txt") == "".join(text)
    for start, extra in reads:
        end = min(start + extra, len(ids))
        expected = sorted(i for i in ids[start - 1:end] if i is not None)
        got = [x for a, b in m.to_base("f.txt", start, end) for x in range(a, b + 1)]
        assert got == expected
    gone = sorted(set(range(1, n + 1)) - {i for i in ids if i is not None})
    assert m.deleted_base_lines().get("f.txt", []) == gone
    patch = m.provisional_patch()
    base = [f"base {i}\n" for i in range(1, n + 1)]
    assert _apply_u0(base, patch) == [_nl(x) for x in text]
    from streameval.scoring.editloc import deleted_lines
    assert deleted_lines(patch).get("f.txt", []) == gone


@pytest.mark.parametrize("claimed", [10**9, 10**12, 2**70])
def test_a_hunk_claiming_a_billion_lines_allocates_nothing(tmp_path, claimed):
    """A Claude Edit whose structuredPatch claims ``newLines: 1e9`` with no lines: the
    hunk is refused (a number beyond any file, or more lines than can fit), nothing is
    allocated, the file keeps its numbering."""
    from streameval.reading.native import structured_hunks

    hunks, texts = structured_hunks([{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                      "newLines": claimed}])
    m = EditMap(_view(tmp_path, {"f.py": "a\nb\nc\n"}))
    m.apply("f.py", Edit("f.py", old="a", new="x", hunks=hunks, hunk_text=texts))
    assert m.num_lines("f.py") == 3
