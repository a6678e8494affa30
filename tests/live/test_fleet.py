"""Fleet aggregates and the per-run series cap, over a real watcher serving /metrics.

Runs of several agents, models and experiments are written as Claude stream-json
traces over a real repository; the watcher scores them and its HTTP server is scraped.
Every expected fleet number is worked out here from the runs as written (file coverage
and F1 by hand) or from the same scrape's per-run series (line numbers, tokens), with
plain arithmetic.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from claude_run import APP, UTIL, Claude, append, make_setup
from prometheus_client.parser import text_string_to_metric_families

from streameval.live.abort.engine import AbortEngine, attach, parse_policies
from streameval.live.fleet import FLEET_METRIC_NAMES
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.resources import load_resources

POLICY = '[[policy]]\nname = "steps-2"\nkind = "max_steps"\nlimit = 2\n'


# ---------------------------------------------------------------------- helpers


def no_usage(line: bytes) -> bytes:
    """A trace line as an agent that reports no usage writes it."""
    obj = json.loads(line)
    obj.get("message", {}).pop("usage", None)
    return json.dumps(obj).encode()


def write_run(runs: Path, name: str, *, agent: str, model: str, experiment: str | None,
              reads: list[tuple[str, int, int]], end: bool = True, usage: bool = True,
              instance: str = "demo__demo-1") -> None:
    """A run directory: meta.json naming it, and a trace reading (path, first, last)
    ranges in order, ended by Claude's result line (cost 0.01) when ``end``."""
    d = runs / name
    d.mkdir(parents=True)
    meta = {"instance_id": instance, "run_id": name, "agent": agent, "model": model}
    if experiment is not None:
        meta["experiment"] = experiment
    (d / "meta.json").write_text(json.dumps(meta))
    c = Claude()
    lines = [c.init()]
    for path, first, last in reads:
        lines += c.read(path, APP if path == "src/app.py" else UTIL, first, last - first + 1)
    if end:
        lines.append(c.result() if usage else
                     b'{"type": "result", "subtype": "success", "session_id": "s1"}')
    if not usage:
        lines = [no_usage(x) for x in lines]
    append(d / "trace.jsonl", *lines)


def start(tmp_path: Path, runs: Path, policy: bool = False) -> Watcher:
    s = make_setup(tmp_path)
    res = load_resources(str(s.gold), None, str(s.repo))
    w = Watcher(WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0,
                            rescan_interval=3600), res)
    if policy:
        attach(w, AbortEngine(parse_policies(POLICY, "test.toml"), dry_run=True))
    w.scan()
    w.poll_all()
    w.tick()   # runs whose trace ended are finished
    return w


def scrape(w: Watcher, **bounds) -> dict[str, list]:
    """One scrape of the watcher's own HTTP server: {family: [(labels, value)]}."""
    server, _reg, port = serve(w.table, "127.0.0.1", 0, **bounds)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
    finally:
        server.close()
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def one(samples: dict, name: str, **labels) -> float | None:
    """The value of the one sample of ``name`` whose labels include ``labels``."""
    hits = [v for lab, v in samples.get(name, []) if labels.items() <= lab.items()]
    assert len(hits) <= 1, (name, labels, hits)
    return hits[0] if hits else None


def run_value(samples: dict, name: str, run_id: str, **labels) -> float | None:
    return one(samples, name, run_id=run_id, **labels)


def run_ids(samples: dict) -> set[str]:
    return {lab["run_id"] for lab, _v in samples.get("streameval_run_info", [])}


G1 = {"agent": "a1", "model": "m1", "experiment": "e1"}
G2 = {"agent": "a1", "model": "m2", "experiment": "e1"}
G3 = {"agent": "a2", "model": "m1", "experiment": "e2"}


