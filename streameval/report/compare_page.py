"""A comparison as one self-contained HTML page (``compare --html``): the tables and, per
granularity, each arm's mean per-step coverage curve with its 95% band, drawn as inline
SVG (``report.plot``). No script, no stylesheet or font from elsewhere: the page opens
offline and can be attached to a CI run as it is.
"""

from __future__ import annotations

from html import escape

from streameval.model import GRANULARITIES
from streameval.report.compare import MIN_PAIRS, CompareReport
from streameval.report.compare_text import number, pvalue
from streameval.report.plot import arms_svg

__all__ = ["format_html"]

_STYLE = """body{font-family:sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.2em .6em;border-bottom:1px solid #ddd}
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.untrusted td{color:#a33}
.note{color:#555}"""


def _table(report: CompareReport) -> list[str]:
    out: list[str] = []
    tests = sum(len(c.rows) for c in report.comparisons)
    for c in report.comparisons:
        out += [f"<h2>{escape(c.b)} vs {escape(c.a)} (baseline)</h2>",
                f'<p class="note">{len(c.pairs)} paired instance(s) in {c.clusters} '
                f"repositories; {len(c.only_a)} only in A, {len(c.only_b)} only in B. "
                f"B&minus;A is the mean paired difference (repeated runs averaged first); "
                f"95% intervals from {report.resamples:,} bootstrap resamples of "
                f"repositories (seed {report.seed}); p two-sided, Holm-corrected over "
                f"{tests} test(s).</p>"]
        if len(c.pairs) < MIN_PAIRS:
            out.append(f"<p><strong>Fewer than {MIN_PAIRS} pairs: the intervals are not to "
                       "be trusted.</strong></p>")
        out.append("<table><tr><th>metric</th><th>A</th><th>B</th><th>B&minus;A</th>"
                   "<th>95% interval</th><th>p (Holm)</th><th>pairs</th></tr>")
        for r in c.rows:
            e = r.estimate
            cls = "" if r.trusted or not e.pairs else ' class="untrusted"'
            interval = "-" if e.low is None else \
                f"[{number(e.low, True)}, {number(e.high, True)}]"
            out.append(f"<tr{cls}><td>{escape(r.metric.name)}</td>"
                       f'<td class="n">{number(r.mean_a)}</td><td class="n">{number(r.mean_b)}</td>'
                       f'<td class="n">{number(e.mean, True)}</td><td class="n">{interval}</td>'
                       f'<td class="n">{pvalue(r.p_holm)}</td><td class="n">{e.pairs}</td></tr>')
        out.append("</table>")
        for side, ids in (("A", c.only_a), ("B", c.only_b)):
            if ids:
                out.append(f'<p class="note">Only in {side}: {escape(", ".join(ids))}</p>')
    return out


def format_html(report: CompareReport) -> str:
    body = [f"<h1>streameval compare: baseline {escape(report.baseline)}</h1>",
            '<p class="note">' + escape("; ".join(
                f"{a.name}: {a.runs} run(s), {a.errors} not scored, {len(a.rows)} instance(s)"
                for a in report.arms)) + "</p>", *_table(report), "<h2>Coverage per step</h2>",
            '<p class="note">Mean coverage after each step over the paired instances (a run '
            "that stopped keeps its last coverage), with its 95% band from resampling "
            "repositories.</p>"]
    for g in GRANULARITIES:
        curves = [(arm, by_g[g].mean, by_g[g].low, by_g[g].high)
                  for arm, by_g in report.curves.items() if g in by_g]
        if curves:
            body.append(arms_svg(curves, f"{g} coverage per step"))
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>streameval compare"
            f"</title><style>{_STYLE}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")
