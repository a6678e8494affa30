"""output.errors: the error lines of an output, found by searching for their words, are
those a look at every line finds, in the same order."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.reading.output.errors import ERROR_LINE, error_paths

_LINES = st.sampled_from([
    "cat: x.py: No such file or directory", "grep: d: Is a directory",
    "ls: cannot access 'y': No such file or directory", "plain: text", "directory", "",
    "sed: can't read z: Permission denied", "a: b: not a regular file", "No such thing: here",
    "head: cannot open 'q' for reading: No such file or directory"])


def every_line(lines: list[str]) -> Counter[str]:
    bad: Counter[str] = Counter()
    for ln in lines:
        if ": " in ln and ("No such" in ln or "directory" in ln or "denied" in ln
                           or "regular file" in ln):
            m = ERROR_LINE.match(ln)
            if m:
                bad[m.group("p").strip()] += 1
    return bad


@settings(max_examples=1000)
@given(st.lists(_LINES, max_size=8))
def test_error_lines_found_by_their_words_are_those_of_every_line(lines):
    got = error_paths(lines)
    assert got == every_line(lines) and list(got) == list(every_line(lines))