@pytest.fixture
def fleet(tmp_path):
    """Six runs in three label sets (see the table in each test)."""
    runs = tmp_path / "runs"
    app, util = ("src/app.py", 1, 20), ("src/util.py", 1, 3)
    write_run(runs, "A", **G1, reads=[app])                 # file cov 1/2, F1 2/3
    write_run(runs, "B", **G1, reads=[app, util])           # file cov 1,   F1 1
    write_run(runs, "C", **G2, reads=[util])                # file cov 1/2, F1 2/3
    write_run(runs, "D", **G2, reads=[app], end=False)      # still active
    write_run(runs, "E", **G3, reads=[app, util], usage=False)   # no usage, no cost
    write_run(runs, "F", **G3, reads=[app], instance="nobody__nothing-1")  # no gold
    w = start(tmp_path, runs, policy=True)
    assert w.table.counts() == (1, 5)
    return w


# ---------------------------------------------------------------------- the means


def test_fleet_means_equal_the_means_worked_out_by_hand(fleet):
    m = scrape(fleet)
    mean = lambda g, metric: one(m, "streameval_fleet_mean", **g, metric=metric)  # noqa: E731
    n = lambda g, metric: one(m, "streameval_fleet_mean_runs", **g, metric=metric)  # noqa: E731

    # runs by state: D is the one active run
    assert [one(m, "streameval_fleet_runs", **g, state=s) for g in (G1, G2, G3)
            for s in ("active", "finished")] == [0, 2, 1, 1, 0, 2]
    # file coverage and F1: gold files are app.py and util.py; every file read is gold
    assert (mean(G1, "file.coverage"), n(G1, "file.coverage")) == (pytest.approx(0.75), 2)
    assert mean(G1, "file.f1") == pytest.approx((2 / 3 + 1) / 2)
    # G2: only C finished; D (active) is in no mean
    assert (mean(G2, "file.coverage"), n(G2, "file.coverage")) == (pytest.approx(0.5), 1)
    assert mean(G2, "file.f1") == pytest.approx(2 / 3)
    # G3: F has no gold (docs/metrics.md §5b): in the run count and the steps (E 2, F 1),
    # not in the quality means
    assert (mean(G3, "file.coverage"), n(G3, "file.coverage")) == (pytest.approx(1.0), 1)
    assert (mean(G3, "steps"), n(G3, "steps")) == (1.5, 2)
    assert mean(G1, "steps") == 1.5

    # every other granularity and AUC: the mean of the finished scored runs' own series
    scored = {"A": G1, "B": G1, "C": G2, "E": G3}
    for g, runs in ((G1, "AB"), (G2, "C"), (G3, "E")):
        for gran in ("file", "symbol", "span", "line"):
            for metric, fam in ((f"{gran}.coverage", "streameval_coverage_ratio"),
                                (f"{gran}.f1", "streameval_f1_ratio"),
                                (f"{gran}.auc", "streameval_auc_coverage_ratio")):
                vals = [run_value(m, fam, r, granularity=gran) for r in runs]
                assert mean(g, metric) == pytest.approx(sum(vals) / len(vals)), (g, metric)
                assert n(g, metric) == len(runs)
    assert set(scored) | {"D", "F"} == run_ids(m)

    # tokens: E's trace states no usage: left out, never counted as 0; F (no gold) states it
    def tokens(r: str) -> float:
        return sum(v for lab, v in m["streameval_tokens_total"] if lab["run_id"] == r)

    assert tokens("E") == 0 and run_value(m, "streameval_cost_usd_total", "E") is None
    assert (mean(G1, "tokens"), n(G1, "tokens")) == ((tokens("A") + tokens("B")) / 2, 2)
    assert (mean(G3, "tokens"), n(G3, "tokens")) == (tokens("F"), 1)
    assert (mean(G3, "cost_usd"), n(G3, "cost_usd")) == (pytest.approx(0.01), 1)
    assert mean(G1, "cost_usd") == pytest.approx(0.01)

    # localisation: A ranked app.py first (MRR 1, recall@1 1/2); B the same; so is C (util.py)
    assert mean(G1, "file.mrr") == 1.0 and mean(G1, "file.recall@1") == 0.5
    assert mean(G1, "first_gold_file_step") == 1.0
    # full file coverage: only B read both gold files (at its step 2)
    assert (mean(G1, "full_file_coverage_step"), n(G1, "full_file_coverage_step")) == (2.0, 1)

    # a mean of no run is no series, and says so with its count
    assert mean(G2, "full_file_coverage_step") is None
    assert n(G2, "full_file_coverage_step") == 0

    # the dry-run policy decided on the runs that reached 2 steps: B and E
    assert one(m, "streameval_fleet_aborted_runs", **G1, policy="steps-2") == 1
    assert one(m, "streameval_fleet_aborted_runs", **G3, policy="steps-2") == 1
    assert one(m, "streameval_fleet_aborted_runs", **G2, policy="steps-2") is None
    # every metric of every label set has its count series: a fixed set
    counts = [lab for lab, _v in m["streameval_fleet_mean_runs"]]
    assert len(counts) == 3 * len(FLEET_METRIC_NAMES)
    assert one(m, "streameval_fleet_groups") == 3 and one(m, "streameval_fleet_folded_runs") == 0


