"""A PowerShell command -> what it showed and changed, for the reading layer.

The forms agents use to look at code (Codex on Windows runs every ``shell_command`` in
PowerShell), read from the parsed command (``syntax``) and the text it printed
(``output``), never run:

- ``Get-Content``/``gc``/``cat``/``type`` *path* [``-TotalCount``/``-Head``/``-First`` N]
  [``-Tail``/``-Last`` N] [``-Raw``], narrowed by ``| Select-Object -First/-Skip/-Last N``:
  the file's text, its window as asked; ``| ForEach-Object { ... $i ... }`` printing a
  counter beside each line: the lines by those numbers;
- ``Select-String -Pattern p -Path f`` (or fed by ``Get-ChildItem``/``Get-Content``): the
  matching lines by their numbers (``path:N:text``, ``N: text``), their text loose (agents
  often ``.Trim()`` it);
- ``Get-ChildItem``/``gci``/``ls``/``dir``: the files it lists (file names only);
- ``Set-Content``/``Add-Content``/``Out-File`` *path*: an edit of that file, its text not
  known; other cmdlets show no code.

A single native command (``git grep -n x``, ``rg``, ``npm test``) is read by the POSIX
shell reader, as before; inside a longer PowerShell script, it is only categorized. A
word PowerShell would have to evaluate (``$(...)``, ``(tabs)``, an unknown ``$var``)
names nothing, and a statement the reader does not follow (``if``, ``foreach``...) is
reported as not parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from streameval.model import Edit, Read, Shown
from streameval.reading import categories
from streameval.reading.output.harness import clean_lines
from streameval.reading.output.numbered import numbered_read
from streameval.reading.powershell import output as ps_out
from streameval.reading.powershell.syntax import Command, Statement, Word, parse_script
from streameval.reading.shell import ShellAnalysis
from streameval.reading.shell.programs import command_category

__all__ = ["analyze_powershell", "CMDLET_ALIASES"]

#: the aliases of the cmdlets read here (Windows PowerShell's own)
CMDLET_ALIASES = {
    "gc": "get-content", "cat": "get-content", "type": "get-content",
    "gci": "get-childitem", "ls": "get-childitem", "dir": "get-childitem",
    "sls": "select-string", "select": "select-object", "%": "foreach-object",
    "foreach": "foreach-object", "?": "where-object", "where": "where-object",
    "echo": "write-output", "write": "write-output", "sc": "set-content", "ac": "add-content",
    "cd": "set-location", "sl": "set-location", "chdir": "set-location",
    "pushd": "push-location", "popd": "pop-location", "rm": "remove-item",
    "del": "remove-item", "ri": "remove-item", "rmdir": "remove-item", "rd": "remove-item",
    "erase": "remove-item", "cp": "copy-item", "copy": "copy-item", "cpi": "copy-item",
    "mv": "move-item", "move": "move-item", "mi": "move-item", "ni": "new-item",
    "md": "new-item", "mkdir": "new-item", "gi": "get-item", "sort": "sort-object",
    "ft": "format-table", "fl": "format-list", "measure": "measure-object",
}
#: parameters that take a value, per cmdlet (the rest of ``-Name`` words are switches)
_VALUED = {
    "get-content": {"path", "literalpath", "pspath", "lp", "totalcount", "head", "first",
                    "tail", "last", "encoding", "readcount", "delimiter", "filter", "include",
                    "exclude", "stream"},
    "get-childitem": {"path", "literalpath", "filter", "include", "exclude", "depth",
                      "attributes"},
    "select-string": {"pattern", "path", "literalpath", "context", "encoding", "include",
                      "exclude", "culture"},
    "select-object": {"first", "last", "skip", "skiplast", "index", "expandproperty",
                      "property", "excludeproperty"},
    "set-content": {"path", "literalpath", "value", "encoding", "filter", "include"},
    "add-content": {"path", "literalpath", "value", "encoding", "filter", "include"},
    "out-file": {"filepath", "literalpath", "encoding", "width", "inputobject"},
}
_COMMON = {"erroraction", "ea", "errorvariable", "ev", "warningaction", "wa", "outvariable",
           "ov", "outbuffer", "ob", "pipelinevariable", "pv", "informationaction", "infa"}
_POSITIONAL = {"get-content": ["path"], "get-childitem": ["path", "filter"],
               "select-string": ["pattern", "path"], "select-object": ["property"],
               "set-content": ["path", "value"], "add-content": ["path", "value"],
               "out-file": ["filepath"]}
#: cmdlets that write the file they name
_WRITERS = {"set-content": "edit", "add-content": "edit", "out-file": "edit"}
#: cmdlets that move files about, counted as their POSIX counterparts are
_AS_POSIX = {"remove-item": "rm", "copy-item": "cp", "move-item": "mv", "new-item": "mkdir",
             "rename-item": "mv"}
_FILTERS = {"select-object", "where-object", "sort-object", "format-table", "format-list",
            "out-string", "out-host", "measure-object", "foreach-object"}


@dataclass(slots=True)
class _Args:
    """A cmdlet's parameters by name, each a list of words (a list argument: several)."""

    named: dict[str, list[Word]] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Producer:
    """What one pipeline prints: a file's lines, search hits, a listing, or text no
    reader follows (``opaque``)."""

    kind: str
    paths: list[str] = field(default_factory=list)
    start: int | None = None
    end: int | None = None
    counted: bool = False      # a ForEach-Object counter prints each line's number
    narrowed: bool = False     # a filter (Select-Object -Skip, Where-Object) came first
    listing_names: str | None = None


