"""A comparison as text: the terminal table and markdown (``streameval compare``).

Both say what the numbers are next to them: which arm is the baseline, how many pairs
and repositories, how the repositories were found (and which instances name none), what
each arm lost, what the interval and the p-value are and over which unit. Rows come in
the page's order (``compare.ordered``: key metrics, then families); a row is marked
``*`` when significant after Holm's correction and ``!`` when not to be trusted, and the
reasons are listed under the table, each once with the rows it concerns.
"""

from __future__ import annotations

from collections.abc import Sequence

from streameval.report.compare import (
    CompareReport,
    Comparison,
    MetricRow,
    ordered,
    unpaired_metrics,
)
from streameval.report.inference import EXACT_UNITS

__all__ = ["describe", "format_markdown", "format_terminal", "interval", "mark", "number",
           "pvalue", "reasons"]


def number(v: float | None, signed: bool = False) -> str:
    """A value at a precision that suits its size (ratios to 3 decimals, counts whole)."""
    if v is None:
        return "-"
    sign = "+" if signed and v > 0 else ""
    a = abs(v)
    if a >= 1000:
        return f"{sign}{v:,.0f}"
    if a >= 10:
        return f"{sign}{v:.1f}"
    return f"{sign}{v:.3f}" if a >= 0.001 or a == 0 else f"{sign}{v:.2g}"


