"""The sed interpreter that replays ``sed -i`` edits, against GNU sed itself.

GNU sed is the reference: each program is run by ``sed`` on the same text (the test's
own program on the test's own text, nothing from a trace) and by ``run_sed``; where the
interpreter accepts a program its result must be byte for byte GNU sed's. Programs are
the shapes agents write (``/def f(/a\\ ...``, ranges, ``!``, several ``-e``) and random
combinations of the supported commands.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streameval.reading.sed import run_sed

SED = shutil.which("sed")
pytestmark = pytest.mark.skipif(SED is None, reason="GNU sed is not installed")

TEXT = ("import os\n"
        "\n"
        "def alpha(x):\n"
        "    value = x * 2\n"
        "    if value:\n"
        "        return value\n"
        "    return None\n"
        "\n"
        "\n"
        "def beta(x):\n"
        "    # TODO: beta\n"
        "    return x + 1\n"
        "\n"
        "class Gamma:\n"
        "    def run(self):\n"
        "        pass\n")


def gnu(text: str, scripts: list[str], quiet: bool = False, extended: bool = False) -> str:
    argv = [SED, "--posix"] if False else [SED]
    if quiet:
        argv.append("-n")
    if extended:
        argv.append("-E")
    for s in scripts:
        argv += ["-e", s]
    out = subprocess.run(argv, input=text.encode(), capture_output=True, timeout=10)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode()


def ours(text: str, scripts: list[str], quiet: bool = False, extended: bool = False) -> str | None:
    lines = text.splitlines(keepends=True)
    got = run_sed(lines, scripts, quiet, extended)
    return None if got is None else "".join(got)


# --------------------------------------------------------------------------- agents' shapes

AGENT_PROGRAMS = [
    ["/def alpha(x):/a\\    # note one\\n    # note two"],
    ["/def beta/i\\# b"],
    ["/# TODO/d"],
    ["/def alpha/,/return None/d"],
    ["/def alpha/,+2d"],
    ["3,5s/value/result/g"],
    ["s/return \\(.*\\)/return (\\1)/"],
    ["/class Gamma/c\\class Gamma(object):"],
    ["5!d"],
    ["/^$/d"],
    ["$a\\# end"],
    ["1i\\# start"],
    ["10,$s/x/y/"],
    ["/def/{s/def /def _/;s/(x)/(x, y)/}"],
    ["s/x/X/2"],
    ["/alpha/I,/none/Id"],
    ["y/abc/ABC/"],
    ["s/    /\\t/"],
    ["/pass/q"],
    ["/pass/Q"],
    ["s/value/v/", "/v/a\\# changed"],
    ["4c\\    value = x * 3"],
    ["3,4c\\    replaced"],
    ["/if value:/{n;d}"],          # n: not supported, must say so rather than guess
    ["s/[[:space:]]*$//"],
    ["s/\\(def\\) \\([a-z]*\\)/\\2 \\1/"],
]


@pytest.mark.parametrize("scripts", AGENT_PROGRAMS, ids=[" ; ".join(s) for s in AGENT_PROGRAMS])
def test_agent_programs_equal_gnu_sed(scripts: list[str]) -> None:
    got = ours(TEXT, scripts)
    if scripts == ["/if value:/{n;d}"]:
        assert got is None            # unsupported: the edit map then waits for a read
        return
    assert got is not None, "the interpreter should support this program"
    assert got == gnu(TEXT, scripts)


def test_extended_regex_and_quiet_print() -> None:
    for scripts, quiet, ext in ((["s/(def|class) ([a-z]+)/\\2_\\1/"], False, True),
                                (["/return/p"], True, False),
                                (["2,4p"], True, False),
                                (["/a+l/p"], True, True)):
        assert ours(TEXT, scripts, quiet, ext) == gnu(TEXT, scripts, quiet, ext)


def test_a_file_without_a_final_newline() -> None:
    text = TEXT.rstrip("\n")
    for scripts in (["$a\\tail"], ["s/pass/PASS/"], ["$d"], ["1i\\head"]):
        assert ours(text, scripts) == gnu(text, scripts)


# --------------------------------------------------------------------------- random programs

_WORDS = ["def", "value", "return", "x", "None", "pass", "alpha", "#", "class"]
_addr = st.one_of(
    st.just(""),
    st.integers(1, 17).map(str),
    st.just("$"),
    st.sampled_from(_WORDS).map(lambda w: f"/{w}/"),
    st.tuples(st.integers(1, 17), st.integers(1, 17)).map(lambda t: f"{t[0]},{t[1]}"),
    st.tuples(st.sampled_from(_WORDS), st.integers(0, 3)).map(lambda t: f"/{t[0]}/,+{t[1]}"),
    st.tuples(st.integers(1, 17), st.sampled_from(_WORDS)).map(lambda t: f"{t[0]},/{t[1]}/"),
    st.tuples(st.sampled_from(_WORDS), st.sampled_from(_WORDS)).map(lambda t: f"/{t[0]}/,/{t[1]}/"),
)
_text = st.text(alphabet="abcxyz _#", min_size=1, max_size=8).map(lambda s: s.strip() or "t")
_cmd = st.one_of(
    st.just("d"), st.just("p"),
    st.tuples(st.sampled_from(_WORDS), _text, st.sampled_from(["", "g", "2", "p"])).map(
        lambda t: f"s/{t[0]}/{t[1]}/{t[2]}"),
    _text.map(lambda t: f"a\\{t}"), _text.map(lambda t: f"i\\{t}"),
    _text.map(lambda t: f"c\\{t}"),
    st.just("y/ax/AX/"),
)
_plain = st.one_of(_cmd.filter(lambda c: c[0] not in "aic"), st.sampled_from(["q", "Q"]))
_one = st.one_of(
    st.tuples(_addr, st.booleans(), _cmd).map(
        lambda t: f"{t[0]}{'!' if t[1] and t[0] else ''}{t[2]}"),
    st.tuples(_addr.filter(bool), st.lists(_plain, min_size=1, max_size=3)).map(
        lambda t: f"{t[0]}{{{';'.join(t[1])}}}"),
    st.tuples(st.sampled_from(["", "3", "$", "/pass/"]), st.sampled_from(["q", "Q"])).map(
        lambda t: f"{t[0]}{t[1]}"),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs=st.lists(_one, min_size=1, max_size=3), quiet=st.booleans(),
       separate=st.booleans())
def test_random_programs_equal_gnu_sed(programs: list[str], quiet: bool, separate: bool) -> None:
    # a/i/c take the rest of their script as text: each goes in its own -e
    scripts = programs if separate or any(p.split("\\")[0][-1:] in "aic" for p in programs) \
        else [";".join(programs)]
    got = ours(TEXT, scripts, quiet)
    if got is None:
        return   # unsupported: never a wrong answer
    assert got == gnu(TEXT, scripts, quiet), scripts
