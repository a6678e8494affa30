"""Replay one run's calls, in order, on the two copies; per call, the truth or why not.

Every shell command runs in the plain copy (inside the sandbox: ``sandbox``), so the
agent's edits happen as they happened; the agents' own edit tools are redone in Python
(``agent_tools``). After each call the changes are carried into the tagged copy
(``carry``). A read-only command (``readonly``) then runs again in the tagged copy:
the ids in its output say where every shown line came from. A call is *checkable* when
the tagged output without its ids is the plain output, and the plain output is what the
trace recorded (``present``: harness cuts compared as cut).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from truth.agent_tools import (
    Action,
    EditFailed,
    action_of,
    apply_file_patch,
    edit_text,
    numbered_lines,
    parse_patch,
    same_line,
)
from truth.carry import Carrier
from truth.layout import Layout, text_of
from truth.present import Shown, visible
from truth.readonly import why_not_read_only
from truth.sandbox import Sandbox, absent, missing_programs
from truth.tags import Origin, lines_of, read_tags, untag_file

#: reasons a call is not checkable (the report counts them by these names)
NOT_READ_ONLY = "not read-only"
TIMED_OUT = "timed out"
TAGS_CHANGED = "tags changed the output"
DIFFERS = "output differs from the trace"
NO_OUTPUT = "no recorded output"
NOT_RUN = "not run (interrupted)"
UNKNOWN_TOOL = "agent tool not emulated"
OUTSIDE = "path outside the copy"


@dataclass
class CallTruth:
    """One call as replayed. ``status`` is "checkable" or the reason it is not."""

    index: int
    call_id: str
    tool: str
    command: str
    kind: str
    status: str
    match: str = ""
    #: the shown lines' origins, in output order (a line may carry several ids)
    origins: list[Origin] = field(default_factory=list)
    #: origins of lines at a harness cut (shown only in part)
    cut_edges: list[Origin] = field(default_factory=list)
    #: origins of lines the command printed but the harness did not show (trimmed
    #: blank edges, the elided middle of a cut output)
    hidden: list[Origin] = field(default_factory=list)
    #: the output line each origin was shown in (tags removed), for classifying credits
    texts: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    problem: str = ""
    #: per file shown, the base lines its current text still has (the rest the agent
    #: deleted or rewrote): tells a line re-created in place from one taken elsewhere
    present: dict[str, set[int]] = field(default_factory=dict)

    @property
    def checkable(self) -> bool:
        return self.status == "checkable"

    @property
    def shows_lines(self) -> bool:
        return bool(self.origins)


class Replayer:
    """One run: its layout, sandbox and format; ``step`` takes its calls in order."""

    def __init__(self, layout: Layout, sandbox: Sandbox, fmt: str,
                 trimmed_shown: bool = False):
        self.layout = layout
        self.sandbox = sandbox
        self.fmt = fmt
        #: count the blank lines a harness trimmed at the output's edges as shown (the
        #: other reading of "shown"; by default they are not: the agent never saw them)
        self.trimmed_shown = trimmed_shown
        self.root = sandbox.root
        self.carrier = Carrier(layout)
        self.pattern = layout.table.pattern()
        self.shell_cwd: str | None = None
        self.history: dict[Path, list[str]] = {}
        self.edit_failures = 0
        #: programs the agent's machine lacked (seen in its outputs): absent here too
        self.absent: set[str] = set()

    # ------------------------------------------------------------------ paths
    def host(self, path: str | None, cwd: str | None, tagged: bool = False) -> Path | None:
        """The file an agent's path names, in the plain (or tagged) copy or the run's
        /tmp and $HOME; None outside them."""
        if not path:
            return None
        base = cwd or self.root
        full = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"
        parts: list[str] = []
        for p in full.split("/"):
            if p in ("", "."):
                continue
            if p == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(p)
        full = "/" + "/".join(parts)
        copy = self.layout.tagged if tagged else self.layout.plain
        for prefix, where in ((self.root, copy), ("/tmp", self.sandbox.tmp),
                              ("/root", self.sandbox.home)):
            if full == prefix or full.startswith(prefix.rstrip("/") + "/"):
                return where / full[len(prefix):].lstrip("/")
        return None

    # ------------------------------------------------------------------ calls
    def step(self, index: int, call) -> CallTruth:
        action = action_of(call.tool, call.input if isinstance(call.input, dict) else {})
        cwd = call.cwd or None
        if call.cwd_persists and self.shell_cwd:
            cwd = self.shell_cwd
        base = CallTruth(index, call.call_id, call.tool, _describe(action, call), action.kind,
                         "")
        if call.interrupted:
            base.status = NOT_RUN
            return base
        if action.kind == "shell":
            return self._shell(base, action.command, cwd, call)
        if action.kind == "edit":
            self._edit(base, action, cwd, call)
            return self._numbered(base, action, cwd, call)
        if action.kind == "read":
            return self._numbered(base, action, cwd, call)
        base.status = UNKNOWN_TOOL
        return base

    def _shell(self, out: CallTruth, command: str, cwd: str | None, call) -> CallTruth:
        why = why_not_read_only(command)
        track = bool(call.cwd_persists)
        self.absent |= missing_programs(call.output)
        prelude = absent(self.absent)
        plain = self.sandbox.run(command, self.layout.plain, cwd, track_cwd=track,
                                 prelude=prelude)
        out.changed = self.carrier.carry().changed
        if track and plain.cwd_after:
            self.shell_cwd = plain.cwd_after
        if why is not None:
            out.status = f"{NOT_READ_ONLY}: {why}"
            return out
        if plain.timed_out:
            out.status = TIMED_OUT
            return out
        tagged = self.sandbox.run(command, self.layout.tagged, cwd, prelude=prelude)
        if tagged.timed_out:
            out.status = TIMED_OUT
            return out
        texts: list[str] = []
        ids: list[list[int]] = []
        for line in lines_of(tagged.output):
            text, found = read_tags(line, self.pattern, self.layout.table)
            texts.append(text)
            ids.append(found)
        shown = Shown([t[:-1] if t.endswith("\n") else t for t in texts], ids)
        if "".join(texts) != plain.output:
            out.status = TAGS_CHANGED
        elif call.output is None:
            out.status = NO_OUTPUT
        else:
            seen = visible(plain.output, shown, call.output, self.fmt)
            if seen is not None:
                return self._truth(out, shown, *seen)
            out.status = DIFFERS
            out.problem = first_difference(plain.output, call.output)
        out.origins = [o for k in ids for o in self._origins(k)]
        return out

    def _truth(self, out: CallTruth, shown: Shown, keep: list[int], match: str) -> CallTruth:
        """A checkable shell call: the origins of the lines the agent saw."""
        ids = shown.ids
        out.match = match
        if self.trimmed_shown and match != "cut":
            keep = list(range(len(ids)))
        kept = set(keep)
        for k, found in enumerate(ids):
            got = self._origins(found)
            if k in kept:
                out.origins.extend(got)
                out.texts.extend([shown.lines[k]] * len(got))
            else:
                out.hidden.extend(got)
        if match == "cut":
            # the lines on either side of the elision notice were shown only in part
            for k in keep:
                if (k + 1 < len(ids) and k + 1 not in kept) or (k > 0 and k - 1 not in kept):
                    out.cut_edges.extend(self._origins(ids[k]))
        out.status = "checkable"
        self._present(out)
        return out

    def _present(self, out: CallTruth) -> None:
        for path in {o.path for o in out.origins}:
            try:
                text = text_of((self.layout.tagged / path).read_bytes())
            except OSError:
                continue
            if text is None:
                continue
            _, ids = untag_file(text, self.layout.table)
            lines = {o.line for o in self._origins([i for i in ids if i is not None])}
            out.present[path] = {n for n in lines if n is not None}

    def _origins(self, ids: list[int]) -> list[Origin]:
        got = [self.layout.table.origin(i) for i in ids]
        return [o for o in got if o is not None]

    def _edit(self, out: CallTruth, action: Action, cwd: str | None, call) -> None:
        """Redo an edit tool's change on the plain copy (not when the trace says the
        tool refused it); a change we cannot redo is noted, and the reads after it show
        whether the copy is off."""
        if call.is_error:
            out.problem = "edit failed in the trace"
        else:
            try:
                self._apply(action, cwd)
            except (EditFailed, OSError, ValueError) as exc:
                self.edit_failures += 1
                out.problem = f"edit not redone: {exc}"
        out.changed = self.carrier.carry().changed

    def _apply(self, action: Action, cwd: str | None) -> None:
        name = action.tool.lower()
        if name == "file_change":
            raise EditFailed("the trace has no patch text")
        if name == "apply_patch":
            inp = action.input or {}
            text = inp.get("input") or inp.get("patch") or ""
            for fp in parse_patch(str(text)):
                self._write(fp.path, cwd, lambda cur, fp=fp: apply_file_patch(fp, cur))
                if fp.move_to:
                    src, dst = self.host(fp.path, cwd), self.host(fp.move_to, cwd)
                    if src is None or dst is None:
                        raise EditFailed("move outside the copy")
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    src.rename(dst)
            return
        self._write(action.path, cwd, lambda cur: edit_text(
            action, cur, self.history.setdefault(self.host(action.path, cwd), [])))

    def _write(self, path: str | None, cwd: str | None, change) -> None:
        host = self.host(path, cwd)
        if host is None:
            raise EditFailed("path outside the copy")
        current = None
        if host.is_file():
            current = text_of(host.read_bytes())
            if current is None:
                raise EditFailed("binary file")
        new = change(current)
        if new is None:
            if host.exists():
                host.unlink()
            return
        if current is not None:
            self.history.setdefault(host, []).append(current)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(new, encoding="utf-8", newline="")

    def _numbered(self, out: CallTruth, action: Action, cwd: str | None, call) -> CallTruth:
        """A read tool's (or an edit's snippet's) numbered lines, checked and traced."""
        if call.output is None:
            out.status = NO_OUTPUT
            return out
        rows = numbered_lines(call.output)
        if not rows:
            out.status = "checkable"   # it showed no line (an edit's notice, a listing)
            return out
        plain, tagged = self.host(action.path, cwd), self.host(action.path, cwd, tagged=True)
        if plain is None or tagged is None:
            out.status = OUTSIDE
            return out
        try:
            text = text_of(plain.read_bytes())
            tagged_text = text_of(tagged.read_bytes())
        except OSError:
            text = tagged_text = None
        if text is None or tagged_text is None:
            out.status = DIFFERS
            return out
        lines = [ln.rstrip("\n") for ln in lines_of(text)]
        _, ids = untag_file(tagged_text, self.layout.table)
        origins: list[Origin] = []
        for n, shown in rows:
            if not 1 <= n <= len(lines) or not same_line(shown, lines[n - 1]):
                out.status = DIFFERS
                return out
            if ids[n - 1] is not None:
                got = self._origins([ids[n - 1]])
                origins.extend(got)
                out.texts.extend([lines[n - 1]] * len(got))
        out.origins = origins
        out.match = "numbered"
        out.status = "checkable"
        self._present(out)
        return out


def first_difference(ours: str, recorded: str) -> str:
    """Where the re-executed output first departs from the recorded one (for the log)."""
    a, b = ours.split("\n"), recorded.split("\n")
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"line {k + 1}: ours {x[:120]!r} / trace {y[:120]!r}"
    return f"ours {len(a)} lines / trace {len(b)} lines"


def _describe(action: Action, call) -> str:
    if action.kind == "shell":
        return action.command
    inp = call.input if isinstance(call.input, dict) else {}
    bits = [f"{k}={v!r}" for k, v in inp.items()
            if k in ("command", "file_path", "path", "offset", "limit", "view_range")]
    return f"{call.tool}({', '.join(bits)})"
