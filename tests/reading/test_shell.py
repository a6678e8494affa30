"""Shell commands -> reads/edits (docs/metrics.md §6).

Cases marked ``real`` are command lines (and, where given, outputs) copied from the
traces in ``shared/fixtures/real``; the others are the pitfalls section 6 names.
"""

from __future__ import annotations

import json
import os
import shlex
import uuid
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from shown_runs import runs_of

from streameval.model import APPEND, CATEGORIES, Edit, Read, SedScript
from streameval.reading.shell import analyze


def R(path: str, start: int | None = None, end: int | None = None) -> Read:
    return Read(path, start, end)


def L(path: str) -> Read:
    return Read(path, listing=True)


SED_XY = SedScript(("s/x/y/",))


def bash_lc(cmd: str) -> str:
    """Codex rollouts carry ["bash", "-lc", cmd]; adapters hand us the joined words."""
    return shlex.join(["bash", "-lc", cmd])


TS = "apps/spectora-labs/src/app/(protected)/settings/teams/components/TeamSheet.tsx"
GTWS = "apps/spectora-labs/src/domain/teams/services/getTeamsWithStats.ts"
DASH = "apps/spectora-labs/src/app/(protected)/dashboard/page.tsx"

# (id, command, output, expected reads) -- reads compared as a list, order kept
READ_CASES = [
    # ---------------------------------------------------------------- real (fixtures)
    ("real-codex-sed-quoted-parens", bash_lc(f"sed -n '1,200p' '{TS}'"), None, [R(TS, 1, 200)]),
    ("real-codex-sed-second-page", bash_lc(f"sed -n '200,400p' '{DASH}'"), None,
     [R(DASH, 200, 400)]),
    ("real-codex-sed-brackets-unquoted",
     bash_lc("sed -n '1,120p' apps/spectora-labs/src/app/api/team-members/[id]/route.ts"), None,
     [R("apps/spectora-labs/src/app/api/team-members/[id]/route.ts", 1, 120)]),
    ("real-codex-nl-sed", bash_lc(f"nl -ba {GTWS} | sed -n '200,230p'"), None,
     [R(GTWS, 200, 230)]),
    ("real-codex-nl-quoted-sed", bash_lc(f"nl -ba '{DASH}' | sed -n '40,80p'"), None,
     [R(DASH, 40, 80)]),
    ("real-codex-nl-whole", bash_lc("nl -ba 'apps/spectora-labs/src/app/api/teams/[id]/route.ts'"),
     None, [R("apps/spectora-labs/src/app/api/teams/[id]/route.ts")]),
    ("real-codex-cat", bash_lc("cat apps/spectora-labs/package.json"), None,
     [R("apps/spectora-labs/package.json")]),
    ("real-codex-rg-n", bash_lc('rg "use-api-list" -g"*.ts" -n'),
     'packages/ui/src/hooks/index.ts:4:export { useApiList } from "./use-api-list";\n'
     'apps/spectora-labs/src/app/(protected)/contacts/hooks/useContacts.ts:1:import { useApiList }'
     ' from "@repo/ui/hooks/use-api-list";\n',
     [R("packages/ui/src/hooks/index.ts", 4, 4),
      R("apps/spectora-labs/src/app/(protected)/contacts/hooks/useContacts.ts", 1, 1)]),
    ("real-codex-rg-one-hit", bash_lc('rg "interface TeamWithStats" -n'),
     f"{GTWS}:35:export interface TeamWithStats {{\n", [R(GTWS, 35, 35)]),
    # without -n the lines are kept as text, for alignment with the file (R(), no window)
    ("real-codex-rg-no-n-text", bash_lc('rg "TeamSheet"'),
     f'{DASH}:import {{ TeamSheet }} from "../settings/teams/components/TeamSheet";\n'
     f'{DASH}:  const [isTeamSheetOpen, setIsTeamSheetOpen] = useState(false);\n',
     [R(DASH)]),
    ("real-codex-rg-single-file", bash_lc(f"rg -n \"handleTeamSheetOpenChange\" '{DASH}'"),
     "64:  const handleTeamSheetOpenChange = (open: boolean) => {\n"
     "202:        onOpenChange={handleTeamSheetOpenChange}\n",
     [R(DASH, 64, 64), R(DASH, 202, 202)]),
    ("real-codex-rg-head-no-output", bash_lc('rg "paramsSchema" -n apps/spectora-labs/src/app/api | head'),
     None, []),
    ("real-codex-rg-head-output", bash_lc('rg "paramsSchema" -n apps/spectora-labs/src/app/api | head'),
     "apps/spectora-labs/src/app/api/issues/metric-rules/[id]/route.ts:15:const paramsSchema = z.object({\n"
     "apps/spectora-labs/src/app/api/issues/metric-rules/[id]/route.ts:47:  paramsSchema,\n",
     [R("apps/spectora-labs/src/app/api/issues/metric-rules/[id]/route.ts", 15, 15),
      R("apps/spectora-labs/src/app/api/issues/metric-rules/[id]/route.ts", 47, 47)]),
    ("real-codex-find-output", bash_lc("find apps/spectora-labs/src/app/api/teams -maxdepth 1 -type f"),
     "apps/spectora-labs/src/app/api/teams/route.ts\n",
     [L("apps/spectora-labs/src/app/api/teams/route.ts")]),
    ("real-codex-git-diff-not-read",
     bash_lc("git diff HEAD -- 'apps/spectora-labs/src/app/api/teams/[id]/route.ts'"), "diff --git", []),
    ("real-codex-ls-quoted",
     bash_lc("ls 'apps/spectora-labs/src/app/(protected)/settings/teams/hooks'"),
     "useTeamWithStats.ts\nuseUpdateTeam.ts\n",
     [L("apps/spectora-labs/src/app/(protected)/settings/teams/hooks/useTeamWithStats.ts"),
      L("apps/spectora-labs/src/app/(protected)/settings/teams/hooks/useUpdateTeam.ts")]),
    ("real-exec-nl-sed", "bash -lc \"nl -ba src/claude.lib.mjs | sed -n '1080,1140p'\"", None,
     [R("src/claude.lib.mjs", 1080, 1140)]),
    ("real-exec-redirect-then-read",
     "bash -lc \"git status --porcelain > logs/git.status.txt; sed -n '1,120p' logs/git.status.txt\"",
     None, [R("logs/git.status.txt", 1, 120)]),
    ("real-exec-sed-tee", "bash -lc \"sed -n '1,200p' CLAUDE.md | tee logs/03_claude_head.log\"",
     None, [R("CLAUDE.md", 1, 200)]),
    ("real-exec-three-files",
     "bash -lc \"sed -n '1,200p' main.v | tee -a logs/03_main_v.log && echo '---' && sed -n '1,200p'"
     " hello.v | tee -a logs/03_hello_v.log && echo '---' && sed -n '1,200p' hello_test.v | tee -a"
     " logs/03_hello_test_v.log\"", None,
     [R("main.v", 1, 200), R("hello.v", 1, 200), R("hello_test.v", 1, 200)]),
    ("real-exec-subshell-to-log",
     "bash -lc \"(echo 'Attempting to run V tests'; v test .) > logs/06_v_test.log 2>&1 || true;"
     " sed -n '1,100p' logs/06_v_test.log\"", None, [R("logs/06_v_test.log", 1, 100)]),
    ("real-exec-tail-plus-one",
     "bash -lc \"echo 'Listing files' > logs/01_repo_tree.log 2>&1; mkdir -p logs; (ls -la; printf"
     " '\\\\n\\\\n'; rg --files || true) >> logs/01_repo_tree.log 2>&1; tail -n +1 logs/01_repo_tree.log\"",
     None, [R("logs/01_repo_tree.log", 1, None)]),
    ("real-claude-cat-missing", "cat nonexistent.txt",
     "cat: nonexistent.txt: No such file or directory", []),
    ("real-claude-cat-2>&1", "cat issue-87-details.json 2>&1", '{"title": "x"}',
     [R("issue-87-details.json")]),
    ("real-claude-ls-glob-and-file", "ls -lh /workspace/*.txt /workspace/number_generator.py", None,
     [L("/workspace/number_generator.py")]),
    ("real-claude-find-xargs-grep-l",
     'find /path/to/Demo -name "*.tsx" -o -name "*.ts" | grep -v node_modules | xargs grep -l '
     '"useTodos\\|useStore\\|useState.*todo" 2>/dev/null | head -5',
     "/path/to/Demo/todo-app/src/hooks/useTodos.ts\n/path/to/Demo/todo-app/src/app/page.tsx\n",
     [L("/path/to/Demo/todo-app/src/hooks/useTodos.ts"), L("/path/to/Demo/todo-app/src/app/page.tsx")]),
    ("real-claude-find-grep-v", "find /path/to/Demo/todo-app/src -name \"*.tsx\" -o -name \"*.ts\" | "
     "grep -v node_modules", "/path/to/Demo/todo-app/src/app/page.tsx\n",
     [L("/path/to/Demo/todo-app/src/app/page.tsx")]),
    ("real-claude-find-sed-transform-opaque",
     'tree types/ 2>/dev/null || find types/ -type f -name "*.ts" | sed \'s|types/||\' | sort',
     None, []),
    ("real-claude-wc", "wc -l src/apply.mjs src/orchestrator.mjs 2>&1", None,
     [L("src/apply.mjs"), L("src/orchestrator.mjs")]),
    ("real-claude-cd-abs-ls", "cd /path/to/Demo && ls -la types/ 2>/dev/null || echo \"missing\"",
     "total 8\ndrwxr-xr-x  4 u  staff  128 Sep  1 10:00 .\n"
     "-rw-r--r--  1 u  staff  900 Sep  1 10:00 todo.ts\n",
     [L("/path/to/Demo/types/todo.ts")]),
    ("real-oh-grep-n-single-file",
     'grep -n "DECL(pattern);" /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c',
     "29:DECL(pattern);\n", [R("/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c", 29, 29)]),
    ("real-oh-grep-no-output-file-level",
     'grep -n "iso" /workspace/ponylang__ponyc__0.1/src/libponyc/expr/match.c', None,
     [L("/workspace/ponylang__ponyc__0.1/src/libponyc/expr/match.c")]),
    ("real-oh-grep-r-dir-no-output", 'grep -r "CommandParser" src', None, []),
    ("real-oh-cd-ls", "cd /workspace/ponylang__ponyc__0.1/src && ls -l",
     "total 4\n-rw-r--r-- 1 root root 10 Jan  1 00:00 CMakeLists.txt\n",
     [L("/workspace/ponylang__ponyc__0.1/src/CMakeLists.txt")]),
    ("real-mini-cat", "cat xarray/core/weighted.py\n", None, [R("xarray/core/weighted.py")]),
    ("real-mini-nl-grep-A",
     'nl -ba xarray/core/weighted.py | grep -A 10 "def _sum_of_weights"\n',
     '<returncode>0</returncode>\n<output>\n   137\t    def _sum_of_weights(\n   138\t        self,\n'
     '   139\t    ) -> "DataArray":\n   140\t        """ Calculate """\n</output>',
     [R("xarray/core/weighted.py", 137, 140)]),
    ("real-mini-cat-grep-text",
     'cat xarray/core/weighted.py | grep -A 10 "def _sum_of_weights"\n',
     "    def _sum_of_weights(\n", [R("xarray/core/weighted.py")]),
    ("real-mini-grep-r-pipe-grep", 'grep -r "weighted" xarray | grep "def"\n',
     "grep: xarray/core/__pycache__/weighted.cpython-310.pyc: binary file matches\n"
     "xarray/core/weighted.py:    def _weighted_sum(\nxarray/core/weighted.py:    def _weighted_mean(\n"
     "xarray/core/common.py:    def weighted(self, weights):\n",
     [R("xarray/core/weighted.py"), R("xarray/core/common.py")]),
    ("real-mini-nl-sed", "nl -ba xarray/core/weighted.py | sed -n '137,155p'\n", None,
     [R("xarray/core/weighted.py", 137, 155)]),
    ("real-mini-find-xargs-grep-l", 'find astropy -name "*.py" | xargs grep -l "class SlicedLowLevelWCS"\n',
     "<returncode>0</returncode>\n<output>\nastropy/wcs/wcsapi/wrappers/sliced_wcs.py\n</output>",
     [L("astropy/wcs/wcsapi/wrappers/sliced_wcs.py")]),
    ("real-mini-grep-n-single",
     'grep -n "def world_to_pixel_values" astropy/wcs/wcsapi/wrappers/sliced_wcs.py\n',
     "245:    def world_to_pixel_values(self, *world_arrays):\n",
     [R("astropy/wcs/wcsapi/wrappers/sliced_wcs.py", 245, 245)]),
    # each grep's line is its own (its pattern selects it): one read each
    ("real-mini-two-greps-r", 'grep -r "class Avg" django && grep -r "class Sum" django\n',
     "django/db/models/aggregates.py:class Avg(FixDurationInputMixin, NumericOutputFieldMixin, Aggregate):\n"
     "django/db/models/aggregates.py:class Sum(FixDurationInputMixin, Aggregate):\n",
     [R("django/db/models/aggregates.py"), R("django/db/models/aggregates.py")]),
    ("real-mini-grep-n-many", 'grep -n "def deconstruct" django/db/models/fields/__init__.py\n',
     "414:    def deconstruct(self):\n1142:    def deconstruct(self):\n1477:    def deconstruct(self):\n",
     [R("django/db/models/fields/__init__.py", 414, 414),
      R("django/db/models/fields/__init__.py", 1142, 1142),
      R("django/db/models/fields/__init__.py", 1477, 1477)]),
    ("real-mini-sed-n", "sed -n '414,450p' django/db/models/fields/__init__.py\n", None,
     [R("django/db/models/fields/__init__.py", 414, 450)]),
    ("real-mini-grep-r-single-file-no-n", 'grep -r "rcParams =" lib/matplotlib/__init__.py\n',
     "rcParams = RcParams()  # The global instance.\n", [R("lib/matplotlib/__init__.py")]),
    ("real-mini-ls-file", "ls xarray/tests/test_weighted.py\n", None,
     [L("xarray/tests/test_weighted.py")]),
    ("real-mini-pytest-not-read", "pytest xarray/tests/test_weighted.py\n", "1 passed", []),
    ("real-mini-git-diff-not-read", "git diff xarray/core/weighted.py\n", None, []),
    ("real-mini-python-c", 'python -c "import numpy as np; print(np.array([True]).dtype.kind)"\n',
     "b", []),
    ("real-mini-cat-migration", "cat reproduce_issue/migrations/0001_initial.py\n", None,
     [R("reproduce_issue/migrations/0001_initial.py")]),
    ("real-swe-three-commands",
     'grep -Rn "weighted" -n /testbed/xarray/core; grep -Rn "dot(" -n /testbed/xarray/core; '
     "ls -R /testbed/xarray/core",
     "/testbed/xarray/core/weighted.py:1:from typing import TYPE_CHECKING\n"
     "/testbed/xarray/core/computation.py:1181:def dot(*arrays, dims=None, **kwargs):\n",
     [R("/testbed/xarray/core/weighted.py", 1, 1), R("/testbed/xarray/core/computation.py", 1181, 1181)]),
    # ---------------------------------------------------------------- section 6 pitfalls
    ("cat-n-flag-not-file", "cat -n f.py", None, [R("f.py")]),
    ("cat-several", "cat a.py b.py c.py", None, [R("a.py"), R("b.py"), R("c.py")]),
    ("nl-plain", "nl f.py", None, [R("f.py")]),
    ("less-more-bat", "less a.py; more b.py; bat c.py", None, [R("a.py"), R("b.py"), R("c.py")]),
    ("bat-line-range", "bat -r 10:20 f.py", None, [R("f.py", 10, 20)]),
    ("sed-one-line", "sed -n '5p' f.py", None, [R("f.py", 5, 5)]),
    ("sed-to-end", "sed -n '10,$p' f.py", None, [R("f.py", 10, None)]),
    ("sed-two-e", "sed -n -e '5,10p' -e '20,30p' f.py", None, [R("f.py", 5, 10), R("f.py", 20, 30)]),
    ("sed-semicolon", "sed -n '5,10p;20,30p' f.py", None, [R("f.py", 5, 10), R("f.py", 20, 30)]),
    ("sed-regex-address-file-level", "sed -n '/def foo/,/return/p' f.py", None, [L("f.py")]),
    ("sed-q", "sed 20q f.py", None, [R("f.py", 1, 20)]),
    ("cat-n-sed", "cat -n f.py | sed -n '3,8p'", None, [R("f.py", 3, 8)]),
    ("nl-sed-no-ba", "nl f.py | sed -n '3,8p'", None, [R("f.py", 3, 8)]),
    ("awk-range", "awk 'NR>=3 && NR<=7' f.py", None, [R("f.py", 3, 7)]),
    ("awk-eq", "awk 'NR==5' f.py", None, [R("f.py", 5, 5)]),
    ("awk-from", "awk 'NR>=10' f.py", None, [R("f.py", 10, None)]),
    ("awk-strict-print-nr", "awk 'NR>10 && NR<20 {print NR\": \"$0}' f.py", None, [R("f.py", 11, 19)]),
    ("awk-fields-file-level", "awk '{print $1}' f.py", None, [L("f.py")]),
    ("head-default", "head f.py", None, [R("f.py", 1, 10)]),
    ("head-20-eq-head-n-20", "head -20 a.py; head -n 20 b.py; head --lines=20 c.py", None,
     [R("a.py", 1, 20), R("b.py", 1, 20), R("c.py", 1, 20)]),
    ("head-several-files", "head -n 5 a.py b.py", None, [R("a.py", 1, 5), R("b.py", 1, 5)]),
    ("tail-last-vs-from", "tail -n 20 a.py; tail -n +20 b.py", None,
     [R("a.py", -20, None), R("b.py", 20, None)]),
    ("tail-dash-n", "tail -5 f.py", None, [R("f.py", -5, None)]),
    ("cat-head", "cat f.py | head -20", None, [R("f.py", 1, 20)]),
    ("sed-head", "sed -n '1,200p' f.py | head -50", None, [R("f.py", 1, 50)]),
    ("sed-tail", "sed -n '100,200p' f.py | tail -n 10", None, [R("f.py", 191, 200)]),
    ("head-stdin-redirect", "head -5 < f.py", None, [R("f.py", 1, 5)]),
    ("cat-stdin-redirect", "cat < f.py", None, [R("f.py")]),
    ("grep-rn-dir-head-output", "grep -rn pat src | head -50",
     "src/a.py:3:pat\nsrc/a.py-4-ctx\nsrc/b-1-x.py:10:pat\n",
     [R("src/a.py", 3, 4), R("src/b-1-x.py", 10, 10)]),
    ("grep-context-path-with-dashes", "grep -rn -C1 pat src",
     "src/my-2-mod.py-9-before\nsrc/my-2-mod.py:10:pat\nsrc/my-2-mod.py-11-after\n",
     [R("src/my-2-mod.py", 9, 11)]),
    ("grep-single-file-context", "grep -n -A 2 pat f.py", "3:pat\n4-x\n5-y\n", [R("f.py", 3, 5)]),
    ("grep-no-output-files-not-pattern", "grep foo a.py b.py", None, [L("a.py"), L("b.py")]),
    ("grep-e-pattern", "grep -n -e foo -e bar f.py", None, [L("f.py")]),
    ("grep-c", "grep -c foo a.py b.py", "a.py:2\nb.py:0\n", [L("a.py")]),
    ("grep-l", "grep -rl foo src", "src/a.py\nsrc/b.py\n", [L("src/a.py"), L("src/b.py")]),
    ("rg-files-with-matches", "rg --files-with-matches foo", "a.py\n", [L("a.py")]),
    ("rg-heading-mode", "rg -n foo", "src/a.py\n3:foo\n7:foo\n\nsrc/b.py\n1:foo\n",
     [R("src/a.py", 3, 3), R("src/a.py", 7, 7), R("src/b.py", 1, 1)]),
    ("rg-files", "rg --files src", "src/a.py\nsrc/b.py\n", [L("src/a.py"), L("src/b.py")]),
    ("git-grep", "git grep -n foo", "a.py:3:foo\n", [R("a.py", 3, 3)]),
    ("grep-q-nothing", "grep -q foo f.py", None, []),
    ("find-no-output", "find . -name '*.py'", None, []),
    ("find-exec-grep", "find . -name '*.py' -exec grep -n foo {} +", "./a.py:3:foo\n",
     [R("./a.py", 3, 3)]),
    ("ls-dir-names", "ls src", "a.py\nb.py\n", [L("src/a.py"), L("src/b.py")]),
    ("ls-R", "ls -R pkg", "pkg:\na.py\nsub\n\npkg/sub:\nc.py\n",
     [L("pkg/a.py"), L("pkg/sub"), L("pkg/sub/c.py")]),
    ("tree-output", "tree src",
     "src\n├── a.py\n└── pkg\n    ├── b.py\n    └── c.py\n\n1 directory, 3 files\n",
     [L("src/a.py"), L("src/pkg"), L("src/pkg/b.py"), L("src/pkg/c.py")]),
    ("git-show-path", "git show HEAD:src/x.py", None, [R("src/x.py")]),
    ("git-show-sed", "git show abc123:src/x.py | sed -n '5,10p'", None, [R("src/x.py", 5, 10)]),
    ("git-show-commit-not-read", "git show abc123 -- src/x.py", None, []),
    ("git-log-not-read", "git log -p src/x.py", None, []),
    ("cd-join", "cd sub && cat f.py", None, [R("sub/f.py")]),
    ("cd-semicolon-dotdot", "cd sub/inner; cat ../f.py", None, [R("sub/f.py")]),
    ("cd-abs", "cd /repo/pkg && sed -n '1,5p' mod.py", None, [R("/repo/pkg/mod.py", 1, 5)]),
    ("cd-subshell-does-not-leak", "(cd sub && cat a.py); cat b.py", None,
     [R("sub/a.py"), R("b.py")]),
    ("cd-unknown", "cd $DIR && cat f.py", None, []),
    ("bash-lc-cd", "bash -lc \"cd sub && sed -n '1,5p' f.py\"", None, [R("sub/f.py", 1, 5)]),
    ("sh-c", "sh -c 'cat a.py'", None, [R("a.py")]),
    ("quoted-spaces", "cat \"my dir/file name.py\" 'b c.py'", None,
     [R("my dir/file name.py"), R("b c.py")]),
    ("concatenated-quotes", "cat \"src\"/'x y'.py", None, [R("src/x y.py")]),
    ("ansi-c-quote", "cat $'a\\tb.py'", None, [R("a\tb.py")]),
    ("backslash-space", "cat my\\ file.py", None, [R("my file.py")]),
    ("env-prefix", "FOO=1 BAR=2 cat f.py", None, [R("f.py")]),
    ("wrappers", "timeout 10 cat a.py; sudo -u me cat b.py; env A=1 cat c.py; nohup cat d.py; "
     "time cat e.py; command cat g.py", None,
     [R("a.py"), R("b.py"), R("c.py"), R("d.py"), R("e.py"), R("g.py")]),
    ("stderr-to-devnull", "cat f.py 2>/dev/null", None, [R("f.py")]),
    ("stdout-to-devnull", "cat f.py > /dev/null", None, []),
    ("stdout-to-file-not-shown", "cat f.py > copy.py", None, []),
    ("dynamic-not-read", "cat $FILE; cat $(find . -name x.py)", None, []),
    ("glob-not-read", "cat *.py", None, []),
    ("heredoc-body-not-read", "cat > notes.md <<'EOF'\ncat secret.py\nsed -n '1,5p' other.py\nEOF", None, []),
    ("python-heredoc-not-read", "python - <<'PY'\nprint(open('x.py').read())\nPY\n", None, []),
    ("commit-message-substitution", "git commit -m \"$(cat <<'EOF'\nsee a.py\nEOF\n)\"", None, []),
    ("syntax-error-no-reads", "sed -n '1,5p' a/(b)/c.py", None, []),
    ("missing-one-of-two", "cat a.py b.py", "x\ncat: b.py: No such file or directory\n", [R("a.py")]),
    ("missing-head", "head -n 5 x.py", "head: cannot open 'x.py' for reading: No such file or directory",
     []),
    ("missing-sed", "sed -n '1,5p' x.py", "sed: can't read x.py: No such file or directory", []),
    ("directory-cat", "cat src", "cat: src: Is a directory", []),
    ("sed-then-cat-n", "sed -n '5,10p' f.py | cat -n", None, [R("f.py", 5, 10)]),
    ("cat-n-grep-output", "cat -n f.py | grep -n foo", "2:    12\tfoo\n7:    40\tfoo\n",
     [R("f.py", 12, 12), R("f.py", 40, 40)]),
    ("ls-long-skips-dirs-keeps-spaces", "ls -la src",
     "total 8\ndrwxr-xr-x 2 u g 4096 Jan 1 00:00 sub\n-rw-r--r-- 1 u g 12 Jan  1 00:00 my file.py\n",
     [L("src/my file.py")]),
    ("openhands-output-suffix", "find . -name '*.c'",
     "./src/a.c\n[The command completed with exit code 0.]\n", [L("./src/a.c")]),
    ("real-codex-sandbox-failure-text",
     bash_lc('rg "updateTeam\\(" apps/spectora-labs/src/app/api -g"*.ts"'),
     "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 1,"
     " stdout: , stderr: ", []),
    ("ansi-crlf-output", "grep -rn foo .",
     "\x1b[35m./a.py\x1b[0m:\x1b[32m3\x1b[0m:foo\r\n./b.py:4:foo\r\n",
     [R("./a.py", 3, 3), R("./b.py", 4, 4)]),
]