def _name(cmd: Command) -> str | None:
    if cmd.name is None:
        return None
    low = cmd.name.lower()
    return CMDLET_ALIASES.get(low, low)


def _args(cmdlet: str, cmd: Command, env: dict[str, str]) -> _Args:
    valued = _VALUED.get(cmdlet, set()) | _COMMON
    positional = list(_POSITIONAL.get(cmdlet, []))
    out = _Args()
    args = cmd.args
    i = 0
    while i < len(args):
        arg = args[i]
        head = arg[0] if arg else None
        if head is not None and head.kind == "word" and head.static and head.text.startswith("-") \
                and len(arg) == 1 and len(head.text) > 1 and not head.text[1].isdigit():
            key, _, inline = head.text[1:].partition(":")
            key = key.lower()
            if inline:
                out.named[key] = [Word(inline)]
            elif key in valued and i + 1 < len(args):
                out.named[key] = [_value(w, env) for w in args[i + 1]]
                i += 1
            else:
                out.switches.add(key)
        elif positional:
            out.named.setdefault(positional.pop(0), [_value(w, env) for w in arg])
        i += 1
    return out


def _value(word: Word, env: dict[str, str]) -> Word:
    """A word, with a bound ``$variable`` replaced by its literal value."""
    if word.kind == "var" and word.text[1:].lower() in env:
        return Word(env[word.text[1:].lower()], kind="string")
    return word


def _int(words: list[Word] | None) -> int | None:
    if not words or not words[0].static:
        return None
    text = words[0].text.strip()
    return int(text) if text.isdigit() else None


def _paths(args: _Args, res: ShellAnalysis) -> list[str]:
    words = args.named.get("literalpath") or args.named.get("path") or \
        args.named.get("pspath") or args.named.get("lp") or []
    paths = []
    for w in words:
        if w.static and w.text.strip():
            paths.append(w.text.strip())
        else:
            res.unparsed.append(f"PowerShell path {w.text[:60]!r} needs evaluating: not read")
    return paths


# --------------------------------------------------------------------------- pipelines


def _pipeline(stmt: Statement, env: dict[str, str], res: ShellAnalysis,
              cats: list[str]) -> _Producer | None:
    """What one pipeline prints (None: nothing, e.g. assigned or piped to Out-Null)."""
    producer: _Producer | None = None
    for k, cmd in enumerate(stmt.pipeline):
        name = _name(cmd)
        if name is None:
            producer = producer or _Producer("opaque")
            continue
        if k == 0:
            producer = _source(name, cmd, env, res, cats)
        elif producer is not None:
            producer = _stage(name, cmd, env, producer, res, cats)
        if name == "out-null" or cmd.redirected:
            producer = None
    return None if stmt.target is not None else producer


