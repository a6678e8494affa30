"""Tree-sitter definition index per file (docs/metrics.md §3, "Symbols").

This module is the only one that talks to tree-sitter. A symbol is one definition node
``(file, kind, start_byte, end_byte)``; the symbol granularity compares the definitions
that overlap gold byte spans with those that overlap predicted ones, so the hot query is
"which definitions share a byte with these intervals", answered here in O(log n + hits)
per interval because a live run asks it on every step.

``tree_sitter`` and the grammar wheels are imported lazily: ``import streameval`` must
stay cheap, and a run over a repository with no supported language never loads them.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from streameval.intervals import IntervalSet

__all__ = ["GRAMMAR_SETS", "LANGUAGES", "Definition", "FileSymbols", "SymbolIndex",
           "check_grammars", "default_grammars", "known_kinds", "language_for",
           "parse_definitions"]

# docs/metrics.md §3: extension -> language, exactly as the rule book lists it.
_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".js": "javascript", ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".cc": "cpp", ".hpp": "cpp",
    ".cs": "c_sharp",
    ".php": "php",
    ".rb": "ruby",
    ".swift": "swift",
    ".kt": "kotlin",
    ".scala": "scala",
}

# docs/metrics.md §3: language -> (grammar module, its language function, definition kinds).
# Kinds a grammar does not (or no longer) define are skipped at load time; see known_kinds().
LANGUAGES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "python": ("tree_sitter_python", "language",
               ("function_definition", "class_definition", "async_function_definition")),
    "javascript": ("tree_sitter_javascript", "language",
                   ("function_declaration", "class_declaration", "method_definition",
                    "arrow_function")),
    "typescript": ("tree_sitter_typescript", "language_typescript",
                   ("function_declaration", "class_declaration", "method_definition",
                    "interface_declaration")),
    "tsx": ("tree_sitter_typescript", "language_tsx",
            ("function_declaration", "class_declaration", "method_definition",
             "interface_declaration")),
    "java": ("tree_sitter_java", "language",
             ("method_declaration", "class_declaration", "interface_declaration",
              "constructor_declaration")),
    "go": ("tree_sitter_go", "language",
           ("function_declaration", "method_declaration", "type_declaration")),
    "rust": ("tree_sitter_rust", "language",
             ("function_item", "impl_item", "struct_item", "trait_item")),
    "c": ("tree_sitter_c", "language", ("function_definition", "struct_specifier")),
    "cpp": ("tree_sitter_cpp", "language",
            ("function_definition", "class_specifier", "struct_specifier")),
    "c_sharp": ("tree_sitter_c_sharp", "language",
                ("method_declaration", "class_declaration", "interface_declaration")),
    "php": ("tree_sitter_php", "language_php",
            ("function_definition", "method_declaration", "class_declaration")),
    "ruby": ("tree_sitter_ruby", "language", ("method", "class", "module")),
    "swift": ("tree_sitter_swift", "language",
              ("function_declaration", "class_declaration", "protocol_declaration")),
    "kotlin": ("tree_sitter_kotlin", "language", ("function_declaration", "class_declaration")),
    "scala": ("tree_sitter_scala", "language",
              ("function_definition", "class_definition", "trait_definition")),
}


@lru_cache(maxsize=4096)   # asked for every file of every step
def language_for(path: str) -> str | None:
    """The symbol language of ``path`` by its extension, or None (no symbols)."""
    base = path.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    if dot <= 0:  # no extension, or a dot file such as ".py" itself
        return None
    return _EXTENSIONS.get(base[dot:].lower())   # ``X.PY`` too, as the evaluator


class Definition(NamedTuple):
    """A symbol: one definition node. Identity is (file, kind, start, end).

    A named tuple, not a dataclass: a step's definitions are hashed into the run's set
    on every step, and a tuple hashes in C (a frozen dataclass's ``__hash__`` is Python
    code); ordered field by field, as before."""

    file: str
    kind: str
    start_byte: int
    end_byte: int  # inclusive last byte (tree-sitter end_byte - 1)
    name: str = ""


class FileSymbols:
    """The definitions of one file, indexed for overlap and name queries.

    Definitions from one syntax tree are nested or disjoint. Sorted by (start, -end), the
    definitions overlapping ``[a, b]`` are those starting inside it (a bisect) plus those
    containing ``a``, which are all ancestors of the last definition starting before
    ``a``. So a query costs O(log n + depth + hits), never a scan of the file.
    """

    __slots__ = ("file", "definitions", "_starts", "_ends", "_parent", "_by_name")

    def __init__(self, file: str, definitions: Iterable[Definition] = ()):
        self.file = file
        defs = sorted(definitions, key=lambda d: (d.start_byte, -d.end_byte, d.kind))
        self.definitions: tuple[Definition, ...] = tuple(defs)
        self._starts = [d.start_byte for d in defs]
        self._ends = [d.end_byte for d in defs]
        self._parent = _parents(self._ends)
        by_name: dict[str, list[Definition]] = {}
        for d in defs:
            if d.name:
                by_name.setdefault(d.name, []).append(d)
        self._by_name = by_name

    def __len__(self) -> int:
        return len(self.definitions)

    def __repr__(self) -> str:
        return f"FileSymbols({self.file!r}, {len(self.definitions)} definitions)"

    def overlapping(self, intervals: Iterable[tuple[int, int]]) -> list[Definition]:
        """Definitions sharing at least one byte with any inclusive interval.

        Ordered by start byte (outer before inner), each at most once. An interval whose
        start is past its end holds no byte and matches nothing.
        """
        starts, ends, parent = self._starts, self._ends, self._parent
        if not starts:
            return []
        if type(intervals) is IntervalSet and len(intervals._starts) == 1:
            # one window (``IntervalSet.single``, inline: every file of every step)
            return self.overlapping_window(intervals._starts[0], intervals._ends[0])
        found: set[int] = set()
        # definitions whose ancestors were all looked at for an interval starting at or
        # before this one: those of them that reach this interval were found then (an
        # ancestor that reaches a later start reached the earlier one), so the climb
        # stops there; a step's many grep hits in one class climb it once
        walked: set[int] = set()
        last = None
        for a, b in intervals:
            if a > b:
                continue
            if last is not None and a < last:
                walked = set()     # out of order: what was walked says nothing here
            last = a
            lo = bisect_left(starts, a)
            hi = bisect_right(starts, b, lo)
            if hi > lo:
                found.update(range(lo, hi))
            k = lo - 1  # last definition starting before a; its ancestors may contain a
            while k >= 0 and k not in walked:
                walked.add(k)
                if ends[k] >= a:
                    found.add(k)
                k = parent[k]
        return [self.definitions[i] for i in sorted(found)]

    def overlapping_window(self, a: int, b: int) -> list[Definition]:
        """``overlapping`` of the one interval ``[a, b]``, ``a <= b`` (a step that read
        one window of the file): the definitions starting in it, after those that
        contain its start (its ancestors, outer first)."""
        starts, ends, parent, defs = self._starts, self._ends, self._parent, self.definitions
        lo = bisect_left(starts, a)
        out: list[Definition] = []
        k = lo - 1   # last definition starting before a; its ancestors may contain a
        while k >= 0:
            if ends[k] >= a:
                out.append(defs[k])
            k = parent[k]
        out.reverse()   # (innermost were found first)
        out += defs[lo:bisect_right(starts, b, lo)]
        return out

    def named(self, name: str) -> list[Definition]:
        """Every definition called ``name`` (docs/metrics.md §3): the whole name first,
        then, for a dotted ``a.b`` that names nothing whole, its last part ``b``."""
        name = name.strip()
        if not name:
            return []
        found = self._by_name.get(name)
        if not found and "." in name:
            found = self._by_name.get(name.rsplit(".", 1)[-1])
        return list(found or ())


def _parents(ends: list[int]) -> list[int]:
    """Index of the innermost enclosing definition of each one (-1 at top level).

    ``ends`` is in (start, -end) order, so every earlier definition starts no later;
    one still open (ending at or after this end) encloses it.
    """
    parent: list[int] = []
    stack: list[int] = []
    for i, end in enumerate(ends):
        while stack and ends[stack[-1]] < end:
            stack.pop()
        parent.append(stack[-1] if stack else -1)
        stack.append(i)
    return parent


# --------------------------------------------------------------------------- parsing


#: the grammar sets (docs/metrics.md §3): the public evaluator's, the grammar binaries
#: of tree-sitter-languages 1.10.2, or today's official per-language wheels
GRAMMAR_SETS = ("contextbench", "official")
_BUNDLE = ("tree_sitter_languages", "languages.so")


def _bundle_path() -> str | None:
    """Where tree-sitter-languages keeps its grammar binaries; found without importing
    the package, whose own module is built for an older tree-sitter runtime."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec(_BUNDLE[0])
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, _BUNDLE[1])
        if os.path.isfile(path):
            return path
    return None


