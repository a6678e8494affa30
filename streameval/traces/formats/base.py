"""What every trace adapter is: a detector and a line-at-a-time parser.

Adapters know nothing about metrics, repos or files on disk. They turn raw lines into
``model.TraceEvent``s; ``reading/infer.py`` turns ToolCalls into Reads/Edits and Steps.
"""

from __future__ import annotations

from typing import ClassVar

from streameval.model import TraceEvent


class Adapter:
    """Base class of one trace format.

    Line-oriented formats (JSONL streams) emit events from ``feed`` as lines arrive.
    Whole-document formats (pretty-printed ``.traj`` JSON) buffer in ``feed`` and emit
    everything from ``close``; ``document = True`` tells the live watcher to re-read
    such files whole when they change.

    Contract: ``feed`` and ``close`` never raise on bad input; a line that cannot be
    used yields a ``BadLine`` event with a ``errors.Reason`` value and the stream goes
    on. A ToolCall is emitted once, when its result arrives (or at ``close`` without
    a result if it never did).
    """

    format: ClassVar[str] = ""
    #: the file names (globs) this format's traces are written under, and no other
    #: files are: ``watch`` follows them by default, a run id leaves their ending out,
    #: replay takes their extensions from a directory (``traces.names``). A format
    #: whose files carry any name (Claude Code's ``<session id>.jsonl``, unified
    #: predictions) declares none.
    patterns: ClassVar[tuple[str, ...]] = ()
    document: ClassVar[bool] = False
    #: every line is one whole run (OpenHands ``output.jsonl``; everything is emitted from
    #: ``feed``, nothing from ``close``): a run's end event ends that run only, and the
    #: file goes on being read where it was. Closing the adapter there would make every
    #: next instance re-read the whole file (quadratic, and "reopened").
    run_per_line: ClassVar[bool] = False
    #: the file states the agent's context instead of recording its tool calls (unified
    #: predictions): its record is the evaluator's shape, ``no_context_extracted`` when the
    #: final context resolves to nothing, and its instance ids are its own
    states_context: ClassVar[bool] = False
    #: which shape of its format the trace is, once the adapter has seen it (Claude Code's
    #: ``stream-json`` or a session transcript...): ``formats.END_EVENTS`` says which
    #: shapes always end with an end event. None: the format has one shape, or not known.
    shape: str | None = None

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        """True when the first non-empty lines of a file look like this format."""
        raise NotImplementedError

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        """One whole line (without its newline), 1-based line number."""
        raise NotImplementedError

    def close(self) -> list[TraceEvent]:
        """End of input: flush calls still waiting for results, or parse a document."""
        return []