def _source(name: str, cmd: Command, env: dict[str, str], res: ShellAnalysis,
            cats: list[str]) -> _Producer:
    if name == "get-content":
        args = _args(name, cmd, env)
        cats.append("read")
        head = _int(args.named.get("totalcount") or args.named.get("head")
                    or args.named.get("first"))
        tail = _int(args.named.get("tail") or args.named.get("last"))
        p = _Producer("file", _paths(args, res))
        if head is not None:
            p.start, p.end = 1, head
        elif tail is not None:
            p.start = -tail
        return p
    if name == "get-childitem":
        args = _args(name, cmd, env)
        cats.append("search")
        paths = _paths(args, res) or ["."]
        return _Producer("listing", paths,
                         listing_names=paths[0] if "name" in args.switches else None)
    if name == "select-string":
        args = _args(name, cmd, env)
        cats.append("search")
        return _Producer("hits", _paths(args, res))
    if name in _WRITERS:
        cats.append("edit")
        args = _args(name, cmd, env)
        words = args.named.get("path") or args.named.get("filepath") or \
            args.named.get("literalpath") or []
        for w in words:
            if w.static:
                res.edits.append(Edit(w.text))
        return _Producer("opaque")
    if name in _AS_POSIX:
        cats.append(command_category([_AS_POSIX[name]]))
        return _Producer("opaque")
    if "-" in name or name.startswith("$"):
        cats.append("other")   # a cmdlet or function that shows no code
        return _Producer("opaque")
    words = [cmd.name or ""] + [w.text for arg in cmd.args for w in arg[:1]]
    res.programs.append(cmd.name or "")
    cats.append(command_category(words))
    return _Producer("opaque")


def _stage(name: str, cmd: Command, env: dict[str, str], p: _Producer, res: ShellAnalysis,
           cats: list[str]) -> _Producer:
    """A later stage of a pipeline, applied to what the earlier ones print."""
    if name == "select-object" and p.kind == "file":
        return p if p.counted else _select_lines(_args(name, cmd, env), p)
    if name == "foreach-object" and p.kind == "file":
        block = " ".join(w.text for arg in cmd.args for w in arg)
        if not p.narrowed and p.start in (None, 1) and "$_" in block \
                and ("$i" in block.lower() or "readcount" in block.lower()):
            p.counted = True   # each line printed beside a count of the lines before it
        else:
            p.kind = "loose"
        return p
    if name == "select-string":
        cats.append("search")
        if p.kind == "file":
            return _Producer("hits", p.paths)
        if p.kind == "listing":
            return _Producer("hits", [])
        return p
    if name in _FILTERS:
        if p.kind == "file" and name == "where-object":
            p.kind = "loose"
        return p
    if name in _WRITERS:   # | Set-Content f, | Out-File f: written, not shown
        args = _args(name, cmd, env)
        for w in args.named.get("path") or args.named.get("filepath") or \
                args.named.get("literalpath") or []:
            if w.static:
                res.edits.append(Edit(w.text))
        cats.append("edit")
        return _Producer("opaque")
    return _Producer("opaque")


def _select_lines(args: _Args, p: _Producer) -> _Producer:
    """``| Select-Object -Skip K -First N`` (or ``-Last N``) on a file's lines: the window."""
    first, skip = _int(args.named.get("first")), _int(args.named.get("skip"))
    last = _int(args.named.get("last"))
    start = p.start if p.start is not None and p.start > 0 else 1
    if skip is not None:
        start += skip
        p.start = start
        p.narrowed = True
    if first is not None:
        p.start, p.end = start, start + first - 1 if p.end is None \
            else min(p.end, start + first - 1)
    if last is not None:
        p.start, p.end = -last, None
    return p


# --------------------------------------------------------------------------- reads


def _file_reads(p: _Producer, lines: list[str], shared: bool) -> list[Read]:
    reads: list[Read] = []
    for path in p.paths:
        if p.counted:
            numbers, texts = ps_out.counted_lines(lines)
            if numbers:
                reads.append(numbered_read(path, numbers, texts, loose=shared))
            continue
        text = list(lines)
        while text and not text[-1].strip():
            text.pop()
        if not text:
            continue   # an empty output: the file showed nothing (or was empty)
        loose = shared or len(p.paths) > 1 or p.kind == "loose"
        start, end = p.start, p.end
        if p.kind == "loose":
            start = end = None
        elif start is not None and start > 0 and end is None:
            end = start + len(text) - 1
        reads.append(Read(path, start, end,
                          shown=Shown(tuple(text), None, gaps=p.kind == "loose", loose=loose)))
    return reads


def _hit_reads(p: _Producer, lines: list[str]) -> list[Read]:
    reads: list[Read] = []
    single = p.paths[0] if len(p.paths) == 1 else None
    for path, (numbers, texts) in ps_out.hit_lines(lines).items():
        where = single if path == "InputStream" and single else path
        if where == "InputStream":
            continue
        reads.append(numbered_read(where, numbers, texts, loose=True))
    if not reads and single is not None:
        numbers, texts = ps_out.counted_lines(lines)   # "{0}: {1}" -f LineNumber, Line
        if numbers:
            reads.append(numbered_read(single, numbers, texts, loose=True))
        else:
            shown = tuple(ln for ln in lines if ln.strip())
            if shown:   # the matching lines alone: in file order, gaps unknown
                reads.append(Read(single, shown=Shown(shown, None, gaps=True, loose=True)))
    return reads