@pytest.mark.parametrize("cmd,output,expected", [c[1:] for c in READ_CASES],
                         ids=[c[0] for c in READ_CASES])
def test_reads(cmd: str, output: str | None, expected: list[Read]) -> None:
    assert runs_of(analyze(cmd, output).reads) == expected


def test_case_counts() -> None:
    real = [c for c in READ_CASES if c[0].startswith("real")]
    assert len(READ_CASES) + len(EDIT_CASES) >= 80
    assert len(real) + len([c for c in EDIT_CASES if c[0].startswith("real")]) >= 40


APPLY_UPDATE = ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: " + GTWS + "\n@@\n"
                "-import { ok, err } from \"@repo/result\";\n"
                "+import { ok, err, type Result } from \"@repo/result\";\n*** End Patch\nPATCH\n")
APPLY_ADD = ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: apps/spectora-labs/src/app/api/"
             "teams/[id]/route.ts\n+import { z } from \"zod\";\n+\n+const paramsSchema = z.object({\n"
             "+  id: z.string(),\n+});\n*** End Patch\nPATCH\n")

# (id, command, expected edits)
EDIT_CASES = [
    ("real-codex-apply-update", bash_lc(APPLY_UPDATE),
     [Edit(GTWS, old='import { ok, err } from "@repo/result";',
           new='import { ok, err, type Result } from "@repo/result";')]),
    ("real-codex-apply-add", bash_lc(APPLY_ADD),
     [Edit("apps/spectora-labs/src/app/api/teams/[id]/route.ts",
           content='import { z } from "zod";\n\nconst paramsSchema = z.object({\n  id: z.string(),\n});\n')]),
    ("real-codex-apply-delete-only-line",
     bash_lc(f"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: {TS}\n@@\n"
             "-import { useMemo } from \"react\";\n*** End Patch\nPATCH\n"),
     [Edit(TS, old='import { useMemo } from "react";', new="")]),
    ("real-oh-sed-i", "sed -i '317s/^/\t      /' /workspace/ponylang__ponyc__0.1/src/libponyc/expr/match.c",
     [Edit("/workspace/ponylang__ponyc__0.1/src/libponyc/expr/match.c",
           hunks=((317, 1, 317, 1),), sed=SedScript(("317s/^/\t      /",)))]),
    ("real-oh-echo-redirect", 'echo "int main() { return 0; }" > /workspace/test.c',
     [Edit("/workspace/test.c", content="int main() { return 0; }\n")]),
    ("real-mini-sed-i-double-quotes",
     "sed -i \"s/'reproduce_issue',/'reproduce_issue', 'other_app',/\" reproduce_script.py\n",
     [Edit("reproduce_script.py",
           sed=SedScript(("s/'reproduce_issue',/'reproduce_issue', 'other_app',/",)))]),
    ("real-mini-two-sed-i",
     "sed -i '222a\\    print(f\"DEBUG: {newbackend!r}\")' lib/matplotlib/pyplot.py\n"
     "sed -i '223a\\    print(1)' lib/matplotlib/pyplot.py\n",
     [Edit("lib/matplotlib/pyplot.py", insert_line=222,
           new='    print(f"DEBUG: {newbackend!r}")\n',
           sed=SedScript(('222a\\    print(f"DEBUG: {newbackend!r}")',))),
      Edit("lib/matplotlib/pyplot.py", insert_line=223, new="    print(1)\n",
           sed=SedScript(("223a\\    print(1)",)))]),
    ("real-mini-heredoc-after-continuations",
     "mkdir -p other_app && \\\ntouch other_app/__init__.py && \\\ncat <<'EOF' > other_app/fields.py\n"
     "from django.db import models\n\nclass MyField(models.CharField):\n    pass\nEOF\n",
     [Edit("other_app/fields.py",
           content="from django.db import models\n\nclass MyField(models.CharField):\n    pass\n")]),
    ("real-claude-cat-heredoc", "cat > types/filters.ts << 'EOF'\nexport type TodoFilter = 'all';\nEOF",
     [Edit("types/filters.ts", content="export type TodoFilter = 'all';\n")]),
    ("real-claude-tee-json", "gh pr view 88 --json title 2>&1 | tee pr-88-details.json",
     [Edit("pr-88-details.json")]),
    ("real-exec-printf-gitignore",
     "bash -lc \"printf \\\"# Local artifacts\\\\nlogs/\\\\n\\\" > .gitignore && git add .gitignore\"",
     [Edit(".gitignore")]),
    ("tee-heredoc", "tee a.txt <<'EOF'\nhello\nEOF", [Edit("a.txt", content="hello\n")]),
    ("cat-heredoc-unquoted-dollar", "cat > f.sh <<EOF\necho $HOME\nEOF", [Edit("f.sh")]),
    # known text appended: lines after the last one (replayed where the text is known)
    ("append-known", "echo hi >> notes.md", [Edit("notes.md", insert_line=APPEND, new="hi\n")]),
    ("cat-append-heredoc", "cat >> f.py <<'EOF'\nx = 1\nEOF",
     [Edit("f.py", insert_line=APPEND, new="x = 1\n")]),
    ("append-unknown", "echo $X >> notes.md", [Edit("notes.md")]),
    ("sed-i-suffix-two-files", "sed -i.bak 's/x/y/' a.py b.py",
     [Edit("a.py", sed=SED_XY), Edit("b.py", sed=SED_XY)]),
    ("sed-i-bsd-empty-suffix", "sed -i '' 's/x/y/' a.py", [Edit("a.py", sed=SED_XY)]),
    ("sed-in-place-e", "sed --in-place -e 's/x/y/' a.py", [Edit("a.py", sed=SED_XY)]),
    ("redirect-tmp-and-devnull-ignored", "echo x > /tmp/a.txt; echo y > /dev/null", []),
    ("cd-edit-joined", "cd pkg && echo x > a.txt", [Edit("pkg/a.txt", content="x\n")]),
    ("apply-patch-delete", "apply_patch <<'P'\n*** Begin Patch\n*** Delete File: old.py\n*** End Patch\nP",
     [Edit("old.py", content="")]),
    ("apply-patch-argument", shlex.join(["apply_patch",
                                         "*** Begin Patch\n*** Update File: a.py\n@@\n ctx\n-x\n+y\n"
                                         "*** End Patch\n"]),
     [Edit("a.py", old="ctx\nx", new="ctx\ny")]),
    ("apply-patch-two-hunks",
     "apply_patch <<'P'\n*** Begin Patch\n*** Update File: a.py\n@@ def f\n a\n-b\n+c\n@@\n d\n-e\n"
     "*** End Patch\nP",
     [Edit("a.py", old="a\nb", new="a\nc"), Edit("a.py", old="d\ne", new="d")]),
    ("git-apply-heredoc",
     "git apply <<'EOF'\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -3,2 +3,2 @@\n a\n-b\n+c\nEOF",
     [Edit("x.py", old="a\nb", new="a\nc", hunks=((3, 2, 3, 2),))]),
    ("patch-p1-new-file",
     "patch -p1 <<'EOF'\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\nEOF",
     [Edit("new.py", content="x = 1\ny = 2\n")]),
]


