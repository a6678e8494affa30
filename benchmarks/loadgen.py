"""What bench_ingest.py and bench_soak.py share: a ``streameval watch`` process of either
implementation (this checkout, or an older one through its own venv: ``--base DIR`` or
``$STREAMEVAL_BASE``, benchmarks/README.md "Folders"), its memory, and a raw
HTTP/1.1 client on asyncio streams (keep-alive when the server allows it, a source
address per client group) that measures every request from the moment it was due.

Loopback only: every socket goes to 127.0.0.1, from 127.0.0.x source addresses.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from streameval import config

ROOT = Path(__file__).resolve().parent.parent
#: the pushes' token: given to every watcher started here (``STREAMEVAL_INGEST_TOKEN``,
#: which both implementations read) and sent with every POST
TOKEN = secrets.token_urlsafe(32)


@dataclass
class Impl:
    name: str            # "new" | "new-thread" | "base"
    python: str
    cwd: Path
    args: tuple[str, ...] = ()   # more arguments of its ``watch``


def add_impl_options(p) -> None:
    """``--impl`` and ``--base``: which implementations a benchmark runs."""
    p.add_argument("--impl", help="new, new-thread (--front thread), base (the checkout of "
                                  "--base), comma-separated (default: new, and base when known)")
    p.add_argument("--base", type=Path, metavar="DIR",
                   help="an older checkout with its own .venv to compare with (648f216 for "
                        f"the figures in benchmarks/README.md; default ${config.BASE_ENV})")


def impls(which: str | None, base: Path | None = None) -> list[Impl]:
    base = config.local_path(config.BASE_ENV, base)
    which = which or ("new,base" if base is not None else "new")
    out = []
    for name in which.split(","):
        if name == "new":
            out.append(Impl("new", sys.executable, ROOT))
        elif name == "new-thread":   # this checkout, served from the watcher's own process
            out.append(Impl("new-thread", sys.executable, ROOT, ("--front", "thread")))
        elif name == "base":
            if base is None:
                raise SystemExit(f"--impl base: give --base DIR (an older checkout with its "
                                 f".venv) or set {config.BASE_ENV}")
            py = base / ".venv" / "bin" / "python"
            if not py.exists():
                raise SystemExit(f"no {py}: the base checkout needs its own venv there")
            out.append(Impl("base", str(py), base))
    return out


class Watch:
    """A ``streameval watch`` process; ``port`` once it serves."""

    def __init__(self, impl: Impl, args: list[str], log: Path, gc_log: Path | None = None):
        self.impl = impl
        self.log = log
        env = {**os.environ, "PYTHONPATH": "", "STREAMEVAL_INGEST_TOKEN": TOKEN}
        if gc_log is not None:
            # the full garbage collections of the watcher and of every process it starts
            # are written there (gchook/sitecustomize.py)
            env.update(PYTHONPATH=str(Path(__file__).with_name("gchook")), BENCH_GC_LOG=str(gc_log))
        with open(log, "wb") as fh:
            self.proc = subprocess.Popen([impl.python, "-m", "streameval", "watch", *args, *impl.args],
                                         cwd=impl.cwd, stdout=fh, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if "serving metrics on http://" in text:
                self.port = int(text.split("serving metrics on http://")[1].split(":")[1].split("/")[0])
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"watch exited: {text[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError("watch did not start")

    def pids(self) -> list[int]:
        """The watcher and its Python children (an ingest front; not git)."""
        pids = [self.proc.pid]
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for pid in children:
                try:
                    if b"streameval" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        pids.append(int(pid))
                except OSError:
                    pass
        return pids

    def status(self, key: str, pid: int | None = None) -> int:
        """A /proc/PID/status field in bytes (VmRSS, VmHWM), summed over ``pids()`` (two
        processes' peaks added: at most what they held at once), or of ``pid``."""
        total = 0
        for one in self.pids() if pid is None else [pid]:
            try:
                text = Path(f"/proc/{one}/status").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith(key + ":"):
                    total += int(line.split()[1]) * 1024
        return total

    def reset_peak(self) -> None:
        """Peak RSS starts again from the current RSS (root may; else left as is)."""
        for pid in self.pids():
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            except OSError:
                pass

    def cpu_seconds(self) -> float:
        """CPU seconds of the watcher and of its ingest front, when it has one."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def cpu_by_process(self) -> dict[str, float]:
        """CPU seconds of each process: ``watch`` (the watcher, or with ``--workers N``
        the supervisor), ``front``, ``worker-I``."""
        out = {}
        for pid in self.pids():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            role = ("front" if b"streameval.live.front" in argv else
                    next((a.decode() for a in argv if a.startswith(b"worker-")), None) or "watch")
            out[role] = out.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------------- HTTP


class Conn:
    """One keep-alive connection; ``request`` returns (status, body)."""

    def __init__(self, port: int, source: str = "127.0.0.1"):
        self.port, self.source = port, source
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(
            "127.0.0.1", self.port, local_addr=(self.source, 0), limit=1 << 24)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"",
                      ctype: str = "application/json") -> tuple[int, bytes]:
        if self.writer is None:
            await self.open()
        auth = f"Authorization: Bearer {TOKEN}\r\n" if method == "POST" else ""
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
                f"{auth}Content-Length: {len(body)}\r\n\r\n").encode()
        self.writer.write(head + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            self.close()
            raise ConnectionError("closed before answering")
        version, status = status_line.split(b" ", 2)[:2]
        length, close = None, version == b"HTTP/1.0"
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and b"close" in value.lower():
                close = True
        data = await (self.reader.readexactly(length) if length is not None else self.reader.read())
        if close or length is None:
            self.close()
        return int(status), data


class Pool:
    """Connections reused while idle, opened when none is."""

    #: seconds a connection may sit idle before it is not reused (the new server closes
    #: idle keep-alive connections after its 5 s header deadline; a client that reuses
    #: one at that moment sees a reset, which real clients retry and this one counts)
    IDLE = 3.0

    def __init__(self, port: int, sources: list[str]):
        self.port, self.sources = port, sources
        self.idle: list[tuple[float, Conn]] = []
        self.opened = 0

    async def request(self, *args, **kw) -> tuple[int, bytes]:
        conn = None
        while self.idle and conn is None:
            since, candidate = self.idle.pop()
            if time.monotonic() - since < self.IDLE:
                conn = candidate
            else:
                candidate.close()
        if conn is None:
            conn = Conn(self.port, self.sources[self.opened % len(self.sources)])
            self.opened += 1
        try:
            out = await conn.request(*args, **kw)
        except BaseException:
            conn.close()
            raise
        if conn.writer is not None:
            self.idle.append((time.monotonic(), conn))
        return out


@dataclass
class Outcomes:
    """Latencies (from when each request was due) and statuses of a run of requests."""

    latencies: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    #: latencies by kind of request (``open_loop``'s ``kind_of``): which kind makes the tail
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    #: how late the generator itself began each request (its task first ran), from when it
    #: was due: a client too busy to send on time makes the server look slow; this says
    #: how much of a tail is the client's
    late: list[float] = field(default_factory=list)
    #: (due, latency) of every answer, seconds from the first due: when the tail happened
    timeline: list[tuple[float, float]] = field(default_factory=list)

    def add(self, status: str, latency: float | None, kind: str | None = None) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if latency is not None:
            self.latencies.append(latency)
            if kind is not None:
                self.by_kind.setdefault(kind, []).append(latency)

    def summary(self, seconds: float) -> dict:
        lat = sorted(self.latencies)
        n = sum(self.statuses.values())
        ok = self.statuses.get("200", 0)
        return {"sent": n, "ok": ok, "ok_per_s": round(ok / seconds, 1),
                "statuses": dict(sorted(self.statuses.items())),
                "p50_ms": _ms(pct(lat, 0.5)), "p99_ms": _ms(pct(lat, 0.99)),
                "max_ms": _ms(lat[-1] if lat else None),
                # the first second holds the server's start (for hooks: every session
                # new, the gold's files parsed); the rest is the steady state
                "p99_after_1s_ms": pct(sorted(ms for due, ms in self.timeline if due >= 1.0), 0.99),
                "client_late_p99_ms": _ms(pct(sorted(self.late), 0.99)),
                "client_late_max_ms": _ms(max(self.late) if self.late else None),
                "slowest_at_s": sorted(self.timeline, key=lambda t: -t[1])[:5],
                "over_100ms_by_second": _by_second(self.timeline, 100.0),
                **({"by_kind": {k: {"n": len(v), "p99_ms": _ms(pct(sorted(v), 0.99)),
                                    "max_ms": _ms(max(v))}
                                for k, v in sorted(self.by_kind.items())}} if self.by_kind else {})}


def _by_second(timeline: list[tuple[float, float]], ms: float) -> dict[int, int]:
    """How many answers took over ``ms``, by the second they were due in."""
    out: dict[int, int] = {}
    for due, latency in timeline:
        if latency > ms:
            out[int(due)] = out.get(int(due), 0) + 1
    return dict(sorted(out.items()))


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(q * len(values)))]


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1000, 1)


async def open_loop(pool: Pool, rate: float, seconds: float, make, timeout: float = 10.0,
                    kind_of=None) -> Outcomes:
    """Requests due at ``rate`` per second for ``seconds``, each sent when due whatever
    the answers before it (open loop); ``make(i)`` gives (method, path, body, ctype).
    A request not answered within ``timeout`` counts as ``timeout``. ``kind_of(i)``:
    the latencies are also kept by that kind."""
    out = Outcomes()
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.2
    n = int(rate * seconds)
    tasks = []

    async def one(i: int, due: float) -> None:
        out.late.append(loop.time() - due)
        method, path, body, ctype = make(i)
        try:
            status, _ = await asyncio.wait_for(pool.request(method, path, body, ctype), timeout)
            latency = loop.time() - due
            out.add(str(status), latency, kind_of(i) if kind_of else None)
            out.timeline.append((round(due - start, 3), round(latency * 1000, 1)))
        except asyncio.TimeoutError:
            out.add("timeout", None)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError):
            out.add("error", None)

    for i in range(n):
        due = start + i / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(i, due)))
    await asyncio.gather(*tasks)
    return out