def _reads(producers: list[_Producer], lines: list[str], failed: set[str]) -> list[Read]:
    live = [p for p in producers if p.kind != "opaque"]
    shared = len(live) > 1 or len(producers) > len(live)
    reads: list[Read] = []
    for p in live:
        p.paths = [x for x in p.paths if x not in failed and x.replace("/", "\\") not in failed]
        if p.kind in ("file", "loose"):
            reads.extend(_file_reads(p, lines, shared))
        elif p.kind == "hits":
            reads.extend(_hit_reads(p, lines))
        elif p.kind == "listing":
            reads.extend(Read(x, listing=True) for x in ps_out.listed(lines, p.listing_names))
    return reads


def _statements(statements: list[Statement], env: dict[str, str], res: ShellAnalysis,
                cats: list[str], producers: list[_Producer], depth: int = 0) -> None:
    """Every statement's output in order; an ``if``'s bodies are read as statements
    (only one of them ran: what was printed says which)."""
    for stmt in statements:
        if stmt.keyword == "if" and stmt.bodies and depth < 4:
            cats.append("other")
            for body in stmt.bodies:
                _statements(parse_script(body), env, res, cats, producers, depth + 1)
            continue
        if stmt.keyword is not None:
            cats.append("other")
            producers.append(_Producer("opaque"))
            res.unparsed.append(f"PowerShell {stmt.keyword} statement not interpreted: "
                                f"{stmt.text[:80]!r}")
            continue
        if stmt.target is not None and len(stmt.pipeline) == 1 \
                and stmt.pipeline[0].name is None and stmt.pipeline[0].args \
                and len(stmt.pipeline[0].args) == 1 and stmt.pipeline[0].args[0][0].static:
            env[stmt.target] = stmt.pipeline[0].args[0][0].text   # $p = 'x.ts'
            continue
        p = _pipeline(stmt, env, res, cats)
        if p is not None:
            producers.append(p)


def _native(stmt: Statement) -> bool:
    """A pipeline of native programs only (``git grep -n x``, ``rg x | head``): no
    cmdlet, alias, expression or assignment."""
    if stmt.keyword is not None or stmt.target is not None or not stmt.pipeline:
        return False
    for cmd in stmt.pipeline:
        low = (cmd.name or "").lower()
        if not low or "-" in low or low in CMDLET_ALIASES or low.startswith("$"):
            return False
        if any(w.kind in ("block", "expr", "var") for arg in cmd.args for w in arg):
            return False
    return True


def _known_paths(failed: set[str], cwd: str | None) -> set[str]:
    """Failed paths as the command may have written them: absolute, and relative to cwd."""
    out = set(failed)
    base = (cwd or "").rstrip("\\/").lower()
    for f in failed:
        if base and f.lower().startswith(base + "\\"):
            out.add(f[len(base) + 1:])
    return out


def analyze_powershell(script: str, output: str | None, cwd: str | None,
                       posix: Callable[[str, str | None, str | None], ShellAnalysis]
                       ) -> ShellAnalysis:
    """Reads, edits and category of a PowerShell command (see the module docstring);
    ``posix`` reads a lone native command (``shell.analyze``)."""
    statements = parse_script(script)
    runnable = [s for s in statements if s.pipeline or s.keyword]
    if len(runnable) == 1 and _native(runnable[0]):
        return posix(runnable[0].text, output, cwd)   # one native command: POSIX reads it
    res = ShellAnalysis(cwd=cwd)
    env: dict[str, str] = {}
    cats: list[str] = []
    producers: list[_Producer] = []
    _statements(statements, env, res, cats, producers)
    res.category = categories.most_significant(cats)
    if output is None:
        res.reads = [Read(x, p.start, p.end, listing=p.kind != "file")
                     for p in producers if p.kind in ("file", "listing", "hits") for x in p.paths]
        return res
    lines = clean_lines(output)
    failed = _known_paths(ps_out.failed_paths(lines), cwd)
    res.reads = _reads(producers, ps_out.drop_errors(lines), failed)
    return res
