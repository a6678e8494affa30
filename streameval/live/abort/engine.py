"""Early abort: rules over a run's live numbers, and what to do when one trips.

A policy file (TOML, see ``examples/abort.toml``) lists policies; each names a kind
(step, lines/bytes, token, cost or wall-time budget; stagnation; redundancy or
precision thresholds; and, for fleets without gold, steps without a new file, a call
repeated, lines seen again) and one action: an ``ABORT`` file beside the trace (the agent
harness polls for it), a webhook POST, or a signal to the pid ``meta.json`` gives.

Why it is evaluated after every tool call and not per batch: a watcher batch can hold
many steps, and "no new gold coverage for N steps" or "stop at step 200" must mean
the same step whether the trace was read live, in one gulp after a restart, or by
``streameval abort-backtest``. Each check reads one snapshot and a few counters, so
it costs O(policies), whatever the length of the run.

Actions never block evaluation: the file is one small atomic write, a signal one
syscall, and webhooks go through a bounded queue to one worker thread with a timeout
and a bounded number of retries. Every decision fires once per run and policy, is
logged, and counted in ``streameval_aborts_total{policy,action}``.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streameval.live.abort.actions import WebhookSender, send_signal, write_abort_file
from streameval.live.abort.policy import (
    ABORT_NAME,
    ACTIONS,
    COMMON_KEYS,
    KINDS,
    SIGNAL_KINDS,
    TIME_KINDS,
    AbortConfig,
    AbortConfigError,
    Decision,
    Policy,
    WebhookConfig,
    format_policy,
    load_policies,
    parse_policies,
)
from streameval.model import GRANULARITIES
from streameval.scoring.signals import SignalValues
from streameval.scoring.snapshot import TOKEN_KINDS, RunSnapshot, token_counts

__all__ = ["ABORT_NAME", "ACTIONS", "COMMON_KEYS", "KINDS", "SIGNAL_KINDS", "TIME_KINDS",
           "TOKEN_KINDS", "AbortConfig", "AbortConfigError", "AbortEngine", "Decision", "Policy",
           "WebhookConfig", "WebhookSender", "attach", "engine_for", "format_policy",
           "load_policies", "parse_policies", "send_signal", "trace_path_of", "write_abort_file"]

log = logging.getLogger(__name__)

#: runs whose fired policies are remembered (a few hundred bytes each)
MAX_FIRED = 100_000


class _Progress:
    """Per-session stagnation tracker: the step at which each granularity's
    trajectory coverage last grew. Fed after every tool call, so exact in steps."""

    __slots__ = ("steps", "coverage", "grew_at")

    def __init__(self) -> None:
        self.steps = 0
        self.coverage = dict.fromkeys(GRANULARITIES, 0.0)
        self.grew_at = dict.fromkeys(GRANULARITIES, 0)

    def observe(self, steps: int, snap) -> None:
        if steps == self.steps:
            return
        self.steps = steps
        cov = getattr(snap, "last_step_coverage", None) or {
            g: n.coverage for g, n in snap.granularities.items()}
        for g in GRANULARITIES:
            c = cov.get(g, 0.0)
            if c > self.coverage[g]:
                self.coverage[g] = c
                self.grew_at[g] = steps


class _Measures:
    """What one check reads: the run's snapshot, taken once and only if a policy asks."""

    def __init__(self, run, now: float | None):
        self.run = run
        self.now = now
        self._run_snap: RunSnapshot | None = None
        self._signals: SignalValues | None = None

    @property
    def run_snap(self) -> RunSnapshot:
        if self._run_snap is None:
            self._run_snap = self.run.session.snapshot()
        return self._run_snap

    @property
    def snap(self):
        """The scores (None for a run that cannot be scored)."""
        return self.run_snap.scores

    @property
    def steps(self) -> int:
        return self.run_snap.num_steps

    def tokens(self, kinds: tuple[str, ...] = TOKEN_KINDS) -> int:
        counts = token_counts(self.run_snap.tokens)
        return sum(counts[k] for k in kinds)

    def cost(self) -> float | None:
        return self.run_snap.cost_usd

    @property
    def signals(self) -> SignalValues:
        """The run's gold-free signals now (``scoring.signals``, docs/outcomes.md §2): the
        session's, without a whole snapshot when no other policy asked for one."""
        if self._run_snap is not None and self._run_snap.signals is not None:
            return self._run_snap.signals
        if self._signals is None:
            self._signals = self.run.session.signal_values()
        return self._signals

    def elapsed(self) -> float | None:
        """Trace time since the run's first event, else (no timestamps) time since first seen."""
        elapsed = self.run_snap.elapsed
        if elapsed is not None:
            return elapsed
        if self.now is not None and self.run.first_seen is not None:
            return max(0.0, self.now - self.run.first_seen)
        return None


