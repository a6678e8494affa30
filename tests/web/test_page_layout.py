"""The page's layout in a real browser at 1,280 px, the width the README's pictures are
taken at: the fleet fits it, names cut and whole in their titles, more numbers a tick
away in the column chooser; a run page labels its numbers and shows redundancy; a strip
colours a line by the step that first read it, whatever the run's length; a run that
was not scored says so and shows nothing that contradicts it; values from a trace can
neither reorder the page (U+202E) nor widen it (a 100 KB id); runs named ``.`` and
``..`` have their pages, and an unknown run says so without empty panels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from claude_run import APP, UTIL, Claude, append
from web_process import ROOT, Streameval, run_dir, tool_call, wait_for_run, watch

from streameval.model import GRANULARITIES
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTH = 1280   # the browser's viewport (conftest.py)
LONG_MODEL = "anthropic/claude-sonnet-4-5-20250929-thinking-32k-deployment-eu-west-1-batch"
HUGE_ID = "r" + "x" * 100_000   # 100 KB: once made the fleet 3.1 M px wide


def widths(tab) -> dict:
    return tab.evaluate("""() => {
        const s = document.querySelector('.scroll');
        return {page: document.documentElement.scrollWidth, scroll: s.scrollWidth, client: s.clientWidth};
    }""")


def header_keys(tab) -> list[str]:
    return tab.eval_on_selector_all("#fleet thead th[data-key]", "ths => ths.map(t => t.dataset.key)")


def test_the_fleet_fits_1280_px_and_cuts_long_names_whole_in_their_title(setup, tmp_path, page):
    s, runs = setup
    c = Claude()
    append(run_dir(runs, "alpha", model=LONG_MODEL, experiment="ablation-without-the-repository-map"),
           c.init(), *c.read("src/app.py", APP, 1, 20))
    c2 = Claude()
    append(run_dir(runs, "huge", run_id=HUGE_ID, agent=HUGE_ID), c2.init(), *c2.read("src/util.py", UTIL, 1, 5))
    w = watch(runs, s, tmp_path)
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function("() => document.querySelectorAll('#fleet tbody tr').length === 2")
        got = widths(page.tab)
        assert got["page"] <= WIDTH and got["scroll"] <= got["client"], got
        # the key numbers and the last call are on screen, not behind a scrollbar
        keys = header_keys(page.tab)
        for key in ("state", "id", "agent", "model", "experiment", "instance", "steps", "line.coverage",
                    "line.precision", "line.f1", "line.redundancy", "editloc", "problems", "last"):
            assert key in keys, keys
            right = page.tab.eval_on_selector(f'#fleet th[data-key="{key}"]', "th => th.getBoundingClientRect().right")
            assert right <= WIDTH, (key, right)
        # one line per row: a long model name is cut, not wrapped, and whole in its title
        heights = page.tab.eval_on_selector_all("#fleet tbody tr", "rs => rs.map(r => r.getBoundingClientRect().height)")
        assert max(heights) < 32, heights
        cells = page.tab.eval_on_selector_all(
            "#fleet tbody tr td.cut", "tds => tds.map(td => [td.textContent, td.title, td.scrollWidth > td.clientWidth])")
        model = next(cell for cell in cells if cell[1] == LONG_MODEL)
        assert model[2], "the model name fits its column: not a test of cutting"
        # the 100 KB id: a short text, the whole id in the link's title
        link = page.tab.eval_on_selector_all(
            "a.run-link", "as => as.map(a => [a.textContent.length, a.title.length])")
        assert [len(HUGE_ID) + 0] == [t for _n, t in link if t > 1000]
        assert all(n <= 160 for n, _t in link)
        page.screenshot("fleet-1280.png")
        assert page.problems() == []
    finally:
        w.stop()


def test_the_column_chooser_adds_numbers_pins_the_run_and_is_remembered(setup, tmp_path, page):
    s, runs = setup
    c = Claude()
    append(run_dir(runs, "alpha"), c.init(), *c.read("src/app.py", APP, 1, 20))
    w = watch(runs, s, tmp_path)
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_selector("#fleet tbody tr")
        keys = header_keys(page.tab)
        assert [k for k in keys if "." in k] == [f"line.{m}" for m in ("coverage", "precision", "f1", "redundancy")]
        assert "calls" not in keys
        page.tab.click("#columns summary")
        for g in GRANULARITIES:
            for m in ("coverage", "precision", "f1", "auc", "redundancy"):
                page.tab.check(f'input[data-column="{g}.{m}"]')
        page.tab.check('input[data-column="calls"]')
        page.tab.wait_for_selector('#fleet th[data-key="file.coverage"]')
        # a granularity heads its numbers
        groups = page.tab.eval_on_selector_all("#fleet th.group", "ths => ths.map(t => t.textContent)")
        assert groups == list(GRANULARITIES)
        # wider than the screen now: it scrolls, and the run stays in sight
        assert widths(page.tab)["scroll"] > widths(page.tab)["client"]
        page.tab.eval_on_selector(".scroll", "s => { s.scrollLeft = s.scrollWidth; }")
        page.tab.wait_for_timeout(100)
        left = page.tab.eval_on_selector("a.run-link", "a => a.getBoundingClientRect().left")
        box = page.tab.eval_on_selector(".scroll", "s => s.getBoundingClientRect().left")
        assert box <= left < box + 300, (box, left)
        # remembered by the browser
        page.tab.reload()
        page.tab.wait_for_selector("#fleet tbody tr")
        assert "file.coverage" in header_keys(page.tab) and "calls" in header_keys(page.tab)
        page.tab.click("#columns summary")
        page.tab.click("#columns button")
        page.tab.wait_for_function("() => !document.querySelector('#fleet th[data-key=\"file.coverage\"]')")
        assert widths(page.tab)["scroll"] <= widths(page.tab)["client"]
        assert page.problems() == []
    finally:
        w.stop()


def test_the_run_page_shows_redundancy_and_labels_the_coverage_after_each_step(setup, tmp_path, page):
    s, runs = setup
    trace = run_dir(runs, "again")
    c = Claude()
    # the second read of app.py shows nothing new: redundancy
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 12), *c.read("src/app.py", APP, 1, 12),
           *c.read("src/util.py", UTIL, 1, 5))
    record = evaluate_trace(trace, load_resources(str(s.gold), None, str(s.repo)), root=runs)[0]
    assert record["trajectory"]["redundancy"]["line"] > 0
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, "again")
        page.tab.goto(w.base + "/runs/again")
        page.tab.wait_for_selector("table.numbers td.redundancy")
        head = page.tab.eval_on_selector_all("table.numbers thead th", "ths => ths.map(t => t.textContent)")
        assert head == ["final, by granularity", "coverage", "precision", "F1", "AUC", "redundancy"]
        for g in GRANULARITIES:
            shown = page.tab.text_content(f'table.numbers tr[data-granularity="{g}"] td.redundancy')
            assert shown == f"{record['trajectory']['redundancy'][g]:.2f}", g
        # each number after a step is labelled by its granularity
        assert page.tab.text_content("table.calls-table th.group") == "coverage after the step"
        sub = page.tab.eval_on_selector_all("table.calls-table tr.sub th", "ths => ths.map(t => t.textContent)")
        assert sub == list(GRANULARITIES)
        for g in GRANULARITIES:
            cell = page.tab.text_content(f'tr.call[data-n="3"] td.cov[data-granularity="{g}"]')
            assert cell == f"{record['trajectory']['steps'][2]['coverage'][g]:.2f}", g
        assert page.problems() == []
    finally:
        w.stop()


def read_fill(tab, file: str) -> list[list[str]]:
    return tab.eval_on_selector_all(
        f'section.strip[data-file="{file}"] rect.read', "rs => rs.map(r => [r.dataset.step, r.getAttribute('fill'), r.dataset.bin])")


def test_a_strip_colours_a_read_by_its_step_not_by_the_runs_length(setup, tmp_path, page):
    s, runs = setup
    trace = run_dir(runs, "long")
    c = Claude()
    append(trace, c.init(), *c.read("src/util.py", UTIL, 1, 3), *c.read("src/app.py", APP, 1, 12))
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, "long")
        page.tab.goto(w.base + "/runs/long")
        page.tab.wait_for_selector('section.strip[data-file="src/app.py"] rect.read', state="attached")
        before = read_fill(page.tab, "src/app.py")
        assert [r[0] for r in before] == ["2"]
        # twenty steps more: the read of step 2 keeps its colour
        for i in range(20):
            append(trace, *c.read("src/util.py", UTIL, 1 + i % 3, 2 + i % 3))
        page.tab.wait_for_function(
            "() => document.querySelector('polyline[data-granularity=line]').dataset.points === '22'")
        assert read_fill(page.tab, "src/app.py") == before
        # the legend says which steps each colour is, and the colour of step 2 is its bin's
        bins = page.tab.eval_on_selector_all(
            ".legend .bins .swatch", "ss => ss.map(s => [s.textContent, s.dataset.bin, s.dataset.colour])")
        assert [b[0] for b in bins] == ["1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65-128", "129+"]
        assert [b[2] for b in bins if b[1] == before[0][2]] == [before[0][1]]
        assert page.problems() == []
    finally:
        w.stop()


def example_runs(tmp: Path) -> Path:
    runs = tmp / "runs"
    shutil.copytree(ROOT / "examples" / "runs" / "example-run-1", runs / "example-run-1")
    return runs


def test_a_run_not_scored_says_so_and_nothing_that_contradicts_it(tmp_path, page):
    """`--repo` naming an empty folder holds none of the gold files (`gold_not_in_repo`):
    the run is not scored. Without --out no record is written either. (A missing clone is no
    longer this case: the run is then scored on its gold-free signals, docs/metrics.md §5b.)"""
    runs = example_runs(tmp_path)
    ex = ROOT / "examples"
    empty = tmp_path / "empty-repo"
    empty.mkdir()
    w = Streameval("watch", str(runs), "--gold", str(ex / "gold.jsonl"), "--repo", str(empty),
                   "--patch-grace", "0", cwd=tmp_path)
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function(
            "() => document.querySelector('#fleet-summary')?.textContent.includes('1 not scored')")
        page.tab.wait_for_timeout(2500)   # a poll after its record was settled
        assert page.tab.text_content("#fleet td.state") == "not scored"   # no ✓: nothing was written
        _status, _h, body = w.get("/api/run?id=example-run-1")
        detail = json.loads(body)
        assert detail["run"]["record"] is False and detail["run"]["error"].startswith("gold_not_in_repo")
        page.tab.click("a.run-link")
        page.tab.wait_for_selector(".not-scored")
        assert "gold_not_in_repo" in page.tab.text_content(".not-scored")
        main = page.tab.inner_text("main")
        assert "record written" not in main and "no --out" in main
        facts = dict(zip(page.tab.eval_on_selector_all("dl.facts dt", "ds => ds.map(d => d.textContent)"),
                         page.tab.eval_on_selector_all("dl.facts dd", "ds => ds.map(d => d.textContent)")))
        assert facts["state"] == "not scored" and facts["tool calls"] == "18"
        assert "EditLoc" not in facts and "steps" not in facts, facts
        assert page.tab.eval_on_selector_all("table.numbers", "t => t.length") == 0
        assert page.tab.text_content("#curve text.empty") == "not scored: no coverage to draw"
        page.screenshot("run-not-scored.png")
    finally:
        w.stop()
    out = tmp_path / "out.jsonl"
    w = Streameval("watch", str(runs), "--gold", str(ex / "gold.jsonl"), "--repo", str(empty),
                   "--patch-grace", "0", "--out", str(out), cwd=tmp_path)
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function("() => document.querySelector('#fleet td.state')?.textContent === 'not scored ✓'")
        assert json.loads(out.read_text())["error"].startswith("gold_not_in_repo")
    finally:
        w.stop()


RLO = "\u202e"


def test_a_right_to_left_override_in_a_trace_reorders_nothing_on_the_page(setup, tmp_path, page):
    s, runs = setup
    c = Claude()
    append(run_dir(runs, "bidi", agent=f"agent{RLO}edoc"), c.init(), *c.read("src/app.py", APP, 1, 5),
           *tool_call(c, "Read", {"file_path": f"/elsewhere/{RLO}txt.exe"}, "     1→hello"))
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, "bidi")
        page.tab.goto(w.base + "/runs/bidi")
        page.tab.wait_for_selector("li.read code")
        # the words after the value still read left to right
        order = page.tab.evaluate("""() => {
            const li = [...document.querySelectorAll('li.read')].find(l => l.textContent.includes('not in the repository'));
            const node = [...li.childNodes].find(n => n.nodeType === 3 && n.textContent.includes('not in'));
            const at = i => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                              return r.getBoundingClientRect().left; };
            const t = node.textContent;
            return [li.querySelector('code').textContent, at(t.indexOf('(')) < at(t.indexOf(')'))];
        }""")
        assert order == ["/elsewhere/\\u202etxt.exe", True]
        page.tab.goto(w.base + "/")
        page.tab.wait_for_selector("#fleet tbody tr")
        agent = page.tab.eval_on_selector("#fleet tbody td.cut.v[title*='agent']", "td => [td.textContent, getComputedStyle(td).unicodeBidi]")
        assert agent == ["agent\\u202eedoc", "isolate"]   # the control shown, not obeyed
        assert page.problems() == []
    finally:
        w.stop()


def test_runs_named_dot_and_dot_dot_have_their_pages(setup, tmp_path, page):
    s, runs = setup
    for folder, run_id in (("one-dot", "."), ("two-dots", "..")):
        c = Claude()
        append(run_dir(runs, folder, run_id=run_id), c.init(), *c.read("src/app.py", APP, 1, 12))
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, ".")
        wait_for_run(w, "..")
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function("() => document.querySelectorAll('#fleet tbody tr').length === 2")
        for run_id in (".", ".."):
            page.tab.goto(w.base + "/")
            page.tab.wait_for_selector("a.run-link")
            page.tab.evaluate("id => [...document.querySelectorAll('a.run-link')].find(a => a.textContent === id).click()", run_id)
            page.tab.wait_for_function(
                "id => document.querySelector('#run-id')?.textContent === id && document.querySelector('polyline[data-granularity=line]')",
                arg=run_id)
            assert page.tab.eval_on_selector_all("section.strip", "s => s.length") == 2
        assert page.problems() == []
    finally:
        w.stop()


def test_an_unknown_run_says_so_without_empty_panels(setup, tmp_path, page):
    s, runs = setup
    w = watch(runs, s, tmp_path)
    try:
        page.tab.goto(w.base + "/runs/nobody")
        page.tab.wait_for_selector(".missing")
        assert "no run 'nobody' here" in page.tab.text_content(".missing")   # the server's own message
        assert page.tab.eval_on_selector_all("#curve, #strips, #calls, h2", "els => els.length") == 0
    finally:
        w.stop()
