"""The pushes' token (issue 27): f53415f took pushes without one on loopback, so any web
page a local browser opened could push runs; the documented ``--ingest-token
"$STREAMEVAL_INGEST_TOKEN"`` put it on the command line. Now there is always a token:
a file's, the environment's, or one made in a file only its user can read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from streameval.config import INGEST_TOKEN_ENV, ingest_token_file
from streameval.errors import UsageError
from streameval.live.pushtoken import push_token


def test_with_none_given_a_token_is_made_in_a_file_only_its_user_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    token = push_token(None, None)
    path = tmp_path / "config" / "streameval" / "ingest-token"
    assert path == ingest_token_file()
    assert path.read_text() == token.value + "\n" and len(token.value) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert token.where == f"{path} (made now)" and token.warning is None
    assert token.value not in repr(token)
    again = push_token(None, None)   # a restart keeps it: the agents' settings still hold
    assert again.value == token.value and again.where == str(path)
    assert [p.name for p in path.parent.iterdir()] == ["ingest-token"]   # no temporary left


def test_a_token_file_is_read_or_made(tmp_path):
    given = tmp_path / "mine"
    given.write_text("  tok-of-mine \n")
    given.chmod(0o600)
    assert push_token(None, given).value == "tok-of-mine"
    made = push_token(None, tmp_path / "sub" / "new-token")
    assert (tmp_path / "sub" / "new-token").read_text().strip() == made.value


def test_the_environment_comes_after_a_file_and_before_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv(INGEST_TOKEN_ENV, "from-env")
    token = push_token(None, None)
    assert (token.value, token.where) == ("from-env", f"${INGEST_TOKEN_ENV}")
    assert not (tmp_path / "config").exists()
    given = tmp_path / "file"
    given.write_text("from-file\n")
    given.chmod(0o600)
    assert push_token(None, given).value == "from-file"


def test_a_literal_token_warns_that_every_user_can_read_it():
    token = push_token("lit", None)
    assert token.value == "lit" and "ps -ef" in token.warning


@pytest.mark.parametrize("content, why", [("", "no token"), ("\n\n", "no token"),
                                          ("x" * 5000, "not a token file")])
def test_a_file_that_holds_no_token_is_a_usage_error(tmp_path, content, why):
    bad = tmp_path / "bad"
    bad.write_text(content)
    with pytest.raises(UsageError, match=why):
        push_token(None, bad)


def test_both_a_literal_and_a_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="once"):
        push_token("lit", tmp_path / "f")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o620, 0o602])
def test_a_token_file_others_can_read_or_change_is_refused(tmp_path, mode):
    """102ce86 warned and took it: whoever reads the file knows the token, whoever
    writes it sets one."""
    loose = tmp_path / "loose"
    loose.write_text("t\n")
    loose.chmod(mode)
    with pytest.raises(UsageError, match=f"chmod 600 {loose}"):
        push_token(None, loose)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="owners are POSIX")
def test_a_token_file_that_is_not_yours_is_refused_even_through_a_link(tmp_path):
    """102ce86 took a file another user put where --ingest-token-file points (a shared
    folder such as /tmp), and a link there to a file everyone can read (the token then
    the first line of ``~/.bashrc``): that user knew the token."""
    if os.geteuid() == 0:
        planted = tmp_path / "planted"
        planted.write_text("known-to-them\n")
        planted.chmod(0o600)
        os.chown(planted, 65534, 65534)    # another user's, though only they read it
        with pytest.raises(UsageError, match="another user"):
            push_token(None, planted)
        theirs = planted
    else:
        theirs = next(p for p in map(Path, ("/etc/passwd", "/etc/hostname")) if p.exists())
    link = tmp_path / "token"
    link.symlink_to(theirs)
    with pytest.raises(UsageError, match="another user|chmod 600"):
        push_token(None, link)


def test_a_directory_or_fifo_is_no_token_file(tmp_path):
    with pytest.raises(UsageError, match="regular file"):
        push_token(None, tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError):
        push_token(None, fifo)
