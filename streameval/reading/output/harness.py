"""What agent harnesses add to an output, or cut out of it.

Harnesses wrap a command's output in their own lines (``<returncode>0</returncode>``,
``[The command completed with exit code 0.]``, ``[Python Interpreter: ...]``) and colour
it with ANSI escapes; those are not the program's text. A long output is cut: the middle
is replaced by the ``model.OUTPUT_CUT`` line (mini-swe-agent keeps a head and a tail),
so the line before it may be only the start of a line and the line after it only the end.
"""

from __future__ import annotations

import re

from streameval.model import OUTPUT_CUT

__all__ = ["clean_lines", "cut_parts", "is_cut_line", "output_lines"]

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")
_WRAPPER = re.compile(r"^(?:<returncode>-?\d+</returncode>|</?output>|\[The command completed.*\]"
                      r"|\[Python Interpreter: .*\]|\[Command finished with exit code.*\])$")
_CUT = re.compile("^" + re.escape(OUTPUT_CUT).replace(re.escape("{n}"), r"\d+") + "$")


def clean_lines(output: str) -> list[str]:
    """Output lines without ANSI escapes, CR, or the harness's own wrapper lines."""
    if "\x1b" in output:
        output = _ANSI.sub("", output)
    text = output.replace("\r\n", "\n").replace("\r", "\n") if "\r" in output else output
    if not _has_wrapper_line(text):
        return text.split("\n")    # as a rule: found by C searches, not line by line
    return [ln for ln in text.split("\n") if not (ln[:1] in ("<", "[") and _WRAPPER.match(ln))]


def _has_wrapper_line(text: str) -> bool:
    """Is a line of ``text`` a wrapper's? Only lines that start with ``<`` or ``[`` can
    be: those are found with ``str.find`` and matched, not every line."""
    at = 0 if text[:1] in ("<", "[") else -1
    while True:
        if at >= 0:
            end = text.find("\n", at)
            if _WRAPPER.match(text[at:end if end >= 0 else len(text)]):
                return True
        starts = [i for i in (text.find("\n<", at + 1), text.find("\n[", at + 1)) if i >= 0]
        if not starts:
            return False
        at = min(starts) + 1


def output_lines(output: str) -> list[str]:
    """The lines a program printed: ``clean_lines`` without the empty piece after the
    output's last newline, which ends the last line and is no line of its own. A blank
    line the program printed last stays (``"x\\n\\n"`` is ``x`` and a blank line): it
    was shown. Harnesses that trim the output (Claude Code, a pty) leave no newline at
    the end, and their trimmed blank lines were never shown."""
    lines = clean_lines(output)
    if lines and lines[-1] == "":
        lines.pop()   # "" alone (no output) is no line either
    return lines


def is_cut_line(line: str) -> bool:
    return _CUT.match(line) is not None


def cut_parts(lines: list[str]) -> list[list[str]]:
    """The lines before and after each harness cut (one part when nothing was cut)."""
    if "[... " not in "\n".join(lines) or not any(ln.startswith("[... ") for ln in lines):
        return [lines]    # (the text searched at once first: as a rule, nothing was cut)
    parts: list[list[str]] = [[]]
    for ln in lines:
        if is_cut_line(ln):
            parts.append([])
        else:
            parts[-1].append(ln)
    return parts
