"""The figures of a truth run as a table (and the same figures as a dict for JSON)."""

from __future__ import annotations

from truth.runner import Tally


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def figures(t: Tally) -> dict:
    """The headline numbers of one group."""
    c = t.c
    read, chk = c["read_calls"], c["checkable"]
    return {
        "runs": c["runs"], "calls": c["calls"], "read_calls": read,
        "checkable": chk, "checkable_pct": round(100 * chk / read, 2) if read else None,
        "exact": c["exact"], "exact_pct": round(100 * c["exact"] / chk, 2) if chk else None,
        "line_precision": round(c["lines_right"] / c["lines_credited"], 4)
        if c["lines_credited"] else None,
        "line_recall": round(c["lines_right"] / c["lines_truth"], 4) if c["lines_truth"] else None,
        "lines_truth": c["lines_truth"], "lines_credited": c["lines_credited"],
        "lines_right": c["lines_right"], "agent_lines_shown": c["lines_agent_shown"],
        "edits_not_redone": c["edits_not_redone"], "missing_blobs": c["missing_blobs"],
        "runs_with_patch": c["runs_with_patch"], "patch_reproduced": c["patch_reproduced"],
        "seconds": round(c["seconds_x1000"] / 1000, 1),
    }


def render(groups: dict[str, Tally], skipped: dict[str, int], header: str) -> str:
    out = [header, ""]
    if skipped:
        out.append("runs skipped: " + ", ".join(f"{k} {v}" for k, v in
                                                sorted(skipped.items(), key=lambda kv: -kv[1])))
        out.append("")
    cols = ("group", "runs", "read calls", "checkable", "exact", "precision", "recall",
            "false lines", "missed lines")
    rows = [cols]
    for name, t in groups.items():
        f = figures(t)
        rows.append((name, str(f["runs"]), str(f["read_calls"]),
                     f"{f['checkable']} ({pct(f['checkable'], f['read_calls'])})",
                     f"{f['exact']} ({pct(f['exact'], f['checkable'])})",
                     _num(f["line_precision"]), _num(f["line_recall"]),
                     str(sum(t.false.values())), str(sum(t.missed.values()))))
    widths = [max(len(r[k]) for r in rows) for k in range(len(cols))]
    for k, r in enumerate(rows):
        out.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                             for i, (v, w) in enumerate(zip(r, widths))))
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    for name, t in groups.items():
        out.append("")
        out.append(f"== {name}")
        out.append(_counter("not checkable", t.not_checkable))
        out.append(_counter("  not read-only, by first program", t.programs, top=12))
        out.append(_counter("checkable, matched the trace", t.matches))
        out.append(_counter("false-credit lines", t.false))
        out.append(_counter("missed lines", t.missed))
        f = figures(t)
        out.append(f"lines: truth {f['lines_truth']}, credited {f['lines_credited']}, right "
                   f"{f['lines_right']}; agent's own lines shown {f['agent_lines_shown']}; "
                   f"edits not redone {f['edits_not_redone']}; "
                   + (f"final patch to base files reproduced in {f['patch_reproduced']} of "
                      f"{f['runs_with_patch']} runs with one; " if f["runs_with_patch"] else "")
                   + f"replay {f['seconds']} s")
    return "\n".join(out)


def render_examples(groups: dict[str, Tally], per_class: int = 3) -> str:
    out = []
    for name, t in groups.items():
        classes = sorted(t.examples, key=lambda k: -_size(t, k))
        if not classes:
            continue
        out.append(f"== examples: {name}")
        for cls in classes:
            out.append(f"-- {cls} ({_size(t, cls)} lines)")
            for ex in t.examples[cls][:per_class]:
                cmd = ex["command"].replace("\n", "\\n")[:160]
                out.append(f"   {ex['run']} call {ex['call']}: {cmd}")
                out.append(f"      credited {ex['credited']}")
                out.append(f"      truth    {ex['truth']}  (+{ex['agent_lines_shown']} agent lines)")
    return "\n".join(out)


def _size(t: Tally, key: str) -> int:
    if key.startswith("missed: "):
        return t.missed.get(key[len("missed: "):], 0)
    return t.false.get(key[len("false: "):], 0)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _counter(title: str, c, top: int = 20) -> str:
    items = [(k, v) for k, v in c.most_common(top) if v]
    if not items:
        return f"{title}: none"
    return f"{title}: " + ", ".join(f"{k} {v}" for k, v in items)
