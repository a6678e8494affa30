"""``streameval outcomes --html``: one self-contained page (no script, no stylesheet or font
from elsewhere, as ``compare --html``): what the data cannot support, the runs that
reached each step, every signal's early-warning curve (its AUROC for failure at step k,
``report.outcomes_plot``) and table, and the solve rate by quantile bin at each step."""

from __future__ import annotations

from html import escape

from streameval.report.outcome_stats import Interval
from streameval.report.outcomes import OutcomeReport, SignalCell, direction
from streameval.report.outcomes_plot import auroc_svg, bins_svg
from streameval.report.outcomes_text import HELP, bin_label, interval_text, step_name
from streameval.scoring.signals import GOLD_SIGNALS

__all__ = ["format_html"]

_STYLE = """body{font-family:sans-serif;margin:2em;max-width:80em}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.2em .6em;border-bottom:1px solid #ddd}
td.n{text-align:right;font-variant-numeric:tabular-nums}td.untrusted{color:#b26b00}
.note{color:#555}.grid{display:flex;flex-wrap:wrap;gap:.5em}.warn{color:#b26b00}
details{margin:.3em 0}summary{cursor:pointer}"""


def _td(iv: Interval, digits: int = 2) -> str:
    cls = "n untrusted" if iv.reasons else "n"
    why = f' title="{escape("; ".join(iv.reasons))}"' if iv.reasons else ""
    return f'<td class="{cls}"{why}>{escape(interval_text(iv, digits))}</td>'


def _units(unit: str) -> str:
    return "repositories" if unit == "repository" else "instances"


def _summary(r: OutcomeReport) -> list[str]:
    out = [f'<p>{r.records} record(s): <strong>{r.runs}</strong> with an outcome and '
           f"signals ({r.no_outcome} without an outcome, {r.no_signals} not scored), "
           f"{r.repositories} repositories. Solve rate "
           f"<strong>{escape(interval_text(r.solve_rate, 3))}</strong>.</p>",
           f'<p class="note">95% intervals with {_units(r.unit)} as the independent units '
           "(docs/outcomes.md §6). A figure in amber has a reason not to be trusted "
           "(its tooltip says which).</p>"]
    if r.warnings:
        out.append('<h2>What these data cannot support</h2><ul class="warn">'
                   + "".join(f"<li>{escape(w)}</li>" for w in r.warnings) + "</ul>")
    out.append("<h2>Runs that reached step k</h2><table><tr><th>step</th><th>runs</th>"
               "<th>failed</th><th>solve rate</th></tr>")
    for row in r.rows:
        out.append(f'<tr data-step="{escape(step_name(row.step))}"><td>{step_name(row.step)}</td>'
                   f'<td class="n">{row.runs}</td><td class="n">{row.failed}</td>'
                   f"{_td(row.solve_rate, 3)}</tr>")
    out.append("</table>")
    return out


def _points(r: OutcomeReport, cells: list[SignalCell]) -> list[tuple[str, Interval]]:
    by_step = {c.step: c.auroc for c in cells}
    none = Interval(None, None, None, 0)
    return [(step_name(k).removeprefix("step "), by_step.get(k, none)) for k in [*r.steps, None]]


def _curves(r: OutcomeReport) -> list[str]:
    out = ["<h2>Early warning: AUROC for failure at step k</h2>",
           f'<p class="note">{escape(HELP)}</p>']
    groups = (("Gold-free signals (every run has them)",
               [n for n in r.cells if n not in GOLD_SIGNALS]),
              ("Gold signals (runs measured against gold only)",
               [n for n in r.cells if n in GOLD_SIGNALS]))
    for heading, names in groups:
        if not names:
            continue
        out.append(f"<h3>{escape(heading)}</h3><div class=\"grid\">")
        for name in names:
            arrow = "higher" if direction(name) > 0 else "lower"
            out.append(f'<div data-signal="{escape(name)}">'
                       + auroc_svg(name, _points(r, r.cells[name]), f"{arrow} fails") + "</div>")
        out.append("</div>")
    steps = [*r.steps, None]
    out.append("<table><tr><th>signal</th><th>read as</th>"
               + "".join(f"<th>{step_name(k)}</th>" for k in steps) + "</tr>")
    for name, cells in r.cells.items():
        by_step = {c.step: c for c in cells}
        row = "".join(_td(by_step[k].auroc) if k in by_step else "<td></td>" for k in steps)
        arrow = "higher fails" if direction(name) > 0 else "lower fails"
        out.append(f'<tr data-signal="{escape(name)}"><td>{escape(name)}</td>'
                   f"<td>{arrow}</td>{row}</tr>")
    out.append("</table>")
    return out


def _bins(r: OutcomeReport) -> list[str]:
    out = ["<h2>Solve rate by quantile bin</h2>",
           f'<p class="note">Each signal\'s runs cut at the {r.bins}-quantiles of its values '
           "(ties stay in one bin, so a signal with many equal values has fewer bins); the "
           "dashed line is the solve rate of all the runs that reached the step.</p>"]
    overall = {row.step: row.solve_rate.estimate for row in r.rows}
    for name, cells in r.cells.items():
        end = next((c for c in cells if c.step is None), None)
        out.append(f'<details data-signal="{escape(name)}"{" open" if end and name == "tokens" else ""}>'
                   f"<summary>{escape(name)}</summary><div class=\"grid\">")
        ordered = [*(c for c in cells if c.step is None), *(c for c in cells if c.step is not None)]
        for c in ordered:
            labels = [(bin_label(b, short=True), bin_label(b)) for b in c.bins]
            out.append(bins_svg(f"{name} at {step_name(c.step)} ({c.runs} runs)", c.bins, labels,
                                overall.get(c.step)))
        out.append("</div><table><tr><th>step</th><th>values</th><th>runs</th>"
                   "<th>resolved</th><th>solve rate</th></tr>")
        for c in ordered:
            for b in c.bins:
                out.append(f"<tr><td>{step_name(c.step)}</td><td>{escape(bin_label(b))}</td>"
                           f'<td class="n">{b.rate.runs}</td><td class="n">{b.resolved}</td>'
                           f"{_td(b.rate, 3)}</tr>")
        out.append("</table></details>")
    return out


def format_html(report: OutcomeReport) -> str:
    body = ["<h1>streameval outcomes: which signals foretell failure</h1>",
            *_summary(report), *_curves(report), *_bins(report)]
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>streameval outcomes"
            f"</title><style>{_STYLE}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")
