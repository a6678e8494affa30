"""The page in a real browser, served by a real ``streameval watch`` over real files:
the fleet fills as traces are written, a run's curve gains points as it grows, a gold
strip marks a line by the step that read it, hostile trace values stay text and run
nothing, and the page keeps working with 1,000 active runs."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from claude_run import APP, UTIL, WORKSPACE, Claude, append
from web_process import ROOT, Streameval, bash, run_dir, wait_for_run, watch

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def fleet_row_ids(tab) -> list[str]:
    return tab.eval_on_selector_all("#fleet tbody tr", "rows => rows.map(r => r.dataset.run)")


def points(tab, granularity: str = "line") -> int:
    return int(tab.get_attribute(f'polyline[data-granularity="{granularity}"]', "data-points"))


def test_the_fleet_fills_as_traces_are_written(setup, tmp_path, page):
    s, runs = setup
    w = watch(runs, s, tmp_path)
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function(
            "() => document.querySelector('#fleet-summary')?.textContent.startsWith('0 run(s)')")
        c1 = Claude()
        append(run_dir(runs, "alpha"), c1.init(), *c1.read("src/app.py", APP, 1, 20))
        page.tab.wait_for_function(
            "() => document.querySelector('#fleet tbody tr[data-run=alpha]')")
        c2 = Claude()
        append(run_dir(runs, "beta"), c2.init(), *c2.read("src/util.py", UTIL, 1, 3))
        page.tab.wait_for_function(
            "() => document.querySelectorAll('#fleet tbody tr').length === 2")
        assert sorted(fleet_row_ids(page.tab)) == ["alpha", "beta"]
        # a row moves as its run grows (only changed rows are sent: the delta path)
        append(runs / "alpha" / "trace.jsonl", *c1.read("src/util.py", UTIL, 1, 5))
        page.tab.wait_for_function(
            "() => [...document.querySelectorAll('#fleet tr[data-run=alpha] td')].some(td => td.textContent === '2')")
        summary = page.tab.text_content("#fleet-summary")
        assert summary.startswith("2 run(s): 2 running")
        # the filter keeps what matches
        page.tab.fill("#filter", "beta")
        page.tab.wait_for_function(
            "() => document.querySelectorAll('#fleet tbody tr').length === 1")
        assert fleet_row_ids(page.tab) == ["beta"]
        page.screenshot("fleet-filling.png")
        assert page.problems() == []
    finally:
        w.stop()


def test_a_run_page_curve_gains_points_as_the_run_grows(setup, tmp_path, page):
    s, runs = setup
    trace = run_dir(runs, "grow")
    c = Claude()
    append(trace, c.init(), *c.read("src/util.py", UTIL, 1, 3))
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, "grow")
        page.tab.goto(w.base + "/runs/grow")
        page.tab.wait_for_selector('polyline[data-granularity="line"]', state="attached")
        assert points(page.tab) == 1
        append(trace, *c.read("src/app.py", APP, 1, 5))
        page.tab.wait_for_function(
            "() => document.querySelector('polyline[data-granularity=line]').dataset.points === '2'")
        append(trace, *c.read("src/app.py", APP, 6, 10))
        page.tab.wait_for_function(
            "() => document.querySelector('polyline[data-granularity=line]').dataset.points === '3'")
        # the curve is the record's: line coverage 0, then 2/6, then 6/6
        ys = page.tab.get_attribute('polyline[data-granularity="line"]', "points").split()
        assert len(ys) == 3 and float(ys[0].split(",")[1]) > float(ys[1].split(",")[1]) > float(ys[2].split(",")[1])
        rows = page.tab.eval_on_selector_all("tr.call", "rows => rows.map(r => r.dataset.n)")
        assert rows == ["1", "2", "3"]
        assert page.problems() == []
    finally:
        w.stop()


def test_a_gold_strip_shows_a_line_read_at_step_3_as_read(setup, tmp_path, page):
    s, runs = setup
    trace = run_dir(runs, "strip")
    c = Claude()
    # steps 1 and 2 read no init_ctx line of src/app.py (gold 4-9); step 3 reads 1-12
    append(trace, c.init(), *c.read("src/util.py", UTIL, 1, 3), *c.read("src/app.py", APP, 20, 30),
           *c.read("src/app.py", APP, 1, 12))
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, "strip")
        page.tab.goto(w.base + "/runs/strip")
        strip = 'section.strip[data-file="src/app.py"]'
        page.tab.wait_for_selector(f"{strip} rect.read", state="attached")
        found = page.tab.eval_on_selector_all(f"{strip} rect.read", """rects => rects
            .filter(r => +r.dataset.from <= 5 && 5 <= +r.dataset.to)
            .map(r => [r.dataset.step, r.querySelector('title').textContent])""")
        assert found == [["3", "lines 1-12 first credited at step 3"]]
        earlier = page.tab.eval_on_selector_all(f"{strip} rect.read", "rs => rs.map(r => r.dataset.step)")
        assert sorted(earlier) == ["2", "3"]
        # util.py: add_ctx 1-5, lines 4-5 never shown, and said so
        util = page.tab.text_content('section.strip[data-file="src/util.py"] ul.uncredited')
        assert "lines 4-5" in util and "never shown" in util
        page.screenshot("run-strip.png")
        assert page.problems() == []
    finally:
        w.stop()


SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'
JS_URL = "javascript:window.__pwned = 3"


def test_hostile_trace_values_render_as_text_and_nothing_runs(setup, tmp_path, page):
    s, runs = setup
    run_id = f"evil{SCRIPT}"
    d = runs / "evil"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": run_id,
                                             "agent": IMG, "model": JS_URL}))
    c = Claude()
    append(d / "trace.jsonl", c.init(),
           *bash(c, f"echo '{SCRIPT}' && open '{JS_URL}' # {IMG}", f"{SCRIPT}\n{IMG}\n"),
           *c.read("src/app.py", APP, 1, 10),
           *bash(c, f"cat {WORKSPACE}/{IMG}.py", "no such file"))
    w = watch(runs, s, tmp_path)
    try:
        wait_for_run(w, run_id)
        for path in ("/", "/runs/" + urllib.parse.quote(run_id, safe="")):
            page.tab.goto(w.base + path)
            page.tab.wait_for_function(
            "() => document.querySelector('#status').textContent.startsWith('live')")
            page.tab.wait_for_timeout(300)   # a poll more: any injected markup would have run
            text = page.tab.inner_text("main")
            assert SCRIPT in text and IMG in text and JS_URL in text
            assert page.tab.evaluate("window.__pwned") is None
            assert page.tab.eval_on_selector_all("main img, main script, main iframe", "els => els.length") == 0
            hrefs = page.tab.eval_on_selector_all("a", "as => as.map(a => a.getAttribute('href'))")
            assert not any(h.lower().startswith("javascript") for h in hrefs), hrefs
        assert page.tab.text_content("#run-id") == run_id
        assert page.problems() == []   # no CSP violation was even attempted
        # the policy the browser enforced: nothing inline, nothing from elsewhere
        status, headers, _ = w.get("/")
        csp = {k.lower(): v for k, v in headers.items()}["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "require-trusted-types-for 'script'" in csp
    finally:
        w.stop()


def test_an_injected_inline_script_is_refused_by_the_policy(setup, tmp_path, page):
    """The test above can fail: markup put in the page by hand does not run either, and
    the browser says why (the policy is enforced, not only sent)."""
    s, runs = setup
    w = watch(runs, s, tmp_path)
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_selector("#fleet-summary")
        blocked = page.tab.evaluate("""() => {
            try { document.querySelector('main').innerHTML = '<img src=x onerror="window.__pwned=9">'; }
            catch (e) { return e.name; }
            return 'assigned'; }""")
        assert blocked == "TypeError"   # Trusted Types: an HTML sink takes no string
        assert page.tab.evaluate("window.__pwned") is None
    finally:
        w.stop()


def test_the_page_keeps_working_with_1000_active_runs(setup, tmp_path, page):
    s, runs = setup
    for i in range(1000):
        c = Claude()
        append(run_dir(runs, f"r{i:04d}"), c.init(), *c.read("src/app.py", APP, 1, 1 + i % 40))
    w = watch(runs, s, tmp_path, "--idle-timeout", "3600")
    try:
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function(
            "() => document.querySelector('#fleet-summary')?.textContent.startsWith('1000 run(s): 1000 running')",
            timeout=120_000)
        assert len(fleet_row_ids(page.tab)) == 200   # a page of rows, the rest a click away
        page.tab.fill("#filter", "r0999")
        page.tab.wait_for_function(
            "() => document.querySelectorAll('#fleet tbody tr').length === 1")
        # a run moves while 999 others stand still: its row alone comes back, and shows
        c = Claude()
        c.n = 10
        append(runs / "r0999" / "trace.jsonl", *c.read("src/util.py", UTIL, 1, 5))
        page.tab.wait_for_function(
            "() => [...document.querySelectorAll('#fleet tr[data-run=r0999] td')].some(td => td.textContent === '2')")
        page.tab.click("a.run-link")
        page.tab.wait_for_function(
            "() => document.querySelector('polyline[data-granularity=line]')?.dataset.points === '2'")
        status, _h, body = w.get("/metrics")
        assert status == 200 and body.count(b"streameval_steps_total{") == 1000
        status, headers, body = w.get("/api/runs")
        tag = json.loads(body)["gen"]
        status, _h, _b = w.get("/api/runs?since=" + tag, {"If-None-Match": f'"{tag}"'})
        assert status in (200, 304)
        assert page.problems() == []
    finally:
        w.stop()


def curves(tab) -> dict[str, str]:
    return dict(tab.eval_on_selector_all(
        "polyline.series", "ls => ls.map(l => [l.dataset.granularity, l.getAttribute('points')])"))


#: the example runs' steps (an Edit's printed snippet is a read: example-run-1's two count)
STEPS = {"example-run-1": 14, "late-find-1": 12}


def test_view_html_opens_from_a_file_with_the_live_page_curves(tmp_path, page):
    """`view --html` of replay's records, opened from disk with no server, draws the very
    curves the live page draws for the same runs."""
    import shutil

    ex = ROOT / "examples"
    runs = tmp_path / "runs"
    shutil.copytree(ex / "backtest" / "late-find-1", runs / "late-find-1")
    shutil.copytree(ex / "runs" / "example-run-1", runs / "example-run-1")
    sources = ["--gold", str(ex / "gold.jsonl"), "--repo", str(ex / "repo")]
    w = Streameval("watch", str(runs), *sources, "--patch-grace", "0", cwd=tmp_path)
    live = {}
    try:
        for run_id, steps in STEPS.items():
            wait_for_run(w, run_id)
            page.tab.goto(f"{w.base}/runs/{run_id}")
            page.tab.wait_for_function(
                "n => document.querySelector('polyline[data-granularity=line]')?.dataset.points === n",
                arg=str(steps))
            live[run_id] = curves(page.tab)
        page.tab.goto("about:blank")     # no poll of the live page may reach a stopped server
    finally:
        w.stop()
    from streameval.commands.main import main

    records = tmp_path / "records.jsonl"
    assert main(["replay", str(runs), *sources, "--out", str(records), "--quiet"]) == 0
    html = tmp_path / "report.html"
    assert main(["view", str(records), *sources, "--traces", str(runs), "--html", str(html)]) == 0
    requests: list[str] = []
    page.tab.on("request", lambda r: requests.append(r.url))
    page.tab.goto(html.as_uri())
    page.tab.wait_for_function("() => document.querySelectorAll('#fleet tbody tr').length === 2")
    assert page.tab.text_content("#status") == "recorded runs"
    for run_id in ("example-run-1", "late-find-1"):
        page.tab.click(f"text={run_id}")
        page.tab.wait_for_function(
            f"() => document.querySelector('#run-id')?.textContent === '{run_id}' && "
            "document.querySelector('polyline[data-granularity=line]')")
        assert curves(page.tab) == live[run_id]
        assert page.tab.eval_on_selector_all("section.strip", "s => s.length") == 2
        assert page.tab.eval_on_selector_all("tr.call", "r => r.length") > 0
        page.tab.click("text=← all runs")
        page.tab.wait_for_selector("#fleet tbody tr")
    assert all(u.startswith("file://") for u in requests), requests   # no server, no network
    assert page.problems() == []
