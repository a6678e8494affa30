"""A comparison as one self-contained HTML page (``compare --html``).

It leads with what a reader acts on: per comparison, a forest plot of the key metrics
(line F1, solve rate, tokens, cost, steps: B - A with its interval, one axis per kind of
number, a line at 0) and their table; every other metric is folded by family
(``<details>``), each fold saying how many of its rows are significant or untrusted.
Colour marks only what is significant or not to be trusted (``report.forest``). Then,
per granularity, each arm's mean per-step coverage curve with its 95% band, as inline
SVG (``report.plot``). No script, no stylesheet or font from elsewhere: the page opens
offline and can be attached to a CI run as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from streameval.model import GRANULARITIES
from streameval.report.compare import (
    CompareReport,
    Comparison,
    MetricRow,
    ordered,
    unpaired_metrics,
)
from streameval.report.compare_text import describe, interval, number, pvalue, reasons
from streameval.report.forest import STATE_COLORS, Mark, forest_svg
from streameval.report.plot import arms_svg

__all__ = ["format_html"]

_STYLE = f"""body{{font-family:sans-serif;margin:2em;max-width:72em;color:#222}}
table{{border-collapse:collapse;margin:.6em 0 1.2em}}td,th{{padding:.2em .6em;border-bottom:1px solid #ddd}}
th{{text-align:left;font-weight:600}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}
tr.untrusted td.d{{color:{STATE_COLORS['untrusted']}}}tr.better td.d{{color:{STATE_COLORS['better']};font-weight:600}}
tr.worse td.d{{color:{STATE_COLORS['worse']};font-weight:600}}
.note{{color:#555}}ul.note{{padding-left:1.2em}}.warn{{color:{STATE_COLORS['untrusted']};font-weight:600}}
details{{margin:.4em 0;border-left:3px solid #eee;padding-left:.8em}}summary{{cursor:pointer;padding:.2em 0}}
.legend span{{margin-right:1.2em}}"""


def state(row: MetricRow) -> str:
    """How the forest and the table colour a row."""
    if not row.trusted:
        return "untrusted"
    if row.significant:
        return "better" if row.better else "worse"
    return "plain"


def _mark(row: MetricRow) -> Mark:
    e = row.inference
    note = (f"{row.metric.name}: B-A {number(e.estimate, True)}, 95% interval {interval(row)}, "
            f"p (Holm) {pvalue(row.p_holm)}, {e.pairs} pairs, {e.clusters} repositories, "
            f"unit {e.unit}")
    if row.reason:
        note += f"; not to be trusted: {row.reason}"
    return Mark(row.metric.name, e.estimate, e.low, e.high, state(row), note)


def _forest(rows: Sequence[MetricRow]) -> str:
    """One panel per scale, in the order the rows first use it."""
    scales: dict[str, list[Mark]] = {}
    for r in rows:
        if r.inference.estimate is not None:
            scales.setdefault(r.metric.scale, []).append(_mark(r))
    return forest_svg(list(scales.items()))


def _table(rows: Sequence[MetricRow]) -> list[str]:
    out = ["<table><tr><th>metric</th><th>A</th><th>B</th><th>B&minus;A</th>"
           "<th>95% interval</th><th>p (Holm)</th><th>pairs</th><th>repos</th><th>unit</th>"
           "<th></th></tr>"]
    for r in rows:
        e = r.inference
        s = state(r)
        cls = "" if s == "plain" else f' class="{s}"'
        flag = ("*" if r.significant else "") + ("" if r.trusted else "!")
        title = f' title="{escape(r.reason)}"' if r.reason else ""
        out.append(f'<tr{cls} data-metric="{escape(r.metric.name)}"{title}>'
                   f"<td>{escape(r.metric.name)}</td>"
                   f'<td class="n">{number(r.mean_a)}</td><td class="n">{number(r.mean_b)}</td>'
                   f'<td class="n d">{number(e.estimate, True)}</td>'
                   f'<td class="n d">{interval(r)}</td><td class="n">{pvalue(r.p_holm)}</td>'
                   f'<td class="n">{e.pairs}</td><td class="n">{e.clusters}</td>'
                   f"<td>{e.unit}</td><td>{flag}</td></tr>")
    out.append("</table>")
    return out


def _comparison(report: CompareReport, c: Comparison) -> list[str]:
    lines = describe(report, c)
    out = [f"<h2>{escape(c.b)} vs {escape(c.a)} (baseline)</h2>", '<ul class="note">']
    out += [f'<li class="warn">{escape(x[3:])}</li>' if x.startswith("!! ") else
            f"<li>{escape(x)}</li>" for x in lines]
    out.append("</ul>")
    groups = ordered(c.rows)
    for family, rows in groups:
        body = [_forest(rows), *_table(rows)]
        if family == "key metrics":
            out += ["<h3>Key metrics</h3>", *body]
        else:
            sig = sum(r.significant for r in rows)
            bad = sum(not r.trusted for r in rows)
            out += [f'<details data-family="{escape(family)}"><summary>{escape(family)}: '
                    f"{len(rows)} metric(s), {sig} significant, {bad} untrusted</summary>",
                    *body, "</details>"]
    missing = unpaired_metrics(c.rows)
    if missing:
        out.append(f'<p class="note">No pair has: {escape(", ".join(missing))}.</p>')
    shown = [r for _, rows in groups for r in rows]
    why = reasons(shown, c.shared)
    if why:
        out.append('<p class="warn">Not to be trusted (marked !, amber):</p><ul class="note">')
        out += [f"<li>{escape(text)}: {escape(names)}</li>" for text, names in why]
        out.append("</ul>")
    for side, ids in (("A", c.only_a), ("B", c.only_b)):
        if ids:
            out.append(f'<p class="note">Only in {side}: {escape(", ".join(ids))}</p>')
    return out


def format_html(report: CompareReport) -> str:
    legend = ('<p class="note legend">'
              f'<span style="color:{STATE_COLORS["better"]}">&#9679; B better, significant</span>'
              f'<span style="color:{STATE_COLORS["worse"]}">&#9679; B worse, significant</span>'
              f'<span style="color:{STATE_COLORS["untrusted"]}">&#9679; not to be trusted '
              "(dashed)</span><span>&#9675; no interval</span>"
              "<span>* significant at 5% after Holm's correction</span></p>")
    body = [f"<h1>streameval compare: baseline {escape(report.baseline)}</h1>",
            '<p class="note">' + escape("; ".join(
                f"{a.name}: {a.runs} run(s), {a.errors} not scored, {len(a.scored)} instance(s)"
                for a in report.arms)) + "</p>", legend]
    for c in report.comparisons:
        body += _comparison(report, c)
    units = sorted({cv.unit for by_g in report.curves.values() for cv in by_g.values()})
    over = " and ".join({"repository": "repositories", "instance": "instances"}[u] for u in units)
    body += ["<h2>Coverage per step</h2>",
             '<p class="note">Mean coverage after each step over the paired instances (a run '
             f"that stopped keeps its last coverage), with its 95% band (CR2, over "
             f"{over or 'repositories'}).</p>"]
    for g in GRANULARITIES:
        curves = [(arm, by_g[g].mean, by_g[g].low, by_g[g].high)
                  for arm, by_g in report.curves.items() if g in by_g]
        if curves:
            body.append(arms_svg(curves, f"{g} coverage per step"))
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>streameval compare"
            f"</title><style>{_STYLE}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")
