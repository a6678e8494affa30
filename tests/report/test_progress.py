"""Replay's progress anywhere: time left on a terminal, a line every few seconds in a log,
a last line at the end; the clock is the test's."""

from __future__ import annotations

import io

from streameval.report.progress import Progress, duration


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_terminal_shows_the_rate_and_the_time_left():
    clock, out = Clock(), io.StringIO()
    p = Progress(10, tty=True, stream=out, clock=clock)
    clock.now += 4
    p.update(0, n=2)      # 2 in 4 s: 8 left at 0.5/s
    assert out.getvalue() == "\r2/10 instances (20%), 0 errors, 0.5/s, about 16s left "
    clock.now += 0.01
    p.update(1)           # redrawn at most every 0.1 s
    assert out.getvalue().count("\r") == 1
    clock.now += 36
    p.update(0, n=7)
    assert out.getvalue().endswith("\r10/10 instances (100%), 1 errors, 0.2/s ")
    p.close()
    assert out.getvalue().endswith("\n")


def test_a_log_gets_a_line_every_ten_seconds_and_one_at_the_end():
    clock, out = Clock(), io.StringIO()
    p = Progress(300, tty=False, stream=out, clock=clock)
    for _ in range(100):
        clock.now += 0.25   # 4/s
        p.update(0)
    lines = out.getvalue().splitlines()
    assert lines == ["streameval replay: 40/300 instances (13%), 0 errors, 4.0/s, about 1m05s left",
                     "streameval replay: 80/300 instances (27%), 0 errors, 4.0/s, about 55s left"]
    for _ in range(200):
        clock.now += 0.25
        p.update(1)
    p.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and len(lines) == 8
    assert lines[-1] == "streameval replay: 300/300 instances in 1m15s, 200 errors"


def test_quiet_says_nothing():
    out = io.StringIO()
    p = Progress(2, tty=False, quiet=True, stream=out, every=0.0)
    p.update(0)
    p.update(0)
    p.close()
    assert out.getvalue() == ""


def test_durations():
    assert [duration(s) for s in (0, 42.4, 185, 7620)] == ["0s", "42s", "3m05s", "2h07m"]