@pytest.mark.parametrize("cmd,expected", [c[1:] for c in EDIT_CASES], ids=[c[0] for c in EDIT_CASES])
def test_edits(cmd: str, expected: list[Edit]) -> None:
    res = analyze(cmd)
    assert res.edits == expected
    if expected:
        assert res.category == "edit"


def test_heredoc_edit_has_no_read() -> None:
    res = analyze("cat > types/state.ts << 'EOF'\nimport { Todo } from './todo';\nEOF")
    assert res.reads == []
    assert res.edits == [Edit("types/state.ts", content="import { Todo } from './todo';\n")]


def test_programs_in_order_and_unwrapped() -> None:
    res = analyze("cd sub && timeout 5 pytest -q | tail -3; bash -lc 'git status'")
    assert res.programs == ["cd", "pytest", "tail", "git"]


@pytest.mark.parametrize("cmd,cwd,after", [
    ("cd sub", "/repo", "/repo/sub"),
    ("cd sub && ls", None, "sub"),
    ("cd /abs/dir", "/repo", "/abs/dir"),
    ("ls", "/repo", "/repo"),
    ("(cd sub; ls)", "/repo", "/repo"),
    ("cd ~", "/repo", None),
])
def test_cwd_after_command(cmd: str, cwd: str | None, after: str | None) -> None:
    assert analyze(cmd, cwd=cwd).cwd == after


