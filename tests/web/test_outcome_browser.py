"""A run's outcome on the page, in a real browser over a real ``streameval watch
--outcomes``: the fleet's ``solved`` column says yes, no, or – (not known), and a run's
page says ``solved`` among its facts; and ``streameval outcomes --html`` opens from a
file with its curves drawn and nothing asked of the network."""

from __future__ import annotations

import pytest
from claude_run import APP, UTIL, Claude, append
from outcome_fleet import files, write_fleet
from web_process import run_dir, wait_for_run, watch

from streameval.commands.main import main

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_fleet_and_the_run_page_show_whether_a_run_solved_its_task(setup, tmp_path, page):
    s, runs = setup
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("run_id,instance_id,resolved\nwon,demo__demo-1,true\n"
                        "lost,demo__demo-1,false\n")
    for name, path, text in (("won", "src/app.py", APP), ("lost", "src/util.py", UTIL),
                             ("unknown", "src/app.py", APP)):
        c = Claude()
        append(run_dir(runs, name), c.init(), *c.read(path, text, 1, 5))
    w = watch(runs, s, tmp_path, "--outcomes", str(outcomes))
    try:
        wait_for_run(w, "unknown")
        page.tab.goto(w.base + "/")
        page.tab.wait_for_function("() => document.querySelectorAll('#fleet tbody tr').length === 3")
        page.tab.wait_for_selector("#fleet td.solved")
        solved = page.tab.eval_on_selector_all(
            "#fleet tbody tr", "rows => rows.map(r => [r.dataset.run, r.querySelector('td.solved')"
                               ".textContent])")
        assert dict(solved) == {"won": "yes", "lost": "no", "unknown": "–"}
        page.screenshot("fleet-solved.png")
        page.tab.goto(w.base + "/runs/lost")
        page.tab.wait_for_selector("dl.facts dt")
        facts = page.tab.eval_on_selector_all(
            "dl.facts dt", "dts => dts.map(d => [d.textContent, d.nextElementSibling.textContent])")
        assert ["solved", "no"] in facts
        page.tab.goto(w.base + "/runs/unknown")
        page.tab.wait_for_selector("dl.facts dt")
        assert "solved" not in page.tab.eval_on_selector_all("dl.facts dt",
                                                             "dts => dts.map(d => d.textContent)")
        assert page.problems() == []
    finally:
        w.stop()


def test_the_outcomes_page_opens_from_a_file_with_its_curves(tmp_path, page):
    fleet = {f"r{i}": (f"alpha__alpha-{i}", True, files(*[f"f{j}" for j in range(6 + i)]))
             for i in range(4)}
    fleet |= {f"f{i}": (f"beta__beta-{i}", False, files("f1", ("f2", 8 + i))) for i in range(4)}
    runs = write_fleet(tmp_path, fleet)
    records, html = tmp_path / "records.jsonl", tmp_path / "outcomes.html"
    assert main(["replay", str(runs), "--out", str(records)]) == 0
    assert main(["outcomes", str(records), "--outcomes", str(tmp_path / "outcomes.csv"),
                 "--html", str(html), "--quiet"]) == 0
    requests: list[str] = []
    page.tab.on("request", lambda r: requests.append(r.url))
    page.tab.goto(html.as_uri())
    curve = page.tab.locator('div[data-signal="steps_since_new_file"] svg[data-plot="auroc"]')
    assert curve.is_visible()
    # resolved runs read a new file every step, failed ones none after step 2
    assert curve.locator('g[data-step="5"]').get_attribute("data-auroc") == "1.0000"
    box = curve.bounding_box()
    assert box["width"] > 200 and box["height"] > 100
    page.screenshot("outcomes-page.png")
    assert [u for u in requests if not u.startswith("file:")] == []
    assert page.problems() == []