def pvalue(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def interval(row: MetricRow) -> str:
    e = row.inference
    if e.low is None:
        return "-"
    return f"[{number(e.low, True)}, {number(e.high, True)}]"


def mark(row: MetricRow) -> str:
    return ("*" if row.significant else "") + ("" if row.trusted else "!")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def describe(report: CompareReport, c: Comparison) -> list[str]:
    """The lines that say what a comparison's numbers are, and its warnings (``!!``)."""
    p = c.pairing
    lines = [f"pairs: {_plural(len(c.pairs), 'instance', 'instances')} in "
             f"{_plural(c.clusters, 'repository', 'repositories')}; unpaired: "
             f"{len(c.only_a)} only in A, {len(c.only_b)} only in B"]
    if p.outcome_only:
        lines[0] += (f"; {len(p.outcome_only)} more paired on their outcome alone (resolved "
                     "counts runs that could not be scored)")
    named = {s: p.sources.count(s) for s in ("repo", "id")}
    how = (f"repositories from the records' repo field ({named['repo']} pairs) and from "
           f"SWE-bench style ids ({named['id']})")
    if c.unnamed:
        shown = ", ".join(c.unnamed[:5]) + (", ..." if len(c.unnamed) > 5 else "")
        how += f"; {len(c.unnamed)} name no repository and count as one each: {shown}"
    lines.append(f"clusters: {how}")
    lost = f"losses: {c.losses()} (they failed, or were not run)"
    if report.missing == "worst":
        lost += (f"; --missing worst: {p.imputed_b} of B's and {p.imputed_a} of A's scored "
                 "as the worst value either arm had")
    lines.append(lost)
    unit = ("repositories (instances where a metric has 2 repositories or fewer: labelled, "
            "never trusted)" if report.unit == "repository" else
            "instances, as asked (--unit instance): the figures speak for these "
            "repositories' tasks only")
    lines.append(f"B-A: the mean paired difference (repeated runs averaged first); 95% "
                 f"interval: CR2 standard error, Bell-McCaffrey degrees of freedom, over {unit}; "
                 f"p: two-sided, the larger of the t-test's and the sign-flip test's (every "
                 f"flip up to {EXACT_UNITS} units, else {report.flips:,} seeded {report.seed}); "
                 f"McNemar's for 0/1 outcomes over instances; Holm-corrected over "
                 f"{report.tests} test(s)")
    lines += [f"!! {r}: no row is to be trusted" for r in c.shared]
    return lines


def reasons(rows: Sequence[MetricRow], shared: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Each reason not to trust a row, once, with the rows it concerns ("every row", or
    their names), but for the comparison's ``shared`` ones (its header says them)."""
    out: dict[str, list[str]] = {}
    for r in rows:
        for why in r.inference.reasons:
            if why not in shared:
                out.setdefault(why, []).append(r.metric.name)
    every = len(rows) > 1
    return [(why, "every row" if every and len(names) == len(rows) else ", ".join(names))
            for why, names in out.items()]


def _arms_line(report: CompareReport) -> str:
    parts = [f"{a.name}: {a.runs} run(s), {a.errors} not scored, {len(a.scored)} instance(s)"
             for a in report.arms]
    line = "arms: " + "; ".join(parts)
    if report.unnamed:
        line += f"; {report.unnamed} record(s) name no arm and are left out"
    return line


def _cells(r: MetricRow) -> tuple[str, ...]:
    e = r.inference
    return (number(r.mean_a), number(r.mean_b), number(e.estimate, True), interval(r),
            pvalue(r.p_holm), str(e.pairs), str(e.clusters), e.unit, mark(r))


def format_terminal(report: CompareReport) -> str:
    out = [_arms_line(report)]
    for c in report.comparisons:
        out += ["", f"B = {c.b}  vs  A = {c.a} (baseline)", *describe(report, c), ""]
        groups = ordered(c.rows)
        shown = [r for _, rows in groups for r in rows]
        cells = [_cells(r) for r in shown]
        width = max([len(r.metric.name) + 2 for r in shown] + [8]) + 1
        num = max([len(x) for row in cells for x in row[:3]] + [8]) + 2
        span = max([len(row[3]) for row in cells] + [12]) + 2
        out.append(f"{'metric':<{width}}{'A':>{num}}{'B':>{num}}{'B-A':>{num}}  "
                   f"{'95% interval':<{span}}{'p(Holm)':>8}{'pairs':>7}{'repos':>6}  unit")
        i = 0
        for family, rows in groups:
            out.append(family)
            for r in rows:
                a, b, d, iv, p, pairs, repos, unit, flag = cells[i]
                i += 1
                out.append(f"  {r.metric.name:<{width - 2}}{a:>{num}}{b:>{num}}{d:>{num}}  "
                           f"{iv:<{span}}{p:>8}{pairs:>7}{repos:>6}  {unit:<10} {flag}".rstrip())
        missing = unpaired_metrics(c.rows)
        if missing:
            out.append(f"no pair has: {', '.join(missing)}")
        out += _legend(shown, c.shared)
        out += _unpaired(c)
    return "\n".join(out) + "\n"


def _legend(shown: list[MetricRow], shared: Sequence[str]) -> list[str]:
    lines = []
    if any(r.significant for r in shown):
        lines.append("* significant at 5% after Holm's correction")
    why = reasons(shown, shared)
    if why:
        lines.append("! not to be trusted:")
        lines += [f"  {text}: {names}" for text, names in why]
    return lines


def _unpaired(c: Comparison) -> list[str]:
    lines = []
    if c.only_a:
        lines.append(f"only in A ({c.a}): {', '.join(c.only_a)}")
    if c.only_b:
        lines.append(f"only in B ({c.b}): {', '.join(c.only_b)}")
    return lines


_MD_HEAD = ["| metric | A | B | B−A | 95% interval | p (Holm) | pairs | repos | unit | |",
            "|---|---:|---:|---:|---|---:|---:|---:|---|---|"]


def _md_rows(rows: list[MetricRow]) -> list[str]:
    out = []
    for r in rows:
        a, b, d, iv, p, pairs, repos, unit, flag = _cells(r)
        out.append(f"| {r.metric.name} | {a} | {b} | {d} | {iv} | {p} | {pairs} | {repos} | "
                   f"{unit} | {flag.replace('!', '⚠')} |")
    return out


def format_markdown(report: CompareReport) -> str:
    out = [f"# streameval compare: baseline {report.baseline}", "", _arms_line(report)]
    for c in report.comparisons:
        out += ["", f"## {c.b} vs {c.a}", "",
                *(f"- {line.replace('!! ', '⚠ ')}" for line in describe(report, c))]
        groups = ordered(c.rows)
        for family, rows in groups:
            if family == "key metrics":
                out += ["", *_MD_HEAD, *_md_rows(rows)]
            else:
                flagged = sum(not r.trusted for r in rows)
                out += ["", f"<details><summary>{family}: {len(rows)} metric(s), "
                        f"{sum(r.significant for r in rows)} significant, {flagged} "
                        "untrusted</summary>", "", *_MD_HEAD, *_md_rows(rows), "", "</details>"]
        missing = unpaired_metrics(c.rows)
        if missing:
            out += ["", f"No pair has: {', '.join(missing)}."]
        shown = [r for _, rows in groups for r in rows]
        if any(r.significant for r in shown):
            out += ["", "`*` significant at 5% after Holm's correction."]
        why = reasons(shown, c.shared)
        if why:
            out += ["", "⚠ not to be trusted:", "", *(f"- {text}: {names}" for text, names in why)]
        unpaired = _unpaired(c)
        if unpaired:
            out += ["", *(f"- {line}" for line in unpaired)]
    return "\n".join(out) + "\n"