def test_reads_stay_relative_to_call_cwd() -> None:
    res = analyze("cat a.py", cwd="/repo")
    assert res.reads == [R("a.py")]


def test_unparsed_reasons_are_recorded() -> None:
    assert analyze("cat $F").unparsed
    assert analyze("sed -n '1,5p' a/(b)/c.py").unparsed
    assert analyze("xargs cat").unparsed
    assert analyze("cat a.py").unparsed == []


def test_syntax_error_output_means_nothing_ran() -> None:
    cmd = bash_lc(f"sed -n '1,200p' {TS}")
    out = ("bash: -c: line 0: syntax error near unexpected token `('\n")
    res = analyze(cmd, out)
    assert res.reads == [] and res.edits == []
    assert res.category == "read"


def test_nothing_is_executed(tmp_path: Path) -> None:
    target = Path("/tmp") / f"streameval_pwned_{uuid.uuid4().hex}"
    marker = tmp_path / "m"
    for cmd in (f"touch {target}", f"bash -lc 'touch {target}'", f"echo x > {marker}",
                f"cat $(touch {target})", f"python -c 'open(\"{target}\", \"w\")'"):
        analyze(cmd, output="")
    assert not target.exists()
    assert not marker.exists()


def test_huge_grep_output() -> None:
    lines = "".join(f"src/m{i % 50}.py:{i}:hit\n" for i in range(1, 10001))
    res = analyze("grep -rn hit src | head -20000", lines)
    assert len(res.reads) == 50              # one read per file
    assert sum(len(r.shown.numbers) for r in res.reads) == 10000


