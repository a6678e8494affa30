"""The trace player's pacing: the trace's own gaps, capped, divided by the speed."""

from __future__ import annotations

from streameval.playback.player import line_time, schedule


def test_line_time_reads_zulu_offset_and_naive_timestamps_alike():
    z = line_time(b'{"type": "user", "timestamp": "2025-01-02T03:04:05.500Z"}')
    assert z == line_time(b'{"timestamp": "2025-01-02T05:04:05.500+02:00"}')
    assert line_time(b'{"timestamp": "2025-01-02T03:04:05.500"}') == z  # naive is UTC
    assert line_time(b'{"timestamp": 17}') is None and line_time(b"not json") is None


def test_schedule_keeps_the_trace_gaps_capped_and_sped_up():
    lines = [b'{"timestamp": "2025-01-01T00:00:00Z"}', b'{"timestamp": "2025-01-01T00:00:02Z"}',
             b'{"no": "time"}', b'{"timestamp": "2025-01-01T01:00:00Z"}']
    delays = [s.delay for s in schedule(lines, speed=2.0, default_gap=0.4, max_gap=5.0)]
    # first line at once; 2 s gap; no timestamp: the default gap; an hour: capped at 5 s
    assert delays == [0.0, 1.0, 0.2, 2.5]
