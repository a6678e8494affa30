"""PowerShell read commands, parsed for reading and never executed (``reading.powershell``).

Commands and outputs in the forms PowerShell prints them (CRLF line ends, error records,
``Get-ChildItem`` tables), most taken from the real Codex-on-Windows rollouts in
``tests/fixtures/real/codex-rollout``.
"""

from __future__ import annotations

import pytest

from streameval.model import ToolCall
from streameval.reading.infer import infer
from streameval.reading.powershell import analyze_powershell, powershell_script
from streameval.reading.powershell.syntax import parse_script
from streameval.reading.shell import analyze

CWD = "C:\\Users\\T\\Desktop\\PeeDom"
TEXT = "\r\n".join(f"line {n}" for n in range(1, 8)) + "\r\n"


def ps(command: str, output: str | None, cwd: str | None = CWD):
    return analyze_powershell(command, output, cwd, analyze)


def windows(read) -> tuple:
    return (read.path, read.start, read.end, read.listing,
            len(read.shown.lines) if read.shown else None)


# --------------------------------------------------------------------------- which commands


@pytest.mark.parametrize(("command", "cwd", "script"), [
    ("Get-Content x.md", CWD, "Get-Content x.md"),            # Codex on Windows
    ("git status", CWD, "git status"),
    ("Get-Content x.md", "/repo", "Get-Content x.md"),        # a cmdlet, any system
    (["powershell.exe", "-NoProfile", "-Command", "gc x.md"], "/repo", "gc x.md"),
    ('pwsh -c "Select-String -Path a.py -Pattern x"', "/repo",
     "Select-String -Path a.py -Pattern x"),
    ("cat x.md", "/repo", None),                              # POSIX on a POSIX machine
    ("ls -la", None, None),
])
def test_which_commands_are_powershell(command, cwd, script):
    assert powershell_script(command, cwd) == script


# --------------------------------------------------------------------------- Get-Content


@pytest.mark.parametrize(("command", "window"), [
    ("Get-Content src\\lib\\supabase.ts", (None, None)),
    ("gc src\\lib\\supabase.ts", (None, None)),
    ("cat 'src\\lib\\supabase.ts'", (None, None)),
    ("type src\\lib\\supabase.ts -Raw", (None, None)),
    ("Get-Content -Path src\\lib\\supabase.ts -TotalCount 7", (1, 7)),
    ("Get-Content src\\lib\\supabase.ts -Head 7", (1, 7)),
    ("Get-Content -LiteralPath 'src\\lib\\supabase.ts' -Tail 7", (-7, None)),
    ("Get-Content src\\lib\\supabase.ts | Select-Object -First 7", (1, 7)),
    ("Get-Content 'src/lib/supabase.ts' | Select-Object -Skip 300 -First 7", (301, 307)),
    ("Get-Content src\\lib\\supabase.ts | Select-Object -Skip 40", (41, 47)),
])
def test_get_content_windows(command, window):
    res = ps(command, TEXT)
    (read,) = res.reads
    assert read.path.replace("/", "\\") == "src\\lib\\supabase.ts"
    assert (read.start, read.end) == window
    assert read.shown.lines == tuple(f"line {n}" for n in range(1, 8))   # CR gone
    assert res.category == "read" and res.unparsed == []


def test_a_counter_beside_each_line_numbers_it():
    command = ("$i=0; Get-Content AGENTS.md | ForEach-Object { $i++; '{0,4}: {1}' -f $i, $_ }"
               " | Select-Object -First 3")
    (read,) = ps(command, "   1: # Agents\r\n   2: \r\n   3: Read this.\r\n").reads
    assert read.path == "AGENTS.md" and (read.start, read.end) == (1, 3)
    assert read.shown.numbers == (1, 2, 3) and read.shown.lines == ("# Agents", "", "Read this.")


def test_a_variable_bound_to_a_literal_is_its_value():
    (read,) = ps("$p='C:\\Users\\T\\Desktop\\PeeDom\\app.json'; Get-Content $p -TotalCount 2",
                 "{\r\n  \"expo\": {\r\n").reads
    assert read.path == "C:\\Users\\T\\Desktop\\PeeDom\\app.json" and read.end == 2


def test_a_missing_file_shows_nothing():
    out = ("Get-Content : Cannot find path 'C:\\Users\\T\\Desktop\\PeeDom\\.easignore' because it "
           "does not exist.\r\nAt line:2 char:1\r\n+ Get-Content .easignore\r\n+ "
           "~~~~~~~~~~~~~~~~~~~~~~\r\n    + CategoryInfo          : ObjectNotFound: "
           "(C:\\Users\\T\\Desktop\\PeeDom\\.easignore:String) [Get-Content], ItemNotFoundException\r\n")
    assert ps("Get-Content .easignore", out).reads == []


def test_an_expression_in_a_path_is_never_evaluated():
    """``app\\(tabs)\\x.tsx`` runs ``(tabs)`` in PowerShell: no path to read, said so."""
    res = ps("Get-Content app\\(tabs)\\index.tsx", "tabs : The term 'tabs' is not recognized")
    assert res.reads == [] and res.unparsed and "needs evaluating" in res.unparsed[0]


def test_if_test_path_reads_what_its_body_printed():
    (read,) = ps("if (Test-Path README.md) { Get-Content README.md }", TEXT).reads
    assert read.path == "README.md" and len(read.shown.lines) == 7