def test_categories_are_valid() -> None:
    for _, cmd, out, _ in READ_CASES:
        assert analyze(cmd, out).category in CATEGORIES


def _command_of(o: dict) -> tuple[str, str | None] | None:
    """The shell command of one trace object (Claude Bash, Codex shell, exec, OpenHands)."""
    if o.get("type") == "tool_use" and o.get("name") == "Bash":
        return o["input"].get("command", ""), None
    if o.get("type") == "function_call" and o.get("name") == "shell":
        args = json.loads(o.get("arguments", "{}"))
        cmd = args.get("command")
        return (shlex.join(cmd), args.get("workdir")) if isinstance(cmd, list) else None
    if o.get("type") == "command_execution" and isinstance(o.get("command"), str):
        return o["command"], None
    if o.get("action") == "run" and isinstance(o.get("args"), dict):
        return o["args"].get("command", ""), None
    return None


def _walk(o: object, found: list[tuple[str, str | None]]) -> None:
    if isinstance(o, dict):
        cmd = _command_of(o)
        if cmd is not None:
            found.append(cmd)
        for v in o.values():
            _walk(v, found)
    elif isinstance(o, list):
        for v in o:
            _walk(v, found)


def _fixture_commands(root: Path) -> list[tuple[str, str | None]]:
    """Every shell command in the real traces."""
    found: list[tuple[str, str | None]] = []
    for path in sorted(root.glob("*/*")):
        if path.suffix == ".md" or not path.is_file():   # a conversation directory
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            docs = [json.loads(text)]
        except ValueError:
            docs = []
            for line in text.splitlines():
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    continue
        for doc in docs:
            _walk(doc, found)
    return found


