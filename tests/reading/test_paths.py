"""PathMapper: trace paths -> repo paths (docs/metrics.md sections 2 and 6), on a real repo."""

from __future__ import annotations

import pytest
from gitrepo import make_repo

from streameval.errors import Reason
from streameval.reading.paths import PathMapper, display_path
from streameval.sources.repo import GitRepo


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    sha = make_repo(root, {"xarray/core/weighted.py": "a\n", "README.md": "r\n",
                           "pkg/sub/f.py": "f\n", "x": "top\n", "AGENTS.md": "ctx\n"})[0]
    return GitRepo(root).at(sha)


def test_testbed_prefix_resolves(view):
    m = PathMapper(view)
    assert m.to_repo("/testbed/xarray/core/weighted.py") == "xarray/core/weighted.py"
    assert m.to_repo("/workspace/pydata__xarray__0.12/xarray/core/weighted.py") == \
        "xarray/core/weighted.py"


def test_relative_paths_join_the_cwd(view):
    m = PathMapper(view, roots=["/testbed"])
    assert m.to_repo("sub/f.py", "/testbed/pkg") == "pkg/sub/f.py"
    assert m.to_repo("./f.py", "/testbed/pkg/sub") == "pkg/sub/f.py"
    assert m.to_repo("core/weighted.py", "/testbed/xarray") == "xarray/core/weighted.py"
    assert m.to_repo("../README.md", "/testbed/pkg") == "README.md"


def test_suffix_resolution_with_an_unknown_checkout_dir(view):
    m = PathMapper(view)
    assert m.to_repo("/tmp/gh-issue-solver-176/pkg/sub/f.py") == "pkg/sub/f.py"
    assert m.to_repo("'/Users/me/dev/proj/README.md'") == "README.md"


def test_paths_outside_the_repo_are_ignored_and_counted(view):
    m = PathMapper(view, roots=["/testbed"])
    assert m.to_repo("/etc/passwd") is None
    assert m.to_repo("../x", "/testbed") is None          # escapes the root, though x exists
    assert m.to_repo("/usr/lib/python3/site-packages/xarray/core/weighted.py") is None
    assert m.to_repo("~/notes.md") is None
    assert m.counts[Reason.PATH_OUTSIDE_REPO] == 4
    assert m.to_repo("/testbed/no/such.py") is None
    assert m.counts[Reason.PATH_NOT_IN_REPO] == 1
    assert m.lookup("/testbed/pkg")[1] is Reason.PATH_NOT_IN_REPO   # a directory


def test_a_run_inside_a_system_looking_directory_still_resolves(view):
    m = PathMapper(view)
    assert m.to_repo("/var/www/app/README.md", "/var/www/app") == "README.md"
    assert m.to_repo("README.md", "/var/www/app") == "README.md"
    assert m.to_repo("/var/www/app/README.md") is None      # no cwd, no root: refused


def test_relative_escape_without_cwd_is_outside(view):
    m = PathMapper(view)
    assert m.lookup("../x", None) == (None, Reason.PATH_OUTSIDE_REPO)


def test_exact_path_under_a_root_beats_a_shorter_suffix(tmp_path):
    root = tmp_path / "r"
    sha = make_repo(root, {"proj/b/c.py": "1\n", "b/c.py": "2\n"})[0]
    view = GitRepo(root).at(sha)
    assert PathMapper(view, roots=["/work/proj"]).to_repo("/work/proj/b/c.py") == "b/c.py"
    # without the root, the longest suffix that is a file wins (docs/metrics.md §2)
    assert PathMapper(view).to_repo("/work/proj/b/c.py") == "proj/b/c.py"


def test_results_are_cached_per_path_and_cwd(view):
    m = PathMapper(view)
    for _ in range(3):
        assert m.to_repo("f.py", "/testbed/pkg/sub") == "pkg/sub/f.py"
    assert len(m._cache) == 1
    assert m.to_repo("f.py", "/elsewhere") is None       # another cwd, another answer
    assert len(m._cache) == 2


