"""symbols.py: definitions per language (docs/metrics.md §3 "Symbols"), overlap queries, the index."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streameval.sources.symbols as symbols
from streameval.intervals import IntervalSet
from streameval.sources.symbols import (
    LANGUAGES,
    Definition,
    FileSymbols,
    SymbolIndex,
    known_kinds,
    language_for,
    parse_definitions,
)


class DictView:
    """A RepoView over a dict: ``.key`` and ``.read(path)``; counts reads."""

    def __init__(self, files: dict[str, bytes], key: tuple[str, str] = ("dict", "c1")):
        self.files = files
        self.key = key
        self.reads: list[str] = []
        self._lock = threading.Lock()

    def read(self, path: str) -> bytes | None:
        with self._lock:
            self.reads.append(path)
        return self.files.get(path)


# ----------------------------------------------------------------- extension table


@pytest.mark.parametrize(("path", "language"), [
    ("a.py", "python"), ("a.js", "javascript"), ("a.jsx", "javascript"),
    ("a.ts", "typescript"), ("a.tsx", "tsx"), ("A.java", "java"), ("a.go", "go"),
    ("a.rs", "rust"), ("a.c", "c"), ("a.h", "c"), ("a.cpp", "cpp"), ("a.cc", "cpp"),
    ("a.hpp", "cpp"), ("a.cs", "c_sharp"), ("a.php", "php"), ("a.rb", "ruby"),
    ("a.swift", "swift"), ("a.kt", "kotlin"), ("a.scala", "scala"),
    ("dir.v2/x.py", "python"),
])
def test_language_for_the_metrics_table(path: str, language: str) -> None:
    assert language_for(path) == language


@pytest.mark.parametrize("path", [
    "README.md", "Makefile", "a.pyi", "a.mjs", "a.kts", "a.cxx", "a.txt", "dir.py/file",
    ".py", "a.py.orig", "",
])
def test_language_for_other_extensions_is_none(path: str) -> None:
    assert language_for(path) is None


# docs/metrics.md lists node types by name; grammar releases rename them. This pins which
# listed types each installed grammar really has, so a wheel upgrade shows up here.
MISSING_KINDS = {"python": {"async_function_definition"}}


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_listed_kinds_known_to_each_grammar(language: str) -> None:
    known, missing = known_kinds(language)
    print(f"{language}: known={sorted(known)} missing={sorted(missing)}")
    assert missing == MISSING_KINDS.get(language, set())
    assert known | missing == set(LANGUAGES[language][2])


def test_import_does_not_load_tree_sitter() -> None:
    code = ("import sys, streameval, streameval.sources.symbols, streameval.scoring.editloc;"
            "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.strip()
    assert out == "[]"


# ----------------------------------------------------------------- one snippet per language
# Each expectation is (kind, name, first text, last text): the definition starts where
# ``first`` starts and ends on the last byte of the first ``last`` after that.

SNIPPETS: dict[str, tuple[str, list[tuple[str, str, str, str]]]] = {
    "pkg/a.py": ('''import os

@decorator
class Outer:
    """doc"""
    def method(self, x):
        def inner():
            return x
        return inner

async def fetch():
    pass
''', [
        ("class_definition", "Outer", "class Outer", "return inner"),
        ("function_definition", "method", "def method", "return inner"),
        ("function_definition", "inner", "def inner", "return x"),
        ("function_definition", "fetch", "async def fetch", "pass"),
    ]),
    "web/a.js": ('''class Greeter {
  greet(name) {
    return `hi ${name}`;
  }
}
function helper(a) {
  const twice = (v) => v * 2;
  return twice(a);
}
const top = () => 1;
items.map((x) => x + 1);
''', [
        ("class_declaration", "Greeter", "class Greeter", "}\n}"),
        ("method_definition", "greet", "greet(name)", "`;\n  }"),
        ("function_declaration", "helper", "function helper", "twice(a);\n}"),
        # the evaluator names an arrow function by its first identifier: a parameter
        ("arrow_function", "v", "(v) =>", "v * 2"),
        ("arrow_function", "", "() => 1", "() => 1"),
        ("arrow_function", "x", "(x) =>", "x + 1"),
    ]),
    "web/b.jsx": ('''class Panel extends Component {
  render() { return <div />; }
}
''', [
        ("class_declaration", "Panel", "class Panel", "}\n}"),
        ("method_definition", "render", "render()", "<div />; }"),
    ]),
    "src/a.ts": ('''interface Shape {
  area(): number;
}
class Square implements Shape {
  constructor(private s: number) {}
  area(): number { return this.s * this.s; }
}
function make(n: number): Square {
  return new Square(n);
}
''', [
        ("interface_declaration", "Shape", "interface Shape", "number;\n}"),
        ("class_declaration", "Square", "class Square", "this.s; }\n}"),
        ("method_definition", "constructor", "constructor(", "{}"),
        ("method_definition", "area", "area(): number {", "this.s; }"),
        ("function_declaration", "make", "function make", "(n);\n}"),
    ]),
    "src/a.tsx": ('''interface Props { label: string }
class Button extends React.Component<Props> {
  render() { return <button>{this.props.label}</button>; }
}
function App() { return <Button label="ok" />; }
''', [
        ("interface_declaration", "Props", "interface Props", "string }"),
        ("class_declaration", "Button", "class Button", "</button>; }\n}"),
        ("method_definition", "render", "render()", "</button>; }"),
        ("function_declaration", "App", "function App", '"ok" />; }'),
    ]),
    "src/Account.java": ('''public class Account {
    private int balance;
    public Account(int b) { balance = b; }
    public int deposit(int n) { balance += n; return balance; }
    interface Listener { void changed(int v); }
}
''', [
        ("class_declaration", "Account", "public class Account", "(int v); }\n}"),
        ("constructor_declaration", "Account", "public Account(", "balance = b; }"),
        ("method_declaration", "deposit", "public int deposit", "return balance; }"),
        ("interface_declaration", "Listener", "interface Listener", "(int v); }"),
        ("method_declaration", "changed", "void changed", "(int v);"),
    ]),
    "cmd/a.go": ('''package main

type Point struct {
\tX, Y int
}

type (
\tA int
\tB = string
)

func (p Point) Norm() int {
\treturn p.X*p.X + p.Y*p.Y
}

func main() {
\tf := func() int { return 1 }
\t_ = f
}
''', [
        # no name field: the best identifier inside, a field identifier (X) before a
        # type identifier (Point)
        ("type_declaration", "X", "type Point", "int\n}"),
        ("type_declaration", "A", "type (", "string\n)"),
        ("method_declaration", "Norm", "func (p Point)", "p.Y*p.Y\n}"),
        ("function_declaration", "main", "func main", "_ = f\n}"),
    ]),
    "src/a.rs": ('''struct Counter {
    n: u32,
}
trait Step {
    fn step(&mut self);
}
impl Step for Counter {
    fn step(&mut self) {
        self.n += 1;
    }
}
fn main() {
    fn local() {}
}
''', [
        ("struct_item", "Counter", "struct Counter", "u32,\n}"),
        ("trait_item", "Step", "trait Step", "self);\n}"),
        # an impl block is known by the first plain identifier in it: its method
        ("impl_item", "step", "impl Step", "+= 1;\n    }\n}"),
        ("function_item", "step", "fn step(&mut self) {", "+= 1;\n    }"),
        ("function_item", "main", "fn main", "{}\n}"),
        ("function_item", "local", "fn local", "{}"),
    ]),
    "lib/a.c": ('''struct node {
    int value;
    struct node *next;
};

static int *first(struct node *n) {
    return &n->value;
}

int main(void) { return 0; }
''', [
        # Every struct_specifier node counts, type references included (docs/metrics.md §3).
        ("struct_specifier", "node", "struct node {", "*next;\n}"),
        ("struct_specifier", "node", "struct node *next", "struct node"),
        ("function_definition", "first", "static int *first", "->value;\n}"),
        ("struct_specifier", "node", "struct node *n)", "struct node"),
        ("function_definition", "main", "int main", "return 0; }"),
    ]),
    "lib/b.h": ('''struct point { int x; };
int norm(struct point p);
''', [
        ("struct_specifier", "point", "struct point {", "int x; }"),
        ("struct_specifier", "point", "struct point p", "struct point"),
    ]),
    "src/a.cpp": ('''namespace geo {
class Box {
public:
    int area() const { return w * h; }
    struct Dim { int w; };
    int w, h;
};
}
int geo_area(const geo::Box &b) { return b.area(); }
int Box2::size() { return 0; }
''', [
        ("class_specifier", "Box", "class Box", "int w, h;\n}"),
        ("function_definition", "area", "int area()", "w * h; }"),
        ("struct_specifier", "Dim", "struct Dim", "int w; }"),
        ("function_definition", "geo_area", "int geo_area", "b.area(); }"),
        ("function_definition", "size", "int Box2::size", "return 0; }"),
    ]),
    "src/b.cc": ('''struct S { void f() {} };
''', [
        ("struct_specifier", "S", "struct S", "{} }"),
        ("function_definition", "f", "void f", "{}"),
    ]),
    "src/c.hpp": ('''class T { int g() { return 1; } };
''', [
        ("class_specifier", "T", "class T", "1; } }"),
        ("function_definition", "g", "int g", "1; }"),
    ]),
    "App/a.cs": ('''namespace App {
    interface IRun { void Run(); }
    class Runner : IRun {
        public void Run() { Helper(); }
        private static int Helper() { return 1; }
    }
}
''', [
        ("interface_declaration", "IRun", "interface IRun", "Run(); }"),
        ("method_declaration", "Run", "void Run();", "void Run();"),
        ("class_declaration", "Runner", "class Runner", "return 1; }\n    }"),
        ("method_declaration", "Run", "public void Run()", "Helper(); }"),
        ("method_declaration", "Helper", "private static int Helper", "return 1; }"),
    ]),
    "web/a.php": ('''<?php
function top_level($x) {
    return $x;
}
class Cart {
    public function add($item) {
        $this->items[] = $item;
    }
}
''', [
        ("function_definition", "top_level", "function top_level", "$x;\n}"),
        ("class_declaration", "Cart", "class Cart", "$item;\n    }\n}"),
        ("method_declaration", "add", "public function add", "$item;\n    }"),
    ]),
    "lib/a.rb": ('''module Shop
  class Cart
    def add(item)
      @items << item
    end
  end
end
class Shop::Other; end
''', [
        ("module", "Shop", "module Shop", "end\n  end\nend"),
        ("class", "Cart", "class Cart", "end\n  end"),
        ("method", "add", "def add", "item\n    end"),
        ("class", "Shop::Other", "class Shop::Other", "; end"),   # the name field's text
    ]),
    "Sources/a.swift": ('''protocol Shape {
    func area() -> Double
}
class Circle: Shape {
    var r: Double = 1
    func area() -> Double { return 3.14 * r * r }
}
struct P { func f() {} }
func main() {}
''', [
        ("protocol_declaration", "Shape", "protocol Shape", "Double\n}"),
        ("class_declaration", "Circle", "class Circle", "r * r }\n}"),
        ("function_declaration", "area", "func area() -> Double {", "r * r }"),
        ("class_declaration", "P", "struct P", "{} }"),
        ("function_declaration", "f", "func f", "{}"),
        ("function_declaration", "main", "func main", "{}"),
    ]),
    "src/a.kt": ('''class Stack<T> {
    private val items = mutableListOf<T>()
    fun push(x: T) { items.add(x) }
}
fun main() {
    val s = Stack<Int>()
}
''', [
        ("class_declaration", "Stack", "class Stack", "add(x) }\n}"),
        ("function_declaration", "push", "fun push", "add(x) }"),
        ("function_declaration", "main", "fun main", "<Int>()\n}"),
    ]),
    "src/a.scala": ('''trait Animal {
  def speak(): String
}
class Dog extends Animal {
  def speak(): String = "woof"
}
object Main {
  def main(args: Array[String]): Unit = println(new Dog().speak())
}
''', [
        ("trait_definition", "Animal", "trait Animal", "String\n}"),
        ("class_definition", "Dog", "class Dog", '"woof"\n}'),
        ("function_definition", "speak", "def speak(): String =", '"woof"'),
        ("function_definition", "main", "def main", "speak())"),
    ]),
}


def expected_definitions(path: str, source: str,
                         spec: list[tuple[str, str, str, str]]) -> list[Definition]:
    data = source.encode()
    out = []
    for kind, name, first, last in spec:
        start = data.index(first.encode())
        end = data.index(last.encode(), start) + len(last.encode()) - 1
        out.append(Definition(path, kind, start, end, name))
    return out


def test_snippets_cover_every_extension() -> None:
    assert {language_for(p) for p in SNIPPETS} == set(LANGUAGES)
    assert {"." + p.rsplit(".", 1)[1] for p in SNIPPETS} == set(symbols._EXTENSIONS)


@pytest.mark.parametrize("path", sorted(SNIPPETS))
def test_definitions_per_language(path: str) -> None:
    source, spec = SNIPPETS[path]
    got = parse_definitions(path, source.encode())
    assert list(got.definitions) == expected_definitions(path, source, spec)


def test_nested_definitions_all_count() -> None:
    source, _ = SNIPPETS["pkg/a.py"]
    fs = parse_definitions("pkg/a.py", source.encode())
    inner = source.index("return x")
    # The innermost function, its method and its class all hold that byte.
    assert [d.name for d in fs.overlapping([(inner, inner)])] == ["Outer", "method", "inner"]


def test_names_are_the_evaluators_one_name_per_definition() -> None:
    """docs/metrics.md §3 "Names": one name per definition, as the public evaluator's
    extractor gives it (measured with it on every snippet here and on the 10,420 files
    of scripts/grammar_parity.py): a Go ``type (A ...; B ...)`` group is ``A`` only."""
    source, _ = SNIPPETS["cmd/a.go"]
    fs = parse_definitions("cmd/a.go", source.encode())
    assert [d.start_byte for d in fs.named("A")] == [source.index("type (")]
    assert fs.named("B") == []
    assert fs.named("Point") == []


def test_named_takes_the_last_part_of_a_dotted_name() -> None:
    source, _ = SNIPPETS["App/a.cs"]
    fs = parse_definitions("App/a.cs", source.encode())
    runs = fs.named("Run")
    assert [d.start_byte for d in runs] == [source.index("void Run();"),
                                            source.index("public void Run()")]
    assert fs.named("Runner.Run") == runs
    assert fs.named("App.Runner.Helper") == fs.named("Helper")
    assert len(fs.named("Helper")) == 1
    assert fs.named("Missing") == []
    assert fs.named("") == []  # anonymous definitions are not "called" the empty name


def test_named_tries_the_whole_name_then_the_part_after_the_last_dot() -> None:
    source, _ = SNIPPETS["lib/a.rb"]
    fs = parse_definitions("lib/a.rb", source.encode())
    assert [d.start_byte for d in fs.named("Shop::Other")] == [source.index("class Shop::Other")]
    assert fs.named("Shop.Cart") == fs.named("Cart") != []
    assert fs.named("Shop::Cart") == []          # "::" is not split, as the evaluator
    assert fs.named(" Cart ") == fs.named("Cart")
    assert [d.kind for d in fs.named("Shop")] == ["module"]


def test_cpp_functions_returning_references_are_named_by_their_identifier() -> None:
    """docs/metrics.md §3: a ``symbols`` name maps to the definitions of that name. C++
    ``int& ref()`` has a reference_declarator, whose inner declarator is not a field:
    the name is ``ref`` (it was the text ``& ref()``, so ``ref`` named nothing)."""
    source = "int& ref() { static int x; return x; }\nFoo&& mv(Foo f) { return f; }\n"
    fs = parse_definitions("a.cpp", source.encode())
    assert [d.name for d in fs.definitions] == ["ref", "mv"]
    assert [d.start_byte for d in fs.named("ref")] == [0]
    assert [d.start_byte for d in fs.named("mv")] == [source.index("Foo&&")]


def test_non_utf8_source_keeps_byte_offsets() -> None:
    data = b"def caf\xe9():\n    return '\xff\xfe'\n\nclass K:\n    def m(self):\n        pass\n"
    fs = parse_definitions("legacy.py", data)
    kinds = [(d.kind, d.start_byte, d.end_byte) for d in fs.definitions]
    k = data.index(b"class K")
    m = data.index(b"def m")
    assert kinds[1:] == [("class_definition", k, len(data) - 2),
                         ("function_definition", m, len(data) - 2)]
    assert kinds[0][:2] == ("function_definition", 0)
    assert [d.name for d in fs.definitions] == ["caf", "K", "m"]  # identifier ends at \xe9


def test_non_utf8_name_is_decoded_with_replacement() -> None:
    data = b"func `caf\xe9`() {}\nclass K {}\n"  # Swift allows any character in backticks
    fs = parse_definitions("Legacy.swift", data)
    assert [(d.name, d.start_byte, d.end_byte) for d in fs.definitions] == [
        ("`caf\ufffd`", 0, data.index(b"{}") + 1),
        ("K", data.index(b"class K"), len(data) - 2),
    ]


def test_empty_and_blank_files_have_no_symbols() -> None:
    assert len(parse_definitions("e.py", b"")) == 0
    assert len(parse_definitions("e.py", b"\n\n# only a comment\n")) == 0
    assert parse_definitions("e.py", b"").overlapping([(0, 0)]) == []


def test_syntax_errors_still_give_the_good_definitions() -> None:
    data = b"def ok():\n    return 1\n\ndef broken(:\n"
    fs = parse_definitions("e.py", data)
    assert Definition("e.py", "function_definition", 0, data.index(b"1\n"), "ok") \
        in fs.definitions


# ----------------------------------------------------------------- overlap queries

PY = '''class A:
    def f(self):
        return 1

    def g(self):
        return 2


def h():
    pass
'''


@pytest.fixture
def py_symbols() -> tuple[FileSymbols, dict[str, Definition]]:
    fs = parse_definitions("m.py", PY.encode())
    return fs, {d.name: d for d in fs.definitions}


def test_overlap_inside_a_method_gives_it_and_its_class(py_symbols) -> None:
    fs, d = py_symbols
    at = PY.index("return 1")
    assert fs.overlapping([(at, at + 3)]) == [d["A"], d["f"]]


def test_overlap_between_methods_gives_only_the_class(py_symbols) -> None:
    fs, d = py_symbols
    gap = d["f"].end_byte + 1
    assert fs.overlapping([(gap, d["g"].start_byte - 1)]) == [d["A"]]


def test_overlap_touching_first_and_last_byte(py_symbols) -> None:
    fs, d = py_symbols
    f = d["f"]
    assert fs.overlapping([(f.end_byte, f.end_byte + 1)]) == [d["A"], f]
    assert fs.overlapping([(f.start_byte - 2, f.start_byte)]) == [d["A"], f]
    assert fs.overlapping([(d["h"].start_byte, d["h"].start_byte)]) == [d["h"]]
    assert fs.overlapping([(d["h"].end_byte, 10**9)]) == [d["h"]]
    # One byte short on either side misses h.
    assert fs.overlapping([(d["A"].end_byte + 1, d["h"].start_byte - 1)]) == []
    assert fs.overlapping([(d["h"].end_byte + 1, d["h"].end_byte + 5)]) == []


def test_overlap_disjoint_intervals_are_deduplicated_in_order(py_symbols) -> None:
    fs, d = py_symbols
    f1 = PY.index("return 1")
    g1 = PY.index("return 2")
    hp = PY.index("pass")
    got = fs.overlapping([(hp, hp), (g1, g1), (f1, f1), (g1, g1 + 1), (5, 2)])
    assert got == [d["A"], d["f"], d["g"], d["h"]]
    assert fs.overlapping([]) == []
    assert fs.overlapping([(0, 10**9)]) == list(fs.definitions)


def test_overlap_takes_interval_sets() -> None:
    fs = parse_definitions("m.py", PY.encode())
    spans = IntervalSet([(PY.index("pass"), PY.index("pass"))])
    assert [d.name for d in fs.overlapping(spans)] == ["h"]


def brute_force(fs: FileSymbols, intervals: list[tuple[int, int]]) -> list[Definition]:
    return [d for d in fs.definitions
            if any(a <= b and d.start_byte <= b and a <= d.end_byte for a, b in intervals)]


REAL_FILES = [Path(symbols.__file__), Path(subprocess.__file__), Path(threading.__file__)]


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_overlapping_matches_brute_force_on_a_real_file(path: Path) -> None:
    data = path.read_bytes()
    fs = parse_definitions(path.name, data)
    assert len(fs) > 10

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.integers(-5, len(data) + 5), st.integers(0, 4000)),
                    max_size=6))
    def check(raw: list[tuple[int, int]]) -> None:
        intervals = [(a, a + n) for a, n in raw]
        assert fs.overlapping(intervals) == brute_force(fs, intervals)
        # a step's bytes come as a set, one window of them (a Read) the usual one
        merged = IntervalSet(intervals)
        assert fs.overlapping(merged) == brute_force(fs, list(merged))

    check()


def test_overlapping_at_every_definition_boundary_matches_brute_force() -> None:
    data = Path(subprocess.__file__).read_bytes()
    fs = parse_definitions("subprocess.py", data)
    for d in fs.definitions:
        for x in (d.start_byte - 1, d.start_byte, d.end_byte, d.end_byte + 1):
            assert fs.overlapping([(x, x)]) == brute_force(fs, [(x, x)])
            assert fs.overlapping(IntervalSet([(x, x + 40)])) == brute_force(fs, [(x, x + 40)])


# ----------------------------------------------------------------- SymbolIndex


def test_index_parses_once_and_counts_hits() -> None:
    view = DictView({"m.py": PY.encode()})
    index = SymbolIndex()
    first = index.for_file(view, "m.py")
    second = index.for_file(view, "m.py")
    assert first is second
    assert [d.name for d in first.definitions] == ["A", "f", "g", "h"]
    assert (index.hits, index.misses, view.reads) == (1, 1, ["m.py"])


def test_index_unknown_extension_and_missing_file_are_empty() -> None:
    view = DictView({"notes.txt": b"def f(): pass\n"})
    index = SymbolIndex()
    assert len(index.for_file(view, "notes.txt")) == 0
    assert view.reads == []  # no language, no read
    assert len(index.for_file(view, "gone.py")) == 0
    assert index.for_file(view, "gone.py").overlapping([(0, 100)]) == []
    assert view.reads == ["gone.py"]  # the empty answer is cached too


def test_index_is_keyed_by_view_and_path() -> None:
    old = DictView({"m.py": b"def old():\n    pass\n"}, key=("r", "c1"))
    new = DictView({"m.py": b"def new():\n    pass\n"}, key=("r", "c2"))
    index = SymbolIndex()
    assert [d.name for d in index.for_file(old, "m.py").definitions] == ["old"]
    assert [d.name for d in index.for_file(new, "m.py").definitions] == ["new"]
    assert index.misses == 2


def test_index_is_a_bounded_lru() -> None:
    view = DictView({f"{n}.py": f"def f{n}():\n    pass\n".encode() for n in range(3)})
    index = SymbolIndex(max_files=2)
    index.for_file(view, "0.py")
    index.for_file(view, "1.py")
    index.for_file(view, "0.py")  # 0 is now the most recent
    index.for_file(view, "2.py")  # evicts 1
    assert len(index) == 2
    index.for_file(view, "0.py")
    assert view.reads == ["0.py", "1.py", "2.py"]
    index.for_file(view, "1.py")
    assert view.reads == ["0.py", "1.py", "2.py", "1.py"]
    assert (index.hits, index.misses) == (2, 4)
    with pytest.raises(ValueError, match="max_files"):
        SymbolIndex(max_files=0)


def test_index_is_thread_safe() -> None:
    files = {f"p{n}.py": (PY * (n + 1)).encode() for n in range(8)}
    files.update({f"p{n}.rs": SNIPPETS["src/a.rs"][0].encode() for n in range(4)})
    view = DictView(files)
    index = SymbolIndex(max_files=5)
    paths = sorted(files) * 25
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda p: index.for_file(view, p), paths))
    for path, fs in zip(paths, results, strict=True):
        assert len(fs) == len(parse_definitions(path, files[path]))
    assert index.hits + index.misses == len(paths)
    assert len(index) <= 5


def test_index_over_a_real_git_repo(tmp_path: Path) -> None:
    from gitrepo import make_repo

    import streameval.sources.repo as repo

    first, second = make_repo(
        tmp_path / "r",
        {"pkg/m.py": PY, "README.md": "# hi\n"},
        {"pkg/m.py": PY.replace("def h():\n    pass\n", "")},
    )
    index = SymbolIndex()
    with repo.GitRepo(tmp_path / "r") as git_repo:
        before = index.for_file(git_repo.at(first), "pkg/m.py")
        after = index.for_file(git_repo.at(second), "pkg/m.py")
        assert [d.name for d in before.definitions] == ["A", "f", "g", "h"]
        assert [d.name for d in after.definitions] == ["A", "f", "g"]
        assert before.definitions[:3] == after.definitions
        assert index.for_file(git_repo.at(first), "pkg/m.py") is before
        assert len(index.for_file(git_repo.at(first), "README.md")) == 0
        assert len(index.for_file(git_repo.at(first), "nope.py")) == 0
    assert (index.hits, index.misses) == (1, 3)