def test_every_real_fixture_command_is_analyzed(real_fixtures: Path) -> None:
    cmds = _fixture_commands(real_fixtures)
    assert len(cmds) > 200
    cats = set()
    for cmd, cwd in cmds:
        res = analyze(cmd, None, cwd)
        assert res.category in CATEGORIES
        assert all(r.path and not r.path.startswith(("'", '"')) for r in res.reads)
        cats.add(res.category)
    assert {"read", "search", "edit", "test", "git", "build", "env"} <= cats


def test_parser_is_cached() -> None:
    from streameval.reading.shell import syntax

    analyze("ls")
    assert syntax._parser() is syntax._parser()


def test_output_none_vs_empty() -> None:
    # no output known: a grep names its file operand; empty output: nothing matched
    assert analyze("grep -n foo a.py").reads == [L("a.py")]
    assert analyze("grep -n foo a.py", "").reads == []


def test_does_not_touch_environment() -> None:
    before = dict(os.environ)
    analyze("export FOO=1 && cd /")
    assert dict(os.environ) == before


_SHELLY = "abc ./-'\"$`\\|&;<>(){}[]*?#~=\n\t0123456789"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_SHELLY, max_size=80), st.one_of(st.none(), st.text(max_size=200)))
def test_never_raises_on_arbitrary_text(cmd: str, output: str | None) -> None:
    res = analyze(cmd, output)
    assert res.category in CATEGORIES
    assert all(isinstance(r, Read) for r in res.reads)


_PROGRAMS = ["head", "tail", "sed", "sed -n", "sed -i", "grep", "grep -n", "patch", "cat", "nl -ba",
             "awk", "git show", "git diff", "find", "ls", "python -c", "perl -ne"]
# digits int() refuses though str.isdigit() accepts them ('²'), and ones it accepts ('٣')
_NUMBERISH = st.text(alphabet="²³٣0123456789-+,$pd", min_size=1, max_size=6)
_ARG = st.one_of(
    st.builds("".join, st.tuples(st.sampled_from(["-", "-p", "-n", "-c", "-m", "-A", "-C", "+", ""]),
                                 _NUMBERISH)),
    st.builds(lambda a, b: f"'{a},{b}p'", _NUMBERISH, _NUMBERISH),
    st.text(alphabet="²٣0123456789-+,/pnNrdaic '.\\{}~!:", min_size=1, max_size=12))


@settings(max_examples=400, deadline=None)
@example("patch", ["-p²"], " < x.diff")
@example("head", ["-c", "²"], " a.py")
@example("sed", ["-n", "'²,3p'"], " a.py")
@given(st.sampled_from(_PROGRAMS), st.lists(_ARG, max_size=4), st.sampled_from(["", " a.py", " | head -3", " < x.diff"]))
def test_never_raises_on_odd_options_of_known_programs(prog: str, args: list[str], tail: str) -> None:
    """Found by this test: ``patch -p²`` raised (``'²'.isdigit()`` is true, ``int`` refuses)."""
    res = analyze(" ".join([prog, *args]) + tail, "x\ny\n")
    assert res.category in CATEGORIES


def test_deep_nesting_is_not_an_exception() -> None:
    for cmd in ("(" * 3000 + "cat a.py" + ")" * 3000,
                "if true; then " * 3000 + "cat a.py; " + "fi; " * 3000):
        res = analyze(cmd)
        assert res.category in CATEGORIES


def test_non_utf8_and_surrogates() -> None:
    res = analyze("cat 'caf\udce9.py'", "caf\udce9")
    assert res.reads and res.reads[0].path.startswith("caf")


def test_import_does_not_load_tree_sitter() -> None:
    import subprocess
    import sys

    code = ("import sys, streameval.reading.shell, streameval.reading.categories; "
            "print('tree_sitter' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("cmd,reads", [
    ("sed -n '$p' f.py", [R("f.py", -1, None)]),
    ("nl -ba f.py | sed -n '10,20p' | head -5", [R("f.py", 10, 14)]),
    ("cat <<'EOF' | tee a.txt && cat b.py\nhello\nEOF", [R("b.py")]),
    ("cat a.py <<EOF\nx\nEOF", [R("a.py")]),
    ("sed -n '5,+3p' f.py", [R("f.py", 5, 8)]),
])
def test_more_pipelines(cmd: str, reads: list[Read]) -> None:
    assert analyze(cmd).reads == reads


@pytest.mark.parametrize("cmd,window,category,edits", [
    ("perl -ne 'print if 3..5' f.py", (3, 5), "read", 0),
    ("perl -ne 'print if $. >= 3 && $. <= 5' f.py", (3, 5), "read", 0),
    ("perl -lne 'print if /def /' f.py", (None, None), "read", 0),
    ("perl -pe 's/a/b/' f.py", (None, None), "read", 0),
    ("perl -pi -e 's/a/b/' f.py", None, "edit", 1),
    ("perl -i.bak -pe 's/a/b/' f.py", None, "edit", 1),
    ("perl fix.pl f.py", None, "run", 0),
])
def test_perl_one_liners(cmd: str, window, category: str, edits: int) -> None:
    """Filters over a file read it (the text decides which lines: gaps, or loose for
    a transform); ``-i`` edits it in a way we cannot replay; a script is not followed."""
    res = analyze(cmd, "x\n")
    assert res.category == category and len(res.edits) == edits
    if window is None:
        assert res.reads == []
        return
    (read,) = res.reads
    assert (read.path, read.start, read.end) == ("f.py", *window)
    assert read.shown.loose == ("-pe" in cmd)
    assert read.shown.gaps == ("/" in cmd)


@pytest.mark.parametrize("cmd", [
    # real mini-swe-agent commands whose grep matched nothing (empty output)
    'nl -ba lib/matplotlib/ticker.py | grep -n "class LogLocator" -A 100 | grep "def nonsingular" -A 20',
    "sed -n '1426,1600p' sphinx/ext/autodoc/__init__.py | grep -n \"def get_doc\"",
])
def test_numbered_pipe_that_printed_nothing_read_nothing(cmd: str) -> None:
    assert analyze(cmd, "").reads == []