def test_a_finished_run_that_leaves_memory_leaves_the_means(fleet):
    before = scrape(fleet)
    assert one(before, "streameval_fleet_mean", **G1, metric="file.coverage") == 0.75
    fleet.table.remove(next(k for k, r in fleet.table.runs.items()
                            if r.session.identity.run_id == "A"))
    after = scrape(fleet)
    assert one(after, "streameval_fleet_mean", **G1, metric="file.coverage") == 1.0
    assert one(after, "streameval_fleet_runs", **G1, state="finished") == 1


def test_a_run_without_experiment_is_its_own_label_set(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "X", agent="a1", model="m1", experiment=None, reads=[("src/app.py", 1, 20)])
    m = scrape(start(tmp_path, runs))
    assert one(m, "streameval_fleet_runs", agent="a1", model="m1", experiment="",
               state="finished") == 1


# ---------------------------------------------------------------------- the per-run cap


def set_times(w: Watcher, first_seen: dict[str, float], finished_at: dict[str, float]) -> None:
    """The watcher's own clock readings of each run, set to known values (the order in
    which runs were seen and finished is what the cap ranks by)."""
    for run in w.table.runs.values():
        rid = run.session.identity.run_id
        run.first_seen = first_seen[rid]
        if run.finished_at is not None:
            run.finished_at = finished_at[rid]


@pytest.fixture
def five(tmp_path):
    """Three active runs (seen at 1, 2, 3) and two finished (finished at 10, 20)."""
    runs = tmp_path / "runs"
    for name in ("act1", "act2", "act3"):
        write_run(runs, name, **G1, reads=[("src/app.py", 1, 20)], end=False)
    for name in ("fin1", "fin2"):
        write_run(runs, name, **G2, reads=[("src/util.py", 1, 3)])
    w = start(tmp_path, runs)
    set_times(w, {"act1": 1, "act2": 2, "act3": 3, "fin1": 0, "fin2": 0},
              {"fin1": 10, "fin2": 20})
    return w


def test_the_cap_keeps_the_newest_active_runs_and_exports_what_it_dropped(five):
    m = scrape(five, per_run_series=2)
    assert run_ids(m) == {"act2", "act3"}
    assert one(m, "streameval_per_run_series_limit") == 2
    assert one(m, "streameval_per_run_series_dropped_runs", state="active") == 1
    assert one(m, "streameval_per_run_series_dropped_runs", state="finished") == 2
    # no family of the dropped runs is left behind, and the fleet still counts them all
    assert not [lab for rows in m.values() for lab, _v in rows if lab.get("run_id") == "act1"]
    assert one(m, "streameval_fleet_runs", **G1, state="active") == 3
    assert one(m, "streameval_fleet_runs", **G2, state="finished") == 2

    # room for four: every active run, then the most recently finished
    m = scrape(five, per_run_series=4)
    assert run_ids(m) == {"act1", "act2", "act3", "fin2"}
    assert one(m, "streameval_per_run_series_dropped_runs", state="finished") == 1


def test_the_cap_at_zero_turns_per_run_series_off(five):
    m = scrape(five, per_run_series=0)
    assert not [lab for rows in m.values() for lab, _v in rows if "run_id" in lab]
    assert one(m, "streameval_per_run_series_dropped_runs", state="active") == 3
    assert one(m, "streameval_per_run_series_dropped_runs", state="finished") == 2
    assert one(m, "streameval_fleet_runs", **G1, state="active") == 3
    assert one(m, "streameval_fleet_mean", **G2, metric="file.coverage") == 0.5


