"""``streameval outcomes`` as text: the runs, the early-warning table (AUROC for failure
of every signal at each step k and at the end) and the solve rate by quantile bin."""

from __future__ import annotations

import math

from streameval.report.outcome_stats import Bin, Interval
from streameval.report.outcomes import OutcomeReport, SignalCell, direction

__all__ = ["bin_label", "format_text", "interval_text", "step_name"]

HELP = ("AUROC for failure: the chance that a failed run's value is above a resolved run's "
        "(ties half), the signal read in its direction (+: higher foretells failure, -: "
        "lower does). 0.5 is chance; below 0.5, the other way round. ! marks a figure with a "
        "reason not to trust it (--json lists them).")


def interval_text(iv: Interval, digits: int = 2) -> str:
    """``0.62 [0.55, 0.70]``, ``0.62 [-]`` without an interval, ``-`` without a figure;
    ``!`` after it when there is a reason not to trust it."""
    if iv.estimate is None:
        return "-"
    mark = "!" if iv.reasons else ""
    if iv.low is None or iv.high is None:
        return f"{iv.estimate:.{digits}f} [-]{mark}"
    return f"{iv.estimate:.{digits}f} [{iv.low:.{digits}f}, {iv.high:.{digits}f}]{mark}"


def step_name(step: int | None) -> str:
    return "end" if step is None else f"step {step}"


def _number(v: float) -> str:
    if math.isinf(v):
        return "not yet"
    return f"{int(v):,}" if float(v).is_integer() else f"{v:.3g}"


def _short(v: float) -> str:
    if math.isinf(v):
        return "not yet"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.2g}" if not float(v).is_integer() else f"{int(v)}"


def bin_label(b: Bin, short: bool = False) -> str:
    """The bin's range as its values lie: ``0``, ``1 to 3``, ``not yet``; ``short``:
    ``63.4k-297k`` (for a picture's axis)."""
    fmt = _short if short else _number
    lo, hi = fmt(b.low_value), fmt(b.high_value)
    return lo if lo == hi else (f"{lo}-{hi}" if short else f"{lo} to {hi}")


def _cell(cells: list[SignalCell], step: int | None) -> str:
    cell = next((c for c in cells if c.step == step), None)
    return "" if cell is None else interval_text(cell.auroc)


def format_text(report: OutcomeReport) -> str:
    r = report
    lines = [f"runs: {r.records} record(s); {r.runs} with an outcome and signals "
             f"({r.no_outcome} without an outcome, {r.no_signals} not scored)",
             f"solve rate {interval_text(r.solve_rate, 3)} over {r.repositories} "
             f"repositories (95% intervals, {r.unit}-level)", ""]
    lines.append("runs that reached step k, and their solve rate:")
    for row in r.rows:
        lines.append(f"  {step_name(row.step):>9}: {row.runs:>5} runs, {row.failed:>4} failed, "
                     f"solve rate {interval_text(row.solve_rate, 3)}")
    steps = [*r.steps, None]
    lines += ["", HELP, ""]
    width = 22
    lines.append(f"{'signal':<22} {'':>2} " + " ".join(f"{step_name(k):<{width}}" for k in steps))
    for name, cells in r.cells.items():
        sign = "+" if direction(name) > 0 else "-"
        lines.append(f"{name:<22} {sign:>2} " + " ".join(f"{_cell(cells, k):<{width}}"
                                                       for k in steps).rstrip())
    lines += ["", "solve rate by quantile bin, at the end (bins at every step: --json, --html):",
              f"{'signal':<22} {'values':<24} {'runs':>5} {'resolved':>8}  solve rate"]
    for name, cells in r.cells.items():
        end = next((c for c in cells if c.step is None), None)
        for i, b in enumerate(end.bins if end else []):
            lines.append(f"{name if i == 0 else '':<22} {bin_label(b):<24} {b.rate.runs:>5} "
                         f"{b.resolved:>8}  {interval_text(b.rate, 3)}")
    if r.warnings:
        lines += ["", "What these data cannot support:"]
        lines.extend(f"- {w}" for w in r.warnings)
    return "\n".join(lines) + "\n"