def default_grammars() -> str:
    """``contextbench`` where its grammars are installed (the numbers then equal the
    evaluator's), else ``official``."""
    return "contextbench" if _bundle_path() else "official"


def check_grammars(choice: str | None) -> str:
    """The grammar set to use; ValueError (with the fix) when it cannot be loaded."""
    if choice is None:
        return default_grammars()
    if choice not in GRAMMAR_SETS:
        raise ValueError(f"unknown grammar set {choice!r}: one of {', '.join(GRAMMAR_SETS)}")
    if choice == "contextbench" and _bundle_path() is None:
        raise ValueError("the contextbench grammars need tree-sitter-languages 1.10.2: "
                         "pip install 'streameval[contextbench]' (wheels exist for Python <= 3.11)")
    return choice


_BUNDLE_LIB: list[Any] = []


def _bundled_language(name: str) -> Any | None:
    """The evaluator's grammar for ``name`` as a Language of the current runtime: the
    bundle exports ``tree_sitter_<name>`` returning the grammar's table, handed over
    as the capsule tree-sitter expects. None when the bundle lacks the language."""
    import ctypes

    import tree_sitter

    if not _BUNDLE_LIB:
        path = _bundle_path()
        if path is None:
            return None
        _BUNDLE_LIB.append(ctypes.CDLL(path))
    func = getattr(_BUNDLE_LIB[0], f"tree_sitter_{name}", None)
    if func is None:   # e.g. swift: not in 1.10.2 (the evaluator has no parser for it)
        return None
    func.restype = ctypes.c_void_p
    capsule = ctypes.pythonapi.PyCapsule_New
    capsule.restype = ctypes.py_object
    capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return tree_sitter.Language(capsule(func(), b"tree_sitter.Language", None))


