"""Write ``grafana/dashboards/*.json`` from the panel lists below.

The dashboards follow Grafana's dashboard JSON model (schemaVersion 39): panels with
``gridPos``, Prometheus targets with ``expr``, variables in ``templating.list``.
They are generated so that layout, datasource and variable wiring stay uniform;
edit this file, then run it (``tests/test_grafana.py`` checks the JSON is current):

    python grafana/build_dashboards.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "dashboards"
DS = {"type": "prometheus", "uid": "prometheus"}
RUN_FILTER = 'agent=~"$agent", model=~"$model", instance_id=~"$instance_id"'
ONE_RUN = 'run_id="$run_id"'


# ---------------------------------------------------------------------- building blocks


def target(expr: str, legend: str = "", ref: str = "A", instant: bool = False) -> dict:
    return {"refId": ref, "datasource": DS, "expr": expr, "legendFormat": legend or "__auto",
            "range": not instant, "instant": instant, "editorMode": "code"}


def panel(kind: str, title: str, targets: list[dict], w: int, h: int, *, unit: str = "",
          description: str = "", ratio: bool = False, options: dict | None = None,
          links: list | None = None) -> dict:
    defaults: dict = {"unit": "percentunit" if ratio else unit}
    if ratio:
        defaults.update(min=0, max=1)
    if links:
        defaults["links"] = links
    p = {"type": kind, "title": title, "description": description, "datasource": DS,
         "targets": [dict(t, refId=chr(ord("A") + i)) for i, t in enumerate(targets)],
         "fieldConfig": {"defaults": defaults, "overrides": []},
         "options": options or {}, "gridPos": {"w": w, "h": h}}
    return p


def ts(title, targets, w=12, h=8, **kw):
    kw.setdefault("options", {"legend": {"displayMode": "list", "placement": "bottom"},
                              "tooltip": {"mode": "multi", "sort": "desc"}})
    return panel("timeseries", title, targets, w, h, **kw)


def stat(title, targets, w=6, h=4, **kw):
    kw.setdefault("options", {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                                "values": False},
                              "colorMode": "value", "graphMode": "none", "textMode": "auto"})
    return panel("stat", title, targets, w, h, **kw)


def bars(title, targets, w=12, h=8, **kw):
    kw.setdefault("options", {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                                "values": False},
                              "orientation": "horizontal", "displayMode": "basic",
                              "showUnfilled": True})
    return panel("bargauge", title, targets, w, h, **kw)


def hist(title, targets, w=12, h=8, **kw):
    kw.setdefault("options", {"bucketCount": 10, "combine": True,
                              "legend": {"displayMode": "list", "placement": "bottom"}})
    return panel("histogram", title, targets, w, h, **kw)


def table(title, targets, w=24, h=9, **kw):
    kw.setdefault("options", {"showHeader": True, "cellHeight": "sm"})
    p = panel("table", title, targets, w, h, **kw)
    p["transformations"] = [{"id": "merge", "options": {}},
                            {"id": "organize", "options": {"excludeByName": {
                                "Time": True, "__name__": True, "job": True, "instance": True}}}]
    return p


def query_var(name: str, label: str, query: str, *, multi: bool = True) -> dict:
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "query": {"query": query, "refId": f"{name}-variable"}, "definition": query,
         "refresh": 2, "sort": 1, "hide": 0, "regex": "", "skipUrlSync": False,
         "includeAll": multi, "multi": multi, "current": {}, "options": []}
    if multi:
        v["allValue"] = ".*"
    return v


def custom_var(name: str, label: str, values: list[str], default: str) -> dict:
    return {"name": name, "label": label, "type": "custom", "query": ",".join(values),
            "current": {"selected": True, "text": default, "value": default},
            "options": [{"selected": v == default, "text": v, "value": v} for v in values],
            "hide": 0, "includeAll": False, "multi": False, "skipUrlSync": False}


def layout(panels: list[dict]) -> list[dict]:
    """Flow panels left to right, wrapping at Grafana's 24 columns; ids 1..n."""
    x = y = row_h = 0
    for i, p in enumerate(panels, start=1):
        g = p["gridPos"]
        if x + g["w"] > 24:
            x, y, row_h = 0, y + row_h, 0
        g.update(x=x, y=y)
        x += g["w"]
        row_h = max(row_h, g["h"])
        p["id"] = i
    return panels


