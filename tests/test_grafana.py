"""Grafana dashboards: the JSON model is sound, and every panel's PromQL returns data
from a real Prometheus scraping a real watcher over the example runs."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from streameval.live.exporter import HELP

ROOT = Path(__file__).resolve().parent.parent
GRAFANA = ROOT / "grafana"
EX = ROOT / "examples"
BUILTIN = re.compile(r"^__")
VAR = re.compile(r"\$\{(\w+)(?::[\w]+)?\}|\$(\w+)|\[\[(\w+)\]\]")
METRIC = re.compile(r"\bstreameval_[a-z_]+\b")


def dashboards() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((GRAFANA / "dashboards").glob("*.json"))}


def panels(dash: dict) -> list[dict]:
    out = []
    for p in dash["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # panels inside collapsed rows
    return out


def used_variables(text: str) -> set[str]:
    names = {a or b or c for a, b, c in VAR.findall(text)}
    return {n for n in names if not BUILTIN.match(n)}


# ---------------------------------------------------------------------- structure


def test_four_dashboards_with_distinct_uids():
    d = dashboards()
    assert set(d) == {"overview.json", "run.json", "evaluator.json", "fleet.json"}
    uids = [x["uid"] for x in d.values()]
    assert len(set(uids)) == 4 and all(x["schemaVersion"] >= 39 for x in d.values())


def _builder():
    spec = importlib.util.spec_from_file_location("build_dashboards", GRAFANA / "build_dashboards.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dashboards_are_what_the_generator_writes():
    mod = _builder()
    for name, text in mod.render().items():
        assert (GRAFANA / "dashboards" / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python grafana/build_dashboards.py")


@pytest.mark.parametrize("name", ["overview.json", "run.json", "evaluator.json", "fleet.json"])
def test_panel_ids_grid_and_targets(name):
    dash = dashboards()[name]
    ps = panels(dash)
    ids = [p["id"] for p in ps]
    assert len(ids) == len(set(ids)), f"duplicate panel ids in {name}"
    cells: set[tuple[int, int]] = set()
    for p in ps:
        g = p["gridPos"]
        assert all(isinstance(g[k], int) for k in ("x", "y", "w", "h")), p["title"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not (mine & cells), f"{p['title']} overlaps another panel"
        cells |= mine
        assert p["datasource"] == {"type": "prometheus", "uid": "prometheus"}
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs))
        for t in p["targets"]:
            assert t.get("expr", "").strip(), f"{p['title']}: target without expr"
            assert t["datasource"]["uid"] == "prometheus"


@pytest.mark.parametrize("name", ["overview.json", "run.json", "evaluator.json", "fleet.json"])
def test_every_variable_used_is_defined(name):
    dash = dashboards()[name]
    defined = {v["name"] for v in dash["templating"]["list"]}
    used: set[str] = set()
    for p in panels(dash):
        used |= used_variables(p["title"])
        for t in p["targets"]:
            used |= used_variables(t["expr"])
    for v in dash["templating"]["list"]:
        q = v.get("query")
        used |= used_variables(q["query"] if isinstance(q, dict) else str(q or ""))
    assert used <= defined, f"{name}: undefined variables {sorted(used - defined)}"


def test_per_run_view_has_the_four_run_variables():
    dash = dashboards()["run.json"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert set(variables) >= {"run_id", "agent", "model", "instance_id"}
    assert "label_values(streameval_run_info" in variables["run_id"]["definition"]


def test_every_metric_queried_is_exported():
    exported = set()
    for name in HELP:
        exported |= {name, name + "_bucket", name + "_sum", name + "_count"}
    for name, dash in dashboards().items():
        for p in panels(dash):
            for t in p["targets"]:
                unknown = set(METRIC.findall(t["expr"])) - exported
                assert not unknown, f"{name} / {p['title']}: {sorted(unknown)} not exported"


def test_the_fleet_dashboard_reads_only_bounded_series():
    """The Fleet dashboard must stay cheap with 10,000 runs: no per-run family, and
    every ``metric`` it asks for is one the watcher averages (a typo would draw nothing)."""
    from streameval.live.exporter import RUN_FAMILIES
    from streameval.live.fleet import FLEET_METRIC_NAMES

    per_run = {name for name, _k, _e in RUN_FAMILIES}
    per_run |= {n + "_total" for n in per_run}
    grans = ["file", "symbol", "span", "line"]
    asked: set[str] = set()
    for p in panels(dashboards()["fleet.json"]):
        for t in p["targets"]:
            assert not set(METRIC.findall(t["expr"])) & per_run, p["title"]
            for name in re.findall(r'metric="([^"]+)"', t["expr"]):
                asked |= ({name.replace("${granularity}", g) for g in grans}
                          if "${granularity}" in name else {name})
    assert asked and asked <= set(FLEET_METRIC_NAMES), sorted(asked - set(FLEET_METRIC_NAMES))


def test_provisioning_points_at_the_dashboards_and_the_datasource():
    ds = (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text()
    assert re.search(r"^\s+uid: prometheus$", ds, re.M) and re.search(r"^\s+type: prometheus$", ds, re.M)
    prov = (GRAFANA / "provisioning" / "dashboards" / "streameval.yml").read_text()
    assert re.search(r"^\s+type: file$", prov, re.M)
    path = re.search(r"^\s+path: (\S+)$", prov, re.M).group(1)
    compose = (ROOT / "deploy" / "docker-compose.yml").read_text()
    assert f"../grafana/dashboards:{path}" in compose  # the provider reads what compose mounts


# ---------------------------------------------------------------------- real Prometheus


#: the instance of the gold row ``_gold`` damages
BROKEN = "broken__row-1"


def _gold(tmp_path: Path) -> Path:
    """The example's gold, and a row whose gold context is not JSON (``bad_gold``)."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text((EX / "gold.jsonl").read_text()
                    + json.dumps({"instance_id": BROKEN, "gold_context": "[not json"}) + "\n")
    return gold