def test_heredoc_then_and_and() -> None:
    res = analyze("cat > f.py <<'EOF' && python f.py\nprint(1)\nEOF")
    assert res.edits == [Edit("f.py", content="print(1)\n")]
    assert res.programs == ["cat", "python"]
    assert res.reads == []


# ------------------------------------------------------------------ golden-test regressions

# codex-exec hive-mind issue-642, call 1 (exit 0): the first `echo >` fails because logs/
# does not exist yet; mkdir makes it, the group appends to the log, tail shows it.
ISSUE642_CALL1 = (
    'bash -lc "echo \'Listing files\' > logs/01_repo_tree.log 2>&1; mkdir -p logs; '
    '(ls -la; printf \'\\\\n\\\\n\'; rg --files || true) >> logs/01_repo_tree.log 2>&1; '
    'tail -n +1 logs/01_repo_tree.log"')
ISSUE642_CALL1_OUT = (
    "bash: line 1: logs/01_repo_tree.log: No such file or directory\n"
    "total 1040\n"
    "drwxrwxr-x    4 hive hive    4096 Nov  1 15:44 .\n"
    "drwxrwxrwt 2277 root root 1028096 Nov  1 15:44 ..\n"
    "drwxrwxr-x    8 hive hive    4096 Nov  1 15:44 .git\n"
    "-rw-rw-r--    1 hive hive     142 Nov  1 15:44 CLAUDE.md\n"
    "-rw-rw-r--    1 hive hive     418 Nov  1 15:44 README.md\n"
    "-rw-rw-r--    1 hive hive    8466 Nov  1 15:44 codex_prompt.txt\n"
    "drwxrwxr-x    2 hive hive    4096 Nov  1 15:44 logs\n"
    "\n\nCLAUDE.md\nlogs/01_repo_tree.log\nREADME.md\ncodex_prompt.txt\n")


def test_redirect_no_such_file_does_not_cancel_later_tail_read() -> None:
    """real: the error line is the failed redirect's, not the later tail's."""
    res = analyze(ISSUE642_CALL1, ISSUE642_CALL1_OUT)
    assert res.reads == [R("logs/01_repo_tree.log", 1, None)]


@pytest.mark.parametrize("cmd,output,reads", [
    # one error line per failure, handed out in execution order
    ("cat d/f.py; mkdir d; echo x > d/f.py; cat d/f.py",
     "cat: d/f.py: No such file or directory\nx\n", [R("d/f.py")]),
    ("cat a.py; cat a.py", "cat: a.py: No such file or directory\n"
                           "cat: a.py: No such file or directory\n", []),
    ("cat a.py b.py", "cat: a.py: No such file or directory\nx = 1\n", [R("b.py")]),
    ("sed -n '1,2p;8,9p' a.py", "sed: can't read a.py: No such file or directory\n", []),
    ("echo x > d/f.py; cat d/f.py", "bash: d/f.py: No such file or directory\n"
                                    "cat: d/f.py: No such file or directory\n", []),
])
def test_no_such_file_cancels_only_its_own_command(cmd: str, output: str,
                                                   reads: list[Read]) -> None:
    assert analyze(cmd, output).reads == reads


# codex-exec hive-mind issue-642, call 10: three commands share one output
ISSUE642_CALL10 = ("bash -lc 'git branch --show-current | tee -a logs/01_branch.log && echo && "
                   "ls -la | tee -a logs/02_ls_root.log && echo && "
                   "rg --files -S | tee -a logs/03_files_list.log'")
ISSUE642_CALL10_OUT = (
    "issue-1-06e1c096\n\ntotal 1048\n"
    "drwxrwxr-x    4 hive hive    4096 Nov  1 15:45 .\n"
    "drwxrwxrwt 2277 root root 1028096 Nov  1 15:46 ..\n"
    "drwxrwxr-x    8 hive hive    4096 Nov  1 15:46 .git\n"
    "-rw-rw-r--    1 hive hive     418 Nov  1 15:44 README.md\n"
    "-rw-rw-r--    1 hive hive    8828 Nov  1 15:46 codex_prompt.txt\n"
    "-rw-rw-r--    1 hive hive     106 Nov  1 15:45 hello.v\n"
    "-rw-rw-r--    1 hive hive      72 Nov  1 15:45 hello_test.v\n"
    "drwxrwxr-x    2 hive hive    4096 Nov  1 15:46 logs\n"
    "-rw-rw-r--    1 hive hive      49 Nov  1 15:45 main.v\n"
    "\ncodex_prompt.txt\nhello_test.v\nREADME.md\nmain.v\nhello.v\nlogs/02_readme_head.log\n"
    "logs/05_check_v.log\nlogs/06_v_test.log\nlogs/01_branch.log\nlogs/01_repo_tree.log\n"
    "logs/02_ls_root.log\nlogs/03_files_list.log\nlogs/03_claude_head.log\n"
    "logs/04_codex_prompt_head.log\n")


def test_shared_output_git_branch_ls_long_rg_files_lists_only_files() -> None:
    """real: no `ls -l` line, `total N` or branch name becomes a file name."""
    res = analyze(ISSUE642_CALL10, ISSUE642_CALL10_OUT)
    assert all(r.listing for r in res.reads)
    names = [r.path for r in res.reads]
    assert names[:5] == ["README.md", "codex_prompt.txt", "hello.v", "hello_test.v", "main.v"]
    assert set(names) == {"README.md", "codex_prompt.txt", "hello.v", "hello_test.v", "main.v",
                          *(ln for ln in ISSUE642_CALL10_OUT.split("\n") if ln.startswith("logs/"))}
    assert not [n for n in names if " " in n or n in ("issue-1-06e1c096", "logs", ".git")]


# ContextBench SWE-agent xarray-4075, call 2: the first grep failed (`bash grep` ran grep
# as a script), the second printed matches, then `ls -R` columns
XARRAY_CALL2 = ('grep -Rn "weighted" -n /testbed/xarray/core; grep -Rn "dot(" -n '
                '/testbed/xarray/core; ls -R /testbed/xarray/core')
XARRAY_CALL2_OUT = (
    "/usr/bin/grep: /usr/bin/grep: cannot execute binary file\n"
    "/testbed/xarray/core/weighted.py:135:        return dot(da, weights, dims=dim)\n"
    "/testbed/xarray/core/dataarray.py:2604:        return self.dot(obj)\n"
    "/testbed/xarray/core:\n"
    "__init__.py\t dask_array_compat.py  indexes.py   pdcompat.py\n"
    "accessor_dt.py\t dask_array_ops.py     indexing.py  pycompat.py\n")


def test_shared_output_stderr_line_then_grep_then_ls_columns() -> None:
    res = analyze(XARRAY_CALL2, XARRAY_CALL2_OUT)
    core = "/testbed/xarray/core/"
    assert res.reads[:2] == [R(core + "weighted.py", 135, 135), R(core + "dataarray.py", 2604, 2604)]
    assert [r.path for r in res.reads[2:]] == [core + n for n in (
        "__init__.py", "dask_array_compat.py", "indexes.py", "pdcompat.py", "accessor_dt.py",
        "dask_array_ops.py", "indexing.py", "pycompat.py")]


