"""Repository access on real git repos: bytes at a commit, line index, path resolution."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from gitrepo import git, make_repo
from hypothesis import given
from hypothesis import strategies as st

from streameval.errors import Reason, RepoError
from streameval.intervals import merge_ranges
from streameval.sources.filecache import FileCache, LineIndex
from streameval.sources.gold import GoldInstance
from streameval.sources.repo import GitRepo, clean_predicted_path
from streameval.sources.repocache import RepoCache, open_repo, repo_dir_names, slug_from_instance_id
from streameval.sources.repodir import DirectoryRepo

# --------------------------------------------------------------------------- LineIndex


@pytest.mark.parametrize("data, lines, offsets", [
    (b"", 0, [0]),
    (b"a", 1, [0]),
    (b"a\n", 1, [0, 2]),
    (b"a\nb", 2, [0, 2]),
    (b"a\nb\n", 2, [0, 2, 4]),
    (b"\n", 1, [0, 1]),
    (b"\n\n", 2, [0, 1, 2]),
    (b"x\r\ny\r\n", 2, [0, 3, 6]),       # \r is an ordinary byte; lines end at \n
])
def test_line_index_counts(data: bytes, lines: int, offsets: list[int]) -> None:
    li = LineIndex(data)
    assert li.size == len(data)
    assert li.num_lines == lines
    assert list(li._off) == offsets


def test_byte_range_with_trailing_newline() -> None:
    li = LineIndex(b"a\nb\n")            # off = [0, 2, 4], size 4
    assert li.byte_range(1, 1) == (0, 1)  # "a\n"
    assert li.byte_range(2, 2) == (2, 3)  # "b\n"
    assert li.byte_range(1, 2) == (0, 3)
    # Line 3 "starts" at byte 4 == size but holds no byte: it is not a line start a
    # range can begin at, so (3, 3) is dropped instead of giving the inverted (4, 3).
    assert li.byte_range(3, 3) is None
    assert li.byte_range(3, 10) is None
    # A range that only ENDS past the file runs to the last byte (gold ranges do this).
    assert li.byte_range(2, 3) == (2, 3)
    assert li.byte_range(1, 99) == (0, 3)


def test_byte_range_without_trailing_newline() -> None:
    li = LineIndex(b"a\nb")
    assert li.byte_range(2, 2) == (2, 2)
    assert li.byte_range(2, 5) == (2, 2)
    assert li.byte_range(3, 3) is None


def test_byte_range_clamps_start_and_end() -> None:
    li = LineIndex(b"one\ntwo\nthree\n")
    assert li.byte_range(0, 1) == (0, 3)      # start = max(1, start)
    assert li.byte_range(-5, -9) == (0, 3)    # end = max(start, end)
    assert li.byte_range(3, 1) == (8, 13)     # end < start -> end = start


def test_empty_file_byte_range() -> None:
    li = LineIndex(b"")
    assert li.byte_range(1, 1) == (0, 0)      # docs/metrics.md §3: an empty file gives [0, 0]
    assert li.byte_range(1, 50) == (0, 0)
    assert li.num_lines == 0
    assert li.line_of(0) == 1


@given(st.lists(st.sampled_from([b"", b"x", b"long line", b"\t"]), max_size=12),
       st.booleans(), st.lists(st.tuples(st.integers(-2, 16), st.integers(-2, 16)), max_size=5))
def test_byte_runs_of_merged_line_ranges_are_their_byte_ranges(lines, newline_at_end, pairs):
    """The byte ranges of a step's merged line ranges, made in C, are those of
    ``byte_range`` one range at a time, merged; or None, and the caller asks that way."""
    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    li = LineIndex(data)
    merged = merge_ranges(pairs)
    if not merged or merged[0][0] < 1:
        return
    runs = li.byte_runs([a for a, _ in merged], [b for _, b in merged])
    one_by_one = merge_ranges(r for r in (li.byte_range(a, b) for a, b in merged) if r)
    if runs is not None:
        assert list(zip(*runs)) == one_by_one
    assert li.byte_ranges(merged) == [r for r in (li.byte_range(a, b) for a, b in merged) if r]


def test_line_of() -> None:
    li = LineIndex(b"ab\ncd\n\nef")
    assert [li.line_of(b) for b in range(len(b"ab\ncd\n\nef"))] == [1, 1, 1, 2, 2, 2, 3, 4, 4]
    assert li.line_of(-3) == 1
    assert li.line_of(10_000) == 4
    assert li.line_start(3) == 6 and li.line_start(5) is None


@given(st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")))
def test_line_ranges_match_splitlines(data: bytes) -> None:
    li = LineIndex(data)
    shown = data.split(b"\n")
    if shown and shown[-1] == b"":
        shown.pop()
    assert li.num_lines == len(shown)
    pieces = []
    for k in range(1, li.num_lines + 1):
        a, b = li.byte_range(k, k)
        pieces.append(data[a:b + 1])
        assert li.line_of(a) == k and li.line_of(b) == k
    assert b"".join(pieces) == data
    if data:
        assert li.byte_range(1, li.num_lines + 1) == (0, len(data) - 1)
        assert li.byte_range(li.num_lines + 1, li.num_lines + 1) is None


# --------------------------------------------------------------------------- a real repo

MOD_V0 = "def f():\n    return 1\n"
MOD_V1 = "def f():\n    return 2\n\n\ndef g():\n    pass\n"
NON_UTF8 = b"\xff\xfe caf\xe9\n\x80\x81\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Path]:
    base = tmp_path_factory.mktemp("repo")
    outside = base / "outside.txt"
    outside.write_text("secret\n")
    root = base / "work"
    shas = make_repo(root, {
        "src/pkg/mod.py": MOD_V0,
        "README.md": "hello\n",
        "old.txt": "to be deleted\n",
        "latin1.txt": NON_UTF8,
        "empty.txt": "",
        "nonl.txt": "a\nb",
        "space dir/file name.txt": "spaced\n",
        ".github/workflows/ci.yml": "on: push\n",
        "link_out": ("symlink", str(outside)),
        "link_in": ("symlink", "README.md"),
        "link_dir": ("symlink", "src"),
    }, {
        "src/pkg/mod.py": MOD_V1,
        "old.txt": None,
        "new.txt": "new\n",
    })
    return root, shas, outside


@pytest.fixture()
def gitrepo(repo):
    with GitRepo(repo[0]) as g:
        yield g


def test_bytes_differ_between_commits(gitrepo: GitRepo, repo) -> None:
    _, (c0, c1), _ = repo
    v0, v1 = gitrepo.at(c0), gitrepo.at(c1)
    assert v0.read("src/pkg/mod.py") == MOD_V0.encode()
    assert v1.read("src/pkg/mod.py") == MOD_V1.encode()
    assert v0.key == (os.path.realpath(repo[0]), c0) and v1.key[1] == c1
    assert v0.line_index("src/pkg/mod.py").num_lines == 2
    assert v1.line_index("src/pkg/mod.py").num_lines == 6


def test_deleted_and_added_files(gitrepo: GitRepo, repo) -> None:
    _, (c0, c1), _ = repo
    v0, v1 = gitrepo.at(c0), gitrepo.at(c1)
    assert v0.is_file("old.txt") and not v1.is_file("old.txt")
    assert v1.read("old.txt") is None and v1.line_index("old.txt") is None
    assert v1.is_file("new.txt") and not v0.is_file("new.txt")
    assert v1.resolve("old.txt") is None


def test_files_are_regular_files_only(gitrepo: GitRepo, repo) -> None:
    files = gitrepo.at(repo[1][0]).files()
    assert files == {"src/pkg/mod.py", "README.md", "old.txt", "latin1.txt", "empty.txt",
                     "nonl.txt", "space dir/file name.txt", ".github/workflows/ci.yml"}


def test_symlinks_are_not_repo_files(gitrepo: GitRepo, repo) -> None:
    v = gitrepo.at(repo[1][0])
    for link in ("link_out", "link_in", "link_dir/pkg/mod.py"):
        assert not v.is_file(link)
        assert v.read(link) is None
    assert v.resolve("link_out") is None
    assert v.resolve("link_dir/pkg/mod.py") is None    # git does not follow the link
    assert v.resolve(str(repo[2])) is None           # the outside file by absolute path


def test_non_utf8_empty_and_no_trailing_newline(gitrepo: GitRepo, repo) -> None:
    v = gitrepo.at(repo[1][1])
    assert v.read("latin1.txt") == NON_UTF8
    assert v.line_index("latin1.txt").num_lines == 2
    assert v.read("empty.txt") == b""                  # empty, not missing
    assert v.is_file("empty.txt")
    assert v.line_index("empty.txt").byte_range(1, 1) == (0, 0)
    assert v.read("nonl.txt") == b"a\nb"
    assert v.line_index("nonl.txt").byte_range(2, 9) == (2, 2)
    assert v.read("space dir/file name.txt") == b"spaced\n"


@pytest.mark.parametrize("predicted, expected", [
    ("src/pkg/mod.py", "src/pkg/mod.py"),
    ("/testbed/src/pkg/mod.py", "src/pkg/mod.py"),
    ("repo/src/pkg/mod.py", "src/pkg/mod.py"),
    ("/workspace/some__repo__0.1/src/pkg/mod.py", "src/pkg/mod.py"),
    ("./src/pkg/mod.py", "src/pkg/mod.py"),
    ("  'src/pkg/mod.py'  ", "src/pkg/mod.py"),
    ('"/testbed/README.md"', "README.md"),
    ("`README.md`", "README.md"),
    ("src\\pkg\\mod.py", "src/pkg/mod.py"),              # Windows separators, as the evaluator
    ("C:\\work\\repo\\src\\pkg\\mod.py", "src/pkg/mod.py"),
    ("src/./pkg//mod.py", "src/pkg/mod.py"),
    ("src/other/../pkg/mod.py", "src/pkg/mod.py"),     # stays inside: fine
    (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
    ("/home/u/proj/space dir/file name.txt", "space dir/file name.txt"),
    ("pkg/mod.py", None),                              # suffix only, not a repo path
    ("src/pkg", None),                                 # a directory
    ("../work/README.md", None),                       # escapes: never a repo file
    ("src/../../work/README.md", None),
    ("/../README.md", None),
    ("..", None),
    ("", None),
    ("   ", None),
    ("/", None),
    ("README.md\nsrc/pkg/mod.py", None),               # newline: never sent to git
    ("/etc/passwd", None),
])
def test_resolve(gitrepo: GitRepo, repo, predicted: str, expected: str | None) -> None:
    assert gitrepo.at(repo[1][0]).resolve(predicted) == expected


def test_resolve_prefers_the_longest_match(tmp_path: Path) -> None:
    make_repo(tmp_path, {"a/b/c.py": "1\n", "b/c.py": "2\n", "c.py": "3\n"})
    with GitRepo(tmp_path) as g:
        v = g.at(None)
        assert v.resolve("/x/a/b/c.py") == "a/b/c.py"
        assert v.resolve("/x/y/b/c.py") == "b/c.py"
        assert v.resolve("/x/y/z/c.py") == "c.py"


def test_clean_predicted_path() -> None:
    assert clean_predicted_path("/../x") is None
    assert clean_predicted_path("a/b/..") == "a"
    assert clean_predicted_path("././/a") == "a"


def test_missing_commit(gitrepo: GitRepo, repo) -> None:
    for bad in ("0" * 40, "deadbeef", "not a commit", "--output=/tmp/x", ""):
        with pytest.raises(RepoError) as info:
            gitrepo.at(bad or "no")
        assert info.value.reason is Reason.MISSING_COMMIT
        assert str(repo[0].resolve()) in str(info.value)
    with pytest.raises(RepoError, match="0000000000"):
        gitrepo.at("0" * 40)


def test_a_blob_is_not_a_commit(gitrepo: GitRepo, repo) -> None:
    blob = git(repo[0], "rev-parse", f"{repo[1][0]}:README.md")
    with pytest.raises(RepoError) as info:
        gitrepo.at(blob)
    assert info.value.reason is Reason.MISSING_COMMIT


def test_short_sha_and_head(gitrepo: GitRepo, repo) -> None:
    c0, c1 = repo[1]
    assert gitrepo.at(c0[:10]).key[1] == c0
    assert gitrepo.at(None).key[1] == c1


def test_cat_file_restarts_after_it_dies(repo) -> None:
    c0 = repo[1][0]
    with GitRepo(repo[0]) as g:
        v = g.at(c0)
        assert v.read("README.md") == b"hello\n"
        proc = g._proc_box[0]
        proc.kill()
        proc.wait()
        assert v.read("src/pkg/mod.py") == MOD_V0.encode()   # not cached yet: needs git
        assert g._proc_box[0] is not proc
    assert g._proc_box[0] is None                              # closed by the with block


def test_one_process_serves_many_reads(repo) -> None:
    with GitRepo(repo[0]) as g:
        v0, v1 = g.at(repo[1][0]), g.at(repo[1][1])
        v0.read("README.md")
        first = g._proc_box[0]
        v1.read("src/pkg/mod.py")
        v0.read("latin1.txt")
        assert g._proc_box[0] is first and first.poll() is None


def test_not_a_git_repo(tmp_path: Path) -> None:
    with pytest.raises(RepoError) as info:
        GitRepo(tmp_path)
    assert info.value.reason is Reason.MISSING_REPO and str(tmp_path) in str(info.value)
    with pytest.raises(RepoError):
        GitRepo(tmp_path / "absent")


def test_bare_clone(repo, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo[0]), str(bare)], check=True)
    source = open_repo(bare)
    assert isinstance(source, GitRepo)
    with source:
        assert source.at(repo[1][0]).read("old.txt") == b"to be deleted\n"


def test_file_bytes_cache_is_bounded(repo) -> None:
    cache = RepoCache(repo=repo[0], max_bytes=64)
    v = cache.view_for(GoldInstance("x", base_commit=repo[1][1]))
    for path in sorted(v.files()):
        assert v.read(path) is not None
    assert cache.cache.data.total <= 64
    assert v.read("src/pkg/mod.py") == MOD_V1.encode()
    cache.close()


# --------------------------------------------------------------------------- directories

@pytest.fixture()
def directory(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "tree"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text(MOD_V0)
    (root / "latin1.txt").write_bytes(NON_UTF8)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("x")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    os.symlink(outside, root / "link_out")
    os.symlink("src/pkg/mod.py", root / "link_in")
    os.symlink(tmp_path, root / "up")
    return root, outside


def test_directory_repo(directory) -> None:
    root, outside = directory
    v = DirectoryRepo(root).at(None)
    assert v.key == (os.path.realpath(root), "")
    assert v.read("src/pkg/mod.py") == MOD_V0.encode()
    assert v.read("latin1.txt") == NON_UTF8
    assert v.resolve("/testbed/src/pkg/mod.py") == "src/pkg/mod.py"
    assert v.is_file("link_in")                   # real path inside the root
    assert not v.is_file("link_out") and v.read("link_out") is None
    assert not v.is_file("up/outside.txt")        # a directory link out of the tree
    assert v.resolve(str(outside)) is None
    assert v.resolve("../outside.txt") is None
    assert not v.is_file("src/../../outside.txt")
    assert not v.is_file("/etc/passwd")
    assert v.files() == {"src/pkg/mod.py", "latin1.txt", "link_in"}


def test_directory_repo_sees_changes(directory) -> None:
    root, _ = directory
    v = DirectoryRepo(root).at(None)
    assert v.line_index("src/pkg/mod.py").num_lines == 2
    (root / "src" / "pkg" / "mod.py").write_text(MOD_V1)
    assert v.read("src/pkg/mod.py") == MOD_V1.encode()
    assert v.line_index("src/pkg/mod.py").num_lines == 6


def test_open_repo_picks_the_kind(directory, repo) -> None:
    plain = directory[0].parent / "plain"
    plain.mkdir()
    assert isinstance(open_repo(plain), DirectoryRepo)
    with open_repo(repo[0]) as g:
        assert isinstance(g, GitRepo)
    with pytest.raises(RepoError):
        DirectoryRepo(plain / "absent")


# --------------------------------------------------------------------------- RepoCache naming

@pytest.mark.parametrize("iid, slug", [
    ("cli__cli-5973", "cli__cli"),
    ("django__django-12125", "django__django"),
    ("fasterxml__jackson-core-964", "fasterxml__jackson-core"),
    ("mui__material-ui-20252", "mui__material-ui"),
    ("instance_NodeBB__NodeBB-f48ed3658aab7be0f1165d4c1f89af48d7865189-v0495b863a912fbff5749c67e860612b91825407c",
     "NodeBB__NodeBB"),
    ("instance_ansible__ansible-bec27fb4c0a40c5f8bbcf26a475704227d65ee73-v30a923fb5c164d6cd18280c02422f75e611e8fb2",
     "ansible__ansible"),
    ("Multi-SWE-Bench__go__maintenance__bugfix__2fea5f6b", None),
    ("plain", None),
    (None, None),
])
def test_slug_from_instance_id(iid: str | None, slug: str | None) -> None:
    assert slug_from_instance_id(iid) == slug


def test_repo_dir_names() -> None:
    g = GoldInstance("Multi__x", original_inst_id="tokio-rs__tracing-1236", repo="tracing")
    assert repo_dir_names(g) == ["tokio-rs__tracing", "github.com__tokio-rs__tracing", "tracing"]
    g = GoldInstance("y", original_inst_id="django__django-1", repo="django/django")
    assert repo_dir_names(g) == ["django__django", "github.com__django__django"]
    g = GoldInstance("django__django-7", repo="https://github.com/django/django.git")
    assert repo_dir_names(g)[:2] == ["django__django", "github.com__django__django"]


def test_repo_names_for_every_real_gold_row(gold_parquet: Path) -> None:
    from streameval.sources.gold import load_gold

    for g in load_gold(gold_parquet):
        names = repo_dir_names(g)
        assert names and "__" in names[0], g.instance_id
        owner, name = names[0].split("__", 1)
        assert g.original_inst_id.removeprefix("instance_").startswith(names[0])
        assert g.repo in (name, f"{owner}/{name}")


@pytest.fixture()
def repos_dir(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    root = tmp_path / "repos"
    shas = {
        "django__django": make_repo(root / "django__django", {"django/db/x.py": "x = 1\n"}),
        "github.com__cli__cli": make_repo(root / "github.com__cli__cli", {"pkg/cmd/a.go": "package a\n"}),
        "nodebb__nodebb": make_repo(root / "nodebb__nodebb", {"src/a.js": "1;\n"}),
    }
    return root, shas


def test_repo_cache_finds_clones(repos_dir) -> None:
    root, shas = repos_dir
    with RepoCache(repos_dir=root) as cache:
        dj = GoldInstance("SWE__dj", original_inst_id="django__django-12125", repo="django/django",
                          base_commit=shas["django__django"][0])
        v = cache.view_for(dj)
        assert v.read("django/db/x.py") == b"x = 1\n"
        assert v.key == (os.path.realpath(root / "django__django"), shas["django__django"][0])
        cli = GoldInstance("Multi__cli", original_inst_id="cli__cli-5973", repo="cli",
                           base_commit=shas["github.com__cli__cli"][0])
        assert cache.view_for(cli).resolve("/workspace/cli__cli__0.1/pkg/cmd/a.go") == "pkg/cmd/a.go"
        nb = GoldInstance("Pro__nb", repo="NodeBB/NodeBB", base_commit=shas["nodebb__nodebb"][0],
                          original_inst_id="instance_NodeBB__NodeBB-f48ed3658aab7be0f1165d4c1f89af48d7865189-v0495b863a912fbff5749c67e860612b91825407c")
        assert cache.view_for(nb).is_file("src/a.js")     # found ignoring case
        # one GitRepo per clone, shared by every instance of it
        again = cache.view_for(dj)
        assert again._source is v._source


def test_repo_cache_missing_repo_says_what_was_tried(repos_dir) -> None:
    root, _ = repos_dir
    gold = GoldInstance("Multi__x", original_inst_id="tokio-rs__tracing-1236", repo="tracing",
                        base_commit="abc")
    with RepoCache(repos_dir=root) as cache, pytest.raises(RepoError) as info:
        cache.view_for(gold)
    msg = str(info.value)
    assert info.value.reason is Reason.MISSING_REPO
    assert "tokio-rs__tracing" in msg and "github.com__tokio-rs__tracing" in msg
    assert str(root) in msg and "Multi__x" in msg


def test_repo_cache_missing_commit(repos_dir) -> None:
    root, _ = repos_dir
    gold = GoldInstance("dj", original_inst_id="django__django-1", repo="django/django",
                        base_commit="1" * 40)
    with RepoCache(repos_dir=root) as cache, pytest.raises(RepoError) as info:
        cache.view_for(gold)
    assert info.value.reason is Reason.MISSING_COMMIT
    assert "1" * 40 in str(info.value) and "django__django" in str(info.value)


def test_repo_cache_without_any_repo() -> None:
    with pytest.raises(RepoError, match="--repos") as info:
        RepoCache().view_for(GoldInstance("x"))
    assert info.value.reason is Reason.MISSING_REPO


def test_repo_cache_repos_dir_absent(tmp_path: Path) -> None:
    with pytest.raises(RepoError, match="no such directory"):
        RepoCache(repos_dir=tmp_path / "nope").view_for(GoldInstance("django__django-1"))


def test_repo_cache_explicit_repo(repo, directory) -> None:
    with RepoCache(repo=repo[0]) as cache:
        v = cache.view_for(GoldInstance("anything", base_commit=repo[1][0]))
        assert v.read("old.txt") == b"to be deleted\n"
    shutil.rmtree(directory[0] / ".git")           # a plain directory, not a broken clone
    with RepoCache(repo=directory[0]) as cache:
        v = cache.view_for(GoldInstance("anything", base_commit="ignored-for-a-directory"))
        assert v.key[1] == "" and v.is_file("src/pkg/mod.py")


def test_repo_cache_closes_repos_beyond_its_bound(repos_dir) -> None:
    root, shas = repos_dir
    cache = RepoCache(repos_dir=root, max_repos=1)
    v1 = cache.view_for(GoldInstance("a", original_inst_id="django__django-1",
                                     base_commit=shas["django__django"][0]))
    assert v1.read("django/db/x.py") == b"x = 1\n"
    first = v1._source
    cache.view_for(GoldInstance("b", original_inst_id="cli__cli-2",
                                base_commit=shas["github.com__cli__cli"][0]))
    assert first._proc_box[0] is None               # evicted and closed
    assert len(cache._open) == 1
    cache.close()
    assert not cache._open


def test_broken_clone_is_reported_not_read_as_a_directory(tmp_path: Path) -> None:
    (tmp_path / "clone" / ".git").mkdir(parents=True)
    with pytest.raises(RepoError, match="not a usable git repository") as info:
        RepoCache(repo=tmp_path / "clone").view_for(GoldInstance("x", base_commit="abc"))
    assert info.value.reason is Reason.MISSING_REPO


def test_unclosed_repo_is_cleaned_up_when_collected(repo) -> None:
    import gc

    g = GitRepo(repo[0])
    assert g.at(repo[1][0]).read("README.md") == b"hello\n"
    proc = g._proc_box[0]
    del g
    gc.collect()                      # filterwarnings=error: a leaked pipe would fail here
    assert proc.poll() is not None


def test_reads_from_many_threads(repo) -> None:
    from concurrent.futures import ThreadPoolExecutor

    c0, c1 = repo[1]
    # a tiny byte cache forces every read through the one cat-file process
    with GitRepo(repo[0], cache=FileCache(max_bytes=8)) as g:
        views = [g.at(c0), g.at(c1)]
        jobs = [(views[n % 2], p) for n in range(200) for p in ("src/pkg/mod.py", "latin1.txt")]
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda job: job[0].read(job[1]), jobs))
    want = {(c0, "src/pkg/mod.py"): MOD_V0.encode(), (c1, "src/pkg/mod.py"): MOD_V1.encode(),
            (c0, "latin1.txt"): NON_UTF8, (c1, "latin1.txt"): NON_UTF8}
    assert got == [want[(v.commit, p)] for v, p in jobs]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_does_not_share_the_parents_cat_file(repo) -> None:
    c0, c1 = repo[1]
    with GitRepo(repo[0], cache=FileCache(max_bytes=8)) as g:
        v = g.at(c0)
        assert v.read("README.md") == b"hello\n"
        parent_proc = g._proc_box[0]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: read through its own process, then leave without cleanup
            try:
                ok = v.read("src/pkg/mod.py") == MOD_V0.encode() and g._proc_box[0] is not parent_proc
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(w)
        answer = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        assert answer == b"1"
        assert g._proc_box[0] is parent_proc and parent_proc.poll() is None
        assert g.at(c1).read("src/pkg/mod.py") == MOD_V1.encode()


# --------------------------------------------------------------------------- partial clones

def _partial_clone(tmp_path: Path) -> tuple[Path, str]:
    """A ``--filter=blob:none`` clone holding the blob of a.py only, its origin gone."""
    from gitrepo import git

    src = tmp_path / "origin"
    [base] = make_repo(src, {"a.py": "def a():\n    return 1\n", "b.py": "def b():\n    pass\n"})
    git(src, "config", "uploadpack.allowFilter", "true")
    part = tmp_path / "part"
    subprocess.run(["git", "clone", "-q", "--no-local", "--no-checkout", "--filter=blob:none",
                    f"file://{src}", str(part)], check=True, capture_output=True)
    git(part, "cat-file", "-p", f"{base}:a.py")   # fetched while the origin is there
    src.rename(tmp_path / "origin-gone")
    return part, base


@pytest.mark.parametrize("listed", [True, False], ids=["listed-missing", "cat-file-dies"])
def test_a_blob_missing_from_a_partial_clone_is_one_unreadable_file(tmp_path: Path, caplog,
                                                                    listed: bool):
    part, base = _partial_clone(tmp_path)
    with GitRepo(part) as repo:
        # without the missing list, cat-file itself meets the blob and dies on it
        repo._promisor = listed
        view = repo.at(base)
        assert view.is_file("b.py")            # listed: the tree is there
        with caplog.at_level("WARNING", logger="streameval.sources.repo"):
            assert view.read("b.py") is None   # its blob is not: unreadable, no exception
            assert view.line_index("b.py") is None
        assert view.read("a.py") == b"def a():\n    return 1\n"   # the rest is served
        assert repo.unreadable == {(base, "b.py")}
        assert sum("b.py" in r.getMessage() for r in caplog.records) == 1   # said once


def test_an_instance_with_a_missing_blob_is_scored(tmp_path: Path):
    """A partial clone lacking one gold file's blob scores the instance (that file reads
    as empty), instead of failing it as ``missing_repo``."""
    from streameval.model import Step
    from streameval.scoring.state import InstanceState
    from streameval.sources.gold import GoldInstance, GoldSpan
    from streameval.sources.symbols import SymbolIndex

    part, base = _partial_clone(tmp_path)
    gold = GoldInstance("x", base_commit=base,
                        init_ctx=[GoldSpan("a.py", 1, 2), GoldSpan("b.py", 1, 2)])
    with GitRepo(part) as repo:
        state = InstanceState(gold, repo.at(base), SymbolIndex())
        state.add_step(Step(files=("a.py", "b.py"), spans={"a.py": [(1, 2)], "b.py": [(1, 2)]}))
        rec = state.record()
    assert rec["final"]["file"]["coverage"] == 1.0
    assert rec["final"]["line"]["coverage"] == 1.0     # lines need no bytes
    assert rec["final"]["span"]["gold_size"] == len(b"def a():\n    return 1\n")
    assert rec["final"]["symbol"]["gold_size"] == 1    # a's definition only


def test_directories_of_a_commit_and_of_a_plain_folder(tmp_path) -> None:
    """``RepoView.is_dir``: every folder some file lies under, the root too; files and
    unknown paths are not directories."""
    from streameval.sources.repo import directories_of
    from streameval.sources.repodir import DirectoryRepo

    assert directories_of(frozenset({"a/b/c.py", "a/d.py", "e.py"})) == {"a", "a/b"}
    sha = make_repo(tmp_path / "git", {"a/b/c.py": "x\n", "e.py": "y\n"})[-1]
    folder = tmp_path / "plain" / "a" / "b"
    folder.mkdir(parents=True)
    (folder / "c.py").write_text("x\n")
    with GitRepo(tmp_path / "git") as repo:
        for view in (repo.at(sha), DirectoryRepo(tmp_path / "plain").at()):
            assert view.is_dir("") and view.is_dir("a") and view.is_dir("a/b")
            assert not view.is_dir("a/b/c.py") and not view.is_dir("b") and not view.is_dir("e")
