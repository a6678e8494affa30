"""``abort-backtest``'s table: a policy per line, judged by outcomes where runs have them
(docs/outcomes.md §7), else by the proxy (a stopped run that went on to high coverage or
a correct edit location), labelled as one."""

from __future__ import annotations

__all__ = ["format_table"]

ESTIMATED = ("* estimated: the trace reports its usage only as a run total (in proportion to "
             "the tool calls after the stop), or its cost only at the end (by the share of "
             "tokens spent after the stop)")
STOP_ESTIMATED = ("~ stop estimated: a document trace keeps only its total usage; the budget "
                  "is placed where even spending per tool call crosses it")
AFTER_LAST_CALL = ("after last call: runs the policy fired on only after their last tool call "
                   "(at the trace's end, as a cost stated only then): would have changed "
                   "nothing, so neither stopped, lost, caught nor saved")


def _step(p: dict) -> str:
    st = p["stop_step"]
    if not st:
        return "-"
    return f"{'~' if p['stop_estimated'] else ''}{st['median']:g}/{st['min']}/{st['max']}"


def _tokens(saved: dict) -> str:
    tokens = saved["tokens"]
    return ("-" if tokens is None else str(tokens)) + ("*" if saved["tokens_estimated"] else " ")


def _cost(saved: dict) -> str:
    cost = saved["cost_usd"]
    return ("-" if cost is None else f"{cost:.2f}") + ("*" if saved["cost_estimated"] else " ")


def _share(n: int, of: int) -> str:
    return f"{n}/{of}"


def _judged(summary: dict) -> list[str]:
    o = summary["outcomes"]
    runs = summary["runs"]
    errors = sum(1 for r in runs if r["error"])
    head = (f"runs: {o['runs']}  with an outcome: {o['known']}  resolved: {o['resolved']} "
            f"(solve rate {o['solve_rate']:.3f})  not scored: {errors}")
    lines = [head]
    if o["known"] < o["runs"]:
        lines.append(f"{o['runs'] - o['known']} run(s) have no outcome: their stops are "
                     "counted in 'stopped', neither lost nor caught")
    lines += ["",
              f"{'':<20} {'':<13} {'':>7} {'after':>9} {'':>15} {'lost':>10} {'caught':>10} "
              f"{'solve rate':>10}  {'saved on failed runs':<29}  {'saved on resolved runs':<29}",
              f"{'policy':<20} {'kind':<13} {'stopped':>7} {'last call':>9} "
              f"{'step med/min/max':>15} {'(resolved)':>10} {'(failed)':>10} {'with it':>10}"
              f"  {'steps':>6} {'tokens':>12} {'$':>9}  {'steps':>6} {'tokens':>12} {'$':>9}"]
    for p in summary["policies"]:
        j = p["outcomes"]
        rate = j["solve_rate_with"]
        fail, good = j["saved_on_failed"], j["saved_on_resolved"]
        lines.append(
            f"{p['policy']:<20} {p['kind']:<13} {_share(p['stopped'], p['runs']):>7} "
            f"{p['after_last_call']:>9} {_step(p):>15} {_share(j['lost'], j['resolved']):>10} "
            f"{_share(j['caught'], j['unresolved']):>10} "
            f"{'-' if rate is None else f'{rate:.3f}':>10}"
            f"  {fail['steps']:>6} {_tokens(fail):>12} {_cost(fail):>9}"
            f"  {good['steps']:>6} {_tokens(good):>12} {_cost(good):>9}")
    lost = [(p["policy"], p["outcomes"]["lost_runs"]) for p in summary["policies"]
            if p["outcomes"]["lost_runs"]]
    if lost:
        lines.append("")
        lines.extend(f"resolved runs stopped by {name}: {', '.join(ids)}" for name, ids in lost)
    return lines


def _proxy(summary: dict) -> list[str]:
    runs = summary["runs"]
    good = sum(1 for r in runs if r["good_proxy"])
    errors = sum(1 for r in runs if r["error"])
    lines = [f"runs: {len(runs)}  good by the proxy (coverage@{summary['granularity']} >= "
             f"{summary['high_coverage']:g} or EditLoc recall > 0): {good}  not scored: {errors}",
             "no outcomes: a stop is called wrongful by a proxy; --outcomes judges stops by "
             "whether the runs solved their tasks",
             "",
             f"{'policy':<20} {'kind':<13} {'stopped':>7} {'after last call':>15} "
             f"{'step med/min/max':>17} {'saved steps':>11} {'saved tokens':>12} {'saved $':>8} "
             f"{'wrongful (proxy)':>16}"]
    for p in summary["policies"]:
        saved = p["saved"]
        lines.append(
            f"{p['policy']:<20} {p['kind']:<13} {_share(p['stopped'], p['runs']):>7} "
            f"{p['after_last_call']:>15} {_step(p):>17} {saved['steps']:>11} "
            f"{_tokens(saved):>12} {_cost(saved):>8}"
            f" {p['wrongful_proxy']:>16}")
    wrong = [(p["policy"], p["wrongful_proxy_runs"]) for p in summary["policies"]
             if p["wrongful_proxy_runs"]]
    if wrong:
        lines.append("")
        lines.extend(f"wrongful stops (proxy) by {name}: {', '.join(ids)}" for name, ids in wrong)
    return lines


def format_table(summary: dict) -> str:
    """The report ``summarize`` made, as text."""
    lines = _judged(summary) if summary["judged_by"] == "outcomes" else _proxy(summary)
    policies = summary["policies"]
    if any(p["after_last_call"] for p in policies):
        lines.append(AFTER_LAST_CALL)
    if any(p["saved"]["tokens_estimated"] or p["saved"]["cost_estimated"] for p in policies):
        lines.append(ESTIMATED)
    if any(p["stop_estimated"] for p in policies):
        lines.append(STOP_ESTIMATED)
    return "\n".join(lines)