def _evaluate(p: Policy, m: _Measures, progress: _Progress | None) -> tuple[float, str] | None:
    """(value, reason) when ``p`` trips, else None."""
    k = p.kind
    if k == "max_steps":
        v = float(m.steps)
        return (v, f"{m.steps} steps reached the limit of {p.limit:g}") if v >= p.limit else None
    if k == "tokens":
        v = float(m.tokens(p.token_kinds))
        return (v, f"{v:.0f} tokens reached the budget of {p.limit:g}") if v >= p.limit else None
    if k == "cost":
        c = m.cost()
        return (c, f"cost ${c:.4f} reached the budget of ${p.limit:g}") if c is not None and c >= p.limit else None
    if k == "wall_time":
        e = m.elapsed()
        return (e, f"{e:.0f} s elapsed, budget {p.limit:g} s") if e is not None and e >= p.limit else None
    if k in SIGNAL_KINDS:
        return _evaluate_signals(p, m.signals)
    snap = m.snap
    if snap is None:  # no gold or repo: coverage-based rules cannot be judged
        return None
    return _evaluate_coverage(p, m.steps, snap, progress)


def _evaluate_signals(p: Policy, s: SignalValues) -> tuple[float, str] | None:
    """The gold-free kinds: what any run has, gold or not (docs/outcomes.md §2)."""
    k = p.kind
    if k == "no_new_files":
        v = float(s.steps_since_new_file)
        return (v, f"{s.steps_since_new_file} steps without reading a file not read before, "
                   f"limit {p.limit:g}") if v >= p.limit else None
    if k == "repeats":
        v = float(s.max_repeats)
        return (v, f"the same call made {s.max_repeats} times, limit {p.limit:g}") \
            if v >= p.limit else None
    # reread_share: null without the repository (lines need the base text)
    if s.steps < p.after_steps or s.reread_share is None or s.reread_share <= p.limit:
        return None
    return (s.reread_share, f"{s.reread_share:.3f} of the lines shown were shown before, "
                            f"above {p.limit:g} after {s.steps} steps")


def _evaluate_coverage(p: Policy, steps: int, snap, progress: _Progress | None):
    k = p.kind
    if k == "max_lines":
        v = float(snap.lines_read)
        return (v, f"{snap.lines_read} distinct lines read, limit {p.limit:g}") if v >= p.limit else None
    if k == "max_bytes":
        v = float(snap.bytes_read)
        return (v, f"{snap.bytes_read} distinct bytes read, limit {p.limit:g}") if v >= p.limit else None
    g = p.granularity
    if k == "stagnation":
        # stuck: nothing new of the gold for N steps while some of it is still unread
        # (a run whose coverage is complete has nothing left to find)
        if progress is None or progress.coverage[g] >= 1.0:
            return None
        v = float(steps - progress.grew_at[g])
        return (v, f"no new gold {g} coverage for {v:.0f} steps (since step "
                   f"{progress.grew_at[g]})") if v >= p.limit else None
    if steps < p.after_steps:
        return None
    n = snap.granularities[g]
    if k == "redundancy" and n.redundancy > p.limit:
        return n.redundancy, f"{g} redundancy {n.redundancy:.3f} above {p.limit:g} after {steps} steps"
    if k == "precision" and n.precision < p.limit:
        return n.precision, f"{g} precision {n.precision:.3f} below {p.limit:g} after {steps} steps"
    return None