def _stage(runs: Path) -> None:
    """The example runs, plus one still running (no result line) with one bad line."""
    shutil.copytree(EX / "runs" / "example-run-1", runs / "example-run-1")
    shutil.copytree(EX / "backtest" / "runaway-1", runs / "runaway-1")
    shutil.copytree(EX / "backtest" / "late-find-1", runs / "late-find-1")
    active = runs / "active-1"
    active.mkdir()
    meta = json.loads((EX / "backtest" / "runaway-1" / "meta.json").read_text())
    (active / "meta.json").write_text(json.dumps({**meta, "run_id": "active-1"}))
    lines = (EX / "backtest" / "runaway-1" / "trace.jsonl").read_bytes().splitlines()
    (active / "trace.jsonl").write_bytes(b"\n".join(lines[:21] + [b"{not json"] + lines[21:-1]) + b"\n")
    # a run of an instance the gold does not have: followed, exported, measured against no
    # gold; and one whose gold row is damaged: never scored (docs/metrics.md §5b)
    broken = runs / "broken-1"
    broken.mkdir()
    (broken / "meta.json").write_text(json.dumps({**meta, "run_id": "broken-1",
                                                  "instance_id": BROKEN}))
    shutil.copyfile(EX / "backtest" / "late-find-1" / "trace.jsonl", broken / "trace.jsonl")
    stray = runs / "stray-1"
    stray.mkdir()
    (stray / "meta.json").write_text(json.dumps({**meta, "run_id": "stray-1",
                                                 "instance_id": "nobody__nothing-1"}))
    shutil.copyfile(EX / "backtest" / "runaway-1" / "trace.jsonl", stray / "trace.jsonl")
    # two experiments for the Fleet dashboard: the runaway (aborted) run is a baseline one
    for name, experiment in (("example-run-1", "baseline"), ("runaway-1", "baseline"),
                             ("late-find-1", "agents-md"), ("active-1", "agents-md"),
                             ("stray-1", "agents-md")):
        path = runs / name / "meta.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "experiment": experiment}))


def _fill(expr: str, values: dict[str, str]) -> str:
    for k in ("__rate_interval", "__interval", "__range"):
        expr = expr.replace("$" + k, values[k])

    def sub(m: re.Match) -> str:
        return values[m.group(1) or m.group(2) or m.group(3)]

    return VAR.sub(sub, expr)


@pytest.mark.prometheus
def test_every_panel_query_returns_data_from_a_real_prometheus(tmp_path):
    from prom import PrometheusServer

    from streameval.live.abort.engine import AbortEngine, attach, parse_policies
    from streameval.live.server import serve
    from streameval.live.watch import WatchConfig, Watcher
    from streameval.runs.resources import load_resources

    runs = tmp_path / "runs"
    runs.mkdir()
    _stage(runs)
    res = load_resources(str(_gold(tmp_path)), None, str(EX / "repo"))
    w = Watcher(WatchConfig(root=runs, idle_timeout=3600, patch_grace=0), res)
    attach(w, AbortEngine(parse_policies('[[policy]]\nname = "steps-20"\nkind = "max_steps"\n'
                                         'limit = 20\n'), dry_run=True))
    w.scan()
    w.poll_all()
    w.tick()  # runs whose trace ended are finished; active-1 stays active
    assert w.table.counts() == (1, 5)
    server, _reg, port = serve(w.table, "127.0.0.1", 0)
    try:
        with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{port}"], "1s") as prom:
            prom.wait_for("count(streameval_run_info)",
                          lambda r: r and float(r[0]["value"][1]) == 6, 60)
            # rates need two samples inside the window
            prom.wait_for("rate(streameval_lines_processed_total[1m])", lambda r: bool(r), 60)
            run = w.table.runs[str(runs / "example-run-1" / "trace.jsonl")].session.identity
            values = {"run_id": run.run_id, "agent": run.agent, "model": run.model,
                      "instance_id": run.instance_id, "granularity": "line", "job": "streameval",
                      "experiment": "baseline",
                      "__rate_interval": "1m", "__interval": "15s", "__range": "5m"}
            empty = []
            for name, dash in dashboards().items():
                for p in panels(dash):
                    for t in p["targets"]:
                        expr = _fill(t["expr"], values)
                        if not prom.query(expr):
                            empty.append(f"{name} / {p['title']}: {expr}")
            assert not empty, "panels without data:\n" + "\n".join(empty)
            # the Fleet dashboard's pooled mean is the mean over the finished scored runs
            # (both experiments, one model), as Prometheus computes it from per-run series
            build = _builder()
            pooled = prom.query(_fill(build.pooled("line.coverage", "model"),
                                      {**values, "experiment": ".*"}))
            direct = prom.query('avg(streameval_coverage_ratio{granularity="line"} and on (run_id) '
                                'streameval_run_info{state="finished"})')
            assert len(pooled) == 1 and pooled[0]["metric"] == {"model": run.model}
            assert float(pooled[0]["value"][1]) == pytest.approx(float(direct[0]["value"][1]))
    finally:
        server.shutdown()