def dashboard(uid: str, title: str, description: str, panels: list[dict],
              variables: list[dict]) -> dict:
    return {
        "uid": uid, "title": title, "description": description,
        "tags": ["streameval"], "timezone": "browser", "editable": True,
        "graphTooltip": 1, "schemaVersion": 39, "version": 1, "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"}, "fiscalYearStartMonth": 0, "liveNow": False,
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "links": [{"title": "streameval", "type": "dashboards", "tags": ["streameval"],
                   "asDropdown": True, "includeVars": False, "keepTime": True}],
        "templating": {"list": variables},
        "panels": layout(panels),
    }


AGENT = query_var("agent", "Agent", "label_values(streameval_run_info, agent)")
MODEL = query_var("model", "Model", 'label_values(streameval_run_info{agent=~"$agent"}, model)')
INSTANCE = query_var("instance_id", "Instance",
                     'label_values(streameval_run_info{agent=~"$agent", model=~"$model"}, instance_id)')
RUN = query_var("run_id", "Run", f"label_values(streameval_run_info{{{RUN_FILTER}}}, run_id)",
                multi=False)
GRAN = custom_var("granularity", "Granularity", ["file", "symbol", "span", "line"], "line")
JOB = query_var("job", "Job", "label_values(streameval_lines_processed_total, job)")
RUN_LINK = [{"title": "Open this run", "url": "/d/streameval-run?var-run_id=${__field.labels.run_id}"
             "&${__url_time_range}"}]


# ---------------------------------------------------------------------- the dashboards


def overview() -> dict:
    f = RUN_FILTER
    panels = [
        stat("Active runs", [target(f'count(streameval_run_info{{state="active", {f}}}) or vector(0)', "active")],
             description="Runs whose trace is still growing (not ended, not idle)."),
        stat("Finished runs", [target(f'count(streameval_run_info{{state="finished", {f}}}) or vector(0)', "finished")],
             description="Runs ended by their trace or by the idle timeout, still exported."),
        stat("Abort decisions", [target("sum(streameval_aborts_total) or vector(0)", "aborts")],
             description="Early-abort decisions taken by the watcher (all policies)."),
        stat("Steps per minute", [target(f"sum(rate(streameval_steps_total{{{f}}}[$__rate_interval])) * 60", "steps/min")],
             description="Retrieval steps per minute over all runs shown."),
        ts("Macro coverage by granularity",
           [target(f"avg by (granularity) (streameval_coverage_ratio{{{f}}})", "{{granularity}}")],
           ratio=True, description="Mean over runs of coverage |G∩P|/|G| (docs/metrics.md §3)."),
        ts("Macro precision by granularity",
           [target(f"avg by (granularity) (streameval_precision_ratio{{{f}}})", "{{granularity}}")],
           ratio=True, description="Mean over runs of precision |G∩P|/|P|."),
        hist("Distribution of AUC-coverage ($granularity)",
             [target(f'streameval_auc_coverage_ratio{{granularity="$granularity", {f}}}', "{{run_id}}", instant=True)],
             w=8, ratio=True, description="One value per run: mean per-step coverage so far."),
        hist("Distribution of redundancy ($granularity)",
             [target(f'streameval_redundancy_ratio{{granularity="$granularity", {f}}}', "{{run_id}}", instant=True)],
             w=8, ratio=True, description="One value per run: 1 - |union of steps| / Σ|step|."),
        bars("Abort decisions by policy",
             [target("sum by (policy, action) (streameval_aborts_total)", "{{policy}} → {{action}}", instant=True)],
             w=8, description="streameval_aborts_total by policy and action."),
        bars("Macro AUC-coverage by agent and model ($granularity)",
             [target(f'avg by (agent, model) (streameval_auc_coverage_ratio{{granularity="$granularity", {f}}})',
                     "{{agent}} / {{model}}", instant=True)], ratio=True),
        bars("Runs by state",
             [target(f"count by (state) (streameval_run_info{{{f}}})", "{{state}}", instant=True)]),
        table("Runs ($granularity)",
              [target(f'streameval_coverage_ratio{{granularity="$granularity", {f}}}', instant=True),
               target(f'streameval_auc_coverage_ratio{{granularity="$granularity", {f}}}', instant=True),
               target(f"streameval_steps_total{{{f}}}", instant=True)],
              links=RUN_LINK,
              description="Coverage (A), AUC (B) and steps (C) of every run; click a run to open it."),
    ]
    for p in panels:
        if p["type"] == "table":
            for t in p["targets"]:
                t["format"] = "table"
    return dashboard("streameval-overview", "streameval / Overview",
                     "All watched agent runs: how many, and how well they find the gold context.",
                     panels, [AGENT, MODEL, INSTANCE, GRAN])


