"""Run one recorded shell command inside bubblewrap: no network, a read-only system.

This is the only place where the harness executes text taken from a trace, and it does
so only to measure (the product never executes anything from a trace). The sandbox:

- ``--unshare-all`` (no network, own pid/ipc/uts namespaces), ``--die-with-parent``,
  ``--new-session`` (a command cannot reach our terminal);
- ``/usr``, ``/etc`` and the git mirror (for the copy's ``.git`` alternates) bound
  read-only; ``/bin``, ``/lib``, ``/lib64`` as the usual symlinks into ``/usr``;
- the laid-out copy bound read-write at the agent's working directory (``/testbed``
  for SWE-bench), and one ``/tmp`` and one ``$HOME`` per run that persist between the
  run's commands, as the agent's container did;
- a clean environment, and a wall-clock timeout after which the whole process group is
  killed: a command that hangs is simply not checkable.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: mini-swe-agent's SWE-bench configuration sets these for every command
AGENT_ENV = {"PAGER": "cat", "MANPAGER": "cat", "LESS": "-R", "PIP_PROGRESS_BAR": "off",
             "TQDM_DISABLE": "1",
             # our python3 is not the agent's: its bytecode would only add files to the copy
             "PYTHONDONTWRITEBYTECODE": "1"}
#: "prog: command not found" as bash and dash print it
_NOT_FOUND = re.compile(r"^(?:(?:/bin/)?(?:ba)?sh: (?:line )?\d+: )?([A-Za-z_][\w.+-]*): "
                        r"(?:command not found|not found)$", re.MULTILINE)
MAX_OUTPUT = 8 << 20
#: below the kernel's 128 KiB limit for one argument (MAX_ARG_STRLEN)
MAX_ARG = 100_000


def available() -> str | None:
    """None when bubblewrap can run here, else why not (for a clean skip)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = Sandbox("/testbed", Path("/tmp"), Path("/tmp"))
    argv = probe.argv(Path("/tmp"), "/testbed") + ["/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if done.returncode != 0:
        return f"bwrap does not run here: {done.stderr.decode(errors='replace')[:200]}"
    return None


@dataclass(frozen=True, slots=True)
class Result:
    """What one command printed (stdout and stderr interleaved, as agents record it).
    ``timed_out``: it was stopped (the timeout, the output cap) or could not start."""

    output: str
    returncode: int | None
    timed_out: bool
    #: the shell's working directory when it ended (persistent-shell agents), if known
    cwd_after: str | None = None


@dataclass
class Sandbox:
    """One run's sandbox: ``copy`` appears at ``root``; ``tmp``/``home`` persist."""

    root: str
    tmp: Path
    home: Path
    ro_binds: tuple[str, ...] = ()
    timeout: float = 10.0

    def argv(self, copy: Path, cwd: str) -> list[str]:
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
                "--symlink", "usr/lib", "/lib"]
        if os.path.exists("/usr/lib64"):
            args += ["--symlink", "usr/lib64", "/lib64"]
        args += ["--proc", "/proc", "--dev", "/dev",
                 "--bind", str(self.tmp), "/tmp", "--bind", str(self.home), "/root"]
        for path in self.ro_binds:
            args += ["--ro-bind", path, path]
        # SWE-bench images answer ``python`` (their conda env); here it is python3
        args += ["--dir", "/opt/truth/bin", "--symlink", "/usr/bin/python3",
                 "/opt/truth/bin/python"]
        args += ["--bind", str(copy), self.root, "--chdir", cwd, "--clearenv",
                 "--setenv", "PATH",
                 "/opt/truth/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                 "--setenv", "HOME", "/root", "--setenv", "USER", "root"]
        for k, v in AGENT_ENV.items():
            args += ["--setenv", k, v]
        return args

    def run(self, command: str, copy: Path, cwd: str | None = None,
            track_cwd: bool = False, prelude: str = "") -> Result:
        """``bash -c command`` in ``cwd`` (default: the root) over ``copy``.

        ``track_cwd``: report where the shell ended (an EXIT trap writes ``pwd`` to fd 3)
        for agents whose shell keeps a ``cd`` between calls; the trap is put on the
        command's first line so bash's own ``line N`` messages keep their numbers.
        """
        where = cwd or self.root
        inside = copy / where[len(self.root):].lstrip("/")
        if not (where == self.root or where.startswith(self.root + "/")) or not inside.is_dir():
            where = self.root
        script = prelude + command
        read_fd = write_fd = None
        if track_cwd:
            read_fd, write_fd = os.pipe()
            # all on the command's first line: bash's own "line N" messages keep their N
            script = f"exec 3>&{write_fd}; trap 'pwd >&3 2>/dev/null' EXIT; " + script
        argv = self.argv(copy, where)
        if len(script.encode("utf-8", errors="replace")) > MAX_ARG:
            # past the kernel's limit for one argument (a heredoc of a whole file): the
            # shell reads it from a file bound read-only (its messages then name the file)
            big = self.tmp.parent / "script.sh"
            big.write_text(script, encoding="utf-8", errors="replace")
            argv += ["--ro-bind", str(big), "/opt/truth/script.sh",
                     "/bin/bash", "-c", ". /opt/truth/script.sh"]
        else:
            argv += ["/bin/bash", "-c", script]
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    pass_fds=(write_fd,) if write_fd is not None else ())
        except (OSError, ValueError) as exc:
            for fd in (read_fd, write_fd):
                if fd is not None:
                    os.close(fd)
            return Result(f"[could not start: {exc}]", None, True)
        if write_fd is not None:
            os.close(write_fd)
        out, timed_out = _collect(proc, self.timeout)
        cwd_after = None
        if read_fd is not None:
            with os.fdopen(read_fd, "rb") as fh:
                lines = fh.read().decode(errors="replace").splitlines()
            cwd_after = lines[-1] if lines else None
        text = out.decode("utf-8", errors="replace")
        return Result(text, None if timed_out else proc.returncode, timed_out, cwd_after)


def missing_programs(output: str | None) -> set[str]:
    """Programs the agent's machine did not have, by its shell's own words in an output
    (``bash: line 1: ed: command not found``): ours may have them, and running them
    would make edits the agent's commands never made."""
    return set(_NOT_FOUND.findall(output or ""))


def absent(programs: set[str]) -> str:
    """A one-line prelude of shell functions that make ``programs`` absent again."""
    return "".join(f"{p}() {{ echo \"bash: line 1: {p}: command not found\" >&2; return 127; }}; "
                   for p in sorted(programs))


def _collect(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bool]:
    """The output, read as it comes; past ``MAX_OUTPUT`` bytes or ``timeout`` seconds the
    process group is killed (``yes`` must not fill the memory before the timeout)."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout
    killed = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or size > MAX_OUTPUT:
            _kill(proc)
            killed = True
            break
        if not sel.select(min(left, 1.0)):
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    sel.close()
    proc.stdout.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
    return b"".join(chunks)[:MAX_OUTPUT], killed


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