def test_other_flow_is_reported_not_guessed():
    res = ps("foreach ($f in $files) { Get-Content $f }", TEXT)
    assert res.reads == [] and "foreach" in res.unparsed[0]


# --------------------------------------------------------------------------- Select-String


def test_select_string_hits_with_drive_letters():
    command = ("Get-ChildItem -Recurse -File | Select-String -Pattern 'APP_ENV' | ForEach-Object "
               "{ \"$($_.Path):$($_.LineNumber):$($_.Line.Trim())\" }")
    out = ("C:\\Users\\T\\Desktop\\PeeDom\\eas.json:25:\"APP_ENV\": \"development\"\r\n"
           "C:\\Users\\T\\Desktop\\PeeDom\\eas.json:40:\"APP_ENV\": \"preview\"\r\n"
           "C:\\Users\\T\\Desktop\\PeeDom\\src\\lib\\a.ts:43:const env = APP_ENV;\r\n")
    res = ps(command, out)
    assert res.category == "search"
    assert [(r.path, r.shown.numbers) for r in res.reads] == [
        ("C:\\Users\\T\\Desktop\\PeeDom\\eas.json", (25, 40)),
        ("C:\\Users\\T\\Desktop\\PeeDom\\src\\lib\\a.ts", (43,))]
    assert all(r.shown.loose for r in res.reads)   # .Trim()med: the numbers decide


def test_select_string_of_one_file():
    res = ps("Select-String -Path src\\x.ts -Pattern 'foo'", "src\\x.ts:3:  foo()\r\n")
    assert [(r.path, r.shown.numbers) for r in res.reads] == [("src\\x.ts", (3,))]
    res = ps("Get-Content app/_layout.tsx | Select-String -Pattern 'modal' | ForEach-Object "
             "{ \"{0}: {1}\" -f $_.LineNumber, $_.Line.Trim() }", "12: <Modal />\r\n40: modal()\r\n")
    assert [(r.path, r.shown.numbers) for r in res.reads] == [("app/_layout.tsx", (12, 40))]


# --------------------------------------------------------------------------- Get-ChildItem

TABLE = ("\r\n\r\n    Directory: C:\\Users\\T\\Desktop\\PeeDom\r\n\r\n\r\n"
         "Mode                 LastWriteTime         Length Name\r\n"
         "----                 -------------         ------ ----\r\n"
         "d-----         3/26/2026   2:21 PM                .claude\r\n"
         "-a----         3/20/2026  11:17 AM            512 .env.example\r\n"
         "-a----         3/20/2026  11:17 AM           2048 app.json\r\n")


def test_get_child_item_table_lists_files_not_directories():
    res = ps("Get-ChildItem -Force", TABLE)
    assert [windows(r) for r in res.reads] == [
        ("C:\\Users\\T\\Desktop\\PeeDom\\.env.example", None, None, True, None),
        ("C:\\Users\\T\\Desktop\\PeeDom\\app.json", None, None, True, None)]
    assert res.category == "search"


def test_get_child_item_full_names_and_names():
    res = ps("Get-ChildItem app -Recurse -File | Select-Object FullName",
             "\r\nFullName\r\n--------\r\nC:\\Users\\T\\Desktop\\PeeDom\\app\\_layout.tsx  \r\n")
    assert [r.path for r in res.reads] == ["C:\\Users\\T\\Desktop\\PeeDom\\app\\_layout.tsx"]
    res = ps("gci src -Name", "a.ts\r\nlib\\b.ts\r\n")
    assert [r.path for r in res.reads] == ["src\\a.ts", "src\\lib\\b.ts"]


# --------------------------------------------------------------------------- the rest


def test_a_lone_native_command_is_read_as_before():
    res = ps('git grep -n "9277c80b"', 'app.json:109:        "projectId": "9277c80b"\n')
    assert [(r.path, r.shown.numbers) for r in res.reads] == [("app.json", (109,))]
    assert res.category == "search"


def test_writes_are_edits():
    res = ps("Set-Content -Path notes.md -Value 'x'; Get-Content notes.md", "x\r\n")
    assert [e.path for e in res.edits] == ["notes.md"] and res.category == "edit"


def test_parser_never_hangs_on_stray_brackets():
    for text in (") }", "Get-Content x) | }", "@'\nunterminated", "'open", "a`"):
        parse_script(text)


def test_codex_windows_call_through_infer():
    call = ToolCall("c1", "shell_command", {"command": "Get-Content web/assets/site.css "
                                                       "-TotalCount 2", "workdir": CWD},
                    output=":root {\n  --bg: #f3f4ef;\n", cwd=CWD)
    inf = infer(call)
    assert inf.category == "read"
    assert [(r.path, r.start, r.end) for r in inf.reads] == [("web/assets/site.css", 1, 2)]


def test_claude_code_bash_on_windows_stays_posix():
    """Claude Code's Bash is Git Bash on Windows: its commands are POSIX there too."""
    assert powershell_script("ls -la && cat x.md", CWD, "Bash") is None
    assert powershell_script("Get-Content x.md", CWD, "Bash") == "Get-Content x.md"
    assert powershell_script("ls -la", CWD, "shell_command") == "ls -la"
