"""A comparison as text: the terminal table and markdown (``streameval compare``).

Both say what the numbers are (which arm is the baseline, how many pairs, what the
interval and the p-value mean) next to them, and flag every row with fewer than
``MIN_PAIRS`` pairs: an interval from a handful of instances is not to be trusted.
"""

from __future__ import annotations

from streameval.report.compare import MIN_PAIRS, CompareReport, Comparison, MetricRow

__all__ = ["format_markdown", "format_terminal", "number", "pvalue"]


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


def _interval(row: MetricRow) -> str:
    e = row.estimate
    if e.low is None:
        return "-"
    return f"[{number(e.low, True)}, {number(e.high, True)}]"


def _header(report: CompareReport, c: Comparison) -> list[str]:
    tests = sum(len(x.rows) for x in report.comparisons)
    lines = [f"B = {c.b}  vs  A = {c.a} (baseline)",
             f"pairs: {len(c.pairs)} instance(s) in {c.clusters} repositor"
             f"{'y' if c.clusters == 1 else 'ies'}; unpaired: {len(c.only_a)} only in A, "
             f"{len(c.only_b)} only in B",
             f"B-A: mean paired difference (repeated runs of an instance averaged first); "
             f"95% interval from {report.resamples:,} bootstrap resamples of repositories "
             f"(seed {report.seed}); p two-sided, Holm-corrected over {tests} test(s)"]
    if len(c.pairs) < MIN_PAIRS:
        lines.append(f"!! fewer than {MIN_PAIRS} pairs: the intervals are not to be trusted")
    return lines


def _arms_line(report: CompareReport) -> str:
    parts = [f"{a.name}: {a.runs} run(s), {a.errors} not scored, {len(a.rows)} instance(s)"
             for a in report.arms]
    line = "arms: " + "; ".join(parts)
    if report.unnamed:
        line += f"; {report.unnamed} record(s) name no arm and are left out"
    return line


def format_terminal(report: CompareReport) -> str:
    out = [_arms_line(report)]
    for c in report.comparisons:
        out += ["", *_header(report, c), ""]
        width = max([len(r.metric.name) for r in c.rows] + [6]) + 1
        cells = [(number(r.mean_a), number(r.mean_b), number(r.estimate.mean, True),
                  _interval(r)) for r in c.rows]
        num = max([len(x) for row in cells for x in row[:3]] + [8]) + 2
        span = max([len(row[3]) for row in cells] + [12]) + 2
        out.append(f"{'metric':<{width}}{'A':>{num}}{'B':>{num}}{'B-A':>{num}}  "
                   f"{'95% interval':<{span}}{'p(Holm)':>8}{'pairs':>7}")
        for r, (a, b, d, interval) in zip(c.rows, cells):
            flag = "" if r.trusted or r.estimate.pairs == 0 else " !"
            out.append(f"{r.metric.name:<{width}}{a:>{num}}{b:>{num}}{d:>{num}}  "
                       f"{interval:<{span}}{pvalue(r.p_holm):>8}{r.estimate.pairs:>7}{flag}")
        if any(not r.trusted and r.estimate.pairs for r in c.rows):
            out.append(f"! fewer than {MIN_PAIRS} pairs have this metric: its interval is not "
                       "to be trusted")
        out += _unpaired(c)
    return "\n".join(out) + "\n"


def _unpaired(c: Comparison) -> list[str]:
    lines = []
    if c.only_a:
        lines.append(f"only in A ({c.a}): {', '.join(c.only_a)}")
    if c.only_b:
        lines.append(f"only in B ({c.b}): {', '.join(c.only_b)}")
    return lines


def format_markdown(report: CompareReport) -> str:
    out = [f"# streameval compare: baseline {report.baseline}", "", _arms_line(report)]
    for c in report.comparisons:
        out += ["", f"## {c.b} vs {c.a}", "", *(f"- {line}" for line in _header(report, c)[1:]),
                "", "| metric | A | B | B−A | 95% interval | p (Holm) | pairs |",
                "|---|---:|---:|---:|---|---:|---:|"]
        for r in c.rows:
            flag = "" if r.trusted or r.estimate.pairs == 0 else " ⚠"
            out.append(f"| {r.metric.name} | {number(r.mean_a)} | {number(r.mean_b)} | "
                       f"{number(r.estimate.mean, True)} | {_interval(r)} | {pvalue(r.p_holm)} | "
                       f"{r.estimate.pairs}{flag} |")
        if any(not r.trusted and r.estimate.pairs for r in c.rows):
            out += ["", f"⚠ fewer than {MIN_PAIRS} pairs: the interval is not to be trusted."]
        unpaired = _unpaired(c)
        if unpaired:
            out += ["", *(f"- {line}" for line in unpaired)]
    return "\n".join(out) + "\n"
