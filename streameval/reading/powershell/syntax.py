"""PowerShell command text -> statements -> pipelines -> commands with their arguments.

Only what reading needs, from the PowerShell language reference: statements end at
``;``, a newline, ``&&`` or ``||``; a pipeline's commands are split at ``|``; a command
is its name and its arguments. Single quotes are literal (``''`` is a quote), double
quotes expand ``$variables`` and ``$(...)`` (such a word is *dynamic*: its value is not
known without running it), a backtick escapes the next character, ``#`` starts a
comment, ``a,b`` is a list, ``{...}`` a script block, ``(...)``/``$(...)``/``@(...)`` an
expression (dynamic), ``@'...'@`` a here-string. A statement ``$name = <literal>``
binds a variable later words may use (``$p='x.ts'; Get-Content $p``).

Nothing is evaluated: a word whose value needs evaluation stays dynamic, and the reader
credits nothing through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Word", "Command", "Statement", "parse_script"]

_BREAK = set(" \t\r\n;|,{}()#")
_OPEN = {"{": "}", "(": ")"}


@dataclass(slots=True)
class Word:
    """One value of an argument: its text, and whether that text is its value."""

    text: str
    static: bool = True
    #: ``block`` (a ``{...}`` script block, text kept raw), ``expr`` (``(...)``, ``$(...)``),
    #: ``var`` (``$name``), ``string`` (quoted), or ``word`` (bare)
    kind: str = "word"


@dataclass(slots=True)
class Command:
    """A command of a pipeline: its name (None for an expression standing first) and its
    arguments, each a list of words (``a,b`` is one argument of two words)."""

    name: str | None
    args: list[list[Word]] = field(default_factory=list)
    #: the pipeline element's own text, for a native program's POSIX reading
    text: str = ""
    #: output redirected away (``> f``, ``| Out-Null`` is a command of its own)
    redirected: bool = False


@dataclass(slots=True)
class Statement:
    """A pipeline, or an assignment of one to ``target`` (``$x = ...``); ``keyword``
    for a flow-control statement (``if``, ``foreach``...), not interpreted."""

    pipeline: list[Command]
    target: str | None = None
    keyword: str | None = None
    text: str = ""
    #: an ``if``'s script blocks (its bodies), their braces taken off
    bodies: list[str] = field(default_factory=list)


_KEYWORDS = frozenset({"if", "elseif", "else", "foreach", "for", "while", "do", "switch",
                       "function", "filter", "param", "try", "catch", "finally", "trap",
                       "begin", "process", "end", "return", "throw", "break", "continue",
                       "exit", "class", "enum", "using"})


class _Scanner:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def balanced(self, open_: str) -> str:
        """The text from an opening bracket to its match (quotes respected)."""
        close = _OPEN[open_]
        start, depth = self.i, 0
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in ("'", '"'):
                self.quoted(c)
                continue
            if c == "`":
                self.i += 2
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return self.s[start:self.i]
            self.i += 1
        return self.s[start:]

    def quoted(self, q: str) -> tuple[str, bool]:
        """A quoted string at the cursor: (value, static)."""
        self.i += 1
        out: list[str] = []
        static = True
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == q:
                if self.peek(1) == q:      # '' or "" inside: the quote itself
                    out.append(q)
                    self.i += 2
                    continue
                self.i += 1
                return "".join(out), static
            if q == '"' and c == "`" and self.i + 1 < len(self.s):
                nxt = self.s[self.i + 1]
                out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
                self.i += 2
                continue
            if q == '"' and c == "$" and (self.peek(1).isalnum() or self.peek(1) in "_{(:"):
                static = False
            out.append(c)
            self.i += 1
        return "".join(out), False   # unterminated: not a value we know

    def here_string(self) -> Word:
        q = self.s[self.i + 1]
        end = self.s.find("\n" + q + "@", self.i + 2)
        stop = len(self.s) if end < 0 else end + 3
        body = self.s[self.i + 2:end if end >= 0 else len(self.s)].lstrip("\r\n")
        self.i = stop
        return Word(body, static=q == "'" or "$" not in body, kind="string")

    def word(self) -> Word:
        """One word at the cursor (not a separator)."""
        c = self.peek()
        if c in ("'", '"'):
            text, static = self.quoted(c)
            return Word(text, static, kind="string")
        if c == "@" and self.peek(1) in ("'", '"') and self.peek(2) in ("\n", "\r"):
            return self.here_string()
        if c == "{":
            return Word(self.balanced("{"), static=False, kind="block")
        if c == "(":
            return Word(self.balanced("("), static=False, kind="expr")
        if c in "$@" and self.peek(1) in "({":
            self.i += 1
            return Word(c + self.balanced(self.peek()), static=False, kind="expr")
        if c == "=" and self.peek(1) != "=":
            self.i += 1
            return Word("=")
        return self.bare()

    def bare(self) -> Word:
        """A bare word: up to a separator, backtick escapes and glued quotes taken in."""
        start = self.i
        out: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "`" and self.i + 1 < len(self.s):
                out.append(self.s[self.i + 1])
                self.i += 2
                continue
            if c in ("'", '"'):           # a quoted part glued to the word: a'b'
                text, static = self.quoted(c)
                out.append(text)
                if not static:
                    return Word("".join(out), static=False)
                continue
            if c == "(" and out:          # an expression glued on: a\(b)\c runs (b)
                return Word(self.s[start:self.i] + self._rest_glued(), static=False)
            if c in _BREAK or (c == "&" and self.peek(1) == "&"):
                break
            if c == "=" and out and out[0] == "$":   # $x=1: the variable ends here
                break
            out.append(c)
            self.i += 1
        text = "".join(out)
        if text.startswith("$"):
            return Word(text, static=False, kind="var")
        return Word(text)

    def _rest_glued(self) -> str:
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in " \t\r\n;|,":
            if self.s[self.i] in "({":
                self.balanced(self.s[self.i])
            else:
                self.i += 1
        return self.s[start:self.i]


def _split(text: str) -> list[tuple[list[list[Word]], str]]:
    """Statements as lists of pipeline elements (each a list of arguments), with text."""
    sc = _Scanner(text)
    statements: list[tuple[list[list[Word]], str]] = []
    elements: list[list[list[Word]]] = [[]]
    stmt_start = 0

    def end_statement(at: int) -> None:
        nonlocal elements, stmt_start
        if any(elements):
            statements.append(([_flat(e) for e in elements], text[stmt_start:at]))
        elements = [[]]
        stmt_start = sc.i

    while sc.i < len(sc.s):
        c = sc.peek()
        if c in " \t":
            sc.i += 1
        elif c == "`" and sc.peek(1) in ("\n", "\r"):   # a line continued
            sc.i += 2 if sc.peek(1) == "\n" else 3
        elif c == "#":
            while sc.i < len(sc.s) and sc.peek() != "\n":
                sc.i += 1
        elif c in ";\r\n" or (c in "&|" and sc.peek(1) == c):
            at = sc.i
            sc.i += 2 if c in "&|" else 1
            end_statement(at)
        elif c == "|":
            sc.i += 1
            elements.append([])
        elif c == ",":
            sc.i += 1
            if elements[-1]:
                elements[-1][-1].append(Word(",", kind="comma"))
        else:
            before = sc.i
            w = sc.word()
            if sc.i == before:   # a stray closing bracket: nothing to take, step over it
                sc.i += 1
                continue
            args = elements[-1]
            if args and args[-1] and args[-1][-1].kind == "comma":
                args[-1][-1] = w            # a,b: one argument of two words
            else:
                args.append([w])
    end_statement(len(text))
    return statements


def _flat(arguments: list[list[Word]]) -> list[list[Word]]:
    return [[w for w in arg if w.kind != "comma"] for arg in arguments]


def _command(args: list[list[Word]]) -> Command:
    first = args[0][0] if args and args[0] else None
    if first is None:
        return Command(None)
    name = first.text if first.static and first.kind == "word" and len(args[0]) == 1 else None
    rest = args[1:]
    if name == "&" and rest:                  # & "tool.exe" args: the call operator
        head = rest[0][0] if rest[0] else None
        name = head.text if head is not None and head.static else None
        rest = rest[1:]
    redirected = False
    kept: list[list[Word]] = []
    skip = False
    for arg in rest:
        word = arg[0].text if arg else ""
        if skip:
            skip = False
            continue
        if arg and arg[0].kind == "word" and arg[0].static and _is_redirect(word):
            redirected = redirected or not word.startswith(("2>", "3>", "4>", "5>", "6>"))
            skip = word in (">", ">>", "1>", "1>>", "*>", "*>>", "2>", "2>>")
            continue
        kept.append(arg)
    cmd = Command(name, kept, redirected=redirected)
    if name is None:
        cmd.args = args
    return cmd


def _is_redirect(word: str) -> bool:
    return word.lstrip("123456*").startswith(">") and word not in ("-gt", "-ge")


def parse_script(text: str) -> list[Statement]:
    """The statements of a PowerShell script (see the module docstring)."""
    out: list[Statement] = []
    for elements, stmt_text in _split(text):
        first = elements[0][0][0] if elements and elements[0] and elements[0][0] else None
        if first is not None and first.kind == "word" and first.text.lower() in _KEYWORDS:
            words = [w for arg in elements[0] for w in arg]
            bodies = [w.text[1:-1] for w in words if w.kind == "block"]
            out.append(Statement([], keyword=first.text.lower(), text=stmt_text.strip(),
                                 bodies=bodies if len(elements) == 1 else []))
            continue
        target = None
        if first is not None and first.kind == "var" and len(elements[0]) >= 2 \
                and elements[0][1] and elements[0][1][0].text == "=":
            target = first.text[1:].lower()
            elements = [elements[0][2:], *elements[1:]]
        pipeline = [_command(e) for e in elements if e]
        pieces = stmt_text.split("|")
        for cmd, piece in zip(pipeline, pieces if len(pieces) == len(pipeline) else []):
            cmd.text = piece.strip()
        out.append(Statement(pipeline, target=target, text=stmt_text.strip()))
    return out
