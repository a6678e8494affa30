"""Regenerate the README's pictures from the bundled examples (real records)."""

from pathlib import Path

from streameval.live.watch import load_resources
from streameval.report.plot import coverage_svg
from streameval.runs.evaluate import evaluate_trace

EX = Path(__file__).resolve().parent.parent / "examples"
DOCS = Path(__file__).resolve().parent

if __name__ == "__main__":
    res = load_resources(str(EX / "gold.jsonl"), None, str(EX / "repo"))
    for trace, name, title in (
            (EX / "runs/example-run-1/trace.jsonl", "example-run.svg",
             "example-run-1 (examples/runs): coverage per step"),
            (EX / "backtest/late-find-1/trace.jsonl", "late-find-run.svg",
             "late-find-1 (examples/backtest): coverage per step")):
        record = evaluate_trace(trace, res)[0]
        (DOCS / name).write_text(coverage_svg(record, title=title))
        print(f"wrote {DOCS / name} ({record['num_steps']} steps)")
