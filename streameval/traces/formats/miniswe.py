"""mini-swe-agent trajectories (``*.traj.json``; ``trajectory_format`` ``mini-swe-agent-1``
for 1.x, ``mini-swe-agent-1.1`` for 2.x).

A trajectory is one pretty-printed JSON document, rewritten whole after every step, so
the adapter is a *document* adapter: ``feed`` only buffers, ``close`` parses (a live
watcher re-reads the file when it changes). The document is
``{"info": {exit_status, submission, model_stats, config}, "messages": [...],
"instance_id"?}``; every assistant message holds a THOUGHT and exactly one fenced
``bash`` block (the action) and the next user message holds the observation
(``<returncode>N</returncode><output>...</output>``, or ``<output_head>``/
``<elided_chars>``/``<output_tail>`` for outputs over 10,000 characters).

mini-swe-agent 2.x writes the actions it took in ``extra.actions`` of each assistant
message (``[{"command", "tool_call_id"?}]``). In text mode the block is fenced
``mswea_bash_command`` (``bash`` in 1.x); in tool-calling mode the turn's ``tool_calls``
hold the commands (possibly several) and each answer is a ``role: "tool"`` message with
the same ``tool_call_id`` whose content is a JSON object (``returncode``, ``output``, or
``output_head``/``output_tail``/``elided_chars`` for long outputs, and
``exception_info`` when the action did not run). The content is what the model saw
(``extra.raw_output`` is the uncut output, which it did not). The run ends with a
``role: "exit"`` message; ``info`` carries the exit status and submission too.

ContextBench's fork of the agent also lets the model *state* what it read:
``<EXPLORE_CONTEXT>`` blocks (``File: /abs/path`` + ``Lines: a-b`` entries) before a
reading command, and one ``<PATCH_CONTEXT>`` block of the same shape before submitting.
Those become ``StatedContext`` events (docs/metrics.md §1, "a trace format that states
a final context explicitly uses that instead"). As ContextBench's own analysis does, the
blocks are read from assistant messages only, and the final context is the union of all
``PATCH_CONTEXT`` blocks. The tool call of the same turn is still emitted (after its
stated step), with ``structured["stated_context"] = True`` so a consumer that prefers the
stated steps can skip inferring one from the command.

Before 1.0 (and in the agent's own test data), a trajectory was the message list alone:
a JSON array of ``{role, content}`` messages, the system prompt first, with no ``info``.
It is read the same way; the run is over when its last message is the submission (a
user message holding the diff the final ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``
printed).

``shell_failed``, ``looks_like_diff`` and ``head_text`` live in ``jsonl`` (SWE-agent and
OpenHands use them too) and are re-exported here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from streameval.errors import Reason
from streameval.model import (
    OUTPUT_CUT,
    BadLine,
    RunEnd,
    RunInfo,
    StatedContext,
    Step,
    TokenUsage,
    ToolCall,
    TraceEvent,
    Usage,
)
from streameval.traces.formats.document import MAX_DOCUMENT_BYTES, DocumentAdapter, DocumentBuffer
from streameval.traces.formats.jsonl import (
    as_cost,
    as_count,
    as_dict,
    as_list,
    as_str,
    head_text,
    looks_like_diff,
    parse_timestamp,
    shell_failed,
    token_usage,
    unread_action,
)

__all__ = ["DocumentBuffer", "ELIDED_MARKER", "MiniSweAdapter", "MAX_DOCUMENT_BYTES",
           "looks_like_diff", "parse_context_block", "shell_failed"]

#: A whole-document trace larger than this is refused: real trajectories are a few MB.

#: The output is the command's as it printed it: ``<output>\n{{ output -}}\n</output>``
#: leaves it whole, its last newline included (the newline after ``<output>`` and the one
#: before ``</output_head>``/``</output_tail>`` are the template's); whether a blank line
#: ended the output depends on it (docs/metrics.md §6d).
#: Put between ``output_head`` and ``output_tail`` when mini-swe-agent elided the middle
#: of a long output, so a reader of ``ToolCall.output`` knows lines are missing there.
ELIDED_MARKER = "\n" + OUTPUT_CUT + "\n"

_ACTION_RE = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
#: an action mini-swe-agent did not run (the submission command, a cut-off turn)
_NOT_RUN = re.compile(r"not executed|was not run", re.IGNORECASE)
_EXPLORE_RE = re.compile(r"<EXPLORE_CONTEXT>(.*?)</EXPLORE_CONTEXT>", re.DOTALL)
_PATCH_CTX_RE = re.compile(r"<PATCH_CONTEXT>(.*?)</PATCH_CONTEXT>", re.DOTALL)
_RC_RE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT_RE = re.compile(r"<output>\n?(.*)</output>", re.DOTALL)
#: before 1.0 the observation gave stdout and stderr apart (after the ``<args>``)
_STDOUT_RE = re.compile(r"<stdout>\n?(.*?)\n?</stdout>", re.DOTALL)
_STDERR_RE = re.compile(r"<stderr>\n?(.*?)\n?</stderr>", re.DOTALL)
_HEAD_RE = re.compile(r"<output_head>\n?(.*?)\n?</output_head>", re.DOTALL)
_TAIL_RE = re.compile(r"<output_tail>\n?(.*?)\n?</output_tail>", re.DOTALL)
_ELIDED_RE = re.compile(r"<elided_chars>\s*(\d+)")
_TIMEOUT_RE = re.compile(r"^The last command <command>.*?</command> timed out", re.DOTALL)
_MINI_START_RE = re.compile(r'\s*\{\s*"(?:info|messages|trajectory_format)"\s*:\s*[{\["]')
#: a bare message list (before 1.0), by its structure: a JSON array whose first message
#: is the system prompt with a role and a content and nothing else, then the task as a
#: user message; what the prompt says is left alone (its wording changed from release
#: to release: ``NANO_SWE_AGENT_FINAL_OUTPUT``, ``mswea_bash_command``...)
_MINI_LIST_RE = re.compile(
    r'\s*\[\s*\{\s*"role"\s*:\s*"system"\s*,\s*"content"\s*:\s*"(?:[^"\\]|\\.)*"\s*\}\s*,'
    r'\s*\{\s*"role"\s*:\s*"user"\s*,\s*"content"\s*:')
_RANGE_RE = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")


# --------------------------------------------------------------------------- shared helpers


def parse_context_block(block: str) -> tuple[list[str], dict[str, list[tuple[int, int]]]]:
    """``File: p`` / ``Lines: a-b`` entries -> (files in order, ranges per file).

    Lenient the way ContextBench's analysis is: other lines are ignored, a ``Lines:``
    entry belongs to the last ``File:`` seen, and only files with at least one usable
    range count. ``a > b`` is read as ``[b, a]`` (docs/metrics.md §4b); a range ending before
    line 1 is dropped and a start below 1 becomes 1.
    """
    files: list[str] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    current: str | None = None
    for raw in block.splitlines():
        line = raw.strip()
        if line.startswith("File:"):
            current = line[5:].strip() or None
        elif line.startswith("Lines:") and current:
            m = _RANGE_RE.match(line[6:])
            if not m:
                continue
            a, b = sorted((int(m.group(1)), int(m.group(2))))
            if b < 1:
                continue
            if current not in spans:
                files.append(current)
            spans.setdefault(current, []).append((max(a, 1), b))
    return files, spans


# --------------------------------------------------------------------------- adapter


def _content_text(content: Any) -> str:
    """Message content: a string, or a list of ``{"type": "text", "text": ...}`` parts."""
    if isinstance(content, str):
        return content
    parts = []
    for item in as_list(content):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif isinstance(item, str):
            parts.append(item)
    return "\n".join(parts)


def _observation(text: str) -> tuple[str | None, dict[str, Any], bool] | None:
    """(output, structured, is_error) of a user message, or None if it is no observation."""
    timed_out = bool(_TIMEOUT_RE.match(text))
    rc_match = _RC_RE.search(text)
    if rc_match is None and not timed_out:
        return None
    rc = int(rc_match.group(1)) if rc_match else None
    structured: dict[str, Any] = {"returncode": rc}
    head = _HEAD_RE.search(text)
    if head is not None:
        tail = _TAIL_RE.search(text)
        elided = _ELIDED_RE.search(text)
        n = int(elided.group(1)) if elided else 0
        structured["elided_chars"] = n
        output = head.group(1) + ELIDED_MARKER.format(n=n) + (tail.group(1) if tail else "")
    else:
        m = _OUTPUT_RE.search(text)
        output = m.group(1) if m else _streams(text)
    if timed_out:
        structured["timed_out"] = True
    return output, structured, timed_out or shell_failed(rc, output)


def _streams(text: str) -> str:
    """A pre-1.0 observation's ``<stdout>``, then its ``<stderr>`` when it holds text
    (the agent was shown both; the template's newlines around each are not output)."""
    out = _STDOUT_RE.search(text)
    err = _STDERR_RE.search(text)
    output = out.group(1) if out else ""
    if err and err.group(1).strip():
        output += ("" if not output or output.endswith("\n") else "\n") + err.group(1)
    return output


def _tool_observation(text: str) -> tuple[str | None, dict[str, Any], bool, bool]:
    """(output, structured, is_error, ran) of a 2.x tool message (a JSON object)."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return text, {}, False, True
    rc = obj.get("returncode")
    rc = rc if isinstance(rc, int) and not isinstance(rc, bool) else None
    structured: dict[str, Any] = {"returncode": rc}
    if "output_head" in obj or "output_tail" in obj:
        n = as_count(obj.get("elided_chars"))
        structured["elided_chars"] = n
        output = str(obj.get("output_head") or "") + ELIDED_MARKER + str(obj.get("output_tail") or "")
    else:
        output = str(obj.get("output") or "")
    exception = as_str(obj.get("exception_info"))
    if exception:
        structured["exception_info"] = exception
    ran = not (exception and _NOT_RUN.search(exception))
    return output, structured, shell_failed(rc, output), ran


def _stated_step(blocks: list[str], call_id: str | None, ts: float | None) -> Step | None:
    files: list[str] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    for block in blocks:
        bfiles, bspans = parse_context_block(block)
        for f in bfiles:
            if f not in spans:
                files.append(f)
            spans.setdefault(f, []).extend(bspans[f])
    if not files:
        return None
    return Step(files=tuple(files), spans=spans, call_id=call_id, timestamp=ts)


def _actions(msg: dict, text: str) -> tuple[list[tuple[str, str | None]], int]:
    """The commands one assistant turn ran, with the tool call id that answers each
    (None in text mode), and how many actions it lists that hold no command string
    (unread). 2.x lists them in ``extra.actions``; else the turn's ``tool_calls``; else
    exactly one fenced block in the text (zero or several: a format error, nothing ran,
    and nothing unread: the agent itself refused the turn)."""
    listed = as_dict(msg.get("extra")).get("actions")
    unread = 0
    if isinstance(listed, list) and listed:
        out = [(a["command"], as_str(a.get("tool_call_id"))) for a in listed
               if isinstance(a, dict) and isinstance(a.get("command"), str)]
        if out:
            return out, len(listed) - len(out)
        unread = len(listed)
    calls = []
    tool_calls = as_list(msg.get("tool_calls"))
    for tc in tool_calls:
        fn = as_dict(as_dict(tc).get("function"))
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = None
        if isinstance(args, dict) and isinstance(args.get("command"), str):
            calls.append((args["command"], as_str(as_dict(tc).get("id"))))
    if calls:
        return calls, len(tool_calls) - len(calls)
    blocks = _ACTION_RE.findall(text)
    if len(blocks) == 1:
        return [(blocks[0], None)], 0
    return [], max(unread, len(tool_calls))


class MiniSweAdapter(DocumentAdapter):
    """mini-swe-agent ``.traj.json``: a whole document, parsed at ``close``.

    Events, in order: ``RunInfo``; per assistant turn with exactly one bash block, the
    turn's ``StatedContext`` (if it has ``<EXPLORE_CONTEXT>``) then its ``ToolCall``
    (``tool="bash"``, ``input={"command"}``, ``output`` without the tags, ``cwd`` =
    the environment's cwd, ``started_at`` = the model response's ``created`` time);
    ``StatedContext(final=True)`` for ``<PATCH_CONTEXT>``; a cumulative ``Usage``
    before each turn's events whose response states its usage (the tokens and, where
    the responses state it, the cost summed over the responses so far: what the run had
    spent when that call was made), and one at the end (``info.model_stats.instance_cost``
    and the summed per-response token counts);
    ``RunEnd(reason=info.exit_status or "unfinished", patch=info.submission if a diff)``.
    A turn with zero or several bash blocks was rejected by the agent (format error)
    and ran nothing, so it gives no tool call. ``is_error`` follows ``shell_failed``,
    or a timeout.
    """

    format = "miniswe"
    patterns = ("*.traj.json",)
    label = "mini-swe-agent"
    kinds = (dict, list)

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        """A JSON document whose first key is ``info``/``messages``/``trajectory_format``.

        Pretty-printed (``{`` alone on the first line, the key on the next) or compact
        (``{"info": {...`` on one line). Only the start of the file is looked at, so a
        JSONL line that merely mentions mini-swe-agent is not taken for one; a SWE-agent
        document (``trajectory``, ``swe_agent_version``) is refused.
        """
        text = head_text(head)
        if '"swe_agent_version"' in text or re.search(r'^\s*\{\s*"trajectory"\s*:', text):
            return False
        return _MINI_LIST_RE.match(text) is not None or _MINI_START_RE.match(text) is not None

    def parse(self, doc: dict | list, lineno: int) -> list[TraceEvent]:
        # a trajectory ends with its exit status (``formats.END_EVENTS``); a bare
        # message list (before 1.0) has none
        self.shape = "message list" if isinstance(doc, list) else "trajectory"
        if isinstance(doc, list):
            if not any(isinstance(m, dict) and "role" in m for m in doc):
                return [BadLine(lineno, Reason.NOT_AN_OBJECT.value,
                                "mini-swe-agent document is a JSON array of no messages")]
            return _Parse({"messages": doc}, lineno, bare=True).run()
        return _Parse(doc, lineno).run()


def _bare_end(messages: list) -> tuple[str | None, str | None]:
    """(exit status, submission) of a bare message list: submitted when the last
    message is a user message holding the diff, else not known to be over."""
    last = messages[-1] if messages else None
    if isinstance(last, dict) and last.get("role") == "user":
        text = _content_text(last.get("content"))
        if looks_like_diff(text):
            return "Submitted", text
    return None, None


class _Parse:
    """One pass over a parsed trajectory document."""

    def __init__(self, doc: dict, lineno: int, bare: bool = False):
        self.doc = doc
        #: a bare message list (before 1.0): no ``info``, the submission is the last message
        self.bare = bare
        self.info = as_dict(doc.get("info"))
        self.config = as_dict(self.info.get("config"))
        self.lineno = lineno
        self.cwd = as_str(as_dict(self.config.get("environment")).get("cwd"))
        self.events: list[TraceEvent] = []
        self.patch_blocks: list[str] = []
        self.tokens = [0, 0, 0]  # input (uncached), output, cache read
        #: the summed per-response cost (OpenRouter's ``usage.cost``); None: none stated
        self.cost: float | None = None

    def run(self) -> list[TraceEvent]:
        self.events.append(self._run_info())
        messages = as_list(self.doc.get("messages"))
        if "messages" in self.doc and not isinstance(self.doc.get("messages"), list):
            self.events.append(BadLine(self.lineno, Reason.MISSING_FIELD.value,
                                       "mini-swe-agent document: 'messages' is not a list"))
        for index, msg in enumerate(messages):
            if isinstance(msg, dict) and msg.get("role") == "assistant":
                self._assistant(index, msg, messages)
        final = _stated_step(self.patch_blocks, None, None)
        if final is not None:
            self.events.append(StatedContext(final, final=True, lineno=self.lineno))
        usage = self._usage()
        if usage is not None:
            self.events.append(usage)
        exit_status = as_str(self.info.get("exit_status"))
        submission = self.info.get("submission")
        if self.bare:
            exit_status, submission = _bare_end(messages)
        # saved after every step: no exit status yet means the run goes on
        self.events.append(RunEnd(exit_status or "unfinished",
                                  submission if looks_like_diff(submission) else None,
                                  lineno=self.lineno, ends=bool(exit_status)))
        return self.events

    def _run_info(self) -> RunInfo:
        model = as_dict(self.config.get("model"))
        name = as_str(model.get("model_name")) or as_str(model.get("name"))
        return RunInfo(agent="mini-swe-agent", model=name, cwd=self.cwd,
                       instance_id=as_str(self.doc.get("instance_id")), lineno=self.lineno)

    def _assistant(self, index: int, msg: dict, messages: list) -> None:
        text = _content_text(msg.get("content"))
        response = as_dict(as_dict(msg.get("extra")).get("response"))
        ts = parse_timestamp(response.get("created"))
        usage = as_dict(response.get("usage"))
        if usage:
            # spent before the turn's action ran: at step k the run had spent this much
            self._count_tokens(usage)
            self.events.append(Usage(self._token_usage(), cost_usd=self.cost, cumulative=True,
                                     timestamp=ts, lineno=self.lineno))
        self.patch_blocks.extend(_PATCH_CTX_RE.findall(text))
        actions, unread = _actions(msg, text)
        self.events.extend(unread_action(self.lineno, f"message {index}: an action without "
                                         "a command string") for _ in range(unread))
        call_id = f"msg-{index}"
        stated = _stated_step(_EXPLORE_RE.findall(text), call_id, ts)
        if stated is not None:
            self.events.append(StatedContext(stated, lineno=self.lineno))
        if not actions:
            return  # format error: the agent ran nothing for this turn
        for k, (command, tool_call_id) in enumerate(actions):
            ran = True
            if tool_call_id is not None:
                output, structured, is_error, ran = self._tool_answer(index, tool_call_id,
                                                                      messages)
            else:
                output, structured, is_error = self._find_observation(index, messages)
            if stated is not None:
                structured = dict(structured or {}, stated_context=True)
            self.events.append(ToolCall(call_id=call_id if k == 0 else f"{call_id}.{k}",
                                        tool="bash", input={"command": command.strip()},
                                        output=output, is_error=is_error, started_at=ts,
                                        cwd=self.cwd, structured=structured,
                                        lineno=self.lineno, interrupted=not ran))

    @staticmethod
    def _tool_answer(index: int, tool_call_id: str,
                     messages: list) -> tuple[str | None, dict | None, bool, bool]:
        """The ``role: "tool"`` message answering one call of a 2.x tool-calling turn;
        none (the run stopped first) means the call showed nothing."""
        for msg in messages[index + 1:]:
            if not isinstance(msg, dict):
                continue
            if msg.get("role") == "assistant":
                break
            if msg.get("role") == "tool" and msg.get("tool_call_id") == tool_call_id:
                return _tool_observation(_content_text(msg.get("content")))
        return None, None, False, False

    @staticmethod
    def _find_observation(index: int, messages: list) -> tuple[str | None, dict | None, bool]:
        """The first observation among the user messages before the next assistant turn.

        Not simply the next message: the context-aware fork puts a confirmation
        (``<context_received>``) or a context request between a turn and its result,
        and the final submission's "observation" is the bare diff (no result tags).
        """
        for msg in messages[index + 1:]:
            if not isinstance(msg, dict):
                continue
            if msg.get("role") == "assistant":
                break
            obs = _observation(_content_text(msg.get("content")))
            if obs is not None:
                return obs
        return None, None, False

    def _count_tokens(self, usage: dict) -> None:
        prompt = as_count(usage.get("prompt_tokens"))
        cached = as_count(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
        self.tokens[0] += max(prompt - cached, 0)
        self.tokens[1] += as_count(usage.get("completion_tokens"))
        self.tokens[2] += min(cached, prompt) if prompt else cached
        cost = as_cost(usage.get("cost"))
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def _token_usage(self) -> TokenUsage:
        return token_usage(self.tokens[0], self.tokens[1], self.tokens[2])

    def _usage(self) -> Usage | None:
        stats = self.info.get("model_stats")
        if not isinstance(stats, dict) and not any(self.tokens):
            return None
        cost = as_cost(as_dict(stats).get("instance_cost"))
        return Usage(self._token_usage(), cost_usd=self.cost if cost is None else cost,
                     cumulative=True, lineno=self.lineno)
