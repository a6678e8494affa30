"""Re-enact recorded traces live: a watcher on a scratch directory, the exporter
serving, and the trace player writing each run's lines with its original pacing.

``streameval replay --live`` and ``streameval demo`` are this with different inputs.
Runs are played concurrently, as they would have run side by side.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from streameval.config import DEFAULT_HOST, DEFAULT_PORT
from streameval.errors import RUN_FLAGS, Interrupted
from streameval.live.loop import run_watcher
from streameval.live.pages import mount_live_page
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher
from streameval.model import GRANULARITIES
from streameval.playback.player import play
from streameval.reading.describe import describe_call
from streameval.runs.batch import iter_trace_files
from streameval.runs.resources import Resources
from streameval.scoring.record import Record
from streameval.traces.identity import trace_name


def default_linger(linger: float | None) -> float | None:
    """``--linger`` as given, else serve until Ctrl-C on a terminal and stop at once
    when piped (a script, CI)."""
    if linger is not None:
        return linger
    return None if sys.stdout.isatty() else 0.0


def traces_of(inputs: list[str | Path]) -> list[tuple[Path, str]]:
    """The trace files of ``inputs`` (files, or directories walked as replay walks them),
    each with its name relative to the directory given (a file given alone: its directory
    and file name): the name replay and watch give it, so a played run keeps its run id."""
    out: list[tuple[Path, str]] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            out.extend((f, trace_name(f, p)) for f in iter_trace_files(p))
        else:
            out.append((p, trace_name(p)))
    return out


def reenact(traces: list[Path] | list[tuple[Path, str]], res: Resources, *,
            host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
            speed: float = 1.0, linger: float | None = 0.0, out: Path | None = None,
            into: Path | None = None, listeners: list[Callable] = (),
            announce=print) -> list[Record]:
    """Play ``traces`` (paths, or (path, name) as ``traces_of`` gives them) into a watched
    directory; serve metrics and the page until done (+ ``linger``).

    ``linger=None`` keeps serving until interrupted. Returns the runs' final records
    (error records included: the caller's exit code says whether all were scored).
    Ctrl-C or SIGTERM stops at once and raises ``Interrupted``, saying what was kept.
    """
    named = [t if isinstance(t, tuple) else (Path(t), trace_name(Path(t))) for t in traces]
    import anyio

    with tempfile.TemporaryDirectory(prefix="streameval-live-") as tmp:
        root = Path(into or tmp)
        root.mkdir(parents=True, exist_ok=True)
        cfg = WatchConfig(root=root, host=host, port=port, out=out, idle_timeout=30.0,
                          patch_grace=2.0, rescan_interval=1.0)
        w = Watcher(cfg, res)
        w.listeners.extend(listeners)
        records: list[Record] = []
        server, _reg, bound = serve(w.table, host, port)
        mount_live_page(server.app, w)
        announce(f"metrics on http://{host}:{bound}/metrics, the page on http://{host}:{bound}/ "
                 f"(playing {len(traces)} run(s) at {speed:g}x)")

        state = _Played()

        async def play_all() -> None:
            async with anyio.create_task_group() as players:
                for trace, name in named:
                    players.start_soon(partial(play, trace, root, speed, name=name))
            await anyio.sleep(0.5)  # let the last lines and patches be seen
            w.scan()   # a file whose event has not come yet (a directory just made)
            w.poll_all()
            for f in list(w.followers.values()):
                # as an idle end: a file too short to have shown its format yet
                # is decided on all it holds, as replay decides it
                f.finish("played")
            # every patch that comes has come: the records are owed now, those of
            # runs without a patch too (not after a grace nobody waits for)
            w.tick(now=time.time() + cfg.patch_grace)
            records.extend(summarize(w, announce))
            state.played = True
            if linger is None:
                announce("serving until Ctrl-C")
                await anyio.sleep_forever()
            await anyio.sleep(linger)

        async def main() -> None:
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                await tg.start(_watch, w, stop)
                async with anyio.create_task_group() as playing:
                    playing.start_soon(_until_signal, playing.cancel_scope, state)
                    await play_all()
                    playing.cancel_scope.cancel()
                stop.set()   # the watcher's file events stop at once (as watch's do)

        try:
            anyio.run(main)
        finally:
            server.close()
        if state.interrupted:
            raise Interrupted(state.kept(len(named), w.narration.records, out))
        return records


class _Played:
    """How a re-enactment ended: played to the end or not, and whether Ctrl-C (or
    SIGTERM) ended it."""

    played = False
    interrupted = False

    def kept(self, runs: int, written: int, out: Path | None) -> str:
        how = "played to the end" if self.played else "stopped while playing"
        if out is None:
            return f"{how}; no --out, nothing written"
        return f"{how}; {written} of {runs} records written to {out}"


async def _until_signal(scope, state: _Played) -> None:
    """Ctrl-C or SIGTERM: stop playing and serving now. Handled here, not as a
    KeyboardInterrupt: that would leave the file watcher's thread to its own timeout
    (5 s) before the process could end."""
    import signal

    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            state.interrupted = True
            scope.cancel()
            return


async def _watch(w, stop, *, task_status) -> None:
    await run_watcher(w, stop, task_status=task_status)


def summarize(w, announce=print) -> list[Record]:
    """One line per run's final record, announced; the records returned."""
    records: list[Record] = []
    with w.table.lock:
        for run in w.table.runs.values():
            rec = run.session.record()
            records.append(rec)
            if "error" in rec:
                announce(f"final: {rec['instance_id']}: {rec['error']}")
                continue
            if rec.get("gold_missing"):   # gold-free signals only (docs/metrics.md §5b)
                announce(f"final: {rec['run_id']}: {rec['num_steps']} steps; {rec['gold_missing']}")
                continue
            cov = "  ".join(f"{g} {rec['final'][g]['coverage']:.2f}" for g in GRANULARITIES)
            el = rec.get("editloc")
            tail = f"  editloc {el['recall']:.2f}" if el else ""
            flags = sorted(k for k in rec.get("problems", {}) if k in RUN_FLAGS)
            tail += f"  flagged: {', '.join(flags)}" if flags else ""
            announce(f"final: {rec['run_id']}: {rec['num_steps']} steps; coverage {cov}{tail}")
    return records


#: the footnote of the first ``1.00*``: an empty prediction's precision is no score
EMPTY_NOTE = ("  * nothing read at the line level yet: precision 1.00 by convention "
              "(docs/metrics.md §3), not a good score")


class LiveTable:
    """Prints one line per new tool call: coverage by granularity as it grows, and the
    line precision, marked ``*`` while the run has read no line (1.00 by convention)."""

    def __init__(self, out=sys.stdout):
        self.out = out
        self.seen: dict[str, int] = {}
        #: the run column's width: run ids are shown whole (they name the run), and the
        #: header is printed again when a longer one widens the column
        self.width = 0
        self._noted = False

    def _head(self, width: int) -> None:
        # printed with the first row, after the "metrics on ..." line
        self.width = width
        print(f"{'run':<{width}}{'step':>5}{'calls':>6}  " + "".join(f"{g:>8}" for g in GRANULARITIES)
              + f"{'prec(line)':>11}  last tool call", file=self.out, flush=True)

    def __call__(self, watcher) -> None:
        with watcher.table.lock:
            for key, run in watcher.table.runs.items():
                snap = run.session.snapshot()
                n = snap.tool_calls
                if self.seen.get(key) == n or snap.scores is None or n == 0:
                    continue
                self.seen[key] = n
                if len(snap.run_id) + 1 > self.width:
                    self._head(max(18, len(snap.run_id) + 1))
                grans = snap.scores.granularities
                cov = "".join(f"{grans[g].coverage:>8.2f}" for g in GRANULARITIES)
                line = grans["line"]
                empty = line.pred_size == 0
                prec = f"{line.precision:>10.2f}*" if empty else f"{line.precision:>11.2f}"
                print(f"{snap.run_id:<{self.width}}{snap.num_steps:>5}{n:>6}  {cov}"
                      f"{prec}  {_last_call(snap.last_call)}", file=self.out, flush=True)
                if empty and not self._noted:
                    self._noted = True
                    print(EMPTY_NOTE, file=self.out, flush=True)



def _last_call(call) -> str:
    """The table's last column: the tool's name, then what it was asked."""
    if call is None:
        return ""
    return f"{call.tool} {describe_call(call, 60 - len(call.tool))}".rstrip()
