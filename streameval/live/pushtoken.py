"""The bearer token pushes must carry (``watch --ingest``): there is always one.

Without it, whoever reaches the port (on loopback: every local process, and every web
page a local browser opens) could push runs. So ``--ingest`` takes the token from, in
this order:

- ``--ingest-token-file FILE``: the file's first line; a file that does not exist yet
  is made, readable by its user only, with a new random token;
- ``STREAMEVAL_INGEST_TOKEN``;
- the default file (``config.ingest_token_file``), made as above when missing;
- ``--ingest-token TOKEN`` still works, with a warning: a command line is read by
  every user of the machine (``ps -ef``).

What is said is where the token is, never the token. The watcher hands it to its
front on their private socket: no command line and no environment carries it
(``live.front``).
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from streameval import config
from streameval.errors import UsageError

__all__ = ["PushToken", "push_token"]

#: bytes of randomness in a generated token (43 URL-safe characters)
TOKEN_BYTES = 32
#: a token file's size at most (a token is a line; anything longer is no token file)
MAX_FILE = 4096


@dataclass(frozen=True)
class PushToken:
    """The token, and where it came from, as said when the watcher starts."""

    value: str
    where: str
    warning: str | None = None

    def __repr__(self) -> str:   # never the token, even in a traceback's locals
        return f"PushToken(where={self.where!r})"


def push_token(literal: str | None, file: Path | None) -> PushToken:
    """The pushes' token (see the module's docstring); UsageError when both a literal and
    a file are given, or when the file cannot be read or made, or holds no token."""
    if literal is not None and file is not None:
        raise UsageError("give the ingest token once: --ingest-token-file or --ingest-token")
    if literal is not None:
        if not literal.strip():
            raise UsageError("--ingest-token is empty")
        return PushToken(literal.strip(), "the --ingest-token argument",
                         "--ingest-token puts the token on the command line, where every user "
                         "of this machine can read it (ps -ef); use --ingest-token-file or "
                         f"${config.INGEST_TOKEN_ENV}")
    if file is not None:
        return _from_file(file)
    env = config.ingest_token()
    if env is not None:
        return PushToken(env.strip(), f"${config.INGEST_TOKEN_ENV}")
    return _from_file(config.ingest_token_file())


def _from_file(path: Path) -> PushToken:
    path = Path(os.path.abspath(path.expanduser()))   # said as a path that works anywhere
    made = False
    try:
        text, st = _read(path)
    except FileNotFoundError:
        (text, st), made = _make(path), True
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not value:
        raise UsageError(f"{path}: no token in it (one line of text; delete the file and a "
                         "new one is made)")
    _only_yours(path, st)
    return PushToken(value, f"{path}" + (" (made now)" if made else ""))


def _only_yours(path: Path, st: os.stat_result) -> None:
    """UsageError unless the file read (whatever link led to it) is this user's and no
    one else may read or change it. Else another user knows the token, or sets it: one
    who planted the file (``--ingest-token-file /tmp/tok`` made by someone else first), a
    link to a file whose first line everyone knows (``~/.bashrc``), a file left
    group-readable. 102ce86 took all of these, with a warning for the last two."""
    if not hasattr(os, "geteuid"):
        return   # no owners and modes to go by (Windows)
    if st.st_uid != os.geteuid():
        raise UsageError(f"{path}: belongs to another user (uid {st.st_uid}), who knows or "
                         "can change the token; use a file of yours (or delete it and a new "
                         "one is made)")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(f"{path}: other users may read or change it, so they may know the "
                         f"token: chmod 600 {path}")


def _read(path: Path) -> tuple[str, os.stat_result]:
    """The file's text and its stat (of the file opened, a link followed); opened without
    blocking (a FIFO named as the file must not hang the start) and taken only when it is
    a regular file of at most ``MAX_FILE``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the ingest token ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path}: not a regular file (--ingest-token-file)")
        data = os.read(fd, MAX_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE:
        raise UsageError(f"{path}: over {MAX_FILE} bytes; not a token file")
    try:
        return data.decode("utf-8"), st
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text; not a token file") from None


def _make(path: Path) -> tuple[str, os.stat_result]:
    """A new token in a new file only its user may read, made whole or not at all (two
    watchers starting at once both end with the one that was linked first)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        try:
            os.write(fd, (token + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)   # fails if another process made the file meanwhile
        except FileExistsError:
            return _read(path)
        finally:
            os.unlink(temp)
        return _read(path)   # the file linked, as any other is checked
    except OSError as exc:
        raise UsageError(f"{path}: cannot make the ingest token file "
                         f"({exc.strerror or exc}); pass --ingest-token-file FILE") from None
