"""Plain dataclasses shared by every room of the house.

They are the seams: adapters produce ``TraceEvent``s, the read/edit inference turns
``ToolCall``s into ``Step``s, ``state.InstanceState`` consumes Steps. Nothing here
imports anything heavy, so every module may depend on this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

#: The four ContextBench granularities, in the order every report uses.
GRANULARITIES: tuple[str, ...] = ("file", "symbol", "span", "line")

#: Tool-call categories (docs/metrics.md §7), in report order.
CATEGORIES: tuple[str, ...] = (
    "read", "search", "edit", "test", "git", "env", "build", "quality", "run", "other",
)


# --------------------------------------------------------------------------- steps


@dataclass(slots=True)
class Step:
    """One retrieval step, already in repo terms.

    ``files`` are repo-relative paths; ``spans`` maps a repo-relative path to
    1-based inclusive line ranges at the *base commit*. ``symbols`` (optional)
    names definitions per file; where given for a step it replaces the symbols
    derived from that step's spans (docs/metrics.md §4b). The same shape serves as an
    explicitly stated final context.
    """

    files: tuple[str, ...] = ()
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    symbols: dict[str, list[str]] | None = None
    #: provenance only (never used by metrics): the tool call and its time
    call_id: str | None = None
    timestamp: float | None = None


# --------------------------------------------------------------------------- traces


@dataclass(slots=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    @property
    def total(self) -> int:
        return (self.input_tokens + self.output_tokens
                + self.cache_read_tokens + self.cache_creation_tokens)


@dataclass(slots=True)
class ToolCall:
    """One tool call of the agent, with what it was shown when the trace has it.

    ``output`` is the text the agent saw (``None`` when the trace does not carry
    it, e.g. a call still running); ``structured`` keeps format-specific result
    metadata (Claude's ``toolUseResult``: ``file.startLine``/``numLines``,
    ``structuredPatch``...) that the inference may prefer over parsing text.
    """

    call_id: str
    tool: str
    input: dict[str, Any]
    output: str | None = None
    is_error: bool = False
    started_at: float | None = None
    ended_at: float | None = None
    cwd: str | None = None
    sidechain: bool = False
    structured: dict[str, Any] | None = None
    lineno: int = 0
    #: the trace does not record a cwd per call, but the agent's shell keeps a ``cd``
    #: between calls (Claude Code stream-json): the step builder carries it forward
    cwd_persists: bool = False
    #: the call never got its result (the run ended or was cut first): it showed nothing
    interrupted: bool = False


@dataclass(slots=True)
class Usage:
    """Tokens (and cost, where the trace states it) spent by the agent.

    ``cumulative`` is True when the numbers are run totals (Claude's final
    ``result`` line, Codex ``token_count``) rather than one message's increment.
    """

    tokens: TokenUsage
    cost_usd: float | None = None
    cumulative: bool = False
    timestamp: float | None = None
    lineno: int = 0
    #: where a pushed run's numbers came from (``claude_code.api_request``,
    #: ``codex.sse_event``, ``transcript``: docs/ingest.md); None: the trace's own lines
    source: str | None = None


@dataclass(slots=True)
class RunInfo:
    """What a trace says about its own run (any field may be unknown)."""

    session_id: str | None = None
    agent: str | None = None
    model: str | None = None
    cwd: str | None = None
    instance_id: str | None = None
    timestamp: float | None = None
    lineno: int = 0


@dataclass(slots=True)
class RunEnd:
    """The format's end-of-run event; ``patch`` when the trace carries one.

    ``ends=False``: the trace says how it stands but not that it is over (a ``.traj``
    document saved after each step, with no exit status yet): a live run stays active.
    """

    reason: str
    patch: str | None = None
    timestamp: float | None = None
    lineno: int = 0
    ends: bool = True


@dataclass(slots=True)
class StatedContext:
    """A step (or the final context, ``final=True``) that the trace states itself.

    Used by formats that already say what was read (ContextBench unified
    ``pred_steps``/``pred_files``, mini-swe-agent ``<PATCH_CONTEXT>``). Paths are
    as written in the trace and still need resolving against the repo.
    """

    step: Step
    final: bool = False
    lineno: int = 0


@dataclass(slots=True)
class BadLine:
    """A line that could not be used; ``reason`` is an ``errors.Reason`` value."""

    lineno: int
    reason: str
    message: str


TraceEvent = ToolCall | Usage | RunInfo | RunEnd | StatedContext | BadLine


# --------------------------------------------------------------------------- reads / edits

#: The line a harness puts where it cut the middle out of a long output (mini-swe-agent
#: keeps a head and a tail): adapters write it, readers split the output at it.
OUTPUT_CUT = "[... {n} characters elided ...]"


#: values made for every read of every call: hashable by their fields as frozen ones are,
#: and never changed once made, but not frozen (a frozen dataclass costs four times as
#: much to make, on a path that scores the trace at the pace it is written)
_VALUE = {"slots": True, "unsafe_hash": True}


@dataclass(**_VALUE)
class Shown:
    """The text of one file that a tool result showed, line by line, in output order.

    ``numbers`` are the line numbers printed beside the lines when the output numbers
    them (``cat -n``, ``nl -ba``, Claude's Read, ``grep -n``): the file's numbers as it
    was when the call ran. Without numbers, ``gaps`` says whether the lines are one
    run of consecutive lines (``cat``, ``sed -n a,bp``) or lines in file order with
    unknown gaps between them (``grep`` without ``-n``). ``cut_head``/``cut_tail``: the
    first/last line may be only part of a line (a harness cut the output there).
    ``base``: the text is the base commit's (``git show HEAD:f``), not the current file's.
    ``loose``: the output may hold other text too (a transform such as ``sed s/x/y/``, a
    script's own prints): lines that match nothing there are not the agent's writing.
    ``runs``: with ``gaps``, the lengths of the groups of consecutive lines, in order
    (``grep -A3`` prints each match with its context as one group); None: not known.
    ``end_piece``: the last numbered line is empty and may be the piece after the file's
    final newline that Claude Code's Read numbers too: it was a line of the file, and
    shown, only when the file has a line of that number (the text decides, §6d).
    """

    lines: tuple[str, ...]
    numbers: tuple[int, ...] | None = None
    gaps: bool = False
    cut_head: bool = False
    cut_tail: bool = False
    base: bool = False
    loose: bool = False
    runs: tuple[int, ...] | None = None
    end_piece: bool = False


@dataclass(**_VALUE)
class Read:
    """What one tool call showed of one file, in the file's *current* line numbers.

    ``start``/``end`` are 1-based inclusive; ``None`` means "from the first line" /
    "to the last line". A negative ``start`` counts from the end (``tail -n 20``
    is ``start=-20``). ``listing=True`` means only the file's name was shown
    (``ls``, ``find``, ``grep -l``, Glob): file level only, no lines.
    ``path`` is as the trace wrote it (absolute, or relative to ``cwd``).

    ``start``/``end`` are what the command or tool *proposed*; ``shown``, when the trace
    kept the result, is the text that decides which base lines were really seen.
    """

    path: str
    start: int | None = None
    end: int | None = None
    listing: bool = False
    #: not part of equality: two reads of the same window are the same read
    shown: Shown | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class SedScript:
    """A ``sed -i`` program: its scripts (``-e`` each, or the one operand), ``-n``, ``-E``;
    ``files``: (name as the program writes it, text) of the files its ``r`` commands
    read, where the run wrote them with known text."""

    scripts: tuple[str, ...]
    quiet: bool = False
    extended: bool = False
    files: tuple[tuple[str, str], ...] = ()


#: ``Edit.insert_line`` of text added at the end of a file (``>>``, ``tee -a``)
APPEND = -1


@dataclass(frozen=True, slots=True)
class Edit:
    """One edit of one file, in whatever form the trace gives it.

    One form is set: ``old``/``new`` text replacement (Claude Edit, str_replace;
    ``replace_all`` for every occurrence), ``content`` for a whole new file (Write,
    create), ``hunks`` for a structured diff as ``(old_start, old_lines, new_start,
    new_lines)`` in current-file numbers (``hunk_text`` the new lines of each hunk when
    known), ``insert_line``+``new`` for an insertion after that line (``APPEND``: after
    the last, whatever the file's length: ``echo x >> f``), ``sed`` for a
    ``sed -i`` program run on the current text. ``sed`` may come with ``hunks`` or
    ``insert_line``: what a program at fixed line numbers does when the text is not
    known. An edit with no form changed the file in a way nobody recorded.
    """

    path: str
    old: str | None = None
    new: str | None = None
    replace_all: bool = False
    content: str | None = None
    hunks: tuple[tuple[int, int, int, int], ...] | None = None
    insert_line: int | None = None
    sed: SedScript | None = None
    hunk_text: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class TreeOp:
    """A git operation that moves files without saying how: ``revert`` puts ``path`` (a
    file, a directory, ``:/`` for the whole tree) back at the base commit; ``push``
    (``git stash``) saves every edit and puts the tree back; ``pop``/``apply`` bring
    the saved edits back. Kept in order with the call's edits: ``git checkout f &&
    sed -i ... f`` is a revert, then an edit."""

    kind: str
    path: str | None = None


# --------------------------------------------------------------------------- identity


@dataclass(slots=True)
class RunIdentity:
    """Who a run is (``identity.identify``): the instance its input names, a run id no
    other trace shares, the trace's path relative to the root it was found under."""

    instance_id: str
    run_id: str
    agent: str = "unknown"
    model: str = "unknown"
    pid: int | None = None
    #: when ``meta.json`` named the pid (its mtime): a process started later is not it
    pid_noted_at: float | None = None
    #: the trace file, relative to the watched (or replayed) directory
    trace: str | None = None
    #: ``meta.json`` named the run: the trace's session id does not replace it
    run_id_given: bool = False
    #: what a pushed run's source carries (``full``, ``inputs``: docs/ingest.md)
    fidelity: str | None = None
    #: the experiment (arm, condition) the run belongs to, and its other labels (the
    #: record's ``labels``; not ``labels()``, the Prometheus label set):
    #: ``meta.json``, the trace's path, ``--label`` (``traces.labels``)
    experiment: str | None = None
    run_labels: dict[str, str] = field(default_factory=dict)
    #: whether the run solved its task (the harness's verdict): ``meta.json``'s
    #: ``resolved``, or ``--outcomes`` (``sources.outcomes``); None: not known
    resolved: bool | None = None

    def labels(self) -> dict[str, str]:
        return {"run_id": self.run_id, "instance_id": self.instance_id,
                "agent": self.agent, "model": self.model}


Granularity = Literal["file", "symbol", "span", "line"]