def test_without_a_repo_paths_are_normalized_for_display():
    m = PathMapper(None, roots=["/home/u/proj"])
    assert m.to_repo("/testbed/a/b.py") == "a/b.py"
    assert m.to_repo("/workspace/django__django-1/x.py") == "x.py"
    assert m.to_repo("/home/u/proj/src/m.py") == "src/m.py"
    assert m.to_repo("src/m.py", "/home/u/proj") == "src/m.py"
    assert m.to_repo("/etc/hosts") is None
    assert display_path("./a/./b.py") == "a/b.py"


def test_garbage_paths_do_not_raise(view):
    m = PathMapper(view)
    for p in ["", "   ", "\x00", "/", "..", "a\nb", "\udcff.py", "/" + "a/" * 500 + "f.py"]:
        assert m.to_repo(p, "/testbed") is None


# --------------------------------------------------------------------------- Windows paths

WIN = "C:\\Users\\T\\Desktop\\PeeDom"


def test_windows_paths_take_one_posix_form():
    from streameval.reading.paths import posix_form
    assert posix_form("C:\\Users\\T\\x.md") == "/c:/Users/T/x.md"
    assert posix_form("c:/Users/T/x.md") == "/c:/Users/T/x.md"
    assert posix_form("src\\x.ts", windows=True) == "src/x.ts"
    assert posix_form("src\\x.ts") == "src\\x.ts"   # on POSIX a backslash is a name's


def test_windows_paths_resolve_under_a_windows_cwd(view):
    m = PathMapper(view, roots=[WIN])
    assert m.to_repo("pkg\\sub\\f.py", WIN) == "pkg/sub/f.py"
    assert m.to_repo(WIN + "\\xarray\\core\\weighted.py", WIN) == "xarray/core/weighted.py"
    assert m.to_repo("c:\\users\\t\\desktop\\peedom\\README.md", WIN) == "README.md"
    assert m.to_repo("xarray/core/weighted.py", WIN) == "xarray/core/weighted.py"


def test_windows_profile_and_system_folders_are_outside(view):
    m = PathMapper(view, roots=[WIN])
    for path in ("C:\\Users\\T\\.codex\\skills\\x\\SKILL.md", "C:\\Windows\\System32\\x.dll",
                 "C:\\Program Files\\Git\\README.md", "C:\\Users\\T\\AppData\\Local\\x.md"):
        assert m.lookup(path, WIN) == (None, Reason.PATH_OUTSIDE_REPO), path


def test_windows_paths_without_a_repo_display_relative():
    m = PathMapper(roots=[WIN])
    assert m.lookup("app\\_layout.tsx", WIN) == ("app/_layout.tsx", None)
    assert m.lookup(WIN + "\\eas.json", WIN) == ("eas.json", None)


def test_git_bash_drive_paths_beside_a_windows_cwd(view):
    m = PathMapper(view, roots=[WIN])
    assert m.to_repo("/c/Users/T/Desktop/PeeDom/README.md", WIN) == "README.md"


def test_a_path_naming_a_folder_of_the_repository_is_a_directory_not_outside(view):
    """docs/metrics.md §5b: a read naming a folder (an ``ls -R`` header taken for a
    grep hit, a Read of the root) names no file, and is inside the repository."""
    m = PathMapper(view, roots=["/testbed"])
    for path, cwd in (("./pkg/sub", "/testbed"), ("/testbed", None), ("xarray/core", "/testbed"),
                      (".", "/testbed/pkg"), ("/elsewhere/checkout/pkg", None)):
        assert m.to_repo(path, cwd) is None
        assert m.names_directory(path, cwd), (path, cwd)
    for path, cwd in (("/testbed/nope", None), ("/etc", None), ("~/pkg", None),
                      ("pkg/sub/f.py/x", "/testbed"), ("", None)):
        assert not m.names_directory(path, cwd), (path, cwd)
    # without a repository only the workspace root is known to be a directory
    bare = PathMapper(None, roots=["/testbed"])
    assert bare.names_directory("/testbed") and not bare.names_directory("/testbed/pkg")