# ---------------------------------------------------------------------- the engine


class AbortEngine:
    """Evaluates the policies for runs and acts on what trips, once per run and policy."""

    def __init__(self, config: AbortConfig, dry_run: bool = False,
                 counter: Counter | None = None):
        self.config = config
        self.dry_run = dry_run
        #: (policy, action) -> decisions; the watcher's ``RunTable.stats.aborts`` when attached
        self.counter: Counter = counter if counter is not None else Counter()
        self.outcomes: Counter = Counter()   # outcome -> n (no_pid, gave up, written...)
        #: (action, final outcome) -> n; a webhook's is known once delivered or failed
        self.action_outcomes: Counter = Counter()
        self.decisions: deque = deque(maxlen=1000)
        self.webhook = WebhookSender(config.webhook)
        self.webhook.on_outcome = self._webhook_done
        self._progress: dict[str, tuple[Any, _Progress]] = {}
        #: (run key, run id) -> {policy: action}: survives a run's restart from byte 0,
        #: its leaving the table and (through the checkpoint journal) a watcher restart;
        #: oldest dropped past MAX_FIRED
        self._fired: OrderedDict[tuple[str, str], dict[str, str]] = OrderedDict()
        #: called after a decision is recorded and before it is acted on (the watcher
        #: saves its checkpoint: a signal or webhook is never repeated after a crash)
        self.on_decided: Callable[[], None] | None = None
        self._seen: dict[str, tuple] = {}  # run key -> signature at its last batch check
        self._needs_progress = any(p.kind == "stagnation" for p in config.policies)

    # ------------------------------------------------------------------ tracking
    def progress(self, run, m: _Measures | None = None) -> _Progress | None:
        """The stagnation tracker of ``run``'s current session, brought up to date."""
        if not self._needs_progress:
            return None
        m = m or _Measures(run, None)
        if m.snap is None:
            return None
        entry = self._progress.get(run.key)
        if entry is None or entry[0] is not run.session:  # new run, or restarted from byte 0
            entry = (run.session, _Progress())
            self._progress[run.key] = entry
        if entry[1].steps != m.steps:
            entry[1].observe(m.steps, m.snap)
        return entry[1]

    def track(self, run, trace_path: Path | None, clock: Callable[[], float | None] = time.time):
        """Evaluate ``run`` after every tool call of its session (exact in steps)."""
        fired = self._fired.get((run.key, run.session.identity.run_id), {})
        for policy, action in fired.items():  # a restarted run keeps what fired
            run.aborted.setdefault(policy, action)
            self._steer(run, policy)

        def listener(session, _outcome, _call) -> None:
            if session is run.session:
                self.check(run, trace_path, clock())

        run.session.listeners.append(listener)
        return listener

    def forget(self, live_keys) -> None:
        """Drop trackers of runs no longer in the table (bounded memory)."""
        for key in [k for k in self._progress if k not in live_keys]:
            del self._progress[key]
        for key in [k for k in self._seen if k not in live_keys]:
            del self._seen[key]

    # ------------------------------------------------------------------ checking
    def check(self, run, trace_path: Path | str | None, now: float | None = None,
              kinds: frozenset[str] | None = None) -> list[Decision]:
        """Evaluate every policy not yet fired for ``run``; act on those that trip.

        ``kinds`` limits the check to some policy kinds (the tick checks only
        ``wall_time``: nothing else can change without a new event).
        """
        if run.finished:
            return []
        m = _Measures(run, now)
        progress = self.progress(run, m)
        out: list[Decision] = []
        fired = self._fired.get((run.key, run.session.identity.run_id), {})
        for p in self.config.policies:
            if p.name in run.aborted or p.name in fired or (kinds is not None and p.kind not in kinds):
                continue
            hit = _evaluate(p, m, progress)
            if hit is None:
                continue
            out.append(self._decide(p, run, m, hit, trace_path, now))
        return out

    def _decide(self, p: Policy, run, m: _Measures, hit, trace_path, now) -> Decision:
        ident = run.session.identity
        value, reason = hit
        d = Decision(policy=p.name, kind=p.kind, action=p.action, run_key=run.key,
                     run_id=ident.run_id, instance_id=ident.instance_id, step=m.steps,
                     value=float(value), limit=p.limit, reason=reason, tokens=m.tokens(),
                     cost_usd=m.cost(), decided_at=now,
                     trace=str(trace_path) if trace_path is not None else None,
                     dry_run=self.dry_run)
        run.aborted[p.name] = p.action
        self._steer(run, p.name, reason)
        self._remember((run.key, ident.run_id), p.name, p.action)
        if not self.dry_run and p.action != "file" and self.on_decided is not None:
            self.on_decided()   # journaled first: at most once, even across a crash
        d.outcome = "dry_run" if self.dry_run else self._act(p, d, run, trace_path)
        self.counter[(p.name, p.action)] += 1
        self.outcomes[d.outcome] += 1
        if d.outcome != "queued":
            self.action_outcomes[(p.action, d.outcome)] += 1
        self.decisions.append(d)
        level = logging.INFO if d.outcome in ("written", "queued", "signalled", "dry_run") \
            else logging.WARNING
        log.log(level, "abort%s: run %s (%s) policy %s at step %d: %s -> %s %s",
                " [dry run]" if self.dry_run else "", d.run_id, d.instance_id, p.name, d.step,
                reason, p.action, d.outcome)
        return d

    def _steer(self, run, policy: str, reason: str | None = None) -> None:
        """What a hook-connected agent is told at its next call (docs/ingest.md); a
        run restored from the journal no longer knows the reason, only the policy."""
        if run.steer is None and not self.dry_run:
            why = f": {reason}" if reason else ""
            run.steer = (f"streameval stopped this run (policy {policy}){why}. "
                         "Do not start new work: finish with what you have.")

    def _remember(self, run: tuple[str, str], policy: str, action: str) -> None:
        self._fired.setdefault(run, {})[policy] = action
        self._fired.move_to_end(run)
        while len(self._fired) > MAX_FIRED:
            self._fired.popitem(last=False)

    def journal(self) -> list[list[str]]:
        """The decisions acted on, ``[run key, run id, policy, action]`` each, for the
        watcher's checkpoint."""
        return [[key, run_id, policy, action] for (key, run_id), fired in self._fired.items()
                for policy, action in fired.items()]

    def restore_journal(self, entries: Any) -> None:
        """Decisions a previous watcher acted on: not acted on again. Entries that are
        not four strings (an edited checkpoint) are skipped."""
        if not isinstance(entries, list):
            log.warning("checkpoint abort journal is not a list; ignored")
            return
        for entry in entries:
            if isinstance(entry, list) and len(entry) == 4 and all(isinstance(x, str) for x in entry):
                self._remember((entry[0], entry[1]), entry[2], entry[3])

    def _webhook_done(self, outcome: str) -> None:
        self.action_outcomes[("webhook", outcome)] += 1

    def _act(self, p: Policy, d: Decision, run, trace_path) -> str:
        if p.action == "file":
            if trace_path is None:
                return "no_trace_path"
            return write_abort_file(Path(trace_path).parent, d)
        if p.action == "webhook":
            return "queued" if self.webhook.submit(p.url, d.to_json()) else "dropped"
        if not self.config.allow_signals:  # configs built in code skip load_policies' check
            return "refused"
        ident = run.session.identity
        outcome = send_signal(ident.pid, p.signal, ident.pid_noted_at)
        if outcome == "no_pid":
            log.warning("abort policy %s: run %s has no pid in meta.json; cannot signal it",
                        p.name, d.run_id)
        return outcome

    def check_table(self, table, paths: Callable[[str], Path | None], now: float | None,
                    kinds: frozenset[str] | None = None) -> list[Decision]:
        """Check every active run of a ``RunTable`` (after a batch, at a tick)."""
        out: list[Decision] = []
        if kinds is not None and not any(p.kind in kinds for p in self.config.policies):
            return out
        with table.lock:
            for run in list(table.runs.values()):
                if run.finished:
                    continue
                if kinds is None:  # after a batch: only runs that changed since their last check
                    sig = _signature(run.session)
                    if self._seen.get(run.key) == sig:
                        continue
                    self._seen[run.key] = sig
                out.extend(self.check(run, paths(run.key), now, kinds))
        return out

    def close(self) -> None:
        self.webhook.close()


