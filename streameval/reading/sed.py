"""A small ``sed`` for replaying ``sed -i`` edits on the text the agent had.

Agents edit with ``sed -i`` all the time, with regex addresses (``/def f(/a\\ ...``),
ranges, several ``-e`` scripts and ``;``-separated commands. Run on the current text of
the file (which the edit map keeps), the program gives the new text exactly, so the line
mapping stays right without waiting for the next read to correct it.

Supported: addresses ``N``, ``$``, ``/re/`` (``\\%re%``, ``I``), ranges ``a,b`` (``b`` a
number, ``$``, a regex or ``+N``), ``!``, blocks ``{...}``; commands ``s`` (flags ``g``,
``p``, ``N``, ``I``), ``d``, ``p``, ``q``, ``Q``, ``a``, ``i``, ``c``, ``y``. Basic
regular expressions are translated to Python's by ``reading.posix_regex`` (``\\(`` groups, ``\\{n\\}``, ``\\+``,
``[[:space:]]``...), ``-E`` extended ones too. Anything else (hold space, ``n``/``N``,
labels, ``r``/``w`` files, ``e``) returns None: the edit is then one whose text we do not
know, and the next read of the file corrects the map. Nothing is executed: this is an
interpreter over a list of strings, with a bound on the work it does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from streameval.reading.posix_regex import Unsupported as _Unsupported
from streameval.reading.posix_regex import replacement_template as _replacement
from streameval.reading.posix_regex import to_python

__all__ = ["run_sed"]

#: lines x commands beyond which a program is not run (a guard against pathological input)
_MAX_STEPS = 5_000_000


@dataclass(slots=True)
class _Addr:
    line: int | None = None        # a line number
    last: bool = False             # $
    regex: re.Pattern[str] | None = None
    step: int | None = None        # +N (second address only)

    def matches(self, n: int, text: str, is_last: bool) -> bool:
        if self.last:
            return is_last
        if self.regex is not None:
            return self.regex.search(text) is not None
        return n == self.line


@dataclass(slots=True)
class _Cmd:
    name: str
    a1: _Addr | None = None
    a2: _Addr | None = None
    negate: bool = False
    arg: object = None
    block: list[_Cmd] = field(default_factory=list)
    active: bool = False          # inside an address range
    end_line: int | None = None   # a +N range's last line
    closed: bool = False          # a range from line N has run: it never starts again

    def selects(self, n: int, text: str, is_last: bool) -> bool:
        hit = self._in_range(n, text, is_last)
        return not hit if self.negate else hit

    def _in_range(self, n: int, text: str, is_last: bool) -> bool:
        if self.a1 is None:
            return True
        if self.a2 is None:
            return self.a1.matches(n, text, is_last)
        if self.active:
            b = self.a2
            if self.end_line is None and b.line is not None and not b.last and n > b.line:
                self.active = False      # past line M (its cycle ended early): not this one
                return False
            done = (n >= self.end_line) if self.end_line is not None else (
                b.matches(n, text, is_last) if b.line is None or b.last else n >= b.line)
            if done:
                self.active = False
            return True
        if self._starts(n, text, is_last):
            if self.a2.step is not None:
                self.end_line = n + self.a2.step
                self.active = self.a2.step > 0
            elif self.a2.line is not None and not self.a2.last:
                self.active = self.a2.line > n
            else:
                self.active = True
            return True
        return False

    def _starts(self, n: int, text: str, is_last: bool) -> bool:
        """A range from line N starts on the first line at or past N that it sees (an
        earlier command may have ended the cycle of line N itself: ``1d;1,2d`` deletes
        line 2 too, as GNU sed does), and only once; past N, a range ending at line M
        before this line matches nothing (``1d;1,1d`` keeps line 2)."""
        a = self.a1
        if a is None or a.line is None or a.last or a.regex is not None:
            return a is not None and a.matches(n, text, is_last)
        if self.closed or n < a.line:
            return False
        self.closed = True
        b = self.a2
        return not (n > a.line and b is not None and b.line is not None and not b.last
                    and b.step is None and n > b.line)


def run_sed(lines: list[str], scripts: tuple[str, ...] | list[str], quiet: bool = False,
            extended: bool = False, files: Mapping[str, str] | None = None) -> list[str] | None:
    """The text ``sed [-n] [-E] -e S1 -e S2 ...`` makes of ``lines`` (each with its
    ``\\n``), or None when the program uses something this interpreter does not do.
    ``files``: the text of files an ``r FILE`` command reads, by the name it gives (a
    file the run wrote with known text); an ``r`` of any other file is not followed."""
    try:
        program: list[_Cmd] = []
        for script in scripts:
            program.extend(_Parser(script, extended).parse())
        return _Machine(program, quiet, files or {}).run(lines)
    except (_Unsupported, re.error, RecursionError, IndexError, ValueError):
        return None


def printed_lines(lines: list[str], scripts: tuple[str, ...] | list[str],
                  extended: bool = False) -> list[int] | None:
    """Which lines ``sed -n`` prints, in order, for a program of only ``p``/``q``
    commands (``sed -n '/def f/,/^def /p'``): the line numbers, one per printed line;
    None for any other program."""
    try:
        program = [c for s in scripts for c in _Parser(s, extended).parse()]
        if any(c.name not in "pqQ" for c in program):
            return None
        out: list[int] = []
        total = len(lines)
        for n, raw in enumerate(lines, 1):
            text = raw[:-1] if raw.endswith("\n") else raw
            for c in program:
                if c.selects(n, text, n == total):
                    if c.name != "p":
                        return out
                    out.append(n)
        return out
    except (_Unsupported, re.error, RecursionError, IndexError, ValueError):
        return None


def parses(scripts: tuple[str, ...] | list[str], extended: bool = False) -> bool:
    """Can this interpreter read the program? (False for a program GNU sed rejects too,
    and for one using what it does not do.)"""
    try:
        for s in scripts:
            _Parser(s, extended).parse()
    except (_Unsupported, re.error, RecursionError, IndexError, ValueError):
        return False
    return True


def files_read(scripts: tuple[str, ...] | list[str], extended: bool = False) -> list[str]:
    """The files a sed program's ``r`` commands read, as it names them ([] when the
    program cannot be parsed)."""
    def walk(cmds: list[_Cmd]) -> list[str]:
        return [n for c in cmds for n in ([str(c.arg)] if c.name == "r" else walk(c.block))]
    try:
        return walk([c for s in scripts for c in _Parser(s, extended).parse()])
    except (_Unsupported, re.error, RecursionError, IndexError, ValueError):
        return []


# --------------------------------------------------------------------------- parsing


class _Parser:
    def __init__(self, text: str, extended: bool):
        self.s = text
        self.i = 0
        self.extended = extended

    def parse(self, depth: int = 0) -> list[_Cmd]:
        out: list[_Cmd] = []
        while True:
            self._skip(" \t\n;")
            if self.i >= len(self.s):
                if depth:
                    raise _Unsupported("unclosed block")
                return out
            if self.s[self.i] == "}":
                if not depth:
                    raise _Unsupported("stray }")
                self.i += 1
                return out
            out.append(self._command(depth))

    def _skip(self, chars: str) -> None:
        while self.i < len(self.s) and self.s[self.i] in chars:
            self.i += 1

    def _command(self, depth: int) -> _Cmd:
        a1 = self._address()
        a2 = None
        if a1 is not None and self.i < len(self.s) and self.s[self.i] == ",":
            self.i += 1
            a2 = self._address(second=True)
            if a2 is None:
                raise _Unsupported("bad range")
        self._skip(" \t")
        negate = False
        if self.i < len(self.s) and self.s[self.i] == "!":
            negate = True
            self.i += 1
            self._skip(" \t")
        if self.i >= len(self.s):
            raise _Unsupported("missing command")
        name = self.s[self.i]
        self.i += 1
        cmd = _Cmd(name, a1, a2, negate)
        if name == "{":
            cmd.block = self.parse(depth + 1)
        elif name == "s":
            cmd.arg = self._substitute()
        elif name == "y":
            src, dst = self._delimited(), None
            dst = self._delimited(self._last_delim)
            if len(src) != len(dst):
                raise _Unsupported("y lengths")
            cmd.arg = str.maketrans(src, dst)
        elif name in "aic":
            cmd.arg = self._text()
        elif name in "dpqQ":
            pass
        elif name == "r":      # `r FILE`: the file name runs to the end of the line
            end = self.s.find("\n", self.i)
            end = len(self.s) if end < 0 else end
            cmd.arg = self.s[self.i:end].strip()
            self.i = end
        else:
            raise _Unsupported(f"command {name}")
        return cmd

    def _address(self, second: bool = False) -> _Addr | None:
        s = self.s
        if self.i >= len(s):
            return None
        ch = s[self.i]
        if ch.isdecimal():
            j = self.i
            while j < len(s) and s[j].isdecimal():
                j += 1
            n = int(s[self.i:j])
            self.i = j
            if n == 0:
                raise _Unsupported("address 0")
            return _Addr(line=n)
        if ch == "$":
            self.i += 1
            return _Addr(last=True)
        if second and ch == "+":
            j = self.i + 1
            while j < len(s) and s[j].isdecimal():
                j += 1
            step = int(s[self.i + 1:j])
            self.i = j
            return _Addr(step=step)
        if ch == "/" or ch == "\\":
            if ch == "\\":
                self.i += 1
            body = self._delimited()
            flags = 0
            while self.i < len(s) and s[self.i] in "IM":
                flags |= re.IGNORECASE if s[self.i] == "I" else re.MULTILINE
                self.i += 1
            return _Addr(regex=re.compile(to_python(body, self.extended, sed=True), flags))
        return None

    _last_delim = "/"

    def _delimited(self, delim: str | None = None) -> str:
        """Text up to the next unescaped ``delim``, the cursor left after it. With
        ``delim`` None the cursor is on the opening delimiter, which is read; else the
        text starts at the cursor (the replacement of ``s/a/b/`` starts right after the
        delimiter that closed the pattern, and may be empty)."""
        s = self.s
        if delim is None:
            delim = s[self.i]
            self.i += 1
        self._last_delim = delim
        out = []
        while self.i < len(s):
            ch = s[self.i]
            if ch == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                out.append(nxt if nxt == delim else ch + nxt)
                self.i += 2
                continue
            if ch == delim:
                self.i += 1
                return "".join(out)
            out.append(ch)
            self.i += 1
        raise _Unsupported("unterminated")

    def _substitute(self) -> tuple[re.Pattern[str], str, int, bool]:
        pattern = self._delimited()
        repl = self._delimited(self._last_delim)
        flags, count, glob, echo = 0, 1, False, False
        while self.i < len(self.s) and self.s[self.i] not in ";\n}":
            ch = self.s[self.i]
            if ch == "g":
                glob = True
            elif ch == "p":
                echo = True
            elif ch in "Ii":
                flags |= re.IGNORECASE
            elif ch.isdecimal():
                j = self.i
                while j < len(self.s) and self.s[j].isdecimal():
                    j += 1
                count = int(self.s[self.i:j])
                self.i = j
                continue
            elif ch in " \t":
                pass
            else:
                raise _Unsupported(f"s flag {ch}")
            self.i += 1
        regex = re.compile(to_python(pattern, self.extended, sed=True), flags)
        return regex, _replacement(repl), 0 if glob else count, echo

    def _text(self) -> list[str]:
        """``a\\`` + newline + text, ``a\\text`` or ``a text`` (GNU); ``\\`` at a line's
        end continues the text on the next line."""
        s = self.s
        if s.startswith("\\\n", self.i):
            self.i += 2
        elif s.startswith("\\", self.i):
            self.i += 1
        else:
            self._skip(" \t")
        out, cur = [], []
        while self.i < len(s):
            ch = s[self.i]
            if ch == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                if nxt in "\nn":   # an escaped line end, or GNU's \n: a new line
                    out.append("".join(cur))
                    cur = []
                else:
                    cur.append("\t" if nxt == "t" else nxt)
                self.i += 2
                continue
            if ch == "\n":
                break
            cur.append(ch)
            self.i += 1
        out.append("".join(cur))
        return out


# --------------------------------------------------------------------------- running


class _Machine:
    def __init__(self, program: list[_Cmd], quiet: bool, files: Mapping[str, str]):
        self.program = program
        self.quiet = quiet
        self.files = files
        self.steps = 0

    def run(self, lines: list[str]) -> list[str]:
        total = len(lines)
        touched = None if self.quiet else self._candidates(lines)
        if touched is not None:
            # only these lines can change: the rest are copied as they are
            result: list[str] = []
            done = 0
            for n in touched:
                result.extend(lines[done:n - 1])
                result.extend(self._line(lines[n - 1], n, total))
                done = n
            result.extend(lines[done:])
            return result
        out: list[str] = []
        for n, raw in enumerate(lines, 1):
            out.extend(self._line(raw, n, total))
            if self.stop:
                break
        return out

    def _line(self, raw: str, n: int, total: int) -> list[str]:
        """The lines one input line becomes, each with its newline, in GNU sed's order:
        ``p``, ``i`` and ``c`` write at once, the line itself at the end of the cycle
        (unless ``-n``, ``d`` or ``Q``), then the text ``a`` queued. The one exception
        to "each with its newline": the last line of a file that had none, when the
        last thing written is that line itself (sed adds the newline only before more
        output)."""
        self.space = raw[:-1] if raw.endswith("\n") else raw
        self.out: list[str] = []
        self.after: list[str] = []
        self.space_at = -1           # where the line itself was last written in ``out``
        action = self._exec(self.program, n, n == total)
        if action in (None, "q") and not self.quiet:
            self._emit_space()
        if action != "Q":
            self.out.extend(self.after)
        self.stop = action in ("q", "Q")
        produced = [ln + "\n" for ln in self.out]
        if produced and not raw.endswith("\n") and self.space_at == len(produced) - 1:
            produced[-1] = produced[-1][:-1]
        return produced

    def _emit_space(self) -> None:
        self.out.append(self.space)
        self.space_at = len(self.out) - 1

    def _candidates(self, lines: list[str]) -> list[int] | None:
        """The only lines the program can touch, found at C speed: single-address
        commands, unaddressed ``s``, or one range command; None when any line might be
        touched (``!``, blocks, unaddressed commands other than ``s``, ``q``)."""
        texts = lines   # searched without their newline (``endpos``), never copied
        found: set[int] = set()
        for cmd in self.program:
            if cmd.negate or cmd.name in "{yqQ" or (cmd.a2 is not None and len(self.program) > 1):
                return None
            a = cmd.a1
            if a is None:
                if cmd.name != "s":
                    return None
                found.update(_matching(cmd.arg[0], texts))  # type: ignore[index]
            elif cmd.a2 is not None:
                found.update(_range_lines(a, cmd.a2, texts))
            elif a.regex is not None:
                found.update(_matching(a.regex, texts))
            else:
                found.add(len(lines) if a.last else a.line or 0)
        return sorted(n for n in found if 1 <= n <= len(lines))

    def _exec(self, cmds: list[_Cmd], n: int, last: bool) -> str | None:
        """None: go on; "d": line deleted (no autoprint); "q"/"Q": quit."""
        for cmd in cmds:
            self.steps += 1
            if self.steps > _MAX_STEPS:
                raise _Unsupported("too much work")
            if not cmd.selects(n, self.space, last):
                continue
            if cmd.name == "{":
                action = self._exec(cmd.block, n, last)
            else:
                action = getattr(self, _COMMANDS[cmd.name])(cmd)
            if action is not None:
                return action
        return None

    def _s(self, cmd: _Cmd) -> None:
        regex, repl, count, echo = cmd.arg  # type: ignore[misc]
        new, k = _sub(regex, repl, self.space, count)
        if k:
            self.space = new
            if echo:
                self._emit_space()

    def _y(self, cmd: _Cmd) -> None:
        self.space = self.space.translate(cmd.arg)  # type: ignore[arg-type]

    def _p(self, cmd: _Cmd) -> None:
        self._emit_space()

    def _d(self, cmd: _Cmd) -> str:
        return "d"

    def _a(self, cmd: _Cmd) -> None:
        self.after.extend(cmd.arg)  # type: ignore[arg-type]

    def _i(self, cmd: _Cmd) -> None:
        self.out.extend(cmd.arg)  # type: ignore[arg-type]

    def _c(self, cmd: _Cmd) -> str:
        if cmd.a2 is None or not cmd.active:
            self.out.extend(cmd.arg)  # type: ignore[arg-type]
        return "d"

    def _q(self, cmd: _Cmd) -> str:
        return cmd.name

    def _r(self, cmd: _Cmd) -> None:
        """``r FILE``: the file's lines after this line's, at the end of the cycle."""
        text = self.files.get(str(cmd.arg))
        if text is None:
            raise _Unsupported("r of a file whose text is not known")
        lines = text.split("\n")
        self.after.extend(lines[:-1] if lines[-1] == "" else lines)


_COMMANDS = {"s": "_s", "y": "_y", "p": "_p", "d": "_d", "a": "_a", "i": "_i", "c": "_c",
             "q": "_q", "Q": "_q", "r": "_r"}


def _matching(rx: re.Pattern[str], texts: list[str]) -> list[int]:
    """Line numbers whose text (without its newline) the regex finds something in."""
    search = rx.search
    return [n for n, t in enumerate(texts, 1)
            if search(t, 0, len(t) - 1 if t.endswith("\n") else len(t))]


def _range_lines(a1: _Addr, a2: _Addr, texts: list[str]) -> list[int]:
    """Lines an ``a1,a2`` range selects, as the machine would walk it."""
    total = len(texts)
    if a1.last:
        starts = [total]
    elif a1.regex is not None:
        starts = _matching(a1.regex, texts)
    else:
        starts = [a1.line or 0]
    out: list[int] = []
    after = 0
    for n in starts:
        if n <= after or not 1 <= n <= total:
            continue
        if a2.step is not None:
            end = n + a2.step
        elif a2.last:
            end = total
        elif a2.regex is not None:
            hits = _matching(a2.regex, texts[n:])
            end = n + hits[0] if hits else total
        else:
            end = max(n, a2.line or 0)
        end = min(end, total)
        out.extend(range(n, end + 1))
        after = end
    return out


def _sub(regex: re.Pattern[str], repl: str, text: str, count: int) -> tuple[str, int]:
    """``s`` with ``count`` 0 = every match, N = only the N-th."""
    if count <= 1:
        return regex.subn(repl, text, count=0 if count == 0 else 1)
    matches = list(regex.finditer(text))
    if len(matches) < count:
        return text, 0
    m = matches[count - 1]
    return text[:m.start()] + m.expand(repl) + text[m.end():], 1
