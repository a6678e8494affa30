"""``streameval compare --html`` in a real browser: the page opens from a file with no
request beyond it, leads with the forest plot of the key metrics, folds the other
families until asked, and colours only what is significant or untrusted. Its screenshot
is docs/compare.md's picture (``STREAMEVAL_SCREENSHOTS=docs pytest -k compare_page``)."""

from __future__ import annotations

import numpy as np
import pytest
from compare_records import rec, write

from streameval.commands.main import main

pytestmark = [pytest.mark.browser]


def curve(final: float, steps: int) -> list[float]:
    return [final * k / steps for k in range(1, steps + 1)]


def arms(tmp_path):
    """Two agents on 240 instances of 12 repositories (one holds 30%): B finds more of
    the gold lines, solves a few more tasks (not significantly), spends more tokens and
    fewer steps; cost is stated for 8 instances only (an untrusted row)."""
    rng = np.random.default_rng(29)
    repos = [f"org{j}/repo{j}" for j in range(12)]
    weights = np.array([0.3] + [0.7 / 11] * 11)
    where = rng.choice(12, 240, p=weights)
    lift = rng.normal(0, 0.03, 12)
    a, b = [], []
    for i, j in enumerate(where):
        cov = float(np.clip(rng.beta(2, 3), 0, 1))
        new = float(np.clip(cov + 0.12 + lift[j] + rng.normal(0, 0.1), 0, 1))
        solved = bool(rng.random() < 0.45)
        common = {"repo": repos[j]}
        a.append(rec(f"task-{i}", cov, tokens=int(rng.integers(200_000, 900_000)),
                     tool_calls=int(rng.integers(20, 60)), resolved=solved,
                     cost_usd=float(rng.uniform(0.2, 1.0)) if i < 8 else None,
                     steps=curve(cov, int(rng.integers(20, 40))), **common))
        b.append(rec(f"task-{i}", new, tokens=int(rng.integers(300_000, 1_100_000)),
                     tool_calls=int(rng.integers(15, 50)),
                     resolved=solved or bool(rng.random() < 0.08),
                     cost_usd=float(rng.uniform(0.2, 1.0)) if i < 8 else None,
                     steps=curve(new, int(rng.integers(15, 35))), **common))
    return write(tmp_path / "base.jsonl", a), write(tmp_path / "agents-md.jsonl", b)


def test_the_compare_page_leads_with_a_forest_plot(tmp_path, page):
    base, new = arms(tmp_path)
    html = tmp_path / "compare.html"
    assert main(["compare", "--arm", f"baseline={base}", "--arm", f"agents-md={new}",
                 "--html", str(html), "--quiet"]) == 0
    requests: list[str] = []
    page.tab.on("request", lambda r: requests.append(r.url))
    page.tab.goto(html.as_uri())
    tab = page.tab
    # the first thing under the header is the key metrics' forest, one axis per scale
    first = tab.eval_on_selector("svg.forest", "s => [...s.querySelectorAll('.panel')]"
                                 ".map(p => p.dataset.scale)")
    assert first == ["share", "tokens", "usd", "steps"]
    keys = tab.eval_on_selector("svg.forest", "s => [...s.querySelectorAll('.mark')]"
                                ".map(m => [m.dataset.metric, m.dataset.state])")
    assert [k for k, _ in keys] == ["line.f1", "resolved", "tokens", "cost_usd", "steps"]
    states = dict(keys)
    assert states["line.f1"] == "better" and states["tokens"] == "worse"
    assert states["cost_usd"] == "untrusted" and states["resolved"] == "plain"
    box = tab.eval_on_selector("svg.forest", "s => s.getBoundingClientRect().top")
    assert box < tab.eval_on_selector("details", "d => d.getBoundingClientRect().top")
    # the other families are folded, and open when asked
    folded = tab.eval_on_selector_all("details", "ds => ds.map(d => [d.dataset.family, d.open])")
    assert [f for f, _ in folded] == ["final", "effort"] and not any(o for _, o in folded)
    assert not tab.is_visible("details[data-family=final] svg.forest")
    page.screenshot("compare-page.png")
    tab.click("details[data-family=final] summary")
    assert tab.is_visible("details[data-family=final] svg.forest")
    # plain rows carry no colour
    color = tab.eval_on_selector('tr[data-metric="resolved"] td.d',
                                 "td => getComputedStyle(td).color")
    assert color == "rgb(34, 34, 34)"
    assert all(u.startswith("file://") for u in requests), requests
    assert page.problems() == []