def _signature(session) -> tuple[int, int]:
    """Cheap fingerprint of a run's session: it changes with every event the session
    takes, so a run none of whose numbers can have moved is not checked again."""
    return (id(session), session.version)


# ---------------------------------------------------------------------- the watcher


_KEY_N = re.compile(r"^(.*)#(\d+)$")


def trace_path_of(watcher, key: str) -> Path:
    """The trace file of a run key (the reverse of ``runs.run_key``)."""
    m = _KEY_N.match(key)
    path = Path(key)
    if m and (Path(m.group(1)) in watcher.followers or Path(m.group(1)) in watcher.moved):
        path = Path(m.group(1))
    return watcher.trace_of(path)   # where it lives now, if it was moved


def attach(watcher, engine: AbortEngine) -> AbortEngine:
    """Wire ``engine`` into a ``live.watch.Watcher``.

    Every run the table receives gets a session listener (checked after each tool
    call); a watcher listener re-checks after each batch (runs built from stated
    steps) and a tick hook checks time budgets of quiet runs and forgets runs the
    table dropped. Decisions are counted in the table's ``stats.aborts``.
    """
    table = watcher.table
    engine.counter = table.stats.aborts
    engine.action_outcomes = table.stats.abort_outcomes
    watcher.journals["aborts"] = (engine.journal, engine.restore_journal)
    engine.on_decided = watcher.save_checkpoint

    def paths(key: str) -> Path:
        return trace_path_of(watcher, key)

    def on_add(run) -> None:
        engine.track(run, paths(run.key))

    table.on_add.append(on_add)
    with table.lock:
        for run in list(table.runs.values()):
            on_add(run)

    def after_batch(w) -> None:
        engine.check_table(w.table, paths, time.time())

    def on_tick(w, now: float) -> None:
        engine.check_table(w.table, paths, now, TIME_KINDS)
        with w.table.lock:
            live = set(w.table.runs)
        engine.forget(live)

    watcher.listeners.append(after_batch)
    watcher.tick_hooks.append(on_tick)
    return engine


# ---------------------------------------------------------------------- command line


def engine_for(watcher, path: Path | None, dry_run: bool = False) -> AbortEngine | None:
    """The engine of the policy file ``path`` (``--abort-config``), attached to
    ``watcher``; None without one.

    Raises AbortConfigError (the message names file, policy and key) before
    anything is attached.
    """
    if path is None:
        if dry_run:
            log.warning("--dry-run without --abort-config does nothing")
        return None
    engine = AbortEngine(load_policies(path), dry_run=dry_run)
    attach(watcher, engine)
    log.info("abort policies from %s: %s%s", path,
             ", ".join(f"{p.name} ({p.kind} -> {p.action})" for p in engine.config.policies),
             " [dry run]" if engine.dry_run else "")
    return engine
