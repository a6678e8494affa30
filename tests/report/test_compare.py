"""A comparison as data, text and a page: differences over the unit stated, every reason
not to trust a row, the order rows are shown in, solve rate, and the JSON's fields."""

from __future__ import annotations

import json
import re

import numpy as np
import orjson
import pytest
from compare_records import error, rec

from streameval.report.arms import reduce_arm
from streameval.report.compare import KEY_METRICS, compare_arms, ordered, report_json
from streameval.report.compare_page import format_html
from streameval.report.compare_text import format_markdown, format_terminal
from streameval.report.fields import select_metrics

LINE = select_metrics(["line.coverage", "tokens"])


def arms(n: int, shift: float, repos: int = 12, seed: int = 0, metrics=LINE):
    """Two arms on ``n`` instances spread over ``repos`` repositories; B's coverage is
    A's plus ``shift`` plus noise, its tokens 10% fewer; one instance only in each arm."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 0.05, n)
    a = [rec(f"r{i % repos}__p-{i}", 0.3 + 0.004 * i, tokens=1000 + 10 * i, tool_calls=5 + i)
         for i in range(n)]
    b = [rec(f"r{i % repos}__p-{i}", 0.3 + 0.004 * i + shift + noise[i], tokens=900 + 9 * i,
             tool_calls=5 + i + i % 3) for i in range(n)]
    b.append(rec("only__b-1", 0.9))
    a.append(rec("only__a-1", 0.1))
    return reduce_arm("A", a, metrics), reduce_arm("B", b, metrics)


def test_pairs_differences_and_unpaired_lists():
    report = compare_arms(list(arms(48, 0.1)), LINE)
    [c] = report.comparisons
    assert len(c.pairs) == 48 and c.only_a == ["only__a-1"] and c.only_b == ["only__b-1"]
    cov, tok = c.rows
    # arm means are over the pairs: their difference is the paired difference
    assert cov.inference.estimate == pytest.approx(cov.mean_b - cov.mean_a)
    assert cov.inference.low < cov.inference.estimate < cov.inference.high
    assert (cov.inference.unit, cov.inference.clusters) == ("repository", 12)
    assert cov.trusted and cov.significant and cov.better
    assert tok.inference.estimate < 0 and tok.better      # fewer tokens is better
    # Holm: two tests
    assert cov.p_holm == pytest.approx(min(1, 2 * min(cov.inference.p, tok.inference.p)))


def test_fewer_than_ten_pairs_say_the_interval_is_not_to_be_trusted():
    report = compare_arms(list(arms(9, 0.1)), LINE)
    row = report.comparisons[0].rows[0]
    assert not row.trusted and "fewer than 10 pairs (9)" in row.reason
    for text in (format_terminal(report), format_markdown(report), format_html(report)):
        assert "fewer than 10 pairs (9)" in text and "not to be trusted" in text


def test_an_arm_that_lost_more_instances_makes_every_row_untrusted():
    a, b = arms(48, 0.0)
    lossy = reduce_arm("B", [rec(f"r{i % 12}__p-{i}", 0.3) for i in range(10)]
                       + [error(f"r{i % 12}__p-{i}") for i in range(10, 48)], LINE)
    report = compare_arms([a, lossy], LINE)
    [c] = report.comparisons
    # only__a-1 counts too: B has no score for it
    assert c.lost_points == pytest.approx((0, 100 * 39 / 49))
    why = "B has no score for 39 of 49 instances, A for 0: 80 points apart (margin 5)"
    assert all(why in r.reason for r in c.rows)
    assert f"!! {why}: no row is to be trusted" in format_terminal(report)
    assert why in format_html(report) and why in format_markdown(report)


def test_the_header_says_the_unit_and_how_repositories_were_found():
    a = reduce_arm("A", [rec(f"odd-{i}", 0.3, repo="o/one" if i < 20 else None)
                         for i in range(23)], LINE)
    b = reduce_arm("B", [rec(f"odd-{i}", 0.4 + 0.01 * (i % 3)) for i in range(23)], LINE)
    report = compare_arms([a, b], LINE)
    text = format_terminal(report)
    assert "clusters: repositories from the records' repo field (20 pairs) and from SWE-bench " \
           "style ids (0); 3 name no repository and count as one each: odd-20, odd-21, odd-22" \
           in text
    row = report.comparisons[0].rows[0]
    # one repository and three lone instances: 4 clusters, repository-level
    assert (row.inference.unit, row.inference.clusters) == ("repository", 4)
    assert "3 pairs name no repository (each counted as one)" in row.reason
    assert "bootstrap" not in text and "CR2" in text


def test_two_repositories_give_an_instance_level_row_labelled_so():
    report = compare_arms(list(arms(40, 0.1, repos=2)), LINE)
    row = report.comparisons[0].rows[0]
    assert row.inference.unit == "instance" and row.inference.units == 40
    assert not row.trusted and "2 repositories: no repository-level interval" in row.reason
    line = next(x for x in format_terminal(report).splitlines() if "line.coverage" in x)
    assert line.split()[-2:] == ["instance", "*!"]


def test_rows_come_key_metrics_first_then_by_family():
    metrics = select_metrics(["*"])
    report = compare_arms(list(arms(24, 0.05, metrics=metrics)), metrics)
    groups = ordered(report.comparisons[0].rows)
    assert groups[0][0] == "key metrics"
    assert [r.metric.name for r in groups[0][1]] == [m for m in KEY_METRICS
                                                     if m in ("line.f1", "tokens", "steps")]
    assert [g for g, _ in groups[1:]] == ["final", "effort"]
    text = format_terminal(report)
    assert text.index("line.f1") < text.index("tokens") < text.index("steps") \
        < text.index("file.coverage")
    assert "no pair has: " in text and "resolved" in text.split("no pair has: ")[1]


def test_json_keeps_the_fields_and_adds_unit_and_reason():
    doc = json.loads(orjson.dumps(report_json(compare_arms(list(arms(12, 0.1, repos=4)), LINE))))
    [c] = doc["comparisons"]
    assert (doc["baseline"], c["a"], c["b"], c["pairs"], c["clusters"]) == ("A", "A", "B", 12, 4)
    assert c["clusters_from"] == {"repo": 0, "id": 12, "none": 0}
    m = c["metrics"][0]
    assert m["metric"] == "line.coverage" and m["better"] == "higher"
    assert set(m) >= {"difference", "low", "high", "p", "p_holm", "pairs", "clusters",
                      "trusted", "unit", "reason"}
    assert m["unit"] == "repository" and m["trusted"] is False
    assert m["reason"].startswith("4 repositories (fewer than 10)")
    assert doc["curves"]["A"]["line"]["instances"] == 12
    assert doc["curves"]["A"]["line"]["unit"] == "repository"


def solved(iid: str, ok: bool | None, repo: str) -> dict:
    return rec(iid, 0.5, repo=repo, resolved=ok)


def test_solve_rate_is_a_metric_with_mcnemar_for_one_repository():
    """30 instances of one repository: A solved 10; B solved those and 7 more, and lost
    one A solved. Repeated runs of B are averaged like any metric: r-29 was solved in
    one of two runs, so it counts 0.5 (and is not a 0/1 pair: the test is then the
    instance-level t and flip test, not McNemar). The unknown outcome is left out."""
    metrics = select_metrics(["resolved"])
    a = [solved(f"i-{k}", k < 10, "one/repo") for k in range(30)]
    b = [solved(f"i-{k}", k < 9 or 10 <= k < 17, "one/repo") for k in range(30)]
    b += [solved("i-29", True, "one/repo"), solved("i-28", None, "one/repo")]
    report = compare_arms([reduce_arm("A", a, metrics), reduce_arm("B", b, metrics)], metrics)
    row = report.comparisons[0].rows[0]
    assert row.inference.unit == "instance" and row.inference.pairs == 30
    assert row.mean_a == pytest.approx(10 / 30)
    assert row.mean_b == pytest.approx((16 + 0.5) / 30)
    assert row.inference.p_exact is None          # 30 units, a fraction: not McNemar's
    # without the half-solved instance: 7 up, 1 down -> McNemar's 18/256
    a2 = [r for r in a if r["instance_id"] != "i-29"]
    b2 = [r for r in b if r["instance_id"] != "i-29"]
    exact = compare_arms([reduce_arm("A", a2, metrics), reduce_arm("B", b2, metrics)], metrics)
    row = exact.comparisons[0].rows[0]
    assert row.inference.p == pytest.approx(18 / 256)
    assert row.inference.estimate == pytest.approx(6 / 29)


def test_solve_rate_over_twelve_repositories_is_clustered():
    metrics = select_metrics(["resolved", "line.f1"])
    rng = np.random.default_rng(4)
    a = [solved(f"i-{k}", bool(rng.random() < 0.4), f"o/r{k % 12}") for k in range(240)]
    b = [solved(f"i-{k}", bool(rng.random() < 0.6), f"o/r{k % 12}") for k in range(240)]
    report = compare_arms([reduce_arm("A", a, metrics), reduce_arm("B", b, metrics)], metrics)
    row = next(r for r in report.comparisons[0].rows if r.metric.name == "resolved")
    assert row.inference.unit == "repository" and row.inference.units == 12
    assert row.trusted and row.significant and row.better
    assert format_terminal(report).index("line.f1") < format_terminal(report).index("resolved")


def test_html_is_self_contained_and_leads_with_a_forest_plot():
    metrics = select_metrics(["*"])
    page = format_html(compare_arms(list(arms(24, 0.05, metrics=metrics)), metrics))
    assert "<script" not in page and "<link" not in page
    assert not re.search(r'(src|href)="https?:', page)
    # the first picture is the key metrics' forest, one panel per scale with a 0 line
    first = page.index('<svg class="forest"')
    assert first < page.index("<details") < page.index("Coverage per step")
    key = page[first:page.index("</svg>", first)]
    assert re.findall(r'data-scale="(\w+)"', key) == ["share", "tokens", "steps"]
    assert key.count('class="zero"') == 3
    # the rest folded by family, each with its own forest
    assert re.findall(r'<details data-family="([^"]+)"', page) == ["final", "effort"]
    # four granularities x two arms: a band polygon and a mean polyline each
    assert page.count('data-band="95"') == 8 and page.count("<polyline") == 8


def test_colour_marks_only_what_is_significant_or_untrusted():
    from streameval.report.compare_page import state

    two = select_metrics(["line.coverage", "line.auc"])
    report = compare_arms(list(arms(48, 0.1, metrics=two)), two)
    cov, auc = report.comparisons[0].rows
    assert state(cov) == "better"
    assert auc.inference.pairs == 0 and state(auc) == "untrusted"
    worse = compare_arms(list(reversed(arms(48, 0.1))), LINE).comparisons[0].rows[0]
    assert state(worse) == "worse"
    plain = compare_arms(list(arms(48, 0.0, seed=3)), LINE).comparisons[0].rows[0]
    assert not plain.significant and state(plain) == "plain"
    page = format_html(report)
    assert 'data-state="better"' in page and 'class="better"' in page
    assert 'data-state="plain"' not in page.split('data-metric="line.coverage"')[0]