class _Grammar:
    """One language: its tree-sitter Language, kinds, and a reusable parser."""

    def __init__(self, name: str, grammars: str = "official"):
        import importlib

        import tree_sitter

        module, func, kinds = LANGUAGES[name]
        self.name = name
        bundled = _bundled_language(name) if grammars == "contextbench" else None
        #: where this language's grammar came from (a language the bundle lacks is
        #: parsed with the official grammar)
        self.source = "contextbench" if bundled is not None else "official"
        self.language = bundled or tree_sitter.Language(
            getattr(importlib.import_module(module), func)())
        # Named kinds only (Ruby's keyword token "class" is not a definition), never
        # comments, and only those this grammar version really has.
        self.kinds = frozenset(
            k for k in kinds
            if "comment" not in k and self.language.id_for_node_kind(k, True) is not None)
        self.parser = tree_sitter.Parser(self.language)
        self.lock = threading.Lock()  # a Parser is not safe to share between threads

    def parse(self, data: bytes) -> Any:
        with self.lock:
            return self.parser.parse(data)


_GRAMMARS: dict[tuple[str, str], _Grammar] = {}
_GRAMMARS_LOCK = threading.Lock()


def _grammar(name: str, grammars: str = "official") -> _Grammar:
    with _GRAMMARS_LOCK:
        g = _GRAMMARS.get((grammars, name))
        if g is None:
            g = _GRAMMARS[grammars, name] = _Grammar(name, grammars)
        return g