def per_run() -> dict:
    r = ONE_RUN
    panels = [
        stat("Steps", [target(f"streameval_steps_total{{{r}}}", "steps")], w=4),
        stat("Distinct lines read", [target(f"streameval_read_lines{{{r}}}", "lines")], w=4),
        stat("Steps to first gold read", [target(f"streameval_first_gold_read_steps{{{r}}}", "{{level}}")],
             w=5, description="Step of the first read of a gold file / a gold line."),
        stat("Cost", [target(f"streameval_cost_usd_total{{{r}}}", "USD")], w=5, unit="currencyUSD",
             description="As stated by the trace (Claude's total_cost_usd...)."),
        stat("Run state", [target(f"streameval_run_info{{{r}}}", "{{state}} ({{format}})")], w=6,
             options={"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                      "textMode": "name", "colorMode": "none", "graphMode": "none"}),
        ts("Coverage by granularity", [target(f"streameval_coverage_ratio{{{r}}}", "{{granularity}}")],
           ratio=True, description="Coverage of the context read so far; it moves once per step."),
        ts("Precision by granularity", [target(f"streameval_precision_ratio{{{r}}}", "{{granularity}}")],
           ratio=True),
        bars("AUC-coverage", [target(f"streameval_auc_coverage_ratio{{{r}}}", "{{granularity}}", instant=True)],
             w=8, ratio=True, description="Mean per-step coverage so far (docs/metrics.md §4)."),
        bars("Redundancy", [target(f"streameval_redundancy_ratio{{{r}}}", "{{granularity}}", instant=True)],
             w=8, ratio=True, description="1 - |union of steps| / Σ|step| (docs/metrics.md §4)."),
        bars("EditLoc (provisional vs final)",
             [target(f"streameval_editloc_recall_ratio{{{r}}}", "recall, final={{final}}", instant=True),
              target(f"streameval_editloc_precision_ratio{{{r}}}", "precision, final={{final}}", instant=True)],
             w=8, ratio=True,
             description="final=false: from the edits seen so far; final=true: from the landed patch."),
        bars("Tool calls by category",
             [target(f"sum by (category) (streameval_tool_calls_total{{{r}}})", "{{category}}", instant=True)]),
        bars("Shown lines by outcome",
             [target(f"sum by (outcome) (streameval_shown_lines_total{{{r}}})", "{{outcome}}",
                     instant=True)],
             description="Lines of repo files the run was shown: aligned (placed on a base line "
                         "by their text), agent_written (no base counterpart), unaligned (credited "
                         "from the command's window: no output kept or no repository). Many "
                         "unaligned lines: the numbers rest on what commands asked for."),
        ts("Tokens by kind", [target(f"sum by (kind) (streameval_tokens_total{{{r}}})", "{{kind}}")],
           unit="short"),
        ts("Steps", [target(f"streameval_steps_total{{{r}}}", "steps"),
                     target(f"streameval_tool_calls_total{{{r}, category=\"read\"}}", "read calls")]),
        ts("Distinct lines and bytes read", [target(f"streameval_read_lines{{{r}}}", "lines"),
                                             target(f"streameval_read_bytes{{{r}}}", "bytes")]),
    ]
    return dashboard("streameval-run", "streameval / Run",
                     "One agent run as it happens: coverage and precision per granularity, AUC, "
                     "redundancy, EditLoc, tool use, tokens and cost.",
                     panels, [AGENT, MODEL, INSTANCE, RUN])


def evaluator() -> dict:
    j = 'job=~"$job"'
    panels = [
        stat("Targets up", [target(f"sum(up{{{j}}})", "up")], w=6),
        stat("Lines processed", [target(f"sum(streameval_lines_processed_total{{{j}}})", "lines")], w=6),
        stat("Backlog", [target(f"sum(streameval_backlog_bytes{{{j}}})", "bytes")], w=6,
             description="Trace lines read but not yet processed."),
        stat("Runs in memory", [target(f"sum(streameval_sessions{{{j}}})", "runs")], w=6),
        ts("Lines processed per second",
           [target(f"sum by (instance) (rate(streameval_lines_processed_total{{{j}}}[$__rate_interval]))",
                   "{{instance}}")], unit="short"),
        ts("Bad lines per second by reason",
           [target(f"sum by (reason) (rate(streameval_bad_lines_total{{{j}}}[$__rate_interval]))", "{{reason}}")],
           unit="short", description="Lines that could not be used (errors.Reason values)."),
        ts("Lag p50 / p99",
           [target(f"histogram_quantile(0.5, sum by (le) (rate(streameval_lag_seconds_bucket{{{j}}}[$__rate_interval])))", "p50"),
            target(f"histogram_quantile(0.99, sum by (le) (rate(streameval_lag_seconds_bucket{{{j}}}[$__rate_interval])))", "p99")],
           unit="s", description="Processing time minus the line's write time (file mtime)."),
        ts("Sessions by state", [target(f"sum by (state) (streameval_sessions{{{j}}})", "{{state}}")]),
        ts("Cache hit ratio",
           [target(f"sum by (cache) (streameval_cache_hits_total{{{j}}}) / clamp_min(sum by (cache) "
                   f"(streameval_cache_hits_total{{{j}}}) + sum by (cache) (streameval_cache_misses_total{{{j}}}), 1)",
                   "{{cache}}")], ratio=True, description="Hits / (hits + misses) since start."),
        ts("Backlog (bytes not yet processed)", [target(f"sum by (instance) (streameval_backlog_bytes{{{j}}})", "{{instance}}")]),
        ts("File events per second",
           [target(f"sum by (event) (rate(streameval_watch_events_total{{{j}}}[$__rate_interval]))", "{{event}}")],
           description="Traces appearing, truncated, replaced, deleted, restored after a restart."),
        ts("Abort decisions per second",
           [target(f"sum by (policy) (rate(streameval_aborts_total{{{j}}}[$__rate_interval]))", "{{policy}}")]),
        ts("Runs that cannot be scored, by reason",
           [target(f"sum by (reason) (streameval_unscored_runs_total{{{j}}})", "{{reason}}")],
           description="Runs watch follows but cannot score (no gold row, no repository...); "
                       "each is also logged once with its reason."),
    ]
    return dashboard("streameval-evaluator", "streameval / Evaluator health",
                     "Is streameval keeping up: throughput, bad lines, lag, memory, caches.",
                     panels, [JOB])


# ---------------------------------------------------------------------- the fleet

FLEET = 'agent=~"$agent", model=~"$model", experiment=~"$experiment"'
FLEET_AGENT = query_var("agent", "Agent", "label_values(streameval_fleet_runs, agent)")
FLEET_MODEL = query_var("model", "Model",
                        'label_values(streameval_fleet_runs{agent=~"$agent"}, model)')
EXPERIMENT = query_var("experiment", "Experiment",
                       'label_values(streameval_fleet_runs{agent=~"$agent", model=~"$model"}, '
                       "experiment)")
BY_SET = "agent, model, experiment"


def fleet_sum(metric: str, by: str = "") -> str:
    """The sum of ``metric`` over the finished runs of each ``by`` group (that have it):
    each exported mean times the runs it is over."""
    sel = f'{{metric="{metric}", {FLEET}}}'
    grp = f" by ({by})" if by else ""
    return f"sum{grp} (streameval_fleet_mean{sel} * streameval_fleet_mean_runs{sel})"


def pooled(metric: str, by: str = "") -> str:
    """The mean of ``metric`` over the finished runs of each ``by`` group: the exported
    means weighted by the runs each is over, so label sets (and watchers) pool into the
    mean of their runs, not a mean of means."""
    grp = f" by ({by})" if by else ""
    return (f"{fleet_sum(metric, by)}"
            f' / sum{grp} (streameval_fleet_mean_runs{{metric="{metric}", {FLEET}}})')


def fleet() -> dict:
    f, g = FLEET, "${granularity}"
    per_set = "{{agent}} / {{model}} / {{experiment}}"
    panels = [
        stat("Active runs", [target(f'sum(streameval_fleet_runs{{state="active", {f}}})', "active")],
             w=4, description="Runs in memory whose trace is still growing."),
        stat("Finished runs", [target(f'sum(streameval_fleet_runs{{state="finished", {f}}})', "finished")],
             w=4, description="Finished runs in memory (within --keep-finished and --max-runs): "
                              "the runs every mean on this dashboard is over."),
        stat(f"Mean final F1 ({g})", [target(pooled(f"{g}.f1"), "F1")], w=4, ratio=True,
             description="F1 of the final context, over the finished runs selected."),
        stat("Runs aborted", [target(f"sum(streameval_fleet_aborted_runs{{{f}}})", "runs")], w=4,
             description="Runs in memory an abort policy decided on (dry runs included). "
                         "No data: no policy decided."),
        stat("Runs without per-run series", [target("sum(streameval_per_run_series_dropped_runs)", "runs")],
             w=4, description="Runs past watch --per-run-series: counted here and in every "
                              "fleet number, absent from the Overview and Run dashboards."),
        stat("Runs folded into other", [target("sum(streameval_fleet_folded_runs)", "runs")], w=4,
             description="Runs of label sets past the fleet's limit (streameval_fleet_groups_limit, "
                         "100 per watcher), counted under agent, model and experiment \"other\"."),
        ts(f"Mean final coverage by model ({g})", [target(pooled(f"{g}.coverage", "model"), "{{model}}")],
           ratio=True, description="Coverage |G∩P|/|G| of the final context, mean over the "
                                   "finished runs of each model (docs/metrics.md §3)."),
        ts(f"Mean final F1 by model ({g})", [target(pooled(f"{g}.f1", "model"), "{{model}}")],
           ratio=True, description="F1 = 2PR/(P+R) of the final context, mean over finished runs."),
        bars(f"Mean AUC-coverage by label set ({g})",
             [target(pooled(f"{g}.auc", BY_SET), per_set, instant=True)], ratio=True,
             description="Mean per-step coverage, mean over the finished runs of each agent, "
                         "model and experiment."),
        bars("File localisation by model",
             [target(pooled("file.mrr", "model"), "{{model}} MRR", instant=True),
              target(pooled("file.ndcg@10", "model"), "{{model}} nDCG@10", instant=True),
              target(pooled("file.recall@5", "model"), "{{model}} Recall@5", instant=True)],
             ratio=True, description="How early the gold files were read (docs/metrics.md §7b)."),
        ts("Tokens per finished run by model", [target(pooled("tokens", "model"), "{{model}}")],
           unit="short", description="Over the finished runs whose trace states usage "
                                     "(a run without it is left out, not counted as 0)."),
        ts("Cost per finished run by model", [target(pooled("cost_usd", "model"), "{{model}}")],
           unit="currencyUSD", description="Over the finished runs whose trace states a cost."),
        bars("Cost of the finished runs in memory by model",
             [target(fleet_sum("cost_usd", "model"), "{{model}}", instant=True)], w=8,
             unit="currencyUSD", description="Mean cost times the finished runs it is over."),
        bars("Steps to the first gold file read by model",
             [target(pooled("first_gold_file_step", "model"), "{{model}}", instant=True)], w=8,
             description="Mean over the finished runs that read a gold file."),
        bars("Runs aborted by policy",
             [target(f"sum by (policy) (streameval_fleet_aborted_runs{{{f}}})", "{{policy}}",
                     instant=True)], w=8),
        ts("Runs by model and state",
           [target(f"sum by (model, state) (streameval_fleet_runs{{{f}}})", "{{model}} {{state}}")]),
        ts("Series budget",
           [target("max(streameval_per_run_series_limit)", "per-run series limit (runs)"),
            target("sum by (state) (streameval_per_run_series_dropped_runs)", "dropped {{state}}"),
            target("sum(streameval_fleet_groups)", "label sets"),
            target("max(streameval_fleet_groups_limit)", "label set limit")],
           description="What bounds /metrics: runs with per-run series at most, the runs past "
                       "it, and the fleet's label sets against their limit."),
        table(f"Label sets ({g})",
              [target(f'sum by ({BY_SET}) (streameval_fleet_runs{{state="finished", {f}}})', instant=True),
               target(pooled(f"{g}.coverage", BY_SET), instant=True),
               target(pooled(f"{g}.f1", BY_SET), instant=True),
               target(pooled(f"{g}.auc", BY_SET), instant=True),
               target(pooled("tokens", BY_SET), instant=True),
               target(pooled("cost_usd", BY_SET), instant=True)],
              description="Finished runs (A), mean final coverage (B), F1 (C), AUC (D), tokens "
                          "(E) and cost (F) per agent, model and experiment."),
    ]
    for p in panels:
        if p["type"] == "table":
            for t in p["targets"]:
                t["format"] = "table"
    return dashboard("streameval-fleet", "streameval / Fleet",
                     "Every agent, model and experiment at once, in a bounded number of series: "
                     "runs, mean final coverage and F1, AUC, localisation, tokens, cost, aborts.",
                     panels, [FLEET_AGENT, FLEET_MODEL, EXPERIMENT, GRAN])


DASHBOARDS = {"overview.json": overview, "run.json": per_run, "evaluator.json": evaluator,
              "fleet.json": fleet}


def render() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
            for name, build in DASHBOARDS.items()}


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (OUT / name).write_text(text, encoding="utf-8")
        print(f"wrote {OUT / name}")
