import re

from streameval.report.plot import coverage_svg


def record(steps):
    return {"run_id": "r<1>", "trajectory": {
        "steps": [{"step": i + 1, "coverage": c} for i, c in enumerate(steps)],
        "auc_coverage": {"file": 0.5, "symbol": 0.25, "span": 0.25, "line": 0.0}}}


def test_one_polyline_per_granularity_with_a_point_per_step():
    cov = [{"file": 0.0, "symbol": 0.0, "span": 0.0, "line": 0.0},
           {"file": 1.0, "symbol": 0.5, "span": 0.5, "line": 0.0}]
    svg = coverage_svg(record(cov), width=400, height=200)
    lines = dict(re.findall(r'data-granularity="(\w+)" points="([^"]+)"', svg))
    assert set(lines) == {"file", "symbol", "span", "line"}
    assert all(len(p.split()) == 2 for p in lines.values())
    # file goes from the bottom (0) to the top (1) of the plot area: y 160 -> 36 (plot area 36..160)
    assert lines["file"].split()[0].endswith(",160.0") and lines["file"].split()[1].endswith(",36.0")
    assert "r&lt;1&gt;" in svg and "AUC 0.50" in svg


def test_no_steps_draws_axes_only():
    svg = coverage_svg(record([]))
    assert "<polyline" not in svg and svg.startswith("<svg")


def test_a_run_id_with_control_characters_gives_valid_xml(tmp_path):
    """f53415f wrote a meta.json run id's ESC, BEL and NUL into ``view --svg`` as they
    were: no XML parser reads such a file. They are written as ``\\x1b``."""
    import json
    import xml.etree.ElementTree as ET

    from streameval.commands.main import main

    hostile = "r\x1b]0;X\x07\x00\ufffe\u202eevil"
    rec = {**record([{"file": 1.0, "symbol": 1.0, "span": 1.0, "line": 1.0}]),
           "run_id": hostile, "instance_id": "demo__demo-1", "num_steps": 1}
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(rec) + "\n")
    out = tmp_path / "run.svg"
    assert main(["view", str(records), "--svg", str(out), "--run", hostile]) == 0
    root = ET.fromstring(out.read_bytes())                     # well-formed
    title = root.find("{http://www.w3.org/2000/svg}text").text
    assert title == "r\\x1b]0;X\\x07\\x00\\ufffe\\u202eevil: coverage per step"
    long = coverage_svg({**rec, "run_id": "x" * 100_000})
    assert ET.fromstring(long) is not None and len(long) < 5000   # cut, with a hash