def known_kinds(language: str, grammars: str = "official") -> tuple[frozenset[str], frozenset[str]]:
    """(kinds the rule book lists that this grammar has, listed kinds it lacks).

    Grammar wheels rename node types between releases; this makes the drift visible.
    """
    g = _grammar(language, grammars)
    listed = frozenset(LANGUAGES[language][2])
    return g.kinds, listed - g.kinds


def parse_definitions(path: str, data: bytes, language: str | None = None,
                      grammars: str = "official") -> FileSymbols:
    """Parse ``data`` as the file ``path`` and collect its definitions."""
    language = language or language_for(path)
    if language is None or not data:
        return FileSymbols(path)
    g = _grammar(language, grammars)
    tree = g.parse(data)
    if tree is None:  # tree-sitter gives no tree only when parsing was cancelled
        return FileSymbols(path)
    defs: list[Definition] = []
    for node in _walk(tree):
        if not (node.is_named and node.type in g.kinds) or node.end_byte <= node.start_byte:
            continue
        defs.append(Definition(path, node.type, node.start_byte, node.end_byte - 1,
                               _name(node, data)))
    return FileSymbols(path, defs)


def _walk(tree: Any) -> Iterable[Any]:
    """Every node in document order (a cursor walk: no recursion limit on deep trees)."""
    cursor = tree.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte:node.end_byte].decode("utf-8", errors="replace")


#: identifier node types a definition may be named by, and their preference (lower wins;
#: the ones not listed here rank last); docs/metrics.md §3 "Names"
_ID_RANK = {"identifier": 0, "field_identifier": 1, "property_identifier": 2,
            "method_identifier": 3}
_ID_TYPES = frozenset({*_ID_RANK, "type_identifier", "scoped_identifier",
                       "namespace_identifier", "constant_identifier"})
_LAST_RANK = 100


def _name(node: Any, data: bytes) -> str:
    """The one name a definition is known by, as the public evaluator gives it.

    The text of its ``name`` field when it has one; else, among the named identifier
    nodes under its ``declarator`` (or under the definition itself), the first of the
    best kind in document order: a plain ``identifier`` (which ends the search), then
    field, property and method identifiers, then the rest. So a Rust ``impl`` block is
    known by the first plain identifier inside it, usually its first method's name.
    """
    field = node.child_by_field_name("name")
    if field is not None:
        text = _text(field, data).strip()
        if text:
            return text
    root = node.child_by_field_name("declarator") or node
    best, best_rank = "", _LAST_RANK + 1
    stack = [root]
    while stack:
        cur = stack.pop()
        stack.extend(reversed(cur.children))
        if not cur.is_named or cur.type not in _ID_TYPES:
            continue
        text = _text(cur, data).strip()
        rank = _ID_RANK.get(cur.type, _LAST_RANK)
        if text and rank < best_rank:
            best, best_rank = text, rank
            if rank == 0:
                break
    return best


# --------------------------------------------------------------------------- the index


class SymbolIndex:
    """Parses each (repo, commit, path) once; bounded LRU, safe to share between threads.

    ``hits`` and ``misses`` count cache lookups of files with a symbol language, for the
    exporter's cache metrics.
    """

    def __init__(self, max_files: int = 2048, grammars: str = "official"):
        if max_files < 1:
            raise ValueError(f"max_files must be at least 1, got {max_files}")
        if grammars not in GRAMMAR_SETS:
            raise ValueError(f"unknown grammar set {grammars!r}")
        self.max_files = max_files
        #: which grammars parse (every record names them: docs/metrics.md §3)
        self.grammars = grammars
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[tuple[Any, str], FileSymbols] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def for_file(self, view: Any, path: str) -> FileSymbols:
        """Definitions of ``path`` in ``view`` (empty for unknown extensions or files)."""
        language = language_for(path)
        if language is None:
            return FileSymbols(path)
        key = (view.key, path)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return cached
            self.misses += 1
        data = view.read(path)  # outside the lock: git I/O must not serialize readers
        symbols = (parse_definitions(path, data, language, self.grammars) if data
                   else FileSymbols(path))
        with self._lock:
            self._cache[key] = symbols
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_files:
                self._cache.popitem(last=False)
        return symbols
