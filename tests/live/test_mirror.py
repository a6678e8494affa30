"""``/metrics`` served by the front from the watcher's pieces (``live.mirror``).

The pieces, sent through JSON as the link sends them, make the very bytes
prometheus_client's encoders write for the watcher's registry (both formats, odd label
values, runs added and let go), plus the age of the numbers; only the texts the front
lacks are sent again. Through the real command line (``watch`` without ``--ingest``),
a watcher stopped with SIGSTOP leaves /metrics answered, with its numbers' age growing,
and fresh numbers come back once it goes on.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import time
import urllib.request

import orjson
import pytest
from claude_run import APP, Claude, make_setup, wait_until, watch_process
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_om

from streameval.live.exporter import RunsCollector
from streameval.live.mirror import AGE, Feed, Mirror
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.resources import load_resources

AGE_LINES = re.compile(rb"^(# (HELP|TYPE) )?" + AGE.encode() + rb"\b.*\n", re.M)


def write_run(runs, s, name: str, run_id: str, calls: int = 1) -> None:
    d = runs / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": run_id,
                                             "agent": "ägent", "model": "m"}))
    c = Claude()
    lines = [c.init()]
    for _ in range(calls):
        lines += c.read("src/app.py", APP, 1, 20)
    (d / "trace.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def watching(runs, s):
    """A watcher that read ``runs``, a registry over its table (what its own route
    serves), and a feed of pieces over it."""
    w = Watcher(WatchConfig(root=runs), load_resources(str(s.gold), None, str(s.repo)))
    w.scan()
    w.poll_all()
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    return w, reg, Feed(RunsCollector(w.table))


def through_link(pieces: dict) -> dict:
    return orjson.loads(orjson.dumps(pieces))


def without_age(body: bytes) -> tuple[bytes, float]:
    [age] = [float(line.split()[1]) for line in body.splitlines() if line.startswith(AGE.encode() + b" ")]
    return AGE_LINES.sub(b"", body), age


def test_the_mirror_serves_the_bytes_of_the_watchers_registry(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    write_run(runs, s, "a", "r1")
    write_run(runs, s, "odd", 'q"b\\s\nn', calls=2)
    w, reg, feed = watching(runs, s)
    mirror, front = Mirror(), object()

    def check() -> dict:
        for om, encode in ((False, generate_latest), (True, generate_om)):
            pieces = through_link(feed.pieces(om, front))
            mirror.take(pieces)
            body, age = without_age(mirror.render(om))
            assert body == encode(reg)
            assert 0.0 <= age < 60
        return pieces

    first = check()
    again = mirror.render(True)   # the same pieces: joined once, only the age made again
    assert without_age(again)[0] == generate_om(reg)
    assert len(first["texts"]) == 0   # the text format's pieces sent them all just before
    assert len(first["order"]) == 2
    write_run(runs, s, "b", "r2")     # a third run: only its text travels
    w.scan()
    w.poll_all()
    pieces = through_link(feed.pieces(False, front))
    assert len(pieces["texts"]) == 1 and len(pieces["order"]) == 3
    mirror.take(pieces)
    check()
    w.table.remove(str(runs / "a" / "trace.jsonl"))   # a run let go leaves the mirror too
    assert len(check()["order"]) == 2
    assert len(mirror._texts) == 2
    # a front started again knows nothing: it is sent every text
    assert len(feed.pieces(False, object())["texts"]) == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGSTOP, /proc")
def test_a_stopped_watcher_leaves_metrics_answered_with_their_age(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    write_run(runs, s, "a", "r1")
    # one process scoring: the stopped watcher is all of them (two workers: test_workers)
    proc, port = watch_process([str(runs), "--gold", str(s.gold), "--repo", str(s.repo),
                                "--port", "0", "--idle-timeout", "30", "--workers", "1"],
                               tmp_path / "watch.log")
    try:
        def scrape(query: str = "") -> bytes:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics{query}", timeout=10) as r:
                return r.read()

        wait_until(lambda: b'run_id="r1"' in scrape(), what="the run in /metrics")
        assert without_age(scrape())[1] < 5
        proc.send_signal(signal.SIGSTOP)
        try:
            before = without_age(scrape())
            time.sleep(1.5)
            body, age = without_age(scrape())   # answered by the front alone
            assert b'run_id="r1"' in body and body == before[0]
            assert age >= before[1] + 1.0
        finally:
            proc.send_signal(signal.SIGCONT)
        wait_until(lambda: without_age(scrape())[1] < 1.0, what="fresh numbers again")
        # a filtered scrape is the watcher's own, passed on; every name given counts
        only = scrape("?name[]=streameval_coverage_ratio&name[]=streameval_lines_processed_total")
        names = {line.split(b"{")[0].split(b" ")[0] for line in only.splitlines()
                 if not line.startswith(b"#")}
        assert names == {b"streameval_coverage_ratio", b"streameval_lines_processed_total"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_a_late_watcher_is_not_waited_for_until_it_answers_in_time(monkeypatch):
    """A scrape waits for the watcher's answer while the watcher keeps up; once an
    answer came late, scrapes serve the last pieces at once, until one comes in time."""
    import asyncio

    from streameval.live import mirror as mod
    from streameval.live.asgi import App
    from streameval.live.exporter import RUN_FAMILIES
    from streameval.live.guard import Limits

    def pieces(mark: str, at: float | None = None) -> dict:
        return {"om": False, "at": time.monotonic() if at is None else at, "order": [1],
                "fleet": "", "process": "",
                "texts": [[1, [f"{mark}{i}\n" for i in range(len(RUN_FAMILIES))]]]}

    async def scenario() -> None:
        app = App(Limits())
        m = Mirror()
        m.take(pieces("p0-"))
        questions: list[dict] = []
        answer: dict = {}

        def ask(q: dict) -> None:
            questions.append(q)
            if "with" in answer:   # the watcher answers at once
                loop = asyncio.get_running_loop()
                loop.call_soon(lambda: (m.take(answer["with"]), route.answered([q["scrape"]])))

        route = mod.MirrorRoute(app, m, ask, upstream=None)
        answer["with"] = pieces("p1-")
        assert b"p1-0" in await route._scrape(False)       # waited for the answer
        del answer["with"]
        monkeypatch.setattr(mod, "DEADLINE", 0.01)
        assert b"p1-0" in await route._scrape(False)       # no answer: the last pieces
        assert not route._keeping_up
        monkeypatch.setattr(mod, "DEADLINE", 60.0)
        # late before: not waited for, although the answer would take a minute
        assert b"p1-0" in await asyncio.wait_for(route._scrape(False), 10)
        route.answered([questions[-1]["scrape"]])          # now in time
        await asyncio.sleep(0)
        assert route._keeping_up
        answer["with"] = pieces("p2-")
        assert b"p2-0" in await route._scrape(False)       # waited for again
        # pieces of a minute ago: waited for new ones, even from a watcher late before
        m.take(pieces("old-", at=time.monotonic() - 60))
        route._keeping_up = False
        answer["with"] = pieces("p3-")
        assert b"p3-0" in await route._scrape(False)
        app.close()

    asyncio.run(scenario())


def test_each_format_serves_one_moment_and_a_failed_message_sends_every_text(tmp_path, monkeypatch):
    """The run texts are shared, the order and the rest are per format: a text scrape
    after an OpenMetrics answer is still the text answer's moment. Pieces whose message
    could not be made leave the front owed every text, not a gap."""
    from streameval.live import exposition

    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    write_run(runs, s, "a", "r1")
    w, reg, feed = watching(runs, s)
    mirror, front = Mirror(), object()
    mirror.take(through_link(feed.pieces(False, front)))
    text_then = without_age(mirror.render(False))[0]
    assert text_then == generate_latest(reg)
    write_run(runs, s, "b", "r2")
    w.scan()
    w.poll_all()
    mirror.take(through_link(feed.pieces(True, front)))   # r2 reaches the front in OpenMetrics
    assert b'run_id="r2"' in without_age(mirror.render(True))[0]
    assert without_age(mirror.render(False))[0] == text_then   # the text format's moment

    def broken(*_a):
        raise RuntimeError("fleet")

    write_run(runs, s, "c", "r3")
    w.scan()
    w.poll_all()
    monkeypatch.setattr(exposition, "fleet_text", broken)
    with pytest.raises(RuntimeError):
        feed.pieces(False, front)
    monkeypatch.undo()
    mirror.take(through_link(feed.pieces(False, front)))   # r3's text still travels
    assert without_age(mirror.render(False))[0] == generate_latest(reg)
    feed.forget()   # a message lost on the way: every text again
    assert len(feed.pieces(False, front)["texts"]) == 3