@pytest.mark.parametrize("cmd,output,reads", [
    # a listing followed by output of unknown length: its run of name-like lines only
    ("ls /repo; cat /etc/hosts", "/repo:\na.py\nsub\n127.0.0.1 localhost\n",
     [L("/repo/a.py"), L("/repo/sub"), R("/etc/hosts")]),
    # names after another command's unknown output: not attributable, none taken
    ("python x.py; rg --files", "done\na.py\nb.py\n", []),
    ("git log -1 --format=%s; ls", "fix\na.py\n", []),
    ("cat a.py && find . -name '*.py'", "x = 1\n./b.py\n", [R("a.py")]),
    # lines only grep -n prints are found after unknown output
    ("cat a.py; grep -n foo b.py", "x = 1\n12:foo()\n", [R("a.py"), R("b.py", 12, 12)]),
    ("echo '== hits'; grep -rn foo src", "== hits\nsrc/a.py:3:foo\n", [R("src/a.py", 3, 3)]),
    ("python x.py; ls -l", "hello.py\ntotal 4\n-rw-r--r-- 1 u u 7 Nov  1 15:45 b.py\n",
     [L("b.py")]),
    # one printer still gets every line
    ("cd src && ls", "a.py\nb.py\n", [L("src/a.py"), L("src/b.py")]),
    # printers of exactly one line are stepped over
    ("pwd && ls", "/repo\na.py\nb.py\n", [L("a.py"), L("b.py")]),
    ("git branch --show-current | tee -a b.log && rg --files", "main\na.py\n", [L("a.py")]),
])
def test_shared_output_is_split_between_commands(cmd: str, output: str,
                                                 reads: list[Read]) -> None:
    assert analyze(cmd, output).reads == reads


def test_ls_long_format_names() -> None:
    out = ("total 8\nlrwxrwxrwx 1 u u 7 Nov  1 15:45 link.py -> target.py\n"
           "-rw-r--r-- 1 u u 7 Nov  1 15:45 my file.py\ndrwxr-xr-x 2 u u 4096 Nov  1 15:45 pkg\n")
    assert analyze("ls -la", out).reads == [L("link.py"), L("my file.py")]


# ContextBench SWE-agent xarray-4075, call 11: literal `\n` inside `bash -lc '...'`
XARRAY_CALL11 = (
    "bash -lc 'cat >/tmp/repro.py <<PY\\nimport numpy as np\\nimport xarray as xr\\n"
    "print(\\\"xarray from:\\\", xr.__file__)\\ndta = xr.DataArray([1., 1., 1.])\\n"
    "wgt = xr.DataArray(np.array([1, 1, 0], dtype=np.bool_))\\n"
    "print(\\\"dot(notnull, wgt):\\\", xr.dot(dta.notnull(), wgt).values)\\n"
    "res = dta.weighted(wgt).mean()\\n"
    "print(\\\"Weighted mean with bool weights (before fix):\\\", res.values)\\n"
    "PY\\nPYTHONPATH=/testbed python /tmp/repro.py'\n")
XARRAY_CALL11_OUT = (
    "bash: line 1: warning: here-document at line 1 delimited by end-of-file "
    "(wanted `PYnimport')\nbash: -c: line 1: syntax error near unexpected token `('\n")


def test_unparsable_cat_heredoc_then_python_is_run_not_read() -> None:
    res = analyze(XARRAY_CALL11, XARRAY_CALL11_OUT)
    assert res.category == "run"
    assert res.programs == ["cat", "python"]
    assert res.reads == [] and res.edits == []
    assert analyze(XARRAY_CALL11).category == "run"   # without the output, same scan


@pytest.mark.parametrize("cmd,category,programs", [
    ("cat > src/a.py <<EOF\nx = (\nEOF\n)", "edit", ["cat"]),
    ("timeout 5 env A=1 pytest -q 2>&1 | tee out.log; )", "test", ["pytest", "tee"]),
    ("(cat a.py; grep -n x b.py) && $(make test) ; if [ -f x ]; then ruff .; fi )", "test",
     ["cat", "grep", "make", "[", "ruff"]),
    ("sed -n '1,5p' a/(b)/c.py", "read", ["sed"]),   # parentheses inside a word
    ("echo hi > /dev/null; cat > notes.log <<EOF\nx\nEOF\n)", "other", ["echo", "cat"]),
])
def test_syntax_error_scan_categorizes_every_program(cmd: str, category: str,
                                                     programs: list[str]) -> None:
    res = analyze(cmd)
    assert res.unparsed and res.reads == [] and res.edits == []
    assert (res.category, res.programs) == (category, programs)


def test_cat_heredoc_into_scratch_file_is_not_a_read() -> None:
    assert analyze("cat > /tmp/x.py <<'EOF'\nprint(1)\nEOF").category == "other"
    assert analyze("cat > /tmp/x.py <<'EOF'\nprint(1)\nEOF\npython /tmp/x.py").category == "run"


@pytest.mark.parametrize("cmd,edits,reverted", [
    ("git checkout -- a.py src/b.py", ["a.py", "src/b.py"], ["a.py", "src/b.py"]),
    ("git checkout lib/matplotlib/pyplot.py", ["lib/matplotlib/pyplot.py"],
     ["lib/matplotlib/pyplot.py"]),                    # real: mini-swe-agent matplotlib
    ("git checkout HEAD a.py", ["a.py"], ["a.py"]),
    ("git checkout HEAD~1 -- a.py", ["a.py"], []),     # another commit: content unknown
    ("git restore a.py", ["a.py"], ["a.py"]),
    ("git restore --worktree --staged a.py", ["a.py"], ["a.py"]),
    ("git restore --source=HEAD~2 a.py", ["a.py"], []),
    ("git restore --source main a.py", ["a.py"], []),
    ("git restore -s HEAD a.py", ["a.py"], ["a.py"]),
    ("git restore --staged a.py", [], []),             # the index only
    ("git restore -S a.py", [], []),
    ("cd sub && git checkout -- a.py", ["sub/a.py"], ["sub/a.py"]),
    ("git -C sub restore x.py", ["sub/x.py"], ["sub/x.py"]),
    ("git checkout main", [], []),                     # branch switches
    ("git checkout feature/x", [], []),
    ("git checkout -b fix-1.py", [], []),
    ("git checkout .", ["."], ["."]),                  # every file under the cwd
])
def test_git_revert_is_a_bare_edit_plus_reverted(cmd: str, edits: list[str],
                                                 reverted: list[str]) -> None:
    res = analyze(cmd)
    assert res.edits == [Edit(p) for p in edits]
    assert res.reverted == reverted
    assert res.category == "git"   # undoing edits is version control, not an edit


def test_git_revert_of_a_directory_is_reported_for_the_inference() -> None:
    """The inference resets every edited file under it (tests/reading/test_steps_shell.py)."""
    res = analyze("git checkout -- src/")
    assert res.reverted == ["src"] and res.category == "git"
    assert analyze("cd lib && git restore .").reverted == ["lib"]
    assert analyze("git reset --hard").reverted == [":/"]
    assert analyze("git reset --hard HEAD~3").reverted == []
    assert analyze("git checkout -- a.py && sed -i 's/a/b/' c.py").category == "edit"


def test_git_revert_inside_bash_c_stays_git() -> None:
    res = analyze(bash_lc("git checkout -- a.py"))
    assert (res.edits, res.reverted, res.category) == ([Edit("a.py")], ["a.py"], "git")


def test_shared_output_notes_only_refused_listing_lines() -> None:
    assert analyze("python x.py; rg --files", "done\na.py\n").unparsed
    assert analyze("cat a.py; grep -n foo b.py", "x = 1\n").unparsed == []