def test_the_default_cap_exports_every_run_of_a_small_table(five):
    m = scrape(five)
    assert run_ids(m) == {"act1", "act2", "act3", "fin1", "fin2"}
    assert one(m, "streameval_per_run_series_limit") == 1000
    assert one(m, "streameval_per_run_series_dropped_runs", state="active") == 0


@pytest.mark.parametrize("groups", [1, 5])
def test_a_capped_scrape_is_the_bytes_prometheus_client_writes(tmp_path, groups):
    """The served fast path (per-run and fleet text) and prometheus_client's encoders
    agree under the caps, for label values that need escaping, in both formats."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_om

    from streameval.live.exporter import RunsCollector

    runs = tmp_path / "runs"
    odd = {"agent": "ägent", "model": 'm"q\\b', "experiment": "line\nbreak {x=\"1\"}"}
    write_run(runs, "act1", **odd, reads=[("src/app.py", 1, 20)], end=False)
    write_run(runs, "fin1", **odd, reads=[("src/util.py", 1, 3)])
    write_run(runs, "fin2", **G2, reads=[("src/app.py", 1, 20), ("src/util.py", 1, 3)])
    w = start(tmp_path, runs, policy=True)
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table, per_run_series=2, fleet_groups=groups))
    server, _r, port = serve(w.table, "127.0.0.1", 0, per_run_series=2, fleet_groups=groups)
    url = f"http://127.0.0.1:{port}/metrics"
    om_req = urllib.request.Request(url, headers={
        "Accept": "application/openmetrics-text; version=1.0.0"})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            served = r.read()
        with urllib.request.urlopen(om_req, timeout=10) as r:
            om = r.read()
    finally:
        server.close()
    assert served == generate_latest(reg)
    assert om == generate_om(reg)
    # the newline became "?", quotes and backslashes escaped
    assert b'experiment="line?break {x=\\"1\\"}"' in served
    assert (b"streameval_fleet_folded_runs 1.0" if groups == 1 else
            b"streameval_fleet_folded_runs 0.0") in served


# ---------------------------------------------------------------------- bounded label sets


def test_label_sets_past_the_limit_are_folded_into_other_and_counted(tmp_path):
    """A trace naming a new model per run must not make the fleet series unbounded."""
    runs = tmp_path / "runs"
    for i in range(12):
        write_run(runs, f"r{i:02d}", agent="a", model=f"rogue-{i:02d}", experiment="e",
                  reads=[("src/app.py", 1, 20)])
    w = start(tmp_path, runs)
    m = scrape(w, fleet_groups=3)
    groups = {(lab["agent"], lab["model"], lab["experiment"])
              for lab, _v in m["streameval_fleet_runs"]}
    assert len(groups) == 4 and ("other", "other", "other") in groups
    other = {"agent": "other", "model": "other", "experiment": "other"}
    assert one(m, "streameval_fleet_runs", **other, state="finished") == 9
    assert one(m, "streameval_fleet_mean", **other, metric="file.coverage") == 0.5
    assert one(m, "streameval_fleet_mean_runs", **other, metric="file.coverage") == 9
    assert one(m, "streameval_fleet_folded_runs") == 9
    assert one(m, "streameval_fleet_folded_groups") == 9
    assert one(m, "streameval_fleet_groups") == 3
    assert one(m, "streameval_fleet_groups_limit") == 3
    # the fleet families hold 4 label sets whatever the number of models
    assert len(m["streameval_fleet_mean_runs"]) == 4 * len(FLEET_METRIC_NAMES)


def test_a_label_set_keeps_its_place_until_its_runs_leave(tmp_path):
    runs = tmp_path / "runs"
    for i in range(4):
        write_run(runs, f"r{i}", agent="a", model=f"m{i}", experiment="e",
                  reads=[("src/app.py", 1, 20)])
    w = start(tmp_path, runs)
    server, _reg, port = serve(w.table, "127.0.0.1", 0, fleet_groups=2)

    def models() -> set[str]:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        return {s.labels["model"] for f in text_string_to_metric_families(text)
                if f.name == "streameval_fleet_runs" for s in f.samples}

    try:
        first = models()
        assert len(first) == 3 and "other" in first
        assert models() == first   # the same label sets scrape after scrape
        gone = next(k for k, r in w.table.runs.items()
                    if r.session.identity.model in first)
        left = w.table.runs[gone].session.identity.model
        w.table.remove(gone)
        second = models()
        # the freed place goes to a label set that was folded; the other stays
        assert left not in second and len(second) == 3 and "other" in second
        assert len(first & second) == 2
    finally:
        server.close()


# ---------------------------------------------------------------------- the option


def test_watch_takes_per_run_series_and_serves_with_it(tmp_path):
    """``streameval watch --per-run-series 1``, as a user starts it: the cap reaches
    the served /metrics; a negative cap is a usage error."""
    import subprocess
    import sys
    import time

    from streameval.commands.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["watch", str(tmp_path), "--per-run-series", "-1"])
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    for name in ("A", "B"):
        write_run(runs, name, **G1, reads=[("src/app.py", 1, 20)])
    log = tmp_path / "watch.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "streameval", "watch", str(runs),
                                 "--gold", str(s.gold), "--repo", str(s.repo), "--port", "0",
                                 "--no-checkpoint", "--per-run-series", "1"],
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        m: dict = {}
        for _ in range(600):   # until both runs are scored and finished (or 60 s)
            text = log.read_text(errors="replace")
            if proc.poll() is not None:
                pytest.fail(f"watch exited: {text}")
            if "serving metrics on http://" in text:
                port = int(text.split("serving metrics on http://")[1].split(":")[1].split("/")[0])
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                    m = {}
                    for fam in text_string_to_metric_families(r.read().decode()):
                        for sample in fam.samples:
                            m.setdefault(sample.name, []).append((sample.labels, sample.value))
                if one(m, "streameval_fleet_runs", **G1, state="finished") == 2:
                    break
            time.sleep(0.1)
        assert one(m, "streameval_fleet_runs", **G1, state="finished") == 2
        assert one(m, "streameval_per_run_series_limit") == 1
        assert one(m, "streameval_per_run_series_dropped_runs", state="finished") == 1
        assert len(run_ids(m)) == 1
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_solve_rate_of_each_label_set_is_the_mean_of_its_known_outcomes(tmp_path):
    """``--outcomes`` (and meta.json's ``resolved``) give each finished run its verdict;
    the fleet's ``resolved`` mean is the share solved among the runs that have one."""
    runs = tmp_path / "runs"
    for name, g in (("A", G1), ("B", G1), ("C", G1), ("D", G2), ("E", G2)):
        write_run(runs, name, **g, reads=[("src/app.py", 1, 20)], instance=f"demo__demo-{name}")
    (runs / "E" / "meta.json").write_text(json.dumps(
        {**json.loads((runs / "E" / "meta.json").read_text()), "resolved": True}))
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text("".join(json.dumps({"instance_id": f"demo__demo-{n}", "resolved": v}) + "\n"
                                for n, v in (("A", True), ("B", False), ("D", False))))
    s = make_setup(tmp_path)
    res = load_resources(str(s.gold), None, str(s.repo), outcomes=str(outcomes))
    w = Watcher(WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0,
                            rescan_interval=3600), res)
    w.scan()
    w.poll_all()
    w.tick()
    m = scrape(w)
    rate = lambda g: (one(m, "streameval_fleet_mean", **g, metric="resolved"),  # noqa: E731
                      one(m, "streameval_fleet_mean_runs", **g, metric="resolved"))
    # G1: A solved, B not, C not known (no row); G2: D not (the file), E solved (meta.json)
    assert rate(G1) == (0.5, 2)
    assert rate(G2) == (0.5, 2)
    # the runs are measured against no gold (demo__demo-A... has no gold row): still counted
    assert one(m, "streameval_fleet_mean_runs", **G1, metric="steps") == 3
